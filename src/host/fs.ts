// File system access, always under the --root prefix. Every write is atomic (temporary file in the
// same directory, fsync, rename, fsync of the directory: at once, or for many writes together, see
// deferDirectorySyncs) and a file that machineadm replaces is
// kept once under the backup directory (the state directory's backup/), at its machine path: never
// beside the file, where the kubelet, systemd and sysctl would read it as one more live file.
import { closeSync, constants, createWriteStream, fchmodSync, fchownSync, fsyncSync, mkdirSync, openSync, realpathSync, renameSync, rmSync, writeSync, type WriteStream } from 'node:fs';
import * as fsp from './fs-calls.ts';
import * as nodePath from 'node:path';
import { once } from 'node:events';
import { MachineadmError, ExitCode, UsageError } from '../errors.ts';
import { processRuns } from './process-runs.ts';
import { WrittenRecords, fingerprintOf, type Fingerprint, type WrittenRecord } from './written.ts';

export interface FileInfo {
  kind: 'file' | 'directory' | 'symlink' | 'other';
  mode: number;
  uid: number;
  gid: number;
  size: number;
  /** Last modification, ms since the epoch. */
  modifiedMs?: number;
}

export interface Owner {
  uid: number;
  gid: number;
}

export interface WriteOptions {
  /** Permission bits, e.g. 0o644. Secrets are written 0o600. */
  mode?: number;
  /** "user:group" by name or number; applied only when machineadm runs as root. */
  owner?: string;
  /** Keep the replaced file once under the backup directory (default true; no-op without one). */
  backup?: boolean;
  /**
   * fsync the file and its directory (default true; the directory's fsync may be deferred, see
   * deferDirectorySyncs). False only for files that a crash or a boot may lose anyway (those under
   * /run, a tmpfs): still atomic, no disk flush.
   */
  durable?: boolean;
}

export interface FileSystemOptions {
  platform?: 'linux' | 'windows';
  /**
   * A real directory where a replaced file is kept once, at its machine path (/etc/x -> <dir>/etc/x).
   * Without one nothing is backed up: the operator's own files (fetch -o) and machineadm's state.
   */
  backupDir?: string;
  /**
   * A real directory where machineadm records, ahead of each write, what it does to a machine path
   * (see written.ts): what `machineadm reset` undoes. Writes without a backup (reports, the resume
   * unit) are machineadm's own and not recorded.
   */
  writtenDir?: string;
}

/** A file being written; nothing appears at its path until commit(). */
export interface PendingFile {
  readonly stream: WriteStream;
  /**
   * Writes the bytes at the end of the file before returning, for a writer that produces them
   * faster than the thread pool's round trips (a download: ~0.3 s of CPU a GiB through the
   * stream). Not to be mixed with writes through `stream`.
   */
  appendSync(bytes: Uint8Array): void;
  /**
   * Everything that can fail before the rename: finish writing, fsync, mode, owner, the backup.
   * Several files are placed all or none by sealing every one before committing any.
   */
  seal(): Promise<void>;
  /** seal() if not done, then rename into place. */
  commit(): Promise<void>;
  /** Remove the temporary file, and the folders made for it when they are empty; the path is untouched. */
  abort(): Promise<void>;
}

/**
 * Data up to this size is written to its temporary file at once, as one write(2) to the page
 * cache (microseconds), and only its fsync waits in the thread pool: a configuration file takes one
 * trip through the pool instead of the seven of a stream (open, write, close, open, fsync, chmod,
 * close). Larger data goes through a stream, so that timers and downloads go on while it is written.
 */
const WRITTEN_AT_ONCE_BYTES = 1024 * 1024;

/** An atomic write's paths and what its seal and rename need (see prepareWrite). */
interface WriteTarget {
  real: string;
  dir: string;
  temp: string;
  mode: number;
  owner: Owner | undefined;
  durable: boolean;
  /** Where the file replaced is kept once; undefined when nothing is replaced or nothing is kept. */
  backup: string | undefined;
  record: WrittenRecord | undefined;
  /** The first folder the write created (undefined: all existed). */
  madeFrom: string | undefined;
}

/** An aborted write: its temporary file removed, and the folders made for it when they are empty. */
async function discard(target: WriteTarget, root: string, path: typeof nodePath.posix): Promise<void> {
  await fsp.rm(target.temp, { force: true });
  if (target.madeFrom !== undefined) await removeEmptyFolders(target.dir, target.madeFrom, root, path);
}

/** Writes every byte at the descriptor's position, however many calls write(2) takes. */
function writeAllSync(fd: number, bytes: Uint8Array): void {
  for (let written = 0; written < bytes.length; ) written += writeSync(fd, bytes, written, bytes.length - written);
}

/** Temporary files are named .<name><TEMP_MARK><random>, next to the file they become. */
export const TEMP_MARK = '.machineadm-tmp-';

