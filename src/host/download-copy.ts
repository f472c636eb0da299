// What a download and a local copy share: the bytes go into a PendingFile, hashed and observed as
// they pass, so nothing is at the destination until the caller has checked them and commits.
// Constant memory: each chunk is hashed and written, then dropped.
import { createHash } from 'node:crypto';
import { MachineadmError, ExitCode } from '../errors.ts';
import type { PendingFile, RootedFileSystem, WriteOptions } from './fs.ts';

/** A download failed on every URL it was offered (exit 1). Nothing was written at the destination. */
export class DownloadError extends MachineadmError {
  constructor(message: string, options: { hint?: string; cause?: unknown } = {}) {
    super(message, ExitCode.stepFailed, options);
  }
}

/** Sees every byte of one attempt at a copy; a fresh observer is made whenever a copy starts over. */
export interface ByteObserver {
  update(chunk: Uint8Array): void;
}

export interface DownloadOptions {
  /** Tried in order; the first that delivers the whole file wins. */
  urls: readonly string[];
  fs: RootedFileSystem;
  destination: string;
  write?: WriteOptions;
  /** Made at the start of each copy (each URL, or a server that ignores Range). May throw to stop. */
  observe?: () => ByteObserver;
  onProgress?: (received: number, total: number | undefined) => void;
  /** Extra trusted CA certificates (PEM), added to Node's built-in list. */
  ca?: string;
  /** Idle time after which a connection counts as broken. */
  idleTimeoutMs?: number;
  /** Attempts per URL in a row that deliver no new byte, before moving to the next URL. */
  attemptsWithoutProgress?: number;
  /** Ends the transfer at once when aborted (the run was interrupted); set from the Host. */
  signal?: AbortSignal;
}

export interface DownloadResult<O extends ByteObserver = ByteObserver> {
  /** Commit after checking; abort otherwise. */
  pending: PendingFile;
  sha256: string;
  bytes: number;
  url: string;
  observer: O | undefined;
}

/** Writing the temporary file failed (a full disk, an I/O error): another attempt or mirror cannot help. */
export function writeFailed(destination: string, error: unknown): DownloadError {
  return new DownloadError(`writing the download for ${destination} failed: ${(error as Error | undefined)?.message ?? 'the file was closed'}`, {
    hint: 'free space on (or repair) the file system that holds the destination, then run again',
    cause: error,
  });
}

// Synchronous: a write into the page cache takes microseconds, and through the file's stream each
// chunk would take a round trip through the thread pool (~0.3 s of CPU a GiB, on cores the
// download shares with the hashing and the network).
export function appendChunk(pending: PendingFile, chunk: Uint8Array, destination: string): void {
  try {
    pending.appendSync(chunk);
  } catch (error) {
    throw writeFailed(destination, error);
  }
}

export interface Copy {
  pending: PendingFile;
  hash: ReturnType<typeof createHash>;
  observer: ByteObserver | undefined;
  received: number;
  total: number | undefined;
  validator: string | undefined;
}

/** What a finished copy gives: its pending file, whose seal and commit keep the bytes' SHA-256 for reset (see written.ts). */
export function finishedCopy(copy: Copy): { pending: PendingFile; sha256: string } {
  const sha256 = copy.hash.digest('hex');
  const { pending } = copy;
  return { pending: { ...pending, seal: (content) => pending.seal(content ?? { sha256 }), commit: (content) => pending.commit(content ?? { sha256 }) }, sha256 };
}

export async function freshCopy(options: DownloadOptions): Promise<Copy> {
  const pending = await options.fs.openWrite(options.destination, options.write);
  // The stream only closes the file (the bytes are appended directly); an error it meets doing so
  // is found when the download ends it (finished), and must not end the process unheard before.
  pending.stream.on('error', () => undefined);
  return {
    pending,
    hash: createHash('sha256'),
    observer: options.observe?.(),
    received: 0,
    total: undefined,
    validator: undefined,
  };
}
