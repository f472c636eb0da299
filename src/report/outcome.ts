// The local outcome: /run/machineadm/status.json while a run goes on and result.json when it ends
// (a copy of result.json in the state dir, because /run is cleared at boot). Built from the
// events, which are already scrubbed of secrets, so the files can never hold more than the events.
// Schema: docs/schema/result-v1.json.
import type { RootedFileSystem } from '../host/index.ts';
import { worstResult, type ChangeInfo, type ErrorInfo, type MachineEvent, type MachineIdentity, type Result } from '../engine/events.ts';
import type { DeliveryReport } from './delivery.ts';
import { isPlainObject } from '../config/schema/dsl.ts';

export const RUN_DIR = '/run/machineadm';
/** Only root may look inside: kubeadm's configuration (with the join token) is kept there while it runs. */
export const RUN_DIR_MODE = 0o700;
export const STATUS_FILE = `${RUN_DIR}/status.json`;
export const RESULT_FILE = `${RUN_DIR}/result.json`;
/** In the state dir. */
export const RESULT_COPY = '/result.json';
/**
 * Where `machineadm report` on its own writes its result, and the copy in the state dir: result.json
 * stays the outcome of the last run that prepared or provisioned the machine.
 */
export const REPORT_RESULT_FILE = `${RUN_DIR}/report-result.json`;
export const REPORT_RESULT_COPY = '/report-result.json';

/**
 * Windows has no /run (a drive-less \run\machineadm would land on whatever drive the run started
 * from): the run files go to machineadm's run directory under %ProgramData%, where kubeadm's
 * rendered configuration also lives, locked to SYSTEM and Administrators.
 */
export const WINDOWS_RUN_DIR = 'C:\\ProgramData\\machineadm\\run';

/** The run directory and the files in it, on this platform. */
export function runFilesOf(platform: 'linux' | 'windows'): { dir: string; status: string; result: string; reportResult: string } {
  if (platform !== 'windows') return { dir: RUN_DIR, status: STATUS_FILE, result: RESULT_FILE, reportResult: REPORT_RESULT_FILE };
  const at = (name: string) => `${WINDOWS_RUN_DIR}\\${name}`;
  return { dir: WINDOWS_RUN_DIR, status: at('status.json'), result: at('result.json'), reportResult: at('report-result.json') };
}

/** The result file and its state-dir copy for a command. */
export function resultFilesOf(command: string, platform: 'linux' | 'windows' = 'linux'): { file: string; copy: string } {
  const run = runFilesOf(platform);
  return command === 'report' ? { file: run.reportResult, copy: REPORT_RESULT_COPY } : { file: run.result, copy: RESULT_COPY };
}
export const RESULT_SCHEMA_ID = 'https://machineadm.cluster.x-k8s.io/schemas/result-v1.json';

export type Progress = 'running' | 'finished';

export interface StepResult {
  id: string;
  summary?: string;
  state: Progress;
  result?: Result;
  startedAt: string;
  durationMs?: number;
  /** Why it was skipped, the warning, or the failure in one line. */
  message?: string;
  changes?: ChangeInfo[];
  error?: ErrorInfo;
}

export interface PhaseResult {
  name: string;
  summary?: string;
  state: Progress;
  result?: Result;
  startedAt: string;
  durationMs?: number;
  steps: StepResult[];
}

/** One step on the critical path: the steps run one after the other, so each is on it. */
export interface CriticalStep {
  id: string;
  /** When it started, in milliseconds since the machineadm process started. */
  startMs: number;
  durationMs: number;
  /** Of durationMs, the time the process waited (network, disk, another process) rather than worked. */
  waitingMs: number;
  /**
   * When the step's work began ahead of its turn, while the steps before it ran (the downloads of
   * spec.files begin when the run starts): durationMs is then the step's turn alone, the wait for
   * that work to end and the rest of the step.
   */
  earlyStartMs?: number;
}

/**
 * Where the run's time went, from the process's start: its own start (loading, the configuration,
 * the machine's facts, the preflight) up to the first step, each step, and the runner's work
 * between steps (state writes, flushes). After a resume it covers the process that resumed.
 */
export interface CriticalPath {
  /** When the run started, in milliseconds since the process started: machineadm's own start. */
  startMs: number;
  /** Of startMs, the time the process waited (the tool probes, the disk) rather than worked. */
  startWaitingMs?: number;
  /** When the run finished, in milliseconds since the process started. */
  endMs?: number;
  /** Of the whole run (startMs to endMs), the time the process waited rather than worked. */
  waitingMs?: number;
  /** The run's time outside any step: between steps and after the last (state, flushes, the report). */
  betweenStepsMs?: number;
  steps: CriticalStep[];
}

