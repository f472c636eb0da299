// The record of what machineadm did to each machine file it wrote, kept in the state directory's
// written/ folder (one small JSON file each, named after the file's machine path): what was there
// before (nothing, or a file with this mode and owner, whose bytes are in backup/), the folders
// machineadm created for it, and the fingerprints of what machineadm wrote there. `machineadm
// reset` reads it to give each path back as it was, and to tell a file someone else changed since
// from its own.
//
// Written ahead: the record of a path is written before machineadm creates a folder for it, and is
// on disk before machineadm renames its bytes into place, so a run killed at any moment leaves
// nothing the record does not name. The first of these writes (the folders about to be made) is
// not flushed on its own: the second, made durable before the rename, carries the folders too. A
// power cut between the two can leave a folder machineadm made that its record does not name
// (reset then leaves it, empty); one fsync fewer for every file that needs a new folder.
//
// The records lie side by side in written/ itself, so that the folder is flushed once however many
// folders the files are in. Earlier versions kept each at the file's machine path below written/
// (written/etc/sysctl.d/90-machineadm.conf): such a record is still read, and replaced by one side
// by side at the path's next write.
import * as nodePath from 'node:path';
import * as fsp from './fs-calls.ts';
import { processRuns } from './process-runs.ts';
import { temporaryName } from './durable-files.ts';

/**
 * What identifies the bytes machineadm put at a path: their SHA-256, and the inode its rename
 * brought with size and time. reset compares the content when the hash is there (a touch that
 * keeps the bytes is still machineadm's; an edit with its time put back is not); records of
 * earlier versions have only the inode, size and time.
 */
export interface Fingerprint {
  ino: number;
  size: number;
  mtimeMs: number;
  sha256?: string;
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
  /** machineadm wrote a secret there (a file whose content is a secret reference): reset shows no diff of it. */
  secret?: boolean;
  /**
   * Written before the folders were made, ahead of a write of machineadm's own (a download begun
   * with the run makes them long before its step's turn): while nothing is written, the record
   * names those folders only. What is at the path is looked at again by the write (a file there
   * then is someone else's, kept and given back), and reset leaves the path itself alone.
   */
  foldersOnly?: boolean;
}

/** Fingerprints kept per path: a run killed between its record and its rename leaves the one before on disk. */
const KEPT = 8;

/** A temporary record file this old was left by a killed writer, whatever runs under its pid now. */
const ABANDONED_AFTER_MS = 10 * 60_000;

/** A record's name at most, in bytes (file systems allow 255; a temporary name adds to it). */
const NAME_MAX = 200;

/**
 * The name of a machine path's record in written/: the path with every byte but letters, digits,
 * `.`, `_` and `-` written %XX (/etc/sysctl.d/90-machineadm.conf is %2Fetc%2Fsysctl.d%2F90-machineadm.conf),
 * or for a longer path `~` and the SHA-256 of it.
 */
export function recordName(machinePath: string): string {
  const name = Array.from(Buffer.from(machinePath, 'utf8'), (b) => (/[A-Za-z0-9._-]/.test(String.fromCharCode(b)) ? String.fromCharCode(b) : `%${b.toString(16).toUpperCase().padStart(2, '0')}`)).join('');
  if (name.length <= NAME_MAX && name !== '.' && name !== '..') return name;
  return `~${process.getBuiltinModule('node:crypto').createHash('sha256').update(machinePath).digest('hex')}`;
}

export function fingerprintOf(st: { ino: number; size: number; mtimeMs: number }, sha256: string | undefined): Fingerprint {
  return { ino: st.ino, size: st.size, mtimeMs: st.mtimeMs, ...(sha256 ? { sha256 } : {}) };
}

/**
 * Whether the file now at a path (its stat, its bytes' SHA-256) holds what `written` recorded: by
 * content when the record has its hash, else (an earlier version's record) by inode, size and time.
 */
export function holdsWritten(written: Fingerprint, now: Fingerprint & { sha256: string }): boolean {
  if (written.sha256 !== undefined) return written.sha256 === now.sha256;
  return written.ino === now.ino && written.size === now.size && written.mtimeMs === now.mtimeMs;
}

