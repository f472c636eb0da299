// One run at a time per state directory. The lock is a file created with link(2), which fails when
// the name exists, so two runs that start together cannot both take it. It names its holder by an
// identity that a reboot or a reused pid cannot fake (boot, pid and the process's start time), so
// the lock of a run that was killed, or of a machine that went down, is taken over, never waited on.
import * as fsp from './fs-calls.ts';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { basename, dirname } from 'node:path';
import { temporaryName, type RootedFileSystem } from './fs.ts';

/** The lock file's text, or undefined when there is none (or it cannot be read). */
const readLock = (path: string): Promise<string | undefined> => fsp.readFile(path).then((bytes) => bytes.toString('utf8'), () => undefined);

export interface LockHolder {
  pid: number;
  command: string;
  startedAt: string;
  /** The id of the run that holds it: status tells the run going now from a killed one by it. */
  runId?: string;
  /** Boot, pid and start time: equal only for the very process that took the lock. */
  identity: string;
}

/** The lock file of a state directory (a path inside it). */
export const RUN_LOCK_FILE = '/run.lock';

/** The run that holds the lock now, or undefined when none runs (no lock, or its holder is gone). */
export async function runLockHolder(fs: RootedFileSystem, machinePath: string): Promise<LockHolder | undefined> {
  const holder = parse(await readLock(fs.mapPath(machinePath)));
  return holder && processIdentity(holder.pid) === holder.identity ? holder : undefined;
}

export type LockAttempt = { held: true; release(): Promise<void> } | { held: false; holder: LockHolder };

/** The identity of a running process, or undefined when none runs with that pid. */
export function processIdentity(pid: number): string | undefined {
  if (process.platform === 'linux') {
    try {
      // Field 22 of /proc/PID/stat, the start time in clock ticks since boot; the name (field 2,
      // in parentheses) may hold spaces, so fields are counted after its closing parenthesis.
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (fields[0] === 'Z') return undefined;
      const boot = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
      return `${boot}:${pid}:${fields[19]}`;
    } catch {
      return undefined;
    }
  }
  try {
    process.kill(pid, 0);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EPERM') return undefined;
  }
  // Elsewhere a pid is all there is: a reused pid keeps a lock until that process ends.
  return `${pid}`;
}

function parse(text: string | undefined): LockHolder | undefined {
  if (text === undefined) return undefined;
  try {
    const value = JSON.parse(text) as LockHolder;
    return typeof value.pid === 'number' && typeof value.identity === 'string' ? value : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Takes the lock file `machinePath` of `fs` for this process, or says who holds it. A holder that no
 * longer runs (killed, or from an earlier boot) and a file that is not a lock (cut short by a
 * crash) are taken over.
 */
export async function acquireRunLock(fs: RootedFileSystem, machinePath: string, info: { command: string; startedAt: string; runId?: string }): Promise<LockAttempt> {
  const path = fs.mapPath(machinePath);
  await fsp.mkdir(dirname(path), { recursive: true, mode: 0o755 });
  // What killed runs left of their own attempts (the temporary file before its link).
  await fs.removeAbandonedTemporaries(machinePath.slice(0, machinePath.lastIndexOf('/')) || '/', 60 * 60_000);
  const mine: LockHolder = { pid: process.pid, command: info.command, startedAt: info.startedAt, ...(info.runId ? { runId: info.runId } : {}), identity: processIdentity(process.pid) ?? `${process.pid}` };
  const text = JSON.stringify(mine) + '\n';
  const temp = `${dirname(path)}/${temporaryName(basename(path))}`;
  await fsp.writeFile(temp, text, { mode: 0o600 });
  try {
    for (let attempt = 0; attempt < TAKE_ATTEMPTS; attempt++) {
      if (await linkOnce(temp, path)) {
        await removeDeadClaims(path);
        return {
          held: true,
          release: async () => {
            // Only our own lock: never one a later run took over after this one was given up for dead.
            if (parse(await readLock(path))?.identity === mine.identity) await fsp.rm(path, { force: true });
          },
        };
      }
      const found = await readLock(path);
      if (found === undefined) continue;
      const holder = parse(found);
      if (holder && holder.identity !== mine.identity && processIdentity(holder.pid) === holder.identity) return { held: false, holder };
      // Another process takes the same dead lock over now: its new lock is there in a moment.
      if (!(await removeDead(path, found, temp, 0))) await sleep(10);
    }
    const holder = parse(await readLock(path));
    return { held: false, holder: holder ?? { pid: 0, command: 'unknown', startedAt: '', identity: '' } };
  } finally {
    await fsp.rm(temp, { force: true });
  }
}

const TAKE_ATTEMPTS = 200;
const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms));

/** link(2): true when `to` was made, false when it exists. */
const linkOnce = (from: string, to: string): Promise<boolean> =>
  fsp.link(from, to).then(
    () => true,
    (e: NodeJS.ErrnoException) => {
      if (e.code === 'EEXIST') return false;
      throw e;
    },
  );

/**
 * The claims a process killed while it took a dead lock over left (see removeDead): removed once the
 * lock is held, when their maker is gone. None can matter then: each names a lock that is not there.
 */
async function removeDeadClaims(path: string): Promise<void> {
  const prefix = `${basename(path)}${CLAIM}`;
  const names = await fsp.readdir(dirname(path)).catch(() => [] as string[]);
  for (const name of names.filter((n) => n.startsWith(prefix))) {
    const maker = parse(await readLock(`${dirname(path)}/${name}`));
    if (!maker || processIdentity(maker.pid) !== maker.identity) await fsp.rm(`${dirname(path)}/${name}`, { force: true });
  }
}

const CLAIM = '.takeover-';

/**
 * Removes the lock file `path` while it still holds the dead lock `dead`; false when another process
 * is doing that now. Whoever removes it must be the only one: several runs that found the same dead
 * lock, each checking it was still there and then removing it, could remove a lock one of them had
 * just taken (two runs at once). So the remover first takes a claim named after the dead lock,
 * made with link(2) as the lock is: one process gets it, and only it checks and removes. A claim
 * whose maker is gone (killed in these few milliseconds) is taken over the same way, a level down.
 */
async function removeDead(path: string, dead: string, temp: string, depth: number): Promise<boolean> {
  if (depth > 3) return false;
  const claim = `${path}${CLAIM}${createHash('sha256').update(dead).digest('hex').slice(0, 16)}`;
  if (!(await linkOnce(temp, claim))) {
    const found = await readLock(claim);
    if (found === undefined) return false;
    const maker = parse(found);
    if (maker && processIdentity(maker.pid) === maker.identity) return false;
    // The claim of a process that is gone: removed by the one that claims it in turn, then taken.
    if (!(await removeDead(claim, found, temp, depth + 1)) || !(await linkOnce(temp, claim))) return false;
  }
  try {
    if ((await readLock(path)) === dead) await fsp.rm(path, { force: true });
  } finally {
    await fsp.rm(claim, { force: true });
  }
  return true;
}
