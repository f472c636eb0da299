// What the rooted file system deals in, shared by its parts (paths, reading, records, writing):
// the shapes of what it reports and is asked to do, and its one error.
import type { WriteStream } from 'node:fs';
import { MachineadmError, ExitCode } from '../errors.ts';

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
  /** The bytes are a secret: reset never shows them, nor what is at the path later (WrittenRecord.secret). */
  secret?: boolean;
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
   * Several files are placed all or none by sealing every one before committing any. `content`
   * as for commit().
   */
  seal(content?: { sha256: string }): Promise<void>;
  /**
   * seal() if not done, then rename into place. `content`: the SHA-256 of the bytes written, as the
   * writer computed it (a download checks it anyway), kept for reset (see written.ts).
   */
  commit(content?: { sha256: string }): Promise<void>;
  /** Remove the temporary file, and the folders made for it when they are empty; the path is untouched. */
  abort(): Promise<void>;
}

export class FileSystemError extends MachineadmError {
  constructor(message: string, options: { hint?: string; cause?: unknown } = {}) {
    super(message, ExitCode.stepFailed, options);
  }
}
