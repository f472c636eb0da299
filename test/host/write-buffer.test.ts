// A file being written takes several network-sized chunks before its writer has to wait for the
// disk: a download that waited after every 64 KiB chunk spent half its time idle.
import { describe, expect, it } from 'vitest';
import { RootedFileSystem, WRITE_BUFFER_SIZE } from '../../src/host/fs.ts';
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