export class FileSystemError extends MachineadmError {
  constructor(message: string, options: { hint?: string; cause?: unknown } = {}) {
    super(message, ExitCode.stepFailed, options);
  }
}

/** Reads of configuration-sized files: one block holds any configuration. */
const READ_UP_TO_BLOCK = 64 * 1024;
/** How long a pipe read whole may send nothing before it is given up. */
export const PIPE_IDLE_MS = 30_000;

/** 1 MiB: large enough that per-read costs vanish next to hashing, small enough to stay in cache. */
export const READ_BLOCK_SIZE = 1024 * 1024;

/**
 * Blocks in turn: the one being hashed and the one being read. More reads in flight keep the hash
 * fed when the reading threads wait for a CPU (on a loaded machine, 1 GB took ~1.2x as long with
 * two as with eight), but each block is then cold in the cache when it is hashed: on a quiet
 * machine, hashing 100 MB read this way took 84-86 ms with two blocks, 89-91 ms with three and
 * 102-114 ms with eight (a synchronous loop over one buffer: 98 ms); verify of 100 MB went from
 * 1.33x to 1.16x minisign's time, and 1 GB stays ~0.6x.
 */
export const READ_AHEAD_BLOCKS = 2;

/** How much a file being written may buffer before its writer waits. */
export const WRITE_BUFFER_SIZE = 1024 * 1024;

/**
 * Bytes appended to a durable file (appendSync) between two flushes while it is written. On a
 * machine with much memory the kernel keeps every byte of a download dirty until the final fsync,
 * which then writes them all after the last byte arrived: eight downloads of 64 MiB waited
 * ~0.45 s for their fsyncs. Flushed as they come, the disk works while the network does and the
 * final fsync finds little left.
 */
export const WRITE_BEHIND_BYTES = 8 * 1024 * 1024;

export class RootedFileSystem {
  readonly root: string;
  readonly platform: 'linux' | 'windows';
  readonly backupDir: string | undefined;
  /** The records of what machineadm wrote (see FileSystemOptions.writtenDir). */
  readonly written: WrittenRecords | undefined;
  private readonly path: typeof nodePath.posix;
  /** Directories renamed into by durable writes whose fsync waits for syncDirectories(); undefined: none waits. */
  private pendingDirectories: Set<string> | undefined;

  constructor(root: string, options: FileSystemOptions = {}) {
    this.platform = options.platform ?? (process.platform === 'win32' ? 'windows' : 'linux');
    this.path = this.platform === 'windows' ? nodePath.win32 : nodePath.posix;
    this.root = this.path.resolve(root);
    this.backupDir = options.backupDir === undefined ? undefined : this.path.resolve(options.backupDir);
    const onRename = async (dir: string): Promise<void> => {
      if (this.pendingDirectories) this.pendingDirectories.add(dir);
      else await syncDirectory(dir);
    };
    this.written = options.writtenDir === undefined ? undefined : new WrittenRecords(options.writtenDir, this.path, onRename);
  }

  /**
   * The record of a machine path machineadm is about to change, written now when it has none: what
   * is there (its bytes kept once under the backup directory), and the folders a write would create.
   */
  private async recordFirstTouch(machinePath: string, existing: { isFile(): boolean; mode: number; uid: number; gid: number } | undefined, ahead = false, anyWriter = false): Promise<WrittenRecord | undefined> {
    if (!this.written) return undefined;
    const found = await this.written.read(machinePath);
    if (found) return found;
    const dirs: string[] = [];
    if (!existing) {
      for (let d = this.path.dirname(machinePath); this.path.dirname(d) !== d; d = this.path.dirname(d)) {
        if (await fsp.lstatIfAny(this.mapPath(d)).then((st) => st !== undefined, () => false)) break;
        dirs.unshift(d);
      }
    }
    const record: WrittenRecord = { path: machinePath, before: existing ? { mode: existing.mode & 0o7777, uid: existing.uid, gid: existing.gid } : null, dirs, written: [], ...(anyWriter ? { anyWriter: true } : {}) };
    const backup = this.backupPath(machinePath);
    if (existing?.isFile() && backup !== undefined) await keepBackupOnce(this.mapPath(machinePath), backup, this.path);
    // A write of machineadm's own records again, durably, before its rename: needed now only when
    // folders are to be made first. A tool about to change the file (`ahead`) needs it on disk now.
    if (ahead) await this.written.write(record);
    else if (dirs.length > 0) await this.written.write(record, { beforeFolders: true });
    return record;
  }