export interface RunResultDocument {
  $schema: string;
  kind: 'MachineadmRunResult';
  version: 1;
  runId: string;
  command: string;
  state: Progress;
  /** The run's result; while running, the worst so far is not given (see the phases). */
  result?: Result;
  /** The exit code machineadm ended (or will end) with: 0, 1, 2, 3, 4. */
  exitCode?: number;
  startedAt: string;
  updatedAt: string;
  finishedAt?: string;
  durationMs?: number;
  machine: MachineIdentity;
  phases: PhaseResult[];
  /** Steps that failed, in order (usually one: a run stops at the first failure). */
  failedSteps: string[];
  /** Warnings logged by steps. */
  warnings: { step?: string; message: string }[];
  /** The error that ended the run (a failed step, a reboot). */
  error?: ErrorInfo;
  /** How the events reached the endpoints (present when endpoints are configured). */
  delivery?: DeliveryReport;
  /** The id of the last event folded in. */
  lastEventId: string;
  /** When the run went on after each reboot it asked for (its phases and steps follow on). */
  resumedAt?: string[];
  /** The domain join this run did or found: domain, method, computer name, OU (provision/domain/join's record). */
  domainJoin?: Record<string, unknown>;
  /** Where the run's time went (see CriticalPath). */
  criticalPath?: CriticalPath;
}

/**
 * The steps of a run with the results its outcome counts. A step's warning counts unless the same
 * step ran again later in the run and ended without one: the warning of a step that asked for a
 * reboot (or waited on something a reboot settles) is answered once the run resumed and found it
 * done. The step did change the machine before the reboot, so it counts as a success.
 */
export function countedSteps(phases: readonly PhaseResult[]): StepResult[] {
  const steps = phases.flatMap((p) => p.steps);
  const settled = (step: StepResult, i: number): boolean => steps.slice(i + 1).some((later) => later.id === step.id && later.result !== undefined && later.result !== 'warning');
  return steps.map((step, i) => (step.result === 'warning' && settled(step, i) ? { ...step, result: 'success' } : step));
}

/**
 * The warnings of a run, as its summary and its history count them: each step that ended with a
 * warning (and was not settled later in the run), and each warning logged other than by one of them.
 */
export function warningCount(doc: Pick<RunResultDocument, 'phases' | 'warnings'>): number {
  const warned = new Set(countedSteps(doc.phases).filter((s) => s.result === 'warning').map((s) => s.id));
  return warned.size + (doc.warnings ?? []).filter((w) => !(w.step && warned.has(w.step))).length;
}

/**
 * The result of a run that went on after a reboot: the worst of every step of every part (as
 * countedSteps counts them) and of the last part's own end.
 */
function resumedRunResult(phases: readonly PhaseResult[], lastPart: Result): Result {
  return worstResult([lastPart, ...countedSteps(phases).map((step) => step.result ?? 'skipped')]);
}

/** Folds events into a result document; pure. */
export class RunResultBuilder {
  private doc: RunResultDocument | undefined;
  private readonly identity: MachineIdentity;
  /** When each step of this process's part of the run started, on the process's clock. */
  private readonly stepStartMs = new Map<string, number>();
  /** A resumed run: how long its parts before the last reboot took. */
  private beforeMs: number | undefined;

  /** `continues`: the document of a run that stopped for a reboot and resumes now. */
  constructor(identity: MachineIdentity, continues?: RunResultDocument) {
    this.identity = identity;
    if (continues) this.doc = structuredClone(continues);
  }

  get document(): RunResultDocument | undefined {
    return this.doc;
  }

