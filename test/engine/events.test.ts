import { describe, expect, it } from 'vitest';
import { EVENT_SIZE_LIMIT, EventBus, limitEventSize, worstResult, type MachineEvent, type Result } from '../../src/engine/events.ts';
import { SecretScrubber } from '../../src/config/secrets.ts';

const bytes = (v: unknown) => Buffer.byteLength(JSON.stringify(v));

describe('event ids', () => {
  it('are the run id and a sequence number, unique and increasing within a run', () => {
    const bus = new EventBus();
    const seen: MachineEvent[] = [];
    bus.listen((e) => seen.push(e));
    for (let i = 0; i < 1500; i++) bus.emit({ type: 'log', message: String(i) });
    const ids = seen.map((e) => e.id);
    expect(new Set(ids).size).toBe(1500);
    expect([...ids].sort()).toEqual(ids);
    expect(ids[0]).toBe(`${bus.runId}.000001`);
    expect(bus.sequence).toBe(1500);
  });

  it('differ between runs', () => {
    const a = new EventBus().emit({ type: 'run.started' });
    const b = new EventBus().emit({ type: 'run.started' });
    expect(a.id).not.toBe(b.id);
    expect(a.runId).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('come with secrets already scrubbed for every listener', () => {
    const secrets = new SecretScrubber();
    secrets.add('hunter2-very-secret');
    const bus = new EventBus({ scrub: (v) => secrets.scrubValue(v) });
    const seen: string[] = [];
    bus.listen((e) => seen.push(JSON.stringify(e)));
    bus.emit({ type: 'step.finished', result: 'failure', error: { message: 'token hunter2-very-secret refused', code: 1, details: { outputTail: 'x\nhunter2-very-secret\n' } } });
    expect(seen.join('')).not.toContain('hunter2-very-secret');
    expect(seen.join('')).toContain('<redacted>');
  });

  it('scrub a secret that holds another whole, whichever was registered first, after scrubbing has begun', () => {
    const secrets = new SecretScrubber();
    secrets.add('pass');
    expect(secrets.scrub('a pass')).toBe('a <redacted>');
    // Registered later, longer, holding the first: it still goes first, so none of it shows.
    secrets.add('user:password');
    expect(secrets.scrub('user:password and pass')).toBe('<redacted> and <redacted>');
    secrets.add('pass');
    expect(secrets.scrub('x user:password')).toBe('x <redacted>');
  });
});

describe('the result of a phase', () => {
  it.each<[Result[], Result]>([
    [[], 'skipped'],
    [['skipped', 'skipped'], 'skipped'],
    [['success', 'success'], 'success'],
    [['success', 'skipped'], 'success'],
    [['skipped', 'warning', 'success'], 'warning'],
    [['warning', 'failure', 'success'], 'failure'],
  ])('of steps %j is %s', (results, expected) => {
    expect(worstResult(results)).toBe(expected);
  });
});

describe('an event over the size limit', () => {
  const longTail = Array.from({ length: 6000 }, (_, i) => `line ${i} of the kubeadm output, padded to be long enough`).join('\n');

  it('is cut at its output tails, keeping their last lines, with a marker', () => {
    const event = { id: 'r.000001', type: 'step.finished', time: 't', runId: 'r', error: { message: 'kubeadm join failed', code: 1, details: { outputTail: longTail, kubeletLogTail: longTail, kubeadmPhase: 'kubelet-start' } } };
    expect(bytes(event)).toBeGreaterThan(EVENT_SIZE_LIMIT);
    const cut = limitEventSize(event);
    expect(bytes(cut)).toBeLessThanOrEqual(EVENT_SIZE_LIMIT);
    expect(cut.truncated).toBe(true);
    expect(cut.error.message).toBe('kubeadm join failed');
    expect(cut.error.details.kubeadmPhase).toBe('kubelet-start');
    for (const tail of [cut.error.details.outputTail, cut.error.details.kubeletLogTail]) {
      expect(tail).toMatch(/^\[cut by machineadm: \d+ bytes removed to keep the event under 60 KiB\]\n/);
      expect(tail.endsWith('line 5999 of the kubeadm output, padded to be long enough')).toBe(true);
    }
    expect(event.error.details.outputTail).toBe(longTail);
  });

  it('is cut in any long text when the tails are not enough, keeping its start', () => {
    const event = { id: 'r.000002', type: 'log', time: 't', runId: 'r', message: 'é'.repeat(100_000) };
    const cut = limitEventSize(event);
    expect(bytes(cut)).toBeLessThanOrEqual(EVENT_SIZE_LIMIT);
    expect(cut.message.startsWith('éé')).toBe(true);
    expect(cut.message).toMatch(/\[cut by machineadm: \d+ bytes removed/);
    expect(cut.id).toBe('r.000002');
  });

  it('is left alone under the limit', () => {
    const event = { id: 'r.1', type: 'log', time: 't', runId: 'r', message: 'short' };
    expect(limitEventSize(event)).toBe(event);
  });

  it('is cut by the bus before any listener sees it', () => {
    const bus = new EventBus();
    let seen: MachineEvent | undefined;
    bus.listen((e) => (seen = e));
    bus.emit({ type: 'step.finished', error: { message: 'm', code: 1, details: { outputTail: longTail } } });
    expect(bytes(seen)).toBeLessThanOrEqual(EVENT_SIZE_LIMIT);
    expect(seen?.truncated).toBe(true);
  });
});