  /**
   * A tool other than machineadm is about to change this machine file (adcli writes the keytab):
   * recorded, and its bytes kept, as for a write of machineadm's own. Then noteWritten().
   * `anyWriter`: a file the tools rewrite on their own at every change (the shadow tools' backups,
   * /etc/passwd-): reset gives it back whoever wrote it last (see WrittenRecord.anyWriter).
   */
  async keepOriginal(machinePath: string, options: { anyWriter?: boolean } = {}): Promise<void> {
    const real = await this.resolve(machinePath);
    await this.recordFirstTouch(machinePath, await fsp.lstatIfAny(real).catch(() => undefined), true, options.anyWriter ?? false);
  }

  /** What is at the path now is machineadm's doing (after a tool it ran wrote it): reset may restore over it. */
  async noteWritten(machinePath: string): Promise<void> {
    if (!this.written) return;
    const real = await this.resolve(machinePath);
    const st = await fsp.lstatIfAny(real).catch(() => undefined);
    const record = await this.recordFirstTouch(machinePath, st);
    if (!st || !record) return;
    await this.written.write({ ...record, written: [...record.written, fingerprintOf(st)] });
  }

  /** The fingerprint of the file at a machine path now, or undefined when there is no regular file. */
  async fingerprint(machinePath: string): Promise<Fingerprint | undefined> {
    const st = await fsp.lstatIfAny(await this.resolve(machinePath)).catch(() => undefined);
    return st?.isFile() ? fingerprintOf(st) : undefined;
  }

  /** The bytes machineadm kept of a machine path before it first replaced them, if any. */
  async readBackup(machinePath: string): Promise<Buffer | undefined> {
    const backup = this.backupPath(machinePath);
    if (backup === undefined) return undefined;
    return fsp.readFile(backup).catch(() => undefined);
  }

  /** Removes a folder when it is empty; says whether it is gone. */
  async removeFolderIfEmpty(machinePath: string): Promise<boolean> {
    const real = await this.resolve(machinePath);
    return fsp.rmdir(real).then(
      () => true,
      (e: NodeJS.ErrnoException) => e.code === 'ENOENT',
    );
  }

  /** Where the first replaced content of a machine path is kept, or undefined without a backup directory. */
  backupPath(machinePath: string): string | undefined {
    if (this.backupDir === undefined) return undefined;
    const p = this.path;
    const parsed = p.parse(p.normalize(machinePath));
    // C:\x and D:\x stay apart; on Linux the root is just "/".
    const drive = /^[A-Za-z]:/.test(parsed.root) ? parsed.root[0]! : '';
    return p.join(this.backupDir, drive, p.normalize(machinePath).slice(parsed.root.length));
  }

  /** True when machineadm works on the live machine rather than a scratch directory. */
  get isLiveRoot(): boolean {
    return this.path.parse(this.root).root === this.root;
  }

  /**
   * Maps a machine path (/etc/x, C:\x) to the real path under the root. Refuses relative paths,
   * ".." segments, and paths that leave the root through a symbolic link.
   */
  async resolve(machinePath: string): Promise<string> {
    const real = this.mapPath(machinePath);
    await this.assertInsideRoot(real, machinePath);
    return real;
  }

  /** Path mapping without touching the disk (for messages and plans). */
  mapPath(machinePath: string): string {
    const p = this.path;
    if (!p.isAbsolute(machinePath)) {
      throw new UsageError(`path "${machinePath}" is not absolute`, { hint: 'use an absolute path such as /etc/example.conf' });
    }
    if (machinePath.split(/[\\/]+/).includes('..')) {
      throw new UsageError(`path "${machinePath}" contains ".."`, { hint: 'write the path without ".." segments' });
    }
    if (this.isLiveRoot) return p.normalize(machinePath);
    const withoutDrive = machinePath.slice(p.parse(machinePath).root.length);
    return p.join(this.root, withoutDrive);
  }

  /** The root's real path, once it exists: every path a run touches is checked against it. */
  private rootReal: string | undefined;

  private async assertInsideRoot(real: string, machinePath: string): Promise<void> {
    if (this.isLiveRoot) return;
    this.rootReal ??= await fsp.realpathIfAny(this.root);
    const rootReal = this.rootReal ?? this.root;
    // The deepest ancestor that exists decides where the rest of the path lands.
    let probe = real;
    // Ancestors above the root (which may not exist yet) are the operator's choice, not checked.
    while (probe !== this.root && !this.path.relative(this.root, probe).startsWith('..')) {
      const resolved = await fsp.realpathIfAny(probe);
      if (resolved !== undefined) {
        const rel = this.path.relative(rootReal, resolved);
        if (rel.startsWith('..') || this.path.isAbsolute(rel)) {
          throw new UsageError(`path "${machinePath}" resolves through a symbolic link to ${resolved}, outside the root ${this.root}`, {
            hint: 'remove the link or choose a path inside the root',
          });
        }
        return;
      }
      probe = this.path.dirname(probe);
    }
  }

