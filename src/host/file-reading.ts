// Reading files under the root: whole (up to a limit, at once for a regular file, in the thread
// pool for a pipe or device, which must stay interruptible), and in blocks read ahead for hashing.
import * as fsp from './fs-calls.ts';
import { RootedPaths } from './rooted-paths.ts';
import { constants } from 'node:fs';
import { UsageError } from '../errors.ts';

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

export class RootedReader extends RootedPaths {

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
  async readSmallFile(machinePath: string, maxBytes: number): Promise<{ bytes: Buffer; mode: number } | { problem: 'missing' | 'not-a-file' | 'too-large'; size?: number }> {
    const real = await this.resolve(machinePath);
    const st = await fsp.stat(real).catch((e: NodeJS.ErrnoException) => {
      if (e.code === 'ENOENT' || e.code === 'ENOTDIR') return undefined;
      throw e;
    });
    if (!st) return { problem: 'missing' };
    if (!st.isFile()) return { problem: 'not-a-file' };
    if (st.size > maxBytes) return { problem: 'too-large', size: st.size };
    const bytes = await this.readUpTo(machinePath, maxBytes);
    // The mode of the file read, not of a link to it: a key's reader checks who else may read it.
    return bytes === undefined ? { problem: 'too-large' } : { bytes, mode: st.mode & 0o7777 };
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
}
