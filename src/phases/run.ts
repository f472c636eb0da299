// One run of machineadm, as init/prepare/provision/report ask for it: everything that can be wrong
// with the input is found first (exit 2, nothing changed), then reporting opens, the phases run,
// and the run ends the same way whether it finished, failed or was interrupted: events spooled or
// delivered within the deadline, result files written, the exit code returned. The CLI turns flags
// into a RunRequest and prints nothing of the run itself; tests drive this module directly.
import { acquireRunLock, archiveDirectory, type Host, type RootedFileSystem } from '../host/index.ts';
import { RUN_LOCK_FILE } from '../host/run-lock.ts';
import type { MachineConfig } from '../config/schema/index.ts';
import { SecretScrubber, secretNeedsNetwork } from '../config/secrets.ts';
import { secretFields } from '../config/redact.ts';
import { describeSecretSource } from '../config/secret-description.ts';
import { OFFLINE_HINT } from '../config/secret-sources/limits.ts';
import { EventBus, type MachineIdentity } from '../engine/events.ts';
import { attachConsole, isDataMode, renderResultSummary, type ConsoleMode, type SpinnerFactory } from '../report/console.ts';
import { machineIdentity, registerConfigSecrets, resolveEndpoints, type ResolvedEndpoint } from '../report/endpoints.ts';
import { openReporting, type ReportingResult } from '../report/session.ts';
import { resultFilesOf, runFilesOf, type RunResultDocument } from '../report/outcome.ts';
import { ConfigError, ExitCode, InterruptedError, MachineadmError, RebootRequiredError, RunLockedError, type ConfigIssue } from '../errors.ts';
import { ALL_PHASES, phasesNamed } from './registry.ts';
import { resetPhase } from './reset.ts';
import { computePlan, preflightRun, refuseRunPaths, removeLeftovers, runPhases, type Plan, type RunnerInput, type RunOutcome } from '../engine/runner.ts';
import { selectSteps, type Selection } from '../engine/select.ts';
import { protectedResume, removingRecord } from '../engine/resume-record.ts';
import { StateStore, rebootedSince, resumesPendingReboot, stateDirUnusable, whyNotWritable } from '../engine/state.ts';
import type { Phase, PhaseName } from '../engine/step.ts';

export type RunCommand = 'init' | 'prepare' | 'provision' | 'report' | 'reset';

export interface RunRequest {
  command: RunCommand;
  config: MachineConfig;
  /** The machine; its signal (when given) interrupts the run. */
  host: Host;
  /** Where state.json, the spool and the result copy live. */
  stateFs: RootedFileSystem;
  selection: Selection;
  force: boolean;
  /** reset --keep-domain. */
  keepDomain?: boolean;
  /** 0 by default, 1 per -v: at 2 and above kubeadm gets --v (see StepContext.options). */
  verbosity?: number;
  /**
   * How the run shows itself: `log` (--log-file) also gets every event as a text line, whatever
   * the mode, and the summary; `verbosity` as StepContext.options says.
   */
  console: { mode: ConsoleMode; write(text: string): void; spinner?: SpinnerFactory; log?: (text: string) => void; verbosity?: number };
  /** The phases to run; by default the registry's for the command. */
  phases?: readonly Phase[];
  /** The configuration's sources as given (-c): a URL among them may carry a credential. */
  sources?: readonly string[];
  /** The instance id the metadata service gave, when machineadm read instance metadata. */
  instanceId?: string;
  /** Warnings about the configuration as read (user data cloud-init reads differently): in the report. */
  notes?: readonly string[];
  /**
   * Reboot and resume: the command line the next boot runs to resume (absolute paths), how many
   * reboots one run may ask for, and whether machineadm restarts the machine itself (--no-reboot:
   * the caller does). Without it a reboot-required step only ends the run with exit 4.
   */
  resume?: {
    argv: readonly string[];
    maxReboots: number;
    reboot: boolean;
    unavailable?: string;
    byCloudbaseInit?: boolean;
    /**
     * What the registration runs instead of argv (`machineadm resume --state-dir DIR`), and how
     * many of argv's first words start machineadm (see resume-record.ts).
     */
    launcher?: { argv: readonly string[]; selfLength: number };
  };
  /** Configuration fields that took their value from the machine (recorded in the report). */
  machineValues?: MachineIdentity['machineValues'];
}