  async stat(machinePath: string): Promise<FileInfo | undefined> {
    const real = await this.resolve(machinePath);
    const st = await fsp.lstatIfAny(real);
    if (!st) return undefined;
    const kind = st.isSymbolicLink() ? 'symlink' : st.isFile() ? 'file' : st.isDirectory() ? 'directory' : 'other';
    return { kind, mode: st.mode & 0o7777, uid: st.uid, gid: st.gid, size: st.size, modifiedMs: st.mtimeMs };
  }

  async exists(machinePath: string): Promise<boolean> {
    return (await this.stat(machinePath)) !== undefined;
  }

  /** The file's bytes, or undefined when it does not exist. */
  async readFile(machinePath: string): Promise<Buffer | undefined> {
    const real = await this.resolve(machinePath);
    return fsp.readFile(real).catch((e: NodeJS.ErrnoException) => {
      if (e.code === 'ENOENT') return undefined;
      throw e;
    });
  }

  async readText(machinePath: string): Promise<string | undefined> {
    return (await this.readFile(machinePath))?.toString('utf8');
  }

  /** Names in a directory, sorted; empty when it does not exist. */
  async list(machinePath: string): Promise<string[]> {
    const real = await this.resolve(machinePath);
    const names = await fsp.readdir(real).catch((e: NodeJS.ErrnoException) => {
      if (e.code === 'ENOENT') return [] as string[];
      throw e;
    });
    return names.sort();
  }

  async mkdirp(machinePath: string, mode = 0o755): Promise<void> {
    await fsp.mkdir(await this.resolve(machinePath), { recursive: true, mode });
  }

  /**
   * Creates (or replaces) a symbolic link at machinePath pointing to `target`, a path relative to
   * the link's directory (so that it points inside the root, whatever the root is).
   */
  async symlink(target: string, machinePath: string): Promise<void> {
    if (this.path.isAbsolute(target) || target.split(/[\\/]/).filter((p) => p === '..').length > 1) {
      throw new UsageError(`link target "${target}" must be relative to the link's directory`);
    }
    const real = await this.resolve(machinePath);
    const temp = this.path.join(this.path.dirname(real), temporaryName(this.path.basename(real)));
    await fsp.symlink(target, temp);
    await fsp.rename(temp, real);
  }

  async remove(machinePath: string): Promise<void> {
    await fsp.rm(await this.resolve(machinePath), { force: true, recursive: true });
  }

  /**
   * The file's bytes, or undefined once they pass `maxBytes`. Read block by block to the end: a
   * link, a pipe (-c <(...)) or a device has no size to check first, and must not fill memory.
   * Plain reads, not a read stream: streams load a dozen of Node's modules into every start. A
   * regular file is read at once (a configuration, as a run starts: its six trips through the
   * thread pool cost plan and init ~10 ms); a pipe or a device in the pool, which may wait.
   */
  async readUpTo(machinePath: string, maxBytes: number): Promise<Buffer | undefined> {
    const real = await this.resolve(machinePath);
    const regular = await fsp.readRegularUpTo(real, maxBytes, READ_UP_TO_BLOCK);
    if (regular !== undefined) return regular === 'too-large' ? undefined : regular;
    // A FIFO's open waits for a writer, for ever if none comes: opened without waiting, a FIFO
    // nobody writes to reads as empty, and one whose writer goes quiet is given up (PIPE_IDLE_MS).
    const fifo = process.platform !== 'win32' && (await fsp.stat(real).then((st) => st.isFIFO(), () => false));
    const handle = await fsp.open(real, fifo ? constants.O_RDONLY | constants.O_NONBLOCK : 'r');
    try {
      const blocks: Buffer[] = [];
      let size = 0;
      // On the process's clock: a boot's first time sync may set the wall clock while this waits.
      let idleSince = performance.now();
      for (;;) {
        const block = Buffer.allocUnsafe(READ_UP_TO_BLOCK);
        const bytesRead = await handle.read(block, 0, block.length, null).then(
          (r) => r.bytesRead,
          (e: NodeJS.ErrnoException) => {
            if (e.code !== 'EAGAIN') throw e;
            return -1;
          },
        );
        if (bytesRead < 0) {
          if (performance.now() - idleSince > PIPE_IDLE_MS) throw new UsageError(`${machinePath}: nothing arrived through the pipe for ${PIPE_IDLE_MS / 1000} s`, { hint: 'give a file, or a pipe whose writer sends the configuration at once' });
          await new Promise((resolve) => setTimeout(resolve, 10));
          continue;
        }
        idleSince = performance.now();
        if (bytesRead === 0) return Buffer.concat(blocks, size);
        size += bytesRead;
        if (size > maxBytes) return undefined;
        blocks.push(bytesRead === block.length ? block : block.subarray(0, bytesRead));
      }
    } finally {
      await handle.close();
    }
  }

