// The file calls made at once keep node:fs/promises' outcomes: the same values and the same error
// codes. A file that may wait for a writer for ever (a FIFO) is read in the pool, where the run
// stays interruptible (a read made at once would stop the whole process, and this test with it).
import { spawnSync } from 'node:child_process';
import { mkdirSync, realpathSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import * as fsp from '../../src/host/fs-calls.ts';
import { RootedFileSystem } from '../../src/host/fs.ts';
import { missingRequirement } from '../support/environment.ts';
import { scratchDir } from '../support/tmp.ts';

describe('the file calls', () => {
  it('read a regular file, and fail as node:fs/promises does on a missing path and a directory', async () => {
    const dir = scratchDir();
    writeFileSync(join(dir, 'a'), 'bytes');
    mkdirSync(join(dir, 'folder'));
    expect((await fsp.readFile(join(dir, 'a'))).toString()).toBe('bytes');
    await expect(fsp.readFile(join(dir, 'missing'))).rejects.toMatchObject({ code: 'ENOENT' });
    await expect(fsp.readFile(join(dir, 'folder'))).rejects.toMatchObject({ code: 'EISDIR' });
    await expect(fsp.lstat(join(dir, 'missing'))).rejects.toMatchObject({ code: 'ENOENT' });
    await expect(fsp.rename(join(dir, 'missing'), join(dir, 'b'))).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('read a regular file up to a limit at once, in blocks, and leave anything else to the pool', async () => {
    const dir = scratchDir();
    const bytes = Buffer.from(Array.from({ length: 10_000 }, (_, i) => i % 251));
    writeFileSync(join(dir, 'a'), bytes);
    mkdirSync(join(dir, 'folder'));
    // Blocks of 4 KiB: the last one short; exactly the limit is still the file.
    expect(await fsp.readRegularUpTo(join(dir, 'a'), 10_000, 4096)).toEqual(bytes);
    expect(await fsp.readRegularUpTo(join(dir, 'a'), 9_999, 4096)).toBe('too-large');
    expect(await fsp.readRegularUpTo(join(dir, 'a'), 10_000, 10_000)).toEqual(bytes);
    expect(await fsp.readRegularUpTo(join(dir, 'folder'), 10_000, 4096)).toBeUndefined();
    expect(await fsp.readRegularUpTo('/dev/zero', 10_000, 4096)).toBeUndefined();
    await expect(fsp.readRegularUpTo(join(dir, 'missing'), 10_000, 4096)).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('give readUpTo a regular file without a turn of the event loop (a configuration, read as a run starts)', async () => {
    const root = scratchDir();
    mkdirSync(join(root, 'etc'));
    writeFileSync(join(root, 'etc', 'config.yaml'), 'x'.repeat(100_000));
    let turned = false;
    setImmediate(() => (turned = true));
    const bytes = await new RootedFileSystem(root).readUpTo('/etc/config.yaml', 1_000_000);
    expect(turned).toBe(false);
    expect(bytes?.length).toBe(100_000);
    expect(await new RootedFileSystem(root).readUpTo('/etc/config.yaml', 99_999)).toBeUndefined();
  });

  it('answer for a path that may not be there without an error: lstat, and the real path', async () => {
    const dir = scratchDir();
    writeFileSync(join(dir, 'a'), 'bytes');
    symlinkSync(join(dir, 'a'), join(dir, 'link'));
    symlinkSync(join(dir, 'missing'), join(dir, 'dangling'));
    symlinkSync(join(dir, 'loop'), join(dir, 'loop'));
    expect((await fsp.lstatIfAny(join(dir, 'a')))?.isFile()).toBe(true);
    expect((await fsp.lstatIfAny(join(dir, 'dangling')))?.isSymbolicLink()).toBe(true);
    expect(await fsp.lstatIfAny(join(dir, 'missing'))).toBeUndefined();
    // A path through a file (ENOTDIR) is not there either.
    expect(await fsp.lstatIfAny(join(dir, 'a', 'below'))).toBeUndefined();
    expect(await fsp.realpathIfAny(join(dir, 'link'))).toBe(realpathSync(join(dir, 'a')));
    for (const nowhere of ['missing', 'dangling', 'loop', 'a/below']) expect(await fsp.realpathIfAny(join(dir, nowhere))).toBeUndefined();
  });

  it.skipIf(missingRequirement({ commands: ['mkfifo'] }))('read a FIFO nobody writes to without holding up the event loop', async () => {
    const fifo = join(scratchDir(), 'fifo');
    spawnSync('mkfifo', [fifo]);
    let settled = false;
    const reading = fsp.readFile(fifo).finally(() => (settled = true));
    const ticked = await new Promise<boolean>((resolve) => setTimeout(() => resolve(true), 50));
    expect(ticked).toBe(true);
    expect(settled).toBe(false);
    // A writer comes: the read ends with its bytes.
    writeFileSync(fifo, 'late');
    expect((await reading).toString()).toBe('late');
  });

  it.skipIf(missingRequirement({ commands: ['mkfifo'] }))('leave a FIFO to the pool without waiting for a writer to come', async () => {
    const fifo = join(scratchDir(), 'fifo');
    spawnSync('mkfifo', [fifo]);
    expect(await fsp.readRegularUpTo(fifo, 100, 10)).toBeUndefined();
  });
});