export function sha256Of(bytes: Uint8Array): string {
  return process.getBuiltinModule('node:crypto').createHash('sha256').update(bytes).digest('hex');
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

  /** Where the record of a machine path is kept. */
  recordPath(machinePath: string): string {
    return this.path.join(this.dir, recordName(this.path.normalize(machinePath)));
  }

  /** Where an earlier version kept it: at the machine path below written/ (C:\x and D:\x apart, as backups). */
  private earlierPath(machinePath: string): string {
    const p = this.path;
    const parsed = p.parse(p.normalize(machinePath));
    const drive = /^[A-Za-z]:/.test(parsed.root) ? parsed.root[0]! : '';
    return p.join(this.dir, drive, p.normalize(machinePath).slice(parsed.root.length));
  }

  async read(machinePath: string): Promise<WrittenRecord | undefined> {
    return (await readRecord(this.recordPath(machinePath))) ?? (await readRecord(this.earlierPath(machinePath)));
  }

  /**
   * The record's bytes are on disk before its rename. `beforeFolders` for the intent written before
   * machineadm creates folders, which is written again, durably, before the file's rename: neither
   * its bytes nor its folder are flushed now (see the head of this file).
   */
  async write(record: WrittenRecord, options: { beforeFolders?: boolean } = {}): Promise<void> {
    const real = this.recordPath(record.path);
    const dir = this.dir;
    await this.clearedOnce(dir);
    const temp = this.path.join(dir, temporaryName(this.path.basename(real)));
    try {
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
    } catch (error) {
      // A full file system fails the write after the file was made: no empty record left behind.
      await fsp.rm(temp, { force: true }).catch(() => undefined);
      throw error;
    }
    if (!options.beforeFolders) await this.onRename(dir);
    // The record in an earlier version's place goes once this one holds what it held.
    const earlier = this.earlierPath(record.path);
    if (!options.beforeFolders && earlier !== real && (await fsp.lstatIfAny(earlier).catch(() => undefined))?.isFile()) await fsp.rm(earlier, { force: true });
  }

  private cleared: Promise<void> | undefined;

  /**
   * Makes the folder, the first time this process writes a record, and removes the temporary files
   * that writers killed before their rename left in it: their process is gone, or the file is older
   * than any write takes (its pid is another process's since a reboot).
   */
  private clearedOnce(dir: string): Promise<void> {
    this.cleared ??= (async () => {
      await fsp.mkdir(dir, { recursive: true, mode: 0o700 });
      for (const name of await fsp.readdir(dir).catch(() => [] as string[])) {
        const pid = /^\..*\.machineadm-tmp-(\d+)-[0-9a-f]+$/.exec(name)?.[1];
        if (pid === undefined || Number(pid) === process.pid) continue;
        const path = this.path.join(dir, name);
        const old = async () => ((await fsp.lstatIfAny(path).catch(() => undefined))?.mtimeMs ?? Date.now()) < Date.now() - ABANDONED_AFTER_MS;
        if (!processRuns(Number(pid)) || (await old())) await fsp.rm(path, { force: true });
      }
    })();
    return this.cleared.catch((e: unknown) => {
      this.cleared = undefined;
      throw e;
    });
  }

  /** Every record, sorted by machine path; of a path with records in both places, the one side by side. */
  async all(): Promise<WrittenRecord[]> {
    const found = new Map<string, WrittenRecord>();
    const walk = async (real: string): Promise<void> => {
      const names = await fsp.readdir(real).catch(() => [] as string[]);
      for (const name of names.sort()) {
        const child = this.path.join(real, name);
        const st = await fsp.lstat(child).catch(() => undefined);
        if (st?.isDirectory()) await walk(child);
        else if (st?.isFile() && !name.includes('.machineadm-tmp-')) {
          const record = await readRecord(child);
          if (record && (!found.has(record.path) || child === this.recordPath(record.path))) found.set(record.path, record);
        }
      }
    };
    await walk(this.dir);
    return [...found.values()].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  }
}

async function readRecord(real: string): Promise<WrittenRecord | undefined> {
  const text = await fsp.readFile(real).catch(() => undefined);
  if (text === undefined) return undefined;
  try {
    return JSON.parse(text.toString('utf8')) as WrittenRecord;
  } catch {
    // A torn record cannot exist (written atomically); a damaged one names no change of its own.
    return undefined;
  }
}