  /**
   * A small file read whole (a secret, a token): its bytes, or why not. Links are followed (a
   * mounted secret is a link), but what it names must be a regular file of at most `maxBytes`:
   * a FIFO would block the open until some writer came, and a device or a huge file fill memory.
   */
  async readSmallFile(machinePath: string, maxBytes: number): Promise<{ bytes: Buffer } | { problem: 'missing' | 'not-a-file' | 'too-large'; size?: number }> {
    const real = await this.resolve(machinePath);
    const st = await fsp.stat(real).catch((e: NodeJS.ErrnoException) => {
      if (e.code === 'ENOENT' || e.code === 'ENOTDIR') return undefined;
      throw e;
    });
    if (!st) return { problem: 'missing' };
    if (!st.isFile()) return { problem: 'not-a-file' };
    if (st.size > maxBytes) return { problem: 'too-large', size: st.size };
    const bytes = await this.readUpTo(machinePath, maxBytes);
    return bytes === undefined ? { problem: 'too-large' } : { bytes };
  }

  /**
   * The file's bytes in blocks, for hashing at disk speed: up to `depth` buffers allocated once,
   * the blocks ahead read (off the main thread, several at once) while the caller hashes the
   * current one. A yielded block is overwritten after the caller asks for the one after it:
   * consume it (hash, copy) before then.
   */
  async *readBlocks(machinePath: string, blockSize = READ_BLOCK_SIZE, depth = READ_AHEAD_BLOCKS): AsyncGenerator<Uint8Array, void, undefined> {
    const handle = await fsp.open(await this.resolve(machinePath), 'r');
    const ahead: { read: Promise<number>; buffer: Buffer<ArrayBuffer>; offset: number }[] = [];
    try {
      const info = await handle.stat();
      // Reads at explicit offsets can run ahead; a pipe or device has no offsets and is read in turn.
      const positional = info.isFile();
      const count = positional ? Math.max(1, Math.min(depth, Math.ceil(info.size / blockSize) + 1)) : 1;
      const free = Array.from({ length: count }, () => Buffer.allocUnsafeSlow(blockSize));
      let offset = 0;
      const readAhead = (): void => {
        for (let buffer = free.pop(); buffer !== undefined; buffer = free.pop()) {
          const read = handle.read(buffer, 0, blockSize, positional ? offset : null).then((r) => r.bytesRead);
          // Awaited in turn below; until then a failure must not count as unhandled.
          read.catch(() => undefined);
          ahead.push({ read, buffer, offset });
          offset += blockSize;
        }
      };
      readAhead();
      for (;;) {
        const block = ahead.shift()!;
        const bytesRead = await block.read;
        if (bytesRead === 0) return;
        yield block.buffer.subarray(0, bytesRead);
        free.push(block.buffer);
        if (bytesRead < blockSize && positional) {
          // A short read is the end of the file as it was then: reads issued beyond it may have
          // seen bytes appended since, with a gap before them. Drop them and go on from here.
          const dropped = ahead.splice(0);
          await Promise.allSettled(dropped.map((d) => d.read));
          free.push(...dropped.map((d) => d.buffer));
          offset = block.offset + bytesRead;
        }
        readAhead();
      }
    } finally {
      // A consumer that stops early (a failed check) leaves reads running: let them end first.
      await Promise.allSettled(ahead.map((a) => a.read));
      await handle.close();
    }
  }

  /** Writes a whole file atomically; the old content stays intact until the rename. */
  async writeFile(machinePath: string, data: string | Uint8Array, options: WriteOptions = {}): Promise<void> {
    const bytes = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
    if (bytes.length > WRITTEN_AT_ONCE_BYTES) return this.writeFileStreamed(machinePath, bytes, options);
    const target = await this.prepareWrite(machinePath, options);
    try {
      const handle = fsp.openAtOnce(target.temp, 'wx', target.mode);
      try {
        writeAllSync(handle.fd, bytes);
        await this.sealTemporary(target, handle);
      } finally {
        handle.closeNow();
      }
      await this.place(target);
    } catch (error) {
      await discard(target, this.root, this.path);
      throw error;
    }
  }

  private async writeFileStreamed(machinePath: string, data: Uint8Array, options: WriteOptions): Promise<void> {
    const pending = await this.openWrite(machinePath, options);
    try {
      await new Promise<void>((resolve, reject) => {
        pending.stream.once('error', reject);
        pending.stream.end(data, () => resolve());
      });
      await pending.commit();
    } catch (error) {
      await pending.abort();
      throw error;
    }
  }

