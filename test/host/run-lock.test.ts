// The run lock: real processes race for it, and the lock of a killed holder or of an earlier boot
// is taken over.
import { spawn, spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { RootedFileSystem } from '../../src/host/fs.ts';
import { acquireRunLock, processIdentity } from '../../src/host/run-lock.ts';
import { scratchDir } from '../support/tmp.ts';

const LOCK_MODULE = pathToFileURL(fileURLToPath(new URL('../../src/host/run-lock.ts', import.meta.url))).href;
const FS_MODULE = pathToFileURL(fileURLToPath(new URL('../../src/host/fs.ts', import.meta.url))).href;
const info = { command: 'init', startedAt: '2026-12-04T00:00:00.000Z' };

/**
 * 12 processes try for the lock at the same instant and keep what they got until every one has
 * tried: what each got (held, or the holder's pid).
 */
async function raceForLock(dir: string): Promise<Array<{ pid: number; answer: { held: boolean; holder?: number } }>> {
  const go = Date.now() + 1_500;
  // Each process waits for the same instant, tries, and keeps what it got until every other has
  // tried (its standard input is closed then): a holder that ended sooner would leave a dead
  // holder's lock, which a late process rightly takes over.
  const script = `
    const { acquireRunLock } = await import(${JSON.stringify(LOCK_MODULE)});
    const { RootedFileSystem } = await import(${JSON.stringify(FS_MODULE)});
    while (Date.now() < ${go}) {}
    const got = await acquireRunLock(new RootedFileSystem(${JSON.stringify(dir)}), '/run.lock', { command: 'init', startedAt: 'now' });
    console.log(JSON.stringify(got.held ? { held: true } : { held: false, holder: got.holder.pid }));
    process.stdin.resume();
    await new Promise((r) => process.stdin.on('end', r));`;
  const children = Array.from({ length: 12 }, () => spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['pipe', 'pipe', 'inherit'] }));
  const answers = await Promise.all(
    children.map(
      (child) =>
        new Promise<{ pid: number; answer: { held: boolean; holder?: number } }>((resolve, reject) => {
          let out = '';
          child.stdout.on('data', (c: Buffer) => {
            out += c.toString();
            if (out.endsWith('\n')) resolve({ pid: child.pid!, answer: JSON.parse(out) });
          });
          child.on('exit', (code) => reject(new Error(`a process ended before it answered (exit ${code})`)));
        }),
    ),
  );
  await Promise.all(children.map((child) => (child.stdin.end(), new Promise((r) => child.on('exit', r)))));
  return answers;
}

describe('the run lock', () => {
  it('is held by one of 12 processes that try at the same moment; the others are told who holds it', async () => {
    const answers = await raceForLock(scratchDir());
    const holders = answers.filter((a) => a.answer.held);
    expect(holders).toHaveLength(1);
    for (const other of answers.filter((a) => !a.answer.held)) expect(other.answer.holder).toBe(holders[0]!.pid);
  });

  // After a crash, cloud-init's runcmd and a unit may start together and both find the dead run's
  // lock: each checked it was still the dead one and removed it, and one removed the lock the
  // other had just taken, so two runs went on at once.
  it('is held by one of 12 processes that find the same dead lock at the same moment', async () => {
    for (let round = 0; round < 3; round++) {
      const dir = scratchDir();
      writeFileSync(join(dir, 'run.lock'), JSON.stringify({ pid: 999_999, command: 'init', startedAt: 'then', identity: 'an-earlier-boot:999999:1' }));
      const answers = await raceForLock(dir);
      const holders = answers.filter((a) => a.answer.held);
      expect(holders, `round ${round}`).toHaveLength(1);
      for (const other of answers.filter((a) => !a.answer.held)) expect(other.answer.holder).toBe(holders[0]!.pid);
    }
  });

  it('is taken over from a holder that was killed, and from a holder of an earlier boot with the same pid', async () => {
    const dir = scratchDir();
    const fs = new RootedFileSystem(dir);
    const dead = spawnSync(process.execPath, ['-e', 'console.log(process.pid)'], { encoding: 'utf8' });
    const deadPid = Number(dead.stdout.trim());
    for (const stale of [
      { pid: deadPid, command: 'init', startedAt: 'then', identity: `boot:${deadPid}:1` },
      // This very process's pid, as an earlier boot's run had it: the identity differs.
      { pid: process.pid, command: 'init', startedAt: 'then', identity: `another-boot:${process.pid}:42` },
      // Cut short by a crash: not a lock at all.
      '{"pid": 1',
    ]) {
      writeFileSync(join(dir, 'run.lock'), typeof stale === 'string' ? stale : JSON.stringify(stale));
      const got = await acquireRunLock(fs, '/run.lock', info);
      expect(got.held, JSON.stringify(stale)).toBe(true);
      const lock = JSON.parse(readFileSync(join(dir, 'run.lock'), 'utf8'));
      expect(lock).toMatchObject({ pid: process.pid, command: 'init', identity: processIdentity(process.pid) });
      expect(statSync(join(dir, 'run.lock')).mode & 0o777).toBe(0o600);
      if (got.held) await got.release();
    }
  });

  // A run killed while it took a dead lock over leaves its claim: the next holder removes it, and
  // leaves alone the claim of a process that runs (it is taking one over now).
  it('once held, removes the claims of takeovers whose maker is gone, and keeps a live maker\'s', async () => {
    const dir = scratchDir();
    const fs = new RootedFileSystem(dir);
    const dead = JSON.stringify({ pid: 999_999, command: 'init', startedAt: 'then', identity: 'an-earlier-boot:999999:1' });
    const live = JSON.stringify({ pid: process.ppid, command: 'init', startedAt: 'now', identity: processIdentity(process.ppid) });
    writeFileSync(join(dir, 'run.lock.takeover-0123456789abcdef'), dead);
    writeFileSync(join(dir, 'run.lock.takeover-fedcba9876543210'), live);
    const got = await acquireRunLock(fs, '/run.lock', info);
    expect(got.held).toBe(true);
    expect(readdirSync(dir).sort()).toEqual(['run.lock', 'run.lock.takeover-fedcba9876543210']);
    if (got.held) await got.release();
  });

  it('refuses while a live process holds it, and is released only by its holder', async () => {
    const dir = scratchDir();
    const fs = new RootedFileSystem(dir);
    const first = await acquireRunLock(fs, '/run.lock', info);
    expect(first.held).toBe(true);
    // Another process: the parent of this one runs, with an identity of its own.
    const parent = process.ppid;
    writeFileSync(join(dir, 'run.lock'), JSON.stringify({ pid: parent, command: 'prepare', startedAt: 'now', identity: processIdentity(parent) }));
    const second = await acquireRunLock(fs, '/run.lock', info);
    expect(second).toMatchObject({ held: false, holder: { pid: parent, command: 'prepare' } });
    // The first holder gave the lock up for lost: its release leaves the other's lock in place.
    if (first.held) await first.release();
    expect(JSON.parse(readFileSync(join(dir, 'run.lock'), 'utf8')).pid).toBe(parent);
  });
});
