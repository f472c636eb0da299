// Reading a file for hashing: reused buffers, the whole content in order, the file closed however
// the reader stops.
import { randomBytes } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { appendFileSync, createWriteStream, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { READ_AHEAD_BLOCKS, RootedFileSystem } from '../../src/host/fs.ts';
import { scratchDir } from '../support/tmp.ts';

const openFds = (): number => readdirSync('/proc/self/fd').length;

describe('RootedFileSystem.readBlocks', () => {
  it.each([
    ['empty', 0],
    ['smaller than a block', 1000],
    ['exactly two blocks', 2 * 65536],
    ['five blocks and a bit', 5 * 65536 + 17],
  ])('yields the whole of a file that is %s, in order', async (_name, size) => {
    const dir = scratchDir();
    const data = randomBytes(size);
    writeFileSync(join(dir, 'f'), data);
    const copies: Buffer[] = [];
    for await (const block of new RootedFileSystem(dir).readBlocks('/f', 65536)) copies.push(Buffer.from(block));
    expect(Buffer.concat(copies).equals(data)).toBe(true);
  });

  it('reads a large file into the read-ahead buffers allocated once, not a new buffer per block', async () => {
    const dir = scratchDir();
    writeFileSync(join(dir, 'f'), randomBytes(64 * 65536));
    const backing = new Set<ArrayBufferLike>();
    let blocks = 0;
    for await (const block of new RootedFileSystem(dir).readBlocks('/f', 65536)) {
      backing.add(block.buffer);
      blocks++;
    }
    expect(blocks).toBe(64);
    expect(backing.size).toBe(READ_AHEAD_BLOCKS);
  });

  it('reads on without a gap when the file grows after its end was read (reads issued past the end are dropped)', async () => {
    const dir = scratchDir();
    const head = randomBytes(2 * 65536 + 1000);
    const tail = randomBytes(3 * 65536);
    writeFileSync(join(dir, 'f'), head);
    const copies: Buffer[] = [];
    let grown = false;
    for await (const block of new RootedFileSystem(dir).readBlocks('/f', 65536)) {
      copies.push(Buffer.from(block));
      if (!grown && Buffer.concat(copies).length === head.length) {
        appendFileSync(join(dir, 'f'), tail);
        grown = true;
      }
    }
    expect(grown).toBe(true);
    expect(Buffer.concat(copies).equals(Buffer.concat([head, tail]))).toBe(true);
  });

  it('reads a named pipe (no offsets to read ahead at) whole and in order', async () => {
    const dir = scratchDir();
    const data = randomBytes(5 * 65536 + 17);
    execFileSync('mkfifo', [join(dir, 'pipe')]);
    const writer = createWriteStream(join(dir, 'pipe'));
    writer.end(data);
    const copies: Buffer[] = [];
    for await (const block of new RootedFileSystem(dir).readBlocks('/pipe', 65536)) copies.push(Buffer.from(block));
    expect(Buffer.concat(copies).equals(data)).toBe(true);
  });

  it('closes the file when the reader stops early (a failed check) as when it reads to the end', async () => {
    const dir = scratchDir();
    writeFileSync(join(dir, 'f'), randomBytes(8 * 65536));
    const before = openFds();
    for await (const _block of new RootedFileSystem(dir).readBlocks('/f', 65536)) break;
    await expect(async () => {
      for await (const _block of new RootedFileSystem(dir).readBlocks('/f', 65536)) throw new Error('bad signature');
    }).rejects.toThrow('bad signature');
    expect(openFds()).toBe(before);
  });
});