  /**
   * What every atomic write does before its first byte: refuses a link or a folder at the path,
   * records the path (see written.ts), makes the folders, and names the temporary file.
   */
  private async prepareWrite(machinePath: string, options: WriteOptions): Promise<WriteTarget> {
    const real = await this.resolve(machinePath);
    const existing = await fsp.lstatIfAny(real).catch(() => undefined);
    if (existing?.isSymbolicLink()) {
      throw new FileSystemError(`refusing to write ${machinePath}: it is a symbolic link`, {
        hint: 'remove the link first, or write to the path it points to',
      });
    }
    if (existing?.isDirectory()) {
      throw new FileSystemError(`cannot write ${machinePath}: it is a directory`);
    }
    const dir = this.path.dirname(real);
    const backup = (options.backup ?? true) ? this.backupPath(machinePath) : undefined;
    // An owner that does not exist is refused before anything is recorded or made.
    const owner = options.owner === undefined ? undefined : await this.resolveOwner(options.owner);
    // Recorded before any folder is made or byte written (see written.ts).
    const record = (options.backup ?? true) ? await this.recordFirstTouch(machinePath, existing) : undefined;
    // The first folder this write creates, if any: an aborted write removes what it made.
    const madeFrom = await fsp.mkdir(dir, { recursive: true, mode: 0o755 });
    await removeStaleTemporaries(dir, this.path.basename(real));
    return {
      real,
      dir,
      temp: this.path.join(dir, temporaryName(this.path.basename(real))),
      mode: options.mode ?? (existing ? existing.mode & 0o7777 : 0o644),
      owner,
      durable: options.durable ?? true,
      backup: existing?.isFile() ? backup : undefined,
      record,
      madeFrom,
    };
  }

  /**
   * Everything that can fail before the rename: the bytes on disk (fsync) while the record naming
   * them is written (both are on disk before the rename; neither needs the other first), the mode
   * and owner, the backup of the file replaced.
   */
  private async sealTemporary(target: WriteTarget, handle: fsp.FileHandle): Promise<void> {
    const { record, temp } = target;
    const records = this.written;
    const recorded = record && records ? fsp.lstat(temp).then((st) => records.write({ ...record, written: [...record.written, fingerprintOf(st)] })) : undefined;
    recorded?.catch(() => undefined);
    if (target.durable) await handle.sync();
    // The file was created with the mode, less the umask.
    fchmodSync(handle.fd, target.mode);
    if (target.owner && isRootUser()) fchownSync(handle.fd, target.owner.uid, target.owner.gid);
    if (target.backup !== undefined) await keepBackupOnce(target.real, target.backup, this.path);
    await recorded;
  }

  /** The sealed temporary file renamed into place; the rename made durable, or left to syncDirectories. */
  private async place(target: WriteTarget): Promise<void> {
    await fsp.rename(target.temp, target.real);
    if (!target.durable) return;
    if (this.pendingDirectories) this.pendingDirectories.add(target.dir);
    else await syncDirectory(target.dir);
  }

  /** Starts an atomic write to be streamed into (downloads); see PendingFile. */
  async openWrite(machinePath: string, options: WriteOptions = {}): Promise<PendingFile> {
    const target = await this.prepareWrite(machinePath, options);
    const { temp, mode, durable } = target;
    // Created with the final mode so a secret is never readable by others, even for a moment.
    // A buffer of a few network chunks: a writer through the stream waits for the disk only when it
    // falls behind, not after every chunk (at the default 64 KiB, every write waited). A download
    // does not go through it: it appends directly (appendSync).
    const stream = createWriteStream(temp, { flags: 'wx', mode, highWaterMark: WRITE_BUFFER_SIZE });
    const fd = await new Promise<number>((resolve, reject) => {
      stream.once('open', resolve);
      stream.once('error', reject);
    });
    let sealed = false;
    let done = false;
    // Write-behind (see WRITE_BEHIND_BYTES): one flush at a time, through a descriptor of its own
    // (the stream's may close while a flush runs), which also makes the final fsync: a write-back
    // error is reported to the descriptors open when it happened, so the one that saw the bytes
    // go out is the one asked at the end. A flush that failed fails the seal.
    let unflushed = 0;
    let flusher: Promise<fsp.FileHandle> | undefined;
    let flushing: Promise<void> | undefined;
    let flushError: unknown;
    const writeBehind = (): void => {
      if (!durable || flushing !== undefined || unflushed < WRITE_BEHIND_BYTES) return;
      unflushed = 0;
      flusher ??= fsp.open(temp, 'r+');
      flushing = flusher
        .then((handle) => handle.datasync())
        .catch((error: unknown) => {
          flushError ??= error;
        })
        .finally(() => {
          flushing = undefined;
        });
    };
    const closeFlusher = async (): Promise<void> => {
      const handle = flusher;
      flusher = undefined;
      await handle?.then((h) => h.close(), () => undefined);
    };
    const seal = async (): Promise<void> => {
      if (sealed) return;
      if (!stream.writableEnded) stream.end();
      // Loaded here, by the commands that write: node:stream/promises loads all of Node's streams.
      await process.getBuiltinModule('node:stream/promises').finished(stream);
      if (!stream.closed) await once(stream, 'close');
      await flushing;
      if (flushError !== undefined) {
        await closeFlusher();
        throw flushError;
      }
      const handle = flusher ? await flusher : await fsp.open(temp, 'r+');
      flusher = undefined;
      try {
        await this.sealTemporary(target, handle);
      } finally {
        await handle.close();
      }
      sealed = true;
    };
    return {
      stream,
      appendSync(bytes) {
        // The stream's descriptor, while the stream holds it open.
        if (stream.destroyed || stream.writableEnded) throw stream.errored ?? new Error('the file is closed');
        writeAllSync(fd, bytes);
        unflushed += bytes.length;
        writeBehind();
      },
      seal,
      commit: async () => {
        await seal();
        await this.place(target);
        done = true;
      },
      abort: async () => {
        if (done) return;
        stream.destroy();
        await flushing;
        await closeFlusher();
        await discard(target, this.root, this.path);
      },
    };
  }

