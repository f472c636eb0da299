// The record of what machineadm did to each machine file it wrote, kept in the state directory's
// written/ folder at the file's machine path (one small JSON file each): what was there before
// (nothing, or a file with this mode and owner, whose bytes are in backup/), the folders machineadm
// created for it, and the fingerprints of what machineadm wrote there. `machineadm reset` reads it
// to give each path back as it was, and to tell a file someone else changed since from its own.
//
// Written ahead: the record of a path is written before machineadm creates a folder for it, and is
// on disk before machineadm renames its bytes into place, so a run killed at any moment leaves
// nothing the record does not name. The first of these writes (the folders about to be made) is
// not flushed on its own: the second, made durable before the rename, carries the folders too. A
// power cut between the two can leave a folder machineadm made that its record does not name
// (reset then leaves it, empty); one fsync fewer for every file that needs a new folder.
import * as nodePath from 'node:path';
import * as fsp from './fs-calls.ts';

/** What identifies the bytes machineadm put at a path: the inode its rename brought, with size and time. */
export interface Fingerprint {
  ino: number;
  size: number;
  mtimeMs: number;
}

export interface Attributes {
  mode: number;
  uid: number;
  gid: number;
}

export interface WrittenRecord {
  /** The machine path. */
  path: string;
  /** What was at the path before machineadm first wrote it: null for nothing (machineadm created it). */
  before: Attributes | null;
  /** Folders machineadm created for the file, outermost first (machine paths). */
  dirs: string[];
  /** What machineadm wrote there, oldest first (the last few). */
  written: Fingerprint[];
  /**
   * A file that tools rewrite on their own at every change they make (the shadow tools' backups):
   * nobody's edits live there, so reset gives it back whoever wrote it last, and a run killed
   * between the tool's write and machineadm's note of it leaves nothing reset refuses.
   */
  anyWriter?: boolean;
}

/** Fingerprints kept per path: a run killed between its record and its rename leaves the one before on disk. */
const KEPT = 8;

export function fingerprintOf(st: { ino: number; size: number; mtimeMs: number }): Fingerprint {
  return { ino: st.ino, size: st.size, mtimeMs: st.mtimeMs };
}

export function sameFingerprint(a: Fingerprint, b: Fingerprint): boolean {
  return a.ino === b.ino && a.size === b.size && a.mtimeMs === b.mtimeMs;
}

/** The record store: `dir` is a real path (the state directory's written/). */
export class WrittenRecords {
  readonly dir: string;
  private readonly path: typeof nodePath.posix;
  /** Folders a record was renamed into, for the file system's deferred directory fsyncs. */
  private readonly onRename: (dir: string) => Promise<void>;

  constructor(dir: string, path: typeof nodePath.posix, onRename: (dir: string) => Promise<void>) {
    this.path = path;
    this.dir = path.resolve(dir);
    this.onRename = onRename;
  }

  /** Where the record of a machine path is kept (C:\x and D:\x apart, as backups). */
  recordPath(machinePath: string): string {
    const p = this.path;
    const parsed = p.parse(p.normalize(machinePath));
    const drive = /^[A-Za-z]:/.test(parsed.root) ? parsed.root[0]! : '';
    return p.join(this.dir, drive, p.normalize(machinePath).slice(parsed.root.length));
  }

  async read(machinePath: string): Promise<WrittenRecord | undefined> {
    const text = await fsp.readFile(this.recordPath(machinePath)).catch(() => undefined);
    if (text === undefined) return undefined;
    try {
      return JSON.parse(text.toString('utf8')) as WrittenRecord;
    } catch {
      // A torn record cannot exist (written atomically); a damaged one names no change of its own.
      return undefined;
    }
  }

  /**
   * The record's bytes are on disk before its rename. `beforeFolders` for the intent written before
   * machineadm creates folders, which is written again, durably, before the file's rename: neither
   * its bytes nor its folder are flushed now (see the head of this file).
   */
  async write(record: WrittenRecord, options: { beforeFolders?: boolean } = {}): Promise<void> {
    const real = this.recordPath(record.path);
    const dir = this.path.dirname(real);
    await fsp.mkdir(dir, { recursive: true, mode: 0o700 });
    // Named as every temporary file machineadm writes (fs.ts's temporaryName); what a killed
    // writer left of this record goes first.
    const base = this.path.basename(real);
    const prefix = `.${base}.machineadm-tmp-`;
    for (const name of await fsp.readdir(dir).catch(() => [] as string[])) if (name.startsWith(prefix)) await fsp.rm(this.path.join(dir, name), { force: true });
    const temp = this.path.join(dir, `${prefix}${process.pid}-${process.getBuiltinModule('node:crypto').randomBytes(6).toString('hex')}`);
    await fsp.writeFile(temp, JSON.stringify({ ...record, written: record.written.slice(-KEPT) }) + '\n', { mode: 0o600 });
    if (!options.beforeFolders) {
      const handle = fsp.openAtOnce(temp, 'r');
      try {
        await handle.sync();
      } finally {
        handle.closeNow();
      }
    }
    await fsp.rename(temp, real);
    if (!options.beforeFolders) await this.onRename(dir);
  }

  /** Every record, sorted by machine path. */
  async all(): Promise<WrittenRecord[]> {
    const out: WrittenRecord[] = [];
    const walk = async (real: string): Promise<void> => {
      const names = await fsp.readdir(real).catch(() => [] as string[]);
      for (const name of names.sort()) {
        const child = this.path.join(real, name);
        const st = await fsp.lstat(child).catch(() => undefined);
        if (st?.isDirectory()) await walk(child);
        else if (st?.isFile() && !name.includes('.machineadm-tmp-')) {
          const text = await fsp.readFile(child).catch(() => undefined);
          try {
            if (text) out.push(JSON.parse(text.toString('utf8')) as WrittenRecord);
          } catch {
            // See read().
          }
        }
      }
    };
    await walk(this.dir);
    return out.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  }
}
