// A download's progress: reported at most once a period and once at the end, with the rate over
// the last seconds (a mirror that slows down shows the time it now needs) and the time left.
import { describe, expect, it } from 'vitest';
import { formatProgress, progressMeter, type TransferProgress } from '../../src/host/transfer-progress.ts';

function meter(periodMs = 1000) {
  let now = 0;
  const seen: TransferProgress[] = [];
  const update = progressMeter((p) => seen.push(p), periodMs, () => now);
  return { seen, at: (ms: number, received: number, total?: number) => ((now = ms), update(received, total)) };
}

const MiB = 1024 * 1024;

describe('the progress of a download', () => {
  it('is reported at most once a second, and at the end however soon', () => {
    const m = meter();
    for (let t = 0; t <= 2500; t += 100) m.at(t, t * 1000, 10_000_000);
    m.at(2600, 10_000_000, 10_000_000);
    m.at(2700, 10_000_000, 10_000_000);
    expect(m.seen.map((p) => p.receivedBytes)).toEqual([0, 1_000_000, 2_000_000, 10_000_000]);
  });

  it('gives the rate of the last seconds and the time left at that rate', () => {
    const m = meter();
    // 10 MiB/s for 10 s, then 1 MiB/s: after 6 s more the rate is that of the slow part.
    for (let t = 0; t <= 10_000; t += 500) m.at(t, (t / 1000) * 10 * MiB, 200 * MiB);
    for (let t = 10_500; t <= 16_000; t += 500) m.at(t, 100 * MiB + ((t - 10_000) / 1000) * MiB, 200 * MiB);
    const last = m.seen.at(-1)!;
    expect(last.bytesPerSecond).toBe(MiB);
    expect(last.etaSeconds).toBe(94);
    expect(formatProgress(last)).toBe('106.0 of 200.0 MiB (53%), 1.0 MiB/s, 1 min 34 s left');
  });

  it('starts the rate over when a copy starts over, and says no time left without a total', () => {
    const m = meter();
    m.at(0, 0);
    m.at(1000, 50 * MiB);
    m.at(2000, 0);
    m.at(3000, 2 * MiB);
    expect(m.seen.map((p) => p.bytesPerSecond)).toEqual([0, 50 * MiB, 0, 2 * MiB]);
    expect(m.seen.every((p) => p.etaSeconds === undefined && p.totalBytes === undefined)).toBe(true);
    expect(formatProgress(m.seen.at(-1)!)).toBe('2.0 MiB, 2.0 MiB/s');
  });
});