  /**
   * From now on a durable write returns once its file's bytes are on disk and renamed into place,
   * and leaves the fsync of its directory (which makes the rename itself survive a power cut) to
   * syncDirectories(): a run that writes many files flushes each directory once, at the moments
   * its records say so, instead of once per file. Until then a power cut may undo a rename (the
   * old file, or none, is back, whole), never leave a torn file.
   */
  deferDirectorySyncs(): void {
    this.pendingDirectories ??= new Set();
  }

  /** fsyncs every directory a deferred durable write renamed into since the last call, each once, together. */
  async syncDirectories(): Promise<void> {
    if (!this.pendingDirectories?.size) return;
    const dirs = [...this.pendingDirectories];
    this.pendingDirectories.clear();
    // Concurrent fsyncs share the file system's journal commits: a few cost about what one does.
    // A directory removed since (a registry no longer configured) has nothing left to flush.
    const gone = (e: NodeJS.ErrnoException): void => {
      if (e.code !== 'ENOENT') throw e;
    };
    await Promise.all(dirs.map((dir) => syncDirectory(dir).catch(gone)));
  }

  /**
   * Removes temporary files in a directory that a killed writer left: those whose writer process
   * is gone, and any older than `olderThanMs` (a name without a pid, or a pid reused since).
   * Another process's write in progress is left alone.
   */
  async removeAbandonedTemporaries(machineDir: string, olderThanMs: number): Promise<void> {
    const dir = await this.resolve(machineDir);
    const now = Date.now();
    for (const name of await fsp.readdir(dir).catch(() => [] as string[])) {
      if (!name.startsWith('.') || !name.includes(TEMP_MARK)) continue;
      const pid = TEMP_WRITER.exec(name)?.[1];
      const path = this.path.join(dir, name);
      const abandoned = pid !== undefined && Number(pid) !== process.pid && !processRuns(Number(pid));
      const old = await fsp.lstat(path).then((st) => now - st.mtimeMs >= olderThanMs, () => false);
      if (abandoned || old) await fsp.rm(path, { force: true });
    }
  }

  /**
   * Writes a small file atomically and durably before returning, without yielding to the event
   * loop: for records that must be on disk before the caller goes on (a spooled event). No backup.
   */
  writeFileDurableSync(machinePath: string, data: string | Uint8Array, mode = 0o600): void {
    const real = this.mapPath(machinePath);
    const dir = this.path.dirname(real);
    mkdirSync(dir, { recursive: true, mode: 0o755 });
    if (!this.isLiveRoot) {
      const rel = this.path.relative(realpathSync(this.root), realpathSync(dir));
      if (rel.startsWith('..') || this.path.isAbsolute(rel)) {
        throw new UsageError(`path "${machinePath}" resolves through a symbolic link outside the root ${this.root}`, { hint: 'remove the link or choose a path inside the root' });
      }
    }
    const temp = this.path.join(dir, temporaryName(this.path.basename(real)));
    const bytes = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
    const fd = openSync(temp, 'wx', mode);
    try {
      writeAllSync(fd, bytes);
      fsyncSync(fd);
    } catch (error) {
      closeSync(fd);
      rmSync(temp, { force: true });
      throw error;
    }
    closeSync(fd);
    renameSync(temp, real);
    if (process.platform !== 'win32') {
      const dirFd = openSync(dir, 'r');
      try {
        fsyncSync(dirFd);
      } finally {
        closeSync(dirFd);
      }
    }
  }

  /** Applies mode and owner to an existing file (used when only those differ); `record: false` for machineadm's own folders. */
  async setAttributes(machinePath: string, options: { mode?: number; owner?: string; record?: boolean }): Promise<void> {
    const real = await this.resolve(machinePath);
    if (options.record ?? true) {
      const st = await fsp.lstatIfAny(real).catch(() => undefined);
      const record = await this.recordFirstTouch(machinePath, st);
      // Only the attributes change: the bytes there are as machineadm leaves them.
      if (record && st?.isFile() && record.written.length === 0 && this.written) await this.written.write({ ...record, written: [fingerprintOf(st)] });
    }
    if (options.mode !== undefined) await fsp.chmod(real, options.mode);
    if (options.owner !== undefined && isRootUser()) {
      const o = await this.resolveOwner(options.owner);
      await fsp.chown(real, o.uid, o.gid);
    }
  }

