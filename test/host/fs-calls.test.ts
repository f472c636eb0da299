// The file calls made at once keep node:fs/promises' outcomes: the same values and the same error
// codes. A file that may wait for a writer for ever (a FIFO) is read in the pool, where the run
// stays interruptible (a read made at once would stop the whole process, and this test with it).
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import * as fsp from '../../src/host/fs-calls.ts';
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
});
