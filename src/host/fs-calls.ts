// The file calls RootedFileSystem makes, as promises over node:fs's callback API, with the names
// and shapes of node:fs/promises. node:fs/promises itself loads a dozen more modules (readline,
// watchers, directory streams) at the first file any command reads: ~1.5 ms of every start.
import * as fs from 'node:fs';

type Callback<T> = (error: NodeJS.ErrnoException | null, value: T) => void;

function call<T>(start: (done: Callback<T>) => void): Promise<T> {
  return new Promise((resolve, reject) => start((error, value) => (error ? reject(error) : resolve(value))));
}

// The native one, as node:fs/promises' is: fs.realpath walks the path in JavaScript, one lstat at a time.
export const realpath = (path: string): Promise<string> => call((done) => fs.realpath.native(path, done));
export const lstat = (path: string): Promise<fs.Stats> => call((done) => fs.lstat(path, done));
export const stat = (path: string): Promise<fs.Stats> => call((done) => fs.stat(path, done));
export const readFile = (path: string): Promise<Buffer> => call((done) => fs.readFile(path, done));
export const readdir = (path: string): Promise<string[]> => call((done) => fs.readdir(path, done));
/** With `recursive`, the first directory it created, or undefined when all existed. */
export const mkdir = (path: string, options: { recursive: true; mode?: number }): Promise<string | undefined> => call((done) => fs.mkdir(path, options, done));
export const symlink = (target: string, path: string): Promise<void> => call((done) => fs.symlink(target, path, (e) => done(e, undefined)));
export const rename = (from: string, to: string): Promise<void> => call((done) => fs.rename(from, to, (e) => done(e, undefined)));
export const rm = (path: string, options: fs.RmOptions): Promise<void> => call((done) => fs.rm(path, options, (e) => done(e, undefined)));
export const rmdir = (path: string): Promise<void> => call((done) => fs.rmdir(path, (e) => done(e, undefined)));
export const chmod = (path: string, mode: number): Promise<void> => call((done) => fs.chmod(path, mode, (e) => done(e, undefined)));
export const chown = (path: string, uid: number, gid: number): Promise<void> => call((done) => fs.chown(path, uid, gid, (e) => done(e, undefined)));
export const copyFile = (from: string, to: string, mode: number): Promise<void> => call((done) => fs.copyFile(from, to, mode, (e) => done(e, undefined)));
export const writeFile = (path: string, data: string | Uint8Array, options: { mode: number; flag?: string }): Promise<void> => call((done) => fs.writeFile(path, data, options, (e) => done(e, undefined)));
export const link = (existing: string, path: string): Promise<void> => call((done) => fs.link(existing, path, (e) => done(e, undefined)));

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
}

export const open = (path: string, flags: string | number): Promise<FileHandle> => call<number>((done) => fs.open(path, flags, done)).then((fd) => new FileHandle(fd));