  /** "user:group" (names looked up in the root's /etc/passwd and /etc/group, or numbers). */
  async resolveOwner(spec: string): Promise<Owner> {
    const [user = '', group = user] = spec.split(':');
    const uid = /^\d+$/.test(user) ? Number(user) : await this.lookupId('/etc/passwd', user);
    const gid = /^\d+$/.test(group) ? Number(group) : await this.lookupId('/etc/group', group);
    if (uid === undefined || gid === undefined) {
      throw new FileSystemError(`owner "${spec}": ${uid === undefined ? `user "${user}"` : `group "${group}"`} does not exist on this machine`, {
        hint: 'create it first, or give numeric ids such as 0:0',
      });
    }
    return { uid, gid };
  }

  private async lookupId(file: string, name: string): Promise<number | undefined> {
    if (name === 'root') return 0;
    const text = (await this.readText(file)) ?? '';
    for (const line of text.split('\n')) {
      const parts = line.split(':');
      if (parts[0] === name && parts[2] !== undefined) return Number(parts[2]);
    }
    return undefined;
  }
}

/** The operator's own paths (-c files, keys, fetch destinations): the real root, nothing backed up. */
export function operatorFileSystem(): RootedFileSystem {
  return new RootedFileSystem(process.platform === 'win32' ? 'C:\\' : '/');
}

function isRootUser(): boolean {
  return typeof process.getuid === 'function' && process.getuid() === 0;
}

// The backup is copied to a temporary file beside it and then linked into place: a crash during
// the copy must not leave a partial backup that "once" would then keep for ever. link() never
// replaces an existing backup, which a rename would. Backup folders are 0700: a backup of a secret
// is as secret as the file (copyFile keeps its mode too).
async function keepBackupOnce(real: string, backup: string, path: typeof nodePath.posix): Promise<void> {
  const dir = path.dirname(backup);
  await removeStaleTemporaries(dir, path.basename(backup));
  if (await fsp.lstat(backup).then(() => true, () => false)) return;
  await fsp.mkdir(dir, { recursive: true, mode: 0o700 });
  const temp = path.join(dir, temporaryName(path.basename(backup)));
  try {
    await fsp.copyFile(real, temp, constants.COPYFILE_EXCL);
    const handle = await fsp.open(temp, 'r+');
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
    await fsp.link(temp, backup).catch(async (e: NodeJS.ErrnoException) => {
      if (e.code === 'EEXIST') return;
      // File systems without hard links: a rename, after checking again that no backup exists.
      if (!['EPERM', 'ENOTSUP', 'EOPNOTSUPP', 'ENOSYS'].includes(e.code ?? '')) throw e;
      if (!(await fsp.lstat(backup).then(() => true, () => false))) await fsp.rename(temp, backup);
    });
  } finally {
    await fsp.rm(temp, { force: true });
  }
  await syncDirectory(dir);
}

// From `dir` up to `top`, as long as each is empty (another write may be using one); never the root.
async function removeEmptyFolders(dir: string, top: string, root: string, path: typeof nodePath.posix): Promise<void> {
  for (let d = dir; d !== root && path.dirname(d) !== d; d = path.dirname(d)) {
    if (!(await fsp.rmdir(d).then(() => true, () => false)) || d === top) return;
  }
}

/**
 * .<name><TEMP_MARK><writer's pid>-<random>: the pid tells a killed writer's leftover from a live
 * one's. node:crypto is loaded at the first write: commands that only read (config validate) start
 * without it.
 */
export function temporaryName(base: string): string {
  return `.${base}${TEMP_MARK}${process.pid}-${process.getBuiltinModule('node:crypto').randomBytes(6).toString('hex')}`;
}

/** The writer's pid in a temporary name (TEMP_MARK, then the pid). */
const TEMP_WRITER = /\.machineadm-tmp-(\d+)-[0-9a-f]+$/;

// A crash between write and rename leaves a temporary file behind; the next write cleans it up.
async function removeStaleTemporaries(dir: string, base: string): Promise<void> {
  const prefix = `.${base}${TEMP_MARK}`;
  const names = await fsp.readdir(dir).catch(() => [] as string[]);
  await Promise.all(names.filter((n) => n.startsWith(prefix)).map((n) => fsp.rm(nodePath.join(dir, n), { force: true })));
}

async function syncDirectory(dir: string): Promise<void> {
  if (process.platform === 'win32') return;
  const handle = fsp.openAtOnce(dir, 'r');
  try {
    await handle.sync();
  } finally {
    handle.closeNow();
  }
}