  add(event: MachineEvent): boolean {
    if (event.type === 'step.output' || event.type === 'step.progress') return false;
    if (event.type === 'run.started' && this.doc?.runId === event.runId && this.doc.state === 'finished') {
      // The same run, resumed after a reboot: what it did before stays, the rest follows it.
      const { result: _result, exitCode: _exitCode, finishedAt: _finishedAt, durationMs, error: _error, ...before } = this.doc;
      this.beforeMs = durationMs ?? 0;
      this.doc = { ...before, state: 'running', resumedAt: [...(before.resumedAt ?? []), event.time] };
    } else if (event.type === 'run.started' || !this.doc) {
      this.beforeMs = undefined;
      this.doc = {
        $schema: RESULT_SCHEMA_ID,
        kind: 'MachineadmRunResult',
        version: 1,
        runId: event.runId,
        command: event.command ?? 'unknown',
        state: 'running',
        startedAt: event.time,
        updatedAt: event.time,
        machine: this.identity,
        phases: [],
        failedSteps: [],
        warnings: [],
        lastEventId: event.id,
      };
    }
    const doc = this.doc;
    if (event.type === 'run.started') {
      this.stepStartMs.clear();
      if (event.sinceStartMs !== undefined) doc.criticalPath = { startMs: event.sinceStartMs, ...(event.waitingMs !== undefined ? { startWaitingMs: event.waitingMs } : {}), steps: [] };
      else delete doc.criticalPath;
    }
    doc.updatedAt = event.time;
    doc.lastEventId = event.id;
    const phase = doc.phases.findLast((p) => p.name === event.phase);
    switch (event.type) {
      case 'phase.started':
        doc.phases.push({ name: event.phase ?? '', ...(event.summary ? { summary: event.summary } : {}), state: 'running', startedAt: event.time, steps: [] });
        break;
      case 'phase.finished':
        if (phase) Object.assign(phase, { state: 'finished', result: event.result, durationMs: event.durationMs });
        break;
      case 'step.started':
        phase?.steps.push({ id: event.step ?? '', ...(event.summary ? { summary: event.summary } : {}), state: 'running', startedAt: event.time });
        if (event.sinceStartMs !== undefined) this.stepStartMs.set(event.step ?? '', event.sinceStartMs);
        else this.stepStartMs.delete(event.step ?? '');
        break;
      case 'step.finished': {
        const step = phase?.steps.findLast((s) => s.id === event.step);
        if (!step) break;
        Object.assign(step, {
          state: 'finished',
          result: event.result,
          durationMs: event.durationMs,
          ...(event.message ? { message: event.message } : {}),
          ...(event.changes?.length ? { changes: event.changes } : {}),
          ...(event.error ? { error: event.error } : {}),
        });
        if (event.result === 'failure' && step.id) doc.failedSteps.push(step.id);
        if (event.record && event.recordAs) doc[event.recordAs] = event.record;
        const path = doc.criticalPath;
        if (path && event.durationMs !== undefined) {
          // The step's start on the process's clock; from events that do not carry it, from the
          // run's start and the two event times.
          const startMs = this.stepStartMs.get(step.id) ?? path.startMs + Date.parse(step.startedAt) - Date.parse(doc.resumedAt?.at(-1) ?? doc.startedAt);
          path.steps.push({ id: step.id, startMs, durationMs: event.durationMs, waitingMs: event.waitingMs ?? 0, ...(event.earlyStartMs !== undefined ? { earlyStartMs: event.earlyStartMs } : {}) });
        }
        break;
      }
      case 'log':
        if (event.level === 'warning' && event.message) doc.warnings.push({ ...(event.step ? { step: event.step } : {}), message: event.message });
        break;
      case 'run.finished':
        Object.assign(doc, {
          state: 'finished',
          // A resumed run is one run: what it did before the reboot counts, and so does its time.
          result: this.beforeMs !== undefined && event.result ? resumedRunResult(doc.phases, event.result) : event.result,
          durationMs: this.beforeMs !== undefined && event.durationMs !== undefined ? this.beforeMs + event.durationMs : event.durationMs,
          finishedAt: event.time,
          exitCode: event.error?.code ?? 0,
          ...(event.error ? { error: event.error } : {}),
        });
        if (doc.criticalPath && event.sinceStartMs !== undefined) {
          const path = doc.criticalPath;
          const inSteps = path.steps.reduce((sum, s) => sum + s.durationMs, 0);
          Object.assign(path, {
            endMs: event.sinceStartMs,
            ...(event.waitingMs !== undefined ? { waitingMs: event.waitingMs } : {}),
            betweenStepsMs: Math.max(0, event.sinceStartMs - path.startMs - inSteps),
          });
        }
        break;
      default:
        break;
    }
    return true;
  }
}

/** How long progress other than a run's start, a phase's end or a failure may wait to show in status.json. */
export const STATUS_DELAY_MS = 250;

/** Events status.json shows at once; the rest within STATUS_DELAY_MS, together. */
function shownAtOnce(event: MachineEvent): boolean {
  return event.type === 'run.started' || event.type === 'phase.finished' || event.type === 'run.finished' || (event.type === 'step.finished' && event.result === 'failure');
}

/**
 * Writes status.json as the run goes on and result.json at the end. status.json is rewritten at
 * once for the run's start, each phase's end and a failure, and otherwise at most STATUS_DELAY_MS
 * after a step started or ended (coalesced: at most one write in flight), so a quick run writes it
 * a few times, not per event, and a long step still shows within the delay. A file that cannot be
 * written never stops the run; the problem is kept for the summary.
 */
