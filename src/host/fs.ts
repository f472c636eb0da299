// File system access, always under the --root prefix. Every write is atomic (temporary file in the
// same directory, fsync, rename, fsync of the directory: at once, or for many writes together, see
// deferDirectorySyncs) and a file that machineadm replaces is
// kept once under the backup directory (the state directory's backup/), at its machine path: never
// beside the file, where the kubelet, systemd and sysctl would read it as one more live file.
// The class is built in floors of one job each: paths (./rooted-paths.ts), reading
// (./file-reading.ts), reset's records (./reset-records.ts), and here the durable writes.
import { closeSync, createWriteStream, fchmodSync, fchownSync, fsyncSync, openSync, renameSync, rmSync, writeSync } from 'node:fs';
import * as fsp from './fs-calls.ts';
import * as nodePath from 'node:path';
import { once } from 'node:events';
import { processRuns } from './process-runs.ts';
import { fingerprintOf, sha256Of, type WrittenRecord } from './written.ts';
import { RecordingFileSystem } from './reset-records.ts';
import { FileSystemError, type Owner, type PendingFile, type WriteOptions } from './fs-types.ts';
import { removeEmptyFolders, removeStaleTemporaries, syncDirectory, TEMP_MARK, TEMP_WRITER, temporaryName, temporaryPrefix, keepBackupOnce } from './durable-files.ts';

export type { FileInfo, FileSystemOptions, Owner, PendingFile, WriteOptions } from './fs-types.ts';
export { FileSystemError } from './fs-types.ts';
export { TEMP_MARK, temporaryName } from './durable-files.ts';
export { PIPE_IDLE_MS, READ_AHEAD_BLOCKS, READ_BLOCK_SIZE } from './file-reading.ts';

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

/** A temporary file unchanged this long was left by a killed writer, whatever runs under its pid now. */
const ABANDONED_AFTER_MS = 10 * 60_000;

export class RootedFileSystem extends RecordingFileSystem {

