// The spool: events on their way to an endpoint, one file per event per endpoint, under
// <state dir>/spool/<endpoint key>/. Every event is written here (atomically and fsync'd) before
// the run goes on, delivered from here, and removed only after the endpoint acknowledged it, so a
// crash at any moment loses nothing; at worst an event is sent twice, with the same id.
import { createHash } from 'node:crypto';
import type { RootedFileSystem } from '../host/index.ts';
import { UsageError } from '../errors.ts';

export const SPOOL_DIR = '/spool';
/**
 * The most events an endpoint's spool keeps at the start of a run (each ~1 KiB): a collector
 * that never answers (gone, or a URL written wrong) would otherwise grow it by every run's events
 * for as long as the machine lives, a `machineadm report` timer's included.
 */
export const MAX_SPOOLED_EVENTS = 10_000;
/** What a spooled file that is not an event is renamed to: kept for a look, never sent. */
export const UNREADABLE_SUFFIX = '.unreadable';
/** A spool write takes milliseconds; a temporary file this old was left by a killed process. */
const STALE_TEMPORARY_MS = 10 * 60_000;

// <13-digit stamp>-<run id>-<6-digit seq>.json: a run's events share the stamp, so names sort by
// run and then by sequence; the stamp of a new run is above every stamp already spooled, so older
// events go first even when the clock went back (first boots often fix the clock mid-run).
const NAME = /^(\d{13})-([A-Za-z0-9-]+)-(\d{6,})\.json$/;

/** A short, stable directory name for an endpoint URL (the URL itself may hold a path or query). */
export function endpointKey(url: string): string {
  return createHash('sha256').update(url).digest('hex').slice(0, 16);
}

export function spoolName(stamp: number, runId: string, seq: number): string {
  return `${String(stamp).padStart(13, '0')}-${runId}-${String(seq).padStart(6, '0')}.json`;
}

export function isSpoolName(name: string): boolean {
  return NAME.test(name);
}

/** The stamp for a new run: now, or just above the newest stamp already in any of the spools. */
export async function nextRunStamp(stateFs: RootedFileSystem, now: number): Promise<number> {
  let stamp = now;
  for (const dir of await stateFs.list(SPOOL_DIR)) {
    // Only folders are spools (one in another's place is refused when its endpoint opens it).
    if ((await stateFs.stat(`${SPOOL_DIR}/${dir}`))?.kind !== 'directory') continue;
    const names = (await stateFs.list(`${SPOOL_DIR}/${dir}`)).filter(isSpoolName);
    const newest = names.at(-1);
    if (newest) stamp = Math.max(stamp, Number(newest.slice(0, 13)) + 1);
  }
  return stamp;
}

/** The endpoint keys that have a spool directory, with how many events each holds. */
export async function spoolContents(stateFs: RootedFileSystem): Promise<{ key: string; events: number }[]> {
  const out: { key: string; events: number }[] = [];
  for (const key of await stateFs.list(SPOOL_DIR)) {
    const info = await stateFs.stat(`${SPOOL_DIR}/${key}`);
    if (info?.kind !== 'directory') continue;
    out.push({ key, events: (await stateFs.list(`${SPOOL_DIR}/${key}`)).filter(isSpoolName).length });
  }
  return out;
}

/** Whether a spooled text is an event as the spool writes them: a CloudEvent's JSON object. */
export function isSpooledEvent(text: string): boolean {
  try {
    const value = JSON.parse(text) as { specversion?: unknown; id?: unknown } | null;
    return typeof value === 'object' && value !== null && typeof value.specversion === 'string' && typeof value.id === 'string';
  } catch {
    return false;
  }
}

export class EndpointSpool {
  readonly key: string;
  readonly dir: string;
  private readonly fs: RootedFileSystem;

  constructor(stateFs: RootedFileSystem, key: string) {
    this.fs = stateFs;
    this.key = key;
    this.dir = `${SPOOL_DIR}/${key}`;
  }

  /** Creates the directory and checks it stays inside the state dir (done once, before the sync writes). */
  async open(): Promise<void> {
    await this.fs.mkdirp(this.dir, 0o700).catch((error: NodeJS.ErrnoException) => {
      // Something else in the spool's place (ENOTDIR, EEXIST): the state directory's, not a bug.
      if (error.code !== 'ENOTDIR' && error.code !== 'EEXIST') throw error;
      throw new UsageError(`${this.fs.root}${this.dir} cannot be the spool of an endpoint: ${error.code} (something other than a folder is in its place)`, { hint: 'move it away: machineadm keeps an endpoint\'s unsent events in a folder there' });
    });
    await this.fs.resolve(this.dir);
    // A kill in the middle of a write leaves its temporary file (never a half event under a real name).
    // Another machineadm (a `report` timer during `init`) may be writing one now: only a dead
    // writer's go at once, anything else once it is old.
    await this.fs.removeAbandonedTemporaries(this.dir, STALE_TEMPORARY_MS);
  }

  /** Writes an event durably before returning: the caller may go on only once it is on disk. */
  appendSync(name: string, text: string): void {
    this.fs.writeFileDurableSync(`${this.dir}/${name}`, text, 0o600);
  }

  /** The spooled events' names, oldest first. */
  async pending(): Promise<string[]> {
    return (await this.fs.list(this.dir)).filter(isSpoolName);
  }

  /** Removes the oldest events past `max`; returns how many were removed. */
  async dropOldest(max: number): Promise<number> {
    const names = await this.pending();
    const over = names.slice(0, Math.max(0, names.length - max));
    for (const name of over) await this.remove(name);
    return over.length;
  }

  async read(name: string): Promise<string | undefined> {
    return this.fs.readText(`${this.dir}/${name}`);
  }

  /**
   * Moves a spooled file that is not an event out of the queue (NAME.unreadable): a collector
   * refuses it, and being first it would hold back every event after it, run after run.
   */
  async setAside(name: string): Promise<void> {
    const bytes = await this.fs.readFile(`${this.dir}/${name}`);
    if (bytes) this.fs.writeFileDurableSync(`${this.dir}/${name}${UNREADABLE_SUFFIX}`, bytes, 0o600);
    await this.remove(name);
  }

  async remove(name: string): Promise<void> {
    await this.fs.remove(`${this.dir}/${name}`);
  }
}