export interface RunReport {
  exitCode: number;
  /** reset: where the state directory went (renamed, with the time of the reset). */
  archivedTo?: string;
  outcome: RunOutcome;
  /** result.json as written, and how the events went. */
  reported: ReportingResult;
  /** The error that ended the run, secrets scrubbed, for the caller to show. */
  error?: { message: string; hint?: string };
  /** The summary the console was given (text modes), which names a failed step's error. */
  summary?: string;
}

/** cloudbase-init reboots the machine and runs the plugin's script again when it exits with this. */
export const CLOUDBASE_INIT_REBOOT_AND_RERUN = 1003;

/** After an interruption, how long delivery may go on before the rest stays in the spool. */
const INTERRUPTED_DELIVERY_MS = 2_000;

async function runnerInput(request: Omit<RunRequest, 'console'>): Promise<{ input: RunnerInput; secrets: SecretScrubber; resumes: boolean }> {
  const { command, config } = request;
  const launcher = request.resume?.launcher;
  const facts = await request.host.facts();
  const host = launcher
    ? { ...request.host, resume: protectedResume(request.host.resume, request.stateFs, launcher.argv, launcher.selfLength, () => request.host.now(), facts.bootId) }
    : command === 'reset'
      ? { ...request.host, resume: removingRecord(request.host.resume, request.stateFs) }
      : request.host;
  const names: PhaseName[] = command === 'init' ? ['prepare', 'provision', 'report'] : [command];
  const phases = request.phases ?? (command === 'reset' ? [resetPhase] : phasesNamed(names));
  const secrets = new SecretScrubber();
  for (const source of request.sources ?? []) secrets.addUrl(source);
  const identity = await machineIdentity(config, facts, host, request.instanceId, request.machineValues);
  const state = new StateStore(request.stateFs);
  // After the reboot a run asked for, it goes on as the same run: same id, events numbered on.
  // Another command (a reset undoing that run, a report) is a run of its own, reported alone.
  // A state directory that is a file, or one machineadm may not read, is the operator's to fix.
  const known = await state.load().catch((error: unknown) => {
    throw (error as NodeJS.ErrnoException).code ? stateDirError(request.stateFs, error) : error;
  });
  const pending = resumesPendingReboot(known, command) ? known.pendingReboot : undefined;
  const resumes = pending?.runId !== undefined && !request.force && rebootedSince(pending, facts.bootId) ? pending : undefined;
  const events = new EventBus({ scrub: (value) => secrets.scrubValue(value), identity, ...(resumes ? { runId: resumes.runId, firstSeq: resumes.nextSeq ?? 1 } : {}) });
  const input: RunnerInput = {
    command,
    phases,
    selection: request.selection,
    config,
    facts,
    host,
    events,
    state,
    force: request.force,
    ...(request.keepDomain ? { keepDomain: true } : {}),
    verbosity: request.verbosity ?? 0,
    secrets,
    ...(request.resume ? { resume: request.resume } : {}),
    ...(request.notes ? { notes: request.notes } : {}),
  };
  return { input, secrets, resumes: resumes !== undefined };
}

/**
 * Everything the run would refuse before its first change, found the same way for `plan` and for a
 * run: the selection, the endpoints' files and tokens, each step's preflight (secrets, files, the
 * machine as kubeadm finds it) and, under --offline, every download. Configuration problems come
 * together in one ConfigError (exit 2); nothing is changed.
 */
