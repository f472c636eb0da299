// A file being written takes several network-sized chunks before its writer has to wait for the
// disk: a download that waited after every 64 KiB chunk spent half its time idle.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { FileHandle } from '../../src/host/fs-calls.ts';
import { RootedFileSystem, WRITE_BEHIND_BYTES, WRITE_BUFFER_SIZE } from '../../src/host/fs.ts';
import { scratchDir } from '../support/tmp.ts';

describe('RootedFileSystem.openWrite', () => {
  it.each([
    ['one 64 KiB socket read', 1],
    ['eight of them', 8],
  ])('lets the writer go on after %s without waiting for drain', async (_name, chunks) => {
    const pending = await new RootedFileSystem(scratchDir()).openWrite('/download');
    const answers = Array.from({ length: chunks }, () => pending.stream.write(Buffer.alloc(64 * 1024)));
    expect(answers.every(Boolean)).toBe(true);
    await pending.abort();
  });

  it('still asks the writer to wait once the buffer is full (memory stays bounded)', async () => {
    const pending = await new RootedFileSystem(scratchDir()).openWrite('/download');
    let waitAsked = false;
    for (let written = 0; written <= WRITE_BUFFER_SIZE && !waitAsked; written += 64 * 1024) waitAsked = !pending.stream.write(Buffer.alloc(64 * 1024));
    expect(waitAsked).toBe(true);
    await pending.abort();
  });
});

// A large file's bytes go to disk while it is written: the final fsync of eight 64 MiB downloads
// otherwise wrote 512 MiB at once after the last byte arrived.
describe('RootedFileSystem.openWrite write-behind', () => {
  afterEach(() => vi.restoreAllMocks());

  const append = (pending: { appendSync(b: Uint8Array): void }, bytes: number): void => {
    const block = Buffer.alloc(1024 * 1024, 7);
    for (let left = bytes; left > 0; left -= block.length) pending.appendSync(block.subarray(0, Math.min(block.length, left)));
  };

  it('flushes a durable file as its bytes are appended, before it is sealed, and places it whole', async () => {
    const flushes = vi.spyOn(FileHandle.prototype, 'datasync');
    const root = scratchDir();
    const pending = await new RootedFileSystem(root).openWrite('/big.bin');
    append(pending, WRITE_BEHIND_BYTES + 1024 * 1024);
    // Begun on its own descriptor, while the writer goes on.
    await vi.waitFor(() => expect(flushes).toHaveBeenCalledTimes(1));
    append(pending, 1024 * 1024);
    // Not again before the next WRITE_BEHIND_BYTES.
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(flushes).toHaveBeenCalledTimes(1);
    await pending.commit();
    expect(readFileSync(join(root, 'big.bin')).length).toBe(WRITE_BEHIND_BYTES + 2 * 1024 * 1024);
  });

  it('does not flush a file that need not be durable, nor a small one', async () => {
    const flushes = vi.spyOn(FileHandle.prototype, 'datasync');
    const fs = new RootedFileSystem(scratchDir());
    const run = await fs.openWrite('/run/result.json', { durable: false });
    append(run, 2 * WRITE_BEHIND_BYTES);
    const small = await fs.openWrite('/etc/small.conf');
    append(small, WRITE_BEHIND_BYTES - 1);
    await run.commit();
    await small.commit();
    expect(flushes).not.toHaveBeenCalled();
  });

  it('fails the seal when a flush while writing failed, and leaves nothing at the path', async () => {
    vi.spyOn(FileHandle.prototype, 'datasync').mockRejectedValue(Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO' }));
    const root = scratchDir();
    const pending = await new RootedFileSystem(root).openWrite('/big.bin');
    append(pending, WRITE_BEHIND_BYTES);
    await expect(pending.commit()).rejects.toThrow(/EIO/);
    await pending.abort();
    expect(existsSync(join(root, 'big.bin'))).toBe(false);
    expect(readdirSync(root)).toEqual([]);
  });
});
