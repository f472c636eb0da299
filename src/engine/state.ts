// The state file: which steps completed in which run, and a pending reboot. Written atomically
// when it changes in a way a later run relies on (see StateWriter), so a crash or reboot resumes
// where the run stopped.
import type { RootedFileSystem } from '../host/index.ts';
import type { Result } from './events.ts';
import { MachineadmError, ExitCode } from '../errors.ts';
import type { ProvisionRecord } from './provisioned.ts';
import { isPlainObject } from '../config/schema/dsl.ts';

export const STATE_FILE = '/state.json';
export const STATE_VERSION = 1;

export interface StepRecord {
  result: Result;
  at: string;
  runId: string;
  durationMs: number;
  data?: Record<string, unknown>;
}

export interface RunRecord {
  runId: string;
  command: string;
  startedAt: string;
  finishedAt?: string;
  result?: Result | 'reboot-required' | 'interrupted';
}

/** How many reboots one run may ask for unless --max-reboots says otherwise (the loop guard). */
export const DEFAULT_MAX_REBOOTS = 3;

/** A step asked for a reboot: the run resumes after it, as the same run. */
export interface PendingReboot {
  stepId: string;
  /** The boot the reboot was asked in: a run in the same boot has nothing to resume yet. */
  bootId?: string;
  at: string;
  reason: string;
  /** The run that continues after the reboot (its events keep this id, numbered on). */
  runId?: string;
  /**
   * That run's command: its record in `runs` may be gone (the list is bounded, and every run that
   * waits for the reboot adds one), and no other command may take its place.
   */
  command?: string;
  /** The sequence number the resumed run's first event takes. */
  nextSeq?: number;
  /** Reboots this run has asked for so far (the loop guard stops it past the limit). */
  reboots?: number;
}

/** True when the machine booted again since the reboot was asked for (an unknown boot counts as one). */
export function rebootedSince(pending: PendingReboot, bootId: string | undefined): boolean {
  return pending.bootId === undefined || pending.bootId !== bootId;
}

/**
 * Whether a run of `command` is the one that goes on after the pending reboot: another command
 * (a `report` or `prepare` that runs first after the reboot) must not take the stopped run's place,
 * or that run would never resume. A pending reboot without its run on record counts as this one.
 */
export function resumesPendingReboot(state: MachineState, command: string): boolean {
  const runId = state.pendingReboot?.runId;
  const asked = state.pendingReboot?.command ?? (runId === undefined ? undefined : state.runs.find((r) => r.runId === runId)?.command);
  return asked === undefined || asked === command;
}

export interface MachineState {
  version: number;
  steps: Record<string, StepRecord>;
  runs: RunRecord[];
  pendingReboot?: PendingReboot;
  /** A step with recordsStart whose apply() began and has not ended. */
  started?: { stepId: string; runId: string; at: string };
  /** The last run that went through the provision phase: the sentinel of a later `report` follows it. */
  provision?: ProvisionRecord;
  /** What steps recorded for reset before their first change (Step.undoRecord), by full step id. */
  undo?: Record<string, Record<string, unknown>>;
}

/**
 * Merges a step's new undo record into what earlier runs recorded: in a map entry the earliest
 * value of each key wins (the machine before the first run); other entries are kept once set.
 * Returns undefined when nothing new was added (no state write needed).
 */
export function mergeUndoRecord(earlier: Record<string, unknown> | undefined, added: Record<string, unknown>): Record<string, unknown> | undefined {
  const merged: Record<string, unknown> = { ...(earlier ?? {}) };
  let changed = false;
  const isMap = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
  for (const [key, value] of Object.entries(added)) {
    const old = merged[key];
    if (old === undefined) {
      merged[key] = value;
      changed = true;
    } else if (isMap(old) && isMap(value)) {
      const fresh = Object.keys(value).filter((k) => !(k in old));
      if (fresh.length === 0) continue;
      merged[key] = { ...value, ...old };
      changed = true;
    }
  }
  return changed ? merged : undefined;
}

const MAX_RUNS = 50;

/** Why a write into the state directory failed, in the operator's words ("its file system is full (ENOSPC)"). */
export function whyNotWritable(error: unknown): string {
  const code = (error as NodeJS.ErrnoException).code ?? '';
  const why = ({ EROFS: 'it is on a read-only file system', ENOSPC: 'its file system is full', EDQUOT: 'its file system quota is used up', EACCES: 'machineadm may not write there', EPERM: 'machineadm may not write there', ENOTDIR: 'it is not a directory' } as Record<string, string>)[code];
  return why ? `${why} (${code})` : (error as Error).message;
}

/** Less room than this in the state directory refuses a run before its first change: the records of what it writes, and copies of what it replaces, go there. */
export const STATE_DIR_MIN_FREE_BYTES = 1024 * 1024;

/** Why a run could not keep its records in the state directory, found before it changes anything; undefined when it can. */
export async function stateDirUnusable(stateFs: RootedFileSystem): Promise<string | undefined> {
  const room = await stateFs.writableRoom();
  if ('error' in room) {
    // A user without rights (plan as anyone) is not told what root could do: the run itself needs root.
    if (['EACCES', 'EPERM'].includes(room.error.code ?? '') && process.getuid?.() !== 0) return undefined;
    return whyNotWritable(room.error);
  }
  if (room.freeBytes < STATE_DIR_MIN_FREE_BYTES) return `its file system is full (${room.freeBytes} bytes free, a run needs ${STATE_DIR_MIN_FREE_BYTES})`;
  return undefined;
}