async function refuseBeforeChange(request: Omit<RunRequest, 'console'>, input: RunnerInput, secrets: SecretScrubber): Promise<ResolvedEndpoint[]> {
  selectSteps(input.phases, input.selection);
  const issues: ConfigIssue[] = [];
  const refusedOffline = new Set<string>();
  const collect = (error: unknown): undefined => {
    if (!(error instanceof ConfigError)) throw error;
    // A step's preflight refuses the same offline secret again: one problem per secret.
    issues.push(...error.issues.filter((i) => !(i.hint === OFFLINE_HINT && refusedOffline.has(i.path))));
    return undefined;
  };
  // A secret read over the network cannot be had offline: refused now, not by its step mid-run.
  if (request.host.offline) {
    for (const { field, source } of secretFields(request.config).filter((s) => secretNeedsNetwork(s.source))) {
      refusedOffline.add(field);
      issues.push({ path: field, message: `is read from ${describeSecretSource(source, input.facts.os)}, which needs the network: refused with --offline`, hint: OFFLINE_HINT });
    }
  }
  const endpoints = await resolveEndpoints(request.config, request.host, secrets).catch(collect);
  await registerConfigSecrets(request.config, request.host, secrets);
  await preflightRun(input).catch(collect);
  issues.push(...(await refuseRunPaths(request.host, input.facts, [...ALL_PHASES, ...input.phases], runFilesOf(input.facts.os).dir)));
  const stateDir = await stateDirUnusable(request.stateFs);
  if (stateDir) issues.push({ path: '', message: `cannot use the state directory ${request.stateFs.mapPath('/')}: ${stateDir}`, hint: stateDirHint(stateDir), refused: true });
  if (issues.length) throw new ConfigError(issues);
  return endpoints ?? [];
}

export interface PlanReport {
  plan: Plan;
  /** What the run would refuse before its first change: the plan shows what it would do, the run would not start. */
  refusal?: MachineadmError;
}

/** Every action `init` (or one phase) would take, in order, and what it would refuse; touches nothing. */
export async function planRun(request: Omit<RunRequest, 'console'>, options: { otherMachine?: boolean } = {}): Promise<PlanReport> {
  const { input, secrets } = await runnerInput(request);
  let refusal: MachineadmError | undefined;
  // A plan for another machine (--facts, --os) cannot look at that machine's files and secrets.
  if (!options.otherMachine) {
    await refuseBeforeChange(request, input, secrets).catch((error: unknown) => {
      if (!(error instanceof MachineadmError)) throw error;
      refusal = error;
    });
  } else {
    await registerConfigSecrets(request.config, request.host, secrets);
  }
  const plan = secrets.scrubValue(await computePlan(input));
  // Another machine's plan has no preflight: what its steps would refuse is its refusal.
  if (options.otherMachine && !refusal) {
    const refused = plan.phases.flatMap((p) => p.steps).flatMap((s) => s.changes.filter((c) => c.action === 'refuse').map((c) => ({ path: c.target, message: c.detail ?? 'refused', refused: true as const })));
    if (refused.length) refusal = new ConfigError(refused);
  }
  return { plan, ...(refusal ? { refusal } : {}) };
}

/** The state directory's lock file: one run at a time changes a machine. */
export const RUN_LOCK = RUN_LOCK_FILE;

/**
 * Takes the state directory's lock: a second run must not write the first one's state half-way
 * (both would append to the same history and one would lose the other's records). Taken after the
 * preflight, which only reads, so that a refused run leaves no state directory behind.
 */
async function holdRunLock(request: RunRequest, runId: string): Promise<() => Promise<void>> {
  const lock = await acquireRunLock(request.stateFs, RUN_LOCK, { command: request.command, startedAt: request.host.now().toISOString(), runId }).catch((error: unknown) => {
    throw stateDirError(request.stateFs, error);
  });
  if (lock.held) return lock.release;
  const { holder } = lock;
  throw new RunLockedError(`another machineadm run (${holder.command}, pid ${holder.pid}, started ${holder.startedAt}) holds the state directory ${request.stateFs.mapPath('/')}: nothing was changed`, {
    hint: 'wait for it to end ("machineadm status" shows its progress), then run again; the lock of a run that was killed, or of an earlier boot, is taken over by itself',
  });
}

/** A state directory machineadm cannot write (read-only, full, not permitted): what to do, not "a bug". */
function stateDirError(stateFs: RootedFileSystem, error: unknown): MachineadmError {
  if (error instanceof MachineadmError) return error;
  const code = (error as NodeJS.ErrnoException).code ?? '';
  return new MachineadmError(`cannot use the state directory ${stateFs.mapPath('/')}: ${whyNotWritable(error)}; nothing was changed`, ExitCode.usage, {
    cause: error,
    hint: stateDirHint(code),
  });
}

