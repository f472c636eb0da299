// What containerd reads only when it starts (config.toml, the proxy drop-in), by content digest.
// The restart steps compare these with the digests recorded at containerd's last restart: the
// files on disk are the truth, so a run killed between writing a file and recording that it did
// still restarts containerd on the next run.
import { createHash } from 'node:crypto';
import type { Host } from '../host/index.ts';

export type Digests = Record<string, string | null>;

export async function digestsOf(fs: Host['fs'], paths: readonly string[]): Promise<Digests> {
  const out: Digests = {};
  for (const path of paths) {
    const content = await fs.readFile(path);
    out[path] = content !== undefined ? createHash('sha256').update(content).digest('hex') : null;
  }
  return out;
}

/**
 * The files whose content changed since containerd last started for them. With nothing recorded
 * (the first run, or a record from before digests) every file present counts as changed: an
 * extra restart before the node joins costs a second, a missed one leaves containerd on its old
 * configuration.
 */
export function changedSince(seen: unknown, now: Digests): string[] {
  const before = seen && typeof seen === 'object' ? (seen as Record<string, unknown>) : {};
  return Object.entries(now)
    .filter(([path, digest]) => (path in before ? before[path] !== digest : digest !== null))
    .map(([path]) => path);
}
