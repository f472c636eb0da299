// The file calls RootedFileSystem makes, as promises with the names and shapes of
// node:fs/promises. node:fs/promises itself loads a dozen more modules (readline, watchers,
// directory streams) at the first file any command reads: ~1.5 ms of every start.
//
// Calls on names and regular files (stat, realpath, readdir, mkdir, rename, the bytes of a record
// or a configuration) are made at once: each takes microseconds, while a trip through libuv's
// thread pool costs a turn of the event loop and a thread woken on another core. A plan makes ~70 of them; made at once, plan
// and init start 10-24 ms sooner (medians of 21 runs each, side by side). What can take long stays
// in the pool, so that downloads and timers go on meanwhile: fsync, copying a file, removing a tree,
// and reading or writing through an open file.
import * as fs from 'node:fs';
import { dirname, resolve } from 'node:path';

type Callback<T> = (error: NodeJS.ErrnoException | null, value: T) => void;

function call<T>(start: (done: Callback<T>) => void): Promise<T> {
  return new Promise((resolve, reject) => start((error, value) => (error ? reject(error) : resolve(value))));
}

/** A call made now, its outcome as the promise the callback form would give. */
function now<T>(work: () => T): Promise<T> {
  try {
    return Promise.resolve(work());
  } catch (e) {
    return Promise.reject(e as Error);
  }
}

// The native one, as node:fs/promises' is: fs.realpath walks the path in JavaScript, one lstat at a time.
export const realpath = (path: string): Promise<string> => now(() => fs.realpathSync.native(path));
export const lstat = (path: string): Promise<fs.Stats> => now(() => fs.lstatSync(path));
export const writable = (path: string): Promise<void> => now(() => fs.accessSync(path, fs.constants.W_OK));
export const statfs = (path: string): Promise<fs.StatsFs> => now(() => fs.statfsSync(path));
export const stat = (path: string): Promise<fs.Stats> => now(() => fs.statSync(path));
/**
 * A path that may well not be there (a folder a write will make, a tool looked for on PATH): its
 * lstat, or undefined when nothing is there (ENOENT, ENOTDIR), answered without the error object
 * and stack trace a thrown ENOENT costs (~20 us each: a plan asks about ~170 missing paths, an init
 * ~280). Other errors (EACCES) still reject.
 */
export const lstatIfAny = (path: string): Promise<fs.Stats | undefined> =>
  now(() => {
    try {
      return fs.lstatSync(path, { throwIfNoEntry: false });
    } catch (e) {
      // Node answers ENOENT without an error, not ENOTDIR (a path through a file): rare, so thrown.
      if ((e as NodeJS.ErrnoException).code === 'ENOTDIR') return undefined;
      throw e;
    }
  });
/** The real path of what is there, or undefined (nothing there, a link to nowhere, no access). */
export const realpathIfAny = (path: string): Promise<string | undefined> => Promise.resolve(realpathIfAnySync(path));
export function realpathIfAnySync(path: string): string | undefined {
  try {
    return fs.statSync(path, { throwIfNoEntry: false }) ? fs.realpathSync.native(path) : undefined;
  } catch {
    return undefined;
  }
}
/**
 * A regular file is read at once. Anything else (a FIFO, a device) may wait for a writer for ever:
 * it is read in the pool, where the run stays interruptible (Ctrl-C, deadlines), as before.
 */
export const readFile = (path: string): Promise<Buffer> =>
  now(() => {
    // Opened without waiting: a FIFO's open would wait for a writer.
    const fd = fs.openSync(path, fs.constants.O_RDONLY | (fs.constants.O_NONBLOCK ?? 0));
    try {
      return fs.fstatSync(fd).isFile() ? fs.readFileSync(fd) : undefined;
    } finally {
      fs.closeSync(fd);
    }
  }).then((bytes) => bytes ?? call<Buffer>((done) => fs.readFile(path, done)));
/**
 * A regular file's bytes read at once, in blocks, stopping once they pass `maxBytes` ('too-large');
 * undefined for anything else (a FIFO, a device, a directory), which the caller reads in the pool.
 */
export const readRegularUpTo = (path: string, maxBytes: number, blockSize: number): Promise<Buffer | 'too-large' | undefined> =>
  now(() => {
    const fd = fs.openSync(path, fs.constants.O_RDONLY | (fs.constants.O_NONBLOCK ?? 0));
    try {
      if (!fs.fstatSync(fd).isFile()) return undefined;
      const blocks: Buffer[] = [];
      let size = 0;
      for (;;) {
        const block = Buffer.allocUnsafe(blockSize);
        const bytesRead = fs.readSync(fd, block, 0, block.length, null);
        if (bytesRead === 0) return Buffer.concat(blocks, size);
        size += bytesRead;
        if (size > maxBytes) return 'too-large';
        blocks.push(bytesRead === block.length ? block : block.subarray(0, bytesRead));
      }
    } finally {
      fs.closeSync(fd);
    }
  });