function stateDirHint(why: string): string {
  if (/ENOSPC|EDQUOT|full/.test(why)) return 'free some space there, or give another state directory (--state-dir DIR)';
  if (/ENOTDIR|not a directory/.test(why)) return 'move what is in its place away, or give another state directory (--state-dir DIR)';
  return 'give a writable state directory (--state-dir DIR), or run as root';
}

export async function executeRun(request: RunRequest): Promise<RunReport> {
  const { input, secrets, resumes } = await runnerInput(request);
  // Everything that can be wrong with the input is found before the machine is touched (exit 2).
  const endpoints = await refuseBeforeChange(request, input, secrets);
  const release = await holdRunLock(request, input.events.runId);
  try {
    const report = await runLocked(request, input, secrets, endpoints, resumes);
    // A reset that finished leaves the records of what it undid, archived: the next run starts afresh.
    if (request.command === 'reset' && report.exitCode === ExitCode.ok) {
      const archivedTo = await archiveDirectory(request.stateFs.root, RUN_LOCK.slice(1), request.host.now());
      if (request.console.mode !== 'json') request.console.write(`state directory archived to ${archivedTo}\n`);
      return { ...report, archivedTo };
    }
    return report;
  } finally {
    await release();
  }
}

async function runLocked(request: RunRequest, input: RunnerInput, secrets: SecretScrubber, endpoints: ResolvedEndpoint[], resumes: boolean): Promise<RunReport> {
  const { config, host } = request;
  await removeLeftovers(host, input.facts, [...ALL_PHASES, ...input.phases]);
  // The run decides when its writes must be durable (see StateWriter): a directory is fsync'd
  // once per phase or record, not once per file written into it.
  host.fs.deferDirectorySyncs();
  request.stateFs.deferDirectorySyncs();

  // The spool listens first: an event is on disk before the console or a file shows it.
  const continues = resumes ? await previousResult(request.stateFs, input.events.runId) : undefined;
  const results = resultFilesOf(request.command, request.host.fs.platform);
  const reporting = await openReporting({
    bus: input.events,
    host,
    stateFs: request.stateFs,
    endpoints,
    deadlineSeconds: config.spec.report.deadlineSeconds,
    results,
    ...(continues ? { continues } : {}),
  });
  const { mode, write: show, log } = request.console;
  // What the console shows of the run's end goes to the log file too.
  const write = log ? (text: string) => (show(text), log(text)) : show;
  const detachConsole = attachConsole(input.events, mode, { write: show }, mode === 'tty' ? request.console.spinner : undefined, { verbosity: request.console.verbosity ?? 0 });
  const detachLog = log ? attachConsole(input.events, 'text', { write: log }, undefined, { verbosity: Infinity }) : () => undefined;
  const detach = () => (detachConsole(), detachLog());
  let outcome: RunOutcome;
  try {
    outcome = await runPhases(input);
  } catch (error) {
    // The run could not record its end (a state file it cannot write): the run ends here all the
    // same, so status.json and result.json say it finished, failed, and why.
    const message = secrets.scrub(error instanceof Error ? error.message : String(error));
    const hint = error instanceof MachineadmError && error.hint ? { hint: secrets.scrub(error.hint) } : {};
    input.events.emit({ type: 'run.finished', command: request.command, result: 'failure', durationMs: 0, error: { message, code: ExitCode.stepFailed, ...hint } });
    detach();
    await reporting.finish();
    throw error instanceof MachineadmError ? error : new MachineadmError(message, ExitCode.stepFailed, { cause: error, ...hint });
  }
  detach();
  const interrupted = outcome.error instanceof InterruptedError;
  // Said only when delivery is slow, so a dead collector does not look like a hang.
  const note = setTimeout(() => {
    if (isDataMode(mode) || interrupted) return;
    for (const b of reporting.backlog()) write(`waiting up to ${config.spec.report.deadlineSeconds}s for ${b.events} event${b.events === 1 ? '' : 's'} to reach ${b.url}\n`);
  }, 1_000);
  // A signal after the last step cuts the wait for the endpoints as one during the run does.
  const cut = !interrupted && host.signal ? { signal: host.signal, withinMs: INTERRUPTED_DELIVERY_MS } : undefined;
  const reported = await reporting.finish(interrupted ? { deadlineMs: INTERRUPTED_DELIVERY_MS } : cut ? { cut } : {}).finally(() => clearTimeout(note));
  const lateInterrupt = cut?.signal.aborted && cut.signal.reason instanceof InterruptedError ? cut.signal.reason : undefined;
  const summary = reported.document ? secrets.scrub(renderResultSummary(reported.document, { resultFile: host.fs.mapPath(results.file), problems: reported.problems })) : undefined;
  if (summary !== undefined) (isDataMode(mode) ? (log ?? (() => undefined)) : write)(summary);
  if (outcome.error instanceof RebootRequiredError && !outcome.error.alreadyPending) {
    // The report so far, for the resumed run to go on from (result.json is rewritten by any rerun).
    if (reported.document) await request.stateFs.writeFile(RESUMED_RESULT, JSON.stringify(reported.document, null, 2) + '\n', { mode: 0o600, backup: false });
    await rebootForResume(request, input, outcome.error);
  } else if (resumes && !(outcome.error instanceof RebootRequiredError)) {
    await request.stateFs.remove(RESUMED_RESULT);
  }
  const error = outcome.error
    ? { message: secrets.scrub(outcome.error.message), ...(outcome.error.hint ? { hint: secrets.scrub(outcome.error.hint) } : {}) }
    : lateInterrupt
      ? { message: `${lateInterrupt.message} while the finished run waited for its endpoints`, hint: 'the run itself finished (result.json); what was not delivered stays spooled for the next run or "machineadm report"' }
      : undefined;
  // cloudbase-init's own code for "reboot, then run this script again".
  // A run that finished well but was interrupted while it reported exits as interrupted; a failure
  // or a reboot says more than the signal, and keeps its own code.
  const exitCode = outcome.error instanceof RebootRequiredError && request.resume?.byCloudbaseInit ? CLOUDBASE_INIT_REBOOT_AND_RERUN : outcome.error ? outcome.error.exitCode : lateInterrupt ? lateInterrupt.exitCode : ExitCode.ok;
  return { exitCode, outcome, reported, ...(error ? { error } : {}), ...(summary !== undefined && !isDataMode(mode) ? { summary } : {}) };
}

