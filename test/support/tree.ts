// A byte-for-byte picture of a directory tree (kind, mode, owner, content hash, link target of every
// entry, symbolic links not followed), to show that a refused run changed nothing.
import { createHash } from 'node:crypto';
import { lstatSync, readFileSync, readdirSync, readlinkSync, existsSync } from 'node:fs';
import { join, relative } from 'node:path';

export type TreeSnapshot = Record<string, string>;

export function snapshotTree(root: string): TreeSnapshot {
  const out: TreeSnapshot = {};
  if (!existsSync(root)) return out;
  const visit = (path: string): void => {
    const st = lstatSync(path);
    const name = relative(root, path) || '.';
    const meta = `mode ${(st.mode & 0o7777).toString(8)} owner ${st.uid}:${st.gid}`;
    if (st.isSymbolicLink()) out[name] = `link -> ${readlinkSync(path)}`;
    else if (st.isDirectory()) {
      out[name] = `dir ${meta}`;
      for (const entry of readdirSync(path).sort()) visit(join(path, entry));
    } else if (!st.isFile()) out[name] = `other ${meta}`; // a FIFO or a device: reading it would wait or never end
    else out[name] = `file ${meta} sha256 ${createHash('sha256').update(readFileSync(path)).digest('hex')}`;
  };
  visit(root);
  return out;
}