export function emptyState(): MachineState {
  return { version: STATE_VERSION, steps: {}, runs: [] };
}

// Why a state file of this version is not one machineadm can use (changed by hand), or undefined.
function damage(parsed: Record<string, unknown>): string | undefined {
  if (parsed.steps !== undefined && !isPlainObject(parsed.steps)) return 'has "steps" that is not a map of step records';
  if (parsed.runs !== undefined && !(Array.isArray(parsed.runs) && parsed.runs.every((r) => isPlainObject(r) && typeof r.runId === 'string' && typeof r.command === 'string'))) return 'has "runs" that is not a list of run records';
  if (parsed.pendingReboot !== undefined && !(isPlainObject(parsed.pendingReboot) && typeof parsed.pendingReboot.stepId === 'string')) return 'has a "pendingReboot" that is not a reboot record';
  return undefined;
}

/** The state file's text as a MachineState; a file that is not one is an error naming it and what to do. */
export function parseStateFile(text: string, where: string): MachineState {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (cause) {
    throw new MachineadmError(`state file ${where} is not valid JSON`, ExitCode.stepFailed, { cause, hint: MOVE_IT_AWAY });
  }
  if (!isPlainObject(parsed)) throw new MachineadmError(`state file ${where} holds ${parsed === null ? 'null' : Array.isArray(parsed) ? 'a list' : `a ${typeof parsed}`}, not a machineadm state`, ExitCode.stepFailed, { hint: MOVE_IT_AWAY });
  if (parsed.version !== STATE_VERSION) throw new MachineadmError(`state file ${where} has version ${String(parsed.version)}, this machineadm reads ${STATE_VERSION}`, ExitCode.stepFailed);
  const why = damage(parsed);
  if (why) throw new MachineadmError(`state file ${where} ${why}`, ExitCode.stepFailed, { hint: MOVE_IT_AWAY });
  return { ...emptyState(), ...(parsed as Partial<MachineState>) };
}

const MOVE_IT_AWAY = `move it away to start over; machineadm's steps check the machine again and converge`;

/** The state store lives in the state directory (a file system rooted there). */
export class StateStore {
  private readonly fs: RootedFileSystem;
  constructor(stateFs: RootedFileSystem) {
    this.fs = stateFs;
  }

  get directory(): string {
    return this.fs.root;
  }

  async load(): Promise<MachineState> {
    const text = await this.fs.readText(STATE_FILE);
    return text === undefined ? emptyState() : parseStateFile(text, `${this.fs.root}${STATE_FILE}`);
  }

  /**
   * Writes the state file atomically, on disk before it returns; `settle: false` leaves the fsync
   * of the state directory to the next one that settles it (see RootedFileSystem.deferDirectorySyncs).
   */
  async save(state: MachineState, options: { settle?: boolean } = {}): Promise<void> {
    const trimmed = { ...state, runs: state.runs.slice(-MAX_RUNS) };
    try {
      await this.fs.writeFile(STATE_FILE, JSON.stringify(trimmed, null, 2) + '\n', { mode: 0o600, backup: false });
      if (options.settle ?? true) await this.fs.syncDirectories();
    } catch (cause) {
      // What the operator can do about it, not "a bug": the record of what ran is at stake.
      throw new MachineadmError(`cannot write the state file ${this.fs.mapPath(STATE_FILE)}: ${whyNotWritable(cause)}`, ExitCode.stepFailed, {
        cause,
        hint: 'free space in the state directory or make it writable, then run again: steps already done are found done',
      });
    }
  }
}

/**
 * When the runner writes the state file. A record that a later run cannot rebuild by checking the
 * machine again (a step that began, a record a step marks lasting, a failure of a started step, a
 * reboot asked for) is written at once, and on disk before the run goes on: now(). Everything
 * else (a step found done, a record the next run rebuilds or does not need) is only marked and
 * goes out with the next write, at the latest with the run's end record: finish().
 *
 * `settle` makes the machine's changes so far durable (the directories written into, fsync'd
 * once each): called before every state write, so the state file never says more than the disk
 * holds after a power cut.
 */
export class StateWriter {
  private dirty = false;
  private readonly store: StateStore;
  private readonly settle: () => Promise<void>;
  readonly state: MachineState;
  constructor(store: StateStore, state: MachineState, settle: () => Promise<void> = async () => undefined) {
    this.store = store;
    this.state = state;
    this.settle = settle;
  }

  /** A change a later run can do without: written with the next one. */
  mark(): void {
    this.dirty = true;
  }

  /** A change that must be on disk before the run goes on. */
  async now(): Promise<void> {
    await this.settle();
    await this.store.save(this.state);
    this.dirty = false;
  }

  async flush(): Promise<void> {
    if (this.dirty) await this.now();
  }

  /**
   * The run's end record: its bytes are on disk when this returns, its rename is made durable by
   * the next write that settles the state directory (or the file system's own commit). A power
   * cut just after a run may lose the record of its end, never a record the next run needs: those
   * went out with now().
   */
  async finish(): Promise<void> {
    await this.settle();
    await this.store.save(this.state, { settle: false });
    this.dirty = false;
  }
}