export class OutcomeFiles {
  readonly builder: RunResultBuilder;
  private readonly fs: RootedFileSystem;
  private readonly stateFs: RootedFileSystem;
  private writing: Promise<void> = Promise.resolve();
  private dirty = false;
  readonly problems: string[] = [];

  private readonly results: { file: string; copy: string };
  private readonly run: ReturnType<typeof runFilesOf>;

  constructor(options: { fs: RootedFileSystem; stateFs: RootedFileSystem; identity: MachineIdentity; continues?: RunResultDocument; results?: { file: string; copy: string } }) {
    this.fs = options.fs;
    this.stateFs = options.stateFs;
    this.run = runFilesOf(options.fs.platform);
    this.results = options.results ?? { file: this.run.result, copy: RESULT_COPY };
    this.builder = new RunResultBuilder(options.identity, options.continues);
  }

  private delayed: NodeJS.Timeout | undefined;
  /** Events folded in, and how many of them status.json showed when last written. */
  private folded = 0;
  private shown = 0;

  readonly listener = (event: MachineEvent): void => {
    if (!this.builder.add(event)) return;
    this.folded += 1;
    if (shownAtOnce(event)) this.writeStatus();
    else this.delayed ??= setTimeout(() => this.writeStatus(), STATUS_DELAY_MS).unref();
  };

  private writeStatus(): void {
    clearTimeout(this.delayed);
    this.delayed = undefined;
    if (this.dirty) return;
    this.dirty = true;
    this.writing = this.writing.then(async () => {
      this.dirty = false;
      this.shown = this.folded;
      await this.write(this.run.status, this.fs);
    });
  }

  /**
   * Writes the final files (with the delivery report when there is one) and returns the document;
   * `alongside` writes more from the finished document at the same time (the run history).
   */
  async finish(delivery?: DeliveryReport, alongside?: (doc: RunResultDocument) => Promise<void>): Promise<RunResultDocument | undefined> {
    clearTimeout(this.delayed);
    this.delayed = undefined;
    await this.writing;
    const doc = this.builder.document;
    if (!doc) return undefined;
    if (delivery) doc.delivery = delivery;
    if (delivery || this.shown !== this.folded) await this.write(this.run.status, this.fs);
    // Together: their fsyncs share the file system's journal commits.
    if (doc.state === 'finished') await Promise.all([this.write(this.results.file, this.fs), this.write(this.results.copy, this.stateFs), alongside?.(doc)]);
    return doc;
  }

  private runDirReady = false;

  private async write(path: string, fs: RootedFileSystem): Promise<void> {
    const doc = this.builder.document;
    if (!doc) return;
    try {
      if (fs === this.fs && !this.runDirReady) {
        // Also tightened when it exists: an image or an older version may have made it 0755.
        await fs.mkdirp(this.run.dir, RUN_DIR_MODE);
        await fs.setAttributes(this.run.dir, { mode: RUN_DIR_MODE, record: false });
        this.runDirReady = true;
      }
      // /run is cleared at boot: its files need no flush to disk, only the copy in the state dir does.
      await fs.writeFile(path, JSON.stringify(doc, null, 2) + '\n', { mode: 0o600, backup: false, durable: !(fs === this.fs && path.startsWith(RUN_DIR + '/')) });
    } catch (error) {
      const message = `${fs.root === '/' ? '' : fs.root}${path}: ${(error as Error).message}`;
      if (!this.problems.includes(message)) this.problems.push(message);
    }
  }
}

/**
 * A result.json or status.json as status and reset read it, or undefined when it is not one: a file
 * cut short or changed by hand must not end them with "a bug", nor show "undefined" as a run.
 */
export function parseRunDocument(text: string): RunResultDocument | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (!isPlainObject(value) || !['runId', 'command', 'state', 'startedAt', 'updatedAt'].every((key) => typeof value[key] === 'string')) return undefined;
  const phases = value.phases ?? [];
  if (!Array.isArray(phases) || !phases.every((p) => isPlainObject(p) && Array.isArray(p.steps) && p.steps.every(isPlainObject))) return undefined;
  return value as unknown as RunResultDocument;
}

/** The last result: /run/machineadm/result.json under the root, else the copy in the state dir. */
export async function readLastResult(fs: RootedFileSystem, stateFs: RootedFileSystem): Promise<RunResultDocument | undefined> {
  for (const [where, path] of [
    [fs, runFilesOf(fs.platform).result],
    [stateFs, RESULT_COPY],
  ] as const) {
    const text = await where.readText(path).catch(() => undefined);
    const document = text === undefined ? undefined : parseRunDocument(text);
    if (document) return document;
  }
  return undefined;
}
