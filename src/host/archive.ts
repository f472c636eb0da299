// Archiving a directory machineadm is done with (the state directory after a reset): renamed in
// place with the time, never deleted, so what was recorded and the copies of replaced files stay
// at hand. One rename: a run killed before it finds the directory as it was, after it finds none.
import * as nodePath from 'node:path';
import * as fsp from './fs-calls.ts';

/** Where a reset archives a directory: `<dir>.reset-<UTC time, 20261204T051432Z>`. */
export function archivedName(dir: string, stamp: string): string {
  return `${dir}.reset-${stamp}`;
}

/** Renames `dir` to archivedName() (with a counter when that exists); `drop` names a file to take out of the archive (the run lock). */
export async function archiveDirectory(dir: string, drop: string | undefined, now: Date): Promise<string> {
  const stamp = now.toISOString().replace(/[-:]/g, '').replace(/\.\d+Z$/, 'Z');
  let target = archivedName(dir, stamp);
  for (let n = 2; await fsp.lstat(target).then(() => true, () => false); n++) target = `${archivedName(dir, stamp)}-${n}`;
  await fsp.rename(dir, target);
  if (drop !== undefined) await fsp.rm(nodePath.join(target, drop), { force: true });
  if (process.platform !== 'win32') {
    const handle = await fsp.open(nodePath.dirname(dir), 'r');
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
  }
  return target;
}