export const readdir = (path: string): Promise<string[]> => now(() => fs.readdirSync(path));
/** With `recursive`, the first directory it created, or undefined when all existed. */
export const mkdir = (path: string, options: { recursive: true; mode?: number }): Promise<string | undefined> => now(() => mkdirSyncWithMode(path, options));

/**
 * mkdirSync, the folders it made given `mode` itself: mkdir(2) takes the umask off it, and under a
 * umask of 077 (a hardened image's, for root) /usr/local/bin would be made 0700. Folders that were
 * there keep theirs. The umask itself stays the operator's: the tools machineadm runs keep it.
 */
export function mkdirSyncWithMode(path: string, options: { recursive: true; mode?: number }): string | undefined {
  const first = fs.mkdirSync(path, options);
  // A Windows folder has no Unix mode: its ACL comes from its parent.
  if (first === undefined || options.mode === undefined || process.platform === 'win32') return first;
  for (let dir = resolve(path); dir.length >= first.length; dir = dirname(dir)) {
    // Only where the umask took bits off; the set-group-ID bit a folder takes from its parent stays.
    const made = fs.statSync(dir).mode;
    if ((made & 0o777) !== (options.mode & 0o777)) fs.chmodSync(dir, (made & 0o7000) | options.mode);
    if (dir === dirname(dir)) break;
  }
  return first;
}
export const symlink = (target: string, path: string): Promise<void> => now(() => fs.symlinkSync(target, path));
export const readlink = (path: string): Promise<string> => now(() => fs.readlinkSync(path));
export const rename = (from: string, to: string): Promise<void> => now(() => fs.renameSync(from, to));
export const rm = (path: string, options: fs.RmOptions): Promise<void> => call((done) => fs.rm(path, options, (e) => done(e, undefined)));
export const rmdir = (path: string): Promise<void> => now(() => fs.rmdirSync(path));
export const chmod = (path: string, mode: number): Promise<void> => now(() => fs.chmodSync(path, mode));
export const chown = (path: string, uid: number, gid: number): Promise<void> => now(() => fs.chownSync(path, uid, gid));
export const copyFile = (from: string, to: string, mode: number): Promise<void> => call((done) => fs.copyFile(from, to, mode, (e) => done(e, undefined)));
export const writeFile = (path: string, data: string | Uint8Array, options: { mode: number; flag?: string }): Promise<void> => now(() => fs.writeFileSync(path, data, options));
export const link = (existing: string, path: string): Promise<void> => now(() => fs.linkSync(existing, path));

/** An open file, as node:fs/promises' FileHandle offers the calls RootedFileSystem makes. */
export class FileHandle {
  readonly fd: number;

  constructor(fd: number) {
    this.fd = fd;
  }

  read(buffer: Uint8Array, offset: number, length: number, position: number | null): Promise<{ bytesRead: number }> {
    return call((done) => fs.read(this.fd, buffer, offset, length, position, (e, bytesRead) => done(e, { bytesRead })));
  }

  stat(): Promise<fs.Stats> {
    return call((done) => fs.fstat(this.fd, done));
  }

  sync(): Promise<void> {
    return call((done) => fs.fsync(this.fd, (e) => done(e, undefined)));
  }

  /** The file's bytes (and what reading them back needs, such as its size) on disk; not its times. */
  datasync(): Promise<void> {
    return call((done) => fs.fdatasync(this.fd, (e) => done(e, undefined)));
  }

  chmod(mode: number): Promise<void> {
    return call((done) => fs.fchmod(this.fd, mode, (e) => done(e, undefined)));
  }

  chown(uid: number, gid: number): Promise<void> {
    return call((done) => fs.fchown(this.fd, uid, gid, (e) => done(e, undefined)));
  }

  close(): Promise<void> {
    return call((done) => fs.close(this.fd, (e) => done(e, undefined)));
  }

  /** Closed at once: for a descriptor opened with openAtOnce. */
  closeNow(): void {
    fs.closeSync(this.fd);
  }
}

export const open = (path: string, flags: string | number): Promise<FileHandle> => call<number>((done) => fs.open(path, flags, done)).then((fd) => new FileHandle(fd));

/**
 * A folder, or a file machineadm has just made (its temporary file), opened at once: neither can be
 * a FIFO whose open waits for a writer. What is done through it (an fsync) still goes to the pool.
 */
export const openAtOnce = (path: string, flags: string | number, mode?: number): FileHandle => new FileHandle(fs.openSync(path, flags, mode));
