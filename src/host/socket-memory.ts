// Keeps a long download's memory bounded. Every socket read arrives in a fresh 64 KiB buffer whose
// memory lives outside the JavaScript heap and is returned only when the young generation is
// collected; V8 collects it on heap pressure, which such small objects hardly make, so ~100 MiB of
// read buffers piled up whatever the file size. A young-generation collection every few MiB
// received returns them (it costs well under a millisecond: the young generation is nearly empty).

type Collect = (options: { type: 'minor'; execution: 'sync' }) => void;

/**
 * How many bytes may be received between two collections. Measured on 1 GiB from 127.0.0.1: every
 * 2 MiB, peak RSS 76 MiB and 2.06-2.18 s of CPU; every 4 MiB, 89-90 MiB and 2.00-2.07 s; every
 * 8 MiB, 99-100 MiB (the limit) and 1.93-1.99 s.
 */
export const COLLECT_EVERY_BYTES = 4 * 1024 * 1024;

let collect: Collect | undefined;

function collector(): Collect | undefined {
  if (collect === undefined) {
    try {
      // The documented way to reach V8's collector from a running program (as Jest does): expose
      // it, then read it from a fresh context, which is created with the flag in effect. node:v8
      // and node:vm load here, at the first download, not in every run that might download.
      process.getBuiltinModule('node:v8').setFlagsFromString('--expose-gc');
      collect = process.getBuiltinModule('node:vm').runInNewContext('gc') as Collect;
    } catch {
      collect = () => undefined;
    }
  }
  return collect;
}

// Counted across every download of the process: downloads at once pile up their read buffers
// together, so the bound holds for all of them, and they share the collections.
let since = 0;

/** Counts received bytes; collects the young generation every COLLECT_EVERY_BYTES received by the process. */
export function receivedBytesCollector(every = COLLECT_EVERY_BYTES): (bytes: number) => void {
  return (bytes) => {
    since += bytes;
    if (since < every) return;
    since = 0;
    collector()?.({ type: 'minor', execution: 'sync' });
  };
}