  /** Writes a whole file atomically; the old content stays intact until the rename. */
  async writeFile(machinePath: string, data: string | Uint8Array, options: WriteOptions = {}): Promise<void> {
    const bytes = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
    if (bytes.length > WRITTEN_AT_ONCE_BYTES) return this.writeFileStreamed(machinePath, bytes, options);
    const target = await this.prepareWrite(machinePath, options);
    try {
      const handle = fsp.openAtOnce(target.temp, 'wx', target.mode);
      try {
        writeAllSync(handle.fd, bytes);
        await this.sealTemporary(target, handle, target.record ? sha256Of(bytes) : undefined);
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
      await pending.commit({ sha256: sha256Of(data) });
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
    const madeFrom = await fsp.mkdir(dir, { recursive: true, mode: 0o755 }).catch(async (error: NodeJS.ErrnoException) => {
      throw (await this.fileInTheWay(machinePath, dir, error)) ?? error;
    });
    await removeStaleTemporaries(dir, this.path.basename(real));
    return {
      real,
      dir,
      temp: this.path.join(dir, temporaryName(this.path.basename(real))),
      mode: options.mode ?? (existing ? existing.mode & 0o7777 : 0o644),
      owner,
      durable: options.durable ?? true,
      backup: existing?.isFile() ? backup : undefined,
      // Once a secret was written at a path, reset never shows what is there (record.secret).
      record: record && options.secret ? { ...record, secret: true } : record,
      madeFrom,
    };
  }

  /**
   * Everything that can fail before the rename: the bytes on disk (fsync) while the record naming
   * them is written (both are on disk before the rename; neither needs the other first), the mode
   * and owner, the backup of the file replaced.
   */
  private async sealTemporary(target: WriteTarget, handle: fsp.FileHandle, sha256: string | undefined): Promise<void> {
    const { record, temp } = target;
    const records = this.written;
    const recorded = record && records ? fsp.lstat(temp).then((st) => records.write({ ...record, written: [...record.written, fingerprintOf(st, sha256)] })) : undefined;
    recorded?.catch(() => undefined);
    if (target.durable) await handle.sync();
    // The owner first: a change of owner clears the set-user-ID and set-group-ID bits, also for root.
    if (target.owner && isRootUser()) fchownSync(handle.fd, target.owner.uid, target.owner.gid);
    // The file was created with the mode, less the umask.
    fchmodSync(handle.fd, target.mode);
    if (target.backup !== undefined) await keepBackupOnce(target.real, target.backup, this.path);
    await recorded;
  }

  /**
   * mkdir -p fails with EEXIST or ENOTDIR when a folder of the path is a file (fetch -d FILE/x):
   * named as a refusal, nothing made, instead of the system call's error.
   */
  private async fileInTheWay(machinePath: string, dir: string, error: NodeJS.ErrnoException): Promise<FileSystemError | undefined> {
    if (error.code !== 'EEXIST' && error.code !== 'ENOTDIR') return undefined;
    for (let probe = dir; ; probe = this.path.dirname(probe)) {
      const st = await fsp.lstatIfAny(probe).catch(() => undefined);
      if (st && !st.isDirectory()) {
        const shown = this.isLiveRoot ? probe : this.path.join(this.path.sep, this.path.relative(this.root, probe));
        return new FileSystemError(`cannot write ${machinePath}: ${shown} is ${st.isFile() ? 'a file' : st.isSymbolicLink() ? 'a symbolic link' : 'a special file'}, not a directory`, {
          hint: `choose a path whose folders are directories, or move ${shown} away`,
          cause: error,
        });
      }
      if (probe === this.path.dirname(probe)) return undefined;
    }
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
    const seal = async (content?: { sha256: string }): Promise<void> => {
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
        await this.sealTemporary(target, handle, content?.sha256);
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
      commit: async (content) => {
        await seal(content);
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
   * The temporary files that killed writes of this machine path left beside it (machine paths):
   * regular files named as its writes name theirs, whose writer is gone or that have not changed
   * for ABANDONED_AFTER_MS (its pid is another process's since a reboot).
   */
  async abandonedTemporariesOf(machinePath: string): Promise<string[]> {
    const real = await this.resolve(machinePath);
    const prefix = temporaryPrefix(this.path.basename(real));
    const found: string[] = [];
    for (const name of await fsp.readdir(this.path.dirname(real)).catch(() => [] as string[])) {
      const pid = name.startsWith(prefix) ? /^(\d+)-[0-9a-f]{12}$/.exec(name.slice(prefix.length))?.[1] : undefined;
      if (pid === undefined) continue;
      const st = await fsp.lstatIfAny(this.path.join(this.path.dirname(real), name)).catch(() => undefined);
      if (!st?.isFile()) continue;
      const gone = Number(pid) !== process.pid && !processRuns(Number(pid));
      if (gone || Date.now() - st.mtimeMs >= ABANDONED_AFTER_MS) found.push(this.path.join(this.path.dirname(machinePath), name));
    }
    return found;
  }

  /**
   * Writes a small file atomically and durably before returning, without yielding to the event
   * loop: for records that must be on disk before the caller goes on (a spooled event). No backup.
   */
  writeFileDurableSync(machinePath: string, data: string | Uint8Array, mode = 0o600): void {
    const real = this.mapPath(machinePath);
    const dir = this.path.dirname(real);
    // Checked before the folders are made too: mkdir follows a link that leaves the root.
    this.assertInsideRootSync(real, machinePath);
    fsp.mkdirSyncWithMode(dir, { recursive: true, mode: 0o755 });
    this.assertInsideRootSync(real, machinePath);
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
      if (record && st?.isFile() && record.written.length === 0 && this.written) await this.written.write({ ...record, written: [fingerprintOf(st, await this.contentSha256(machinePath))] });
    }
    // The mode first: the new owner or group never reads through the old, wider one.
    if (options.mode !== undefined) await fsp.chmod(real, options.mode);
    if (options.owner !== undefined && isRootUser()) {
      const o = await this.resolveOwner(options.owner);
      await fsp.chown(real, o.uid, o.gid);
      // A change of owner clears the set-user-ID and set-group-ID bits, also for root.
      if (options.mode !== undefined && (options.mode & 0o6000) !== 0) await fsp.chmod(real, options.mode);
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
