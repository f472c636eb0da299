// How far a download has come: bytes, rate and time left, reported at most once a period (and
// once at the end) from the byte counts a copy sees. The rate is over the last few seconds, so a
// mirror that slows down shows the time left it now needs, not the average since the start.

export interface TransferProgress {
  receivedBytes: number;
  /** What the server announced; unknown for a chunked answer. */
  totalBytes?: number;
  bytesPerSecond: number;
  /** With a total and a rate above 0 only. */
  etaSeconds?: number;
}

const WINDOW_MS = 5_000;

/**
 * A download's onProgress that hands `report` the progress every `periodMs`, and at the end (the
 * total reached). `now` is the process's clock, in milliseconds.
 */
export function progressMeter(report: (progress: TransferProgress) => void, periodMs = 1_000, now: () => number = () => performance.now()): (received: number, total: number | undefined) => void {
  const samples: Array<{ at: number; received: number }> = [];
  let lastReport = Number.NEGATIVE_INFINITY;
  let done = false;
  return (received, total) => {
    const at = now();
    // A copy that starts over (another mirror, a server that ignored Range) starts the rate over.
    if (samples.length > 0 && received < samples.at(-1)!.received) samples.length = 0;
    samples.push({ at, received });
    while (samples.length > 2 && samples[0]!.at < at - WINDOW_MS) samples.shift();
    const end = total !== undefined && received >= total;
    if (done || (!end && at - lastReport < periodMs)) return;
    lastReport = at;
    done = end;
    const first = samples[0]!;
    const seconds = (at - first.at) / 1000;
    const bytesPerSecond = seconds > 0 ? Math.round((received - first.received) / seconds) : 0;
    report({
      receivedBytes: received,
      ...(total !== undefined ? { totalBytes: total } : {}),
      bytesPerSecond,
      ...(total !== undefined && bytesPerSecond > 0 ? { etaSeconds: Math.ceil((total - received) / bytesPerSecond) } : {}),
    });
  };
}

const mib = (n: number): string => (n / 1024 / 1024).toFixed(1);

function duration(seconds: number): string {
  if (seconds < 60) return `${seconds} s`;
  const m = Math.floor(seconds / 60);
  return m < 60 ? `${m} min ${seconds % 60} s` : `${Math.floor(m / 60)} h ${m % 60} min`;
}

/** "12.3 of 64.0 MiB (19%), 10.1 MiB/s, 6 s left" */
export function formatProgress(p: TransferProgress): string {
  const size = p.totalBytes !== undefined ? `${mib(p.receivedBytes)} of ${mib(p.totalBytes)} MiB (${p.totalBytes > 0 ? Math.floor((p.receivedBytes / p.totalBytes) * 100) : 100}%)` : `${mib(p.receivedBytes)} MiB`;
  const left = p.etaSeconds !== undefined && p.receivedBytes !== p.totalBytes ? `, ${duration(p.etaSeconds)} left` : '';
  return `${size}, ${mib(p.bytesPerSecond)} MiB/s${left}`;
}