/** The report of a run that stopped for a reboot, as it was then (in the state dir: /run is cleared at boot). */
export const RESUMED_RESULT = '/resume-result.json';

async function previousResult(stateFs: RootedFileSystem, runId: string): Promise<RunResultDocument | undefined> {
  const text = await stateFs.readText(RESUMED_RESULT).catch(() => undefined);
  if (text === undefined) return undefined;
  try {
    const doc = JSON.parse(text) as RunResultDocument;
    return doc.runId === runId ? doc : undefined;
  } catch {
    return undefined;
  }
}

/**
 * A step asked for a reboot and the resume is registered: note where the run's numbering goes on,
 * then restart, unless the caller restarts (--no-reboot) or the root is a scratch directory.
 */
async function rebootForResume(request: RunRequest, input: RunnerInput, reboot: RebootRequiredError): Promise<void> {
  const state = await input.state.load();
  if (state.pendingReboot) {
    state.pendingReboot.nextSeq = input.events.sequence + 1;
    await input.state.save(state);
  }
  // -o json prints events only; the notes below are for people.
  const write = isDataMode(request.console.mode) ? (request.console.log ?? (() => undefined)) : (text: string) => (request.console.write(text), request.console.log?.(text));
  if (!request.resume) return;
  if (request.resume.byCloudbaseInit) {
    write(`not restarting (--cloudbase-init): exit ${CLOUDBASE_INIT_REBOOT_AND_RERUN} asks cloudbase-init to restart the machine and run this again\n`);
    return;
  }
  if (!request.resume.reboot) {
    write(`not restarting (--no-reboot): restart the machine to go on; ${request.resume.argv.join(' ')} runs at the next boot\n`);
    return;
  }
  if (!input.facts.liveRoot) {
    write(`not restarting: ${request.host.fs.root} is a scratch root; the resume is registered under it\n`);
    return;
  }
  write(`restarting the machine now (${reboot.reason}); machineadm resumes after it\n`);
  await request.host.restart(reboot.reason);
}
