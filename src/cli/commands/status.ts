// status: what ran on this machine, from the state file, the kept run history, the last run's
// result.json, the spool, and the status.json a killed run left.
import type { Command } from 'commander';
import type { Io } from '../io.ts';
import { addOutputOption, addRootOption, addStateDirOption, type CommonOptions } from '../options.ts';
import { ExitCode, MachineadmError } from '../../errors.ts';
import { HISTORY_LIMIT, isMeaningful, type RunHistoryEntry } from '../../report/history.ts';
import type { RunResultDocument } from '../../report/outcome.ts';
import type { RootedFileSystem } from '../../host/fs.ts';

// Loaded when status runs, not at every start of machineadm.
const implementation = () =>
  Promise.all([import('../host-options.ts'), import('../../engine/state.ts'), import('../../report/outcome.ts'), import('../../report/spool.ts'), import('../../report/history.ts'), import('../../host/run-lock.ts')]);

/** The last run's status.json (its progress while it ran), if it can be read. */
async function readProgress(fs: RootedFileSystem, path: string): Promise<RunResultDocument | undefined> {
  const [text, { parseRunDocument }] = await Promise.all([fs.readText(path).catch(() => undefined), import('../../report/outcome.ts')]);
  return text === undefined ? undefined : parseRunDocument(text);
}

interface StatusOptions extends CommonOptions {
  all?: boolean;
}

/** A run that ended without recording its end: what its last status.json said. */
export interface UnfinishedRun {
  command: string;
  runId: string;
  startedAt: string;
  updatedAt: string;
  /** The step it was in. */
  stepId?: string;
}

/**
 * A run killed before its end (SIGKILL, the OOM killer) left its status.json saying it runs, and
 * nothing in the history; before its first state write, nothing in the state file either. Its
 * status.json is then all that names it. Not the run going now, nor one whose end is recorded.
 */
export function unfinishedRun(progress: RunResultDocument | undefined, running: boolean, recorded: readonly string[]): UnfinishedRun | undefined {
  if (!progress || progress.state !== 'running' || running || recorded.includes(progress.runId)) return undefined;
  const stepId = progress.phases?.flatMap((p) => p.steps).findLast((s) => s.state === 'running')?.id;
  return { command: progress.command, runId: progress.runId, startedAt: progress.startedAt, updatedAt: progress.updatedAt, ...(stepId ? { stepId } : {}) };
}

function unfinishedLine(run: UnfinishedRun): string {
  return `(started ${run.startedAt}, run ${run.runId}): it stopped${run.stepId ? ` during ${run.stepId}` : ''} without recording its end (killed, or the machine went down); last progress at ${run.updatedAt}`;
}

/** A state directory status cannot read (not root, not a directory): what to do, not "a bug". */
function unreadableStateDir(directory: string, error: unknown): unknown {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  if (error instanceof MachineadmError || typeof code !== 'string') return error;
  const denied = code === 'EACCES' || code === 'EPERM';
  const why = denied ? 'machineadm may not read there' : code === 'ENOTDIR' ? 'it is not a directory' : (error as Error).message;
  return new MachineadmError(`cannot read the state directory ${directory}: ${why} (${code})`, ExitCode.usage, {
    cause: error,
    hint: denied ? 'its files are readable by root only: run it as root (sudo machineadm status; on Windows, as an Administrator)' : 'give the directory machineadm keeps its state in with --state-dir DIR, or leave --state-dir out for the default',
  });
}

function runLine(run: RunHistoryEntry): string {
  const changed = run.changed.length ? `, ${run.changed.length} step${run.changed.length === 1 ? '' : 's'} changed something` : run.result === 'skipped' ? '' : ', nothing changed';
  // A run whose every step was skipped had nothing to do: it did not fail to run.
  const verdict = run.result === 'skipped' ? 'had nothing to do' : run.result;
  return `${run.command} ${verdict}, exit code ${run.exitCode ?? '-'}${changed} (started ${run.startedAt}, run ${run.runId})`;
}

function runLines(run: RunHistoryEntry): string[] {
  const lines: string[] = [];
  for (const c of run.changed) lines.push(`  changed ${c.step}: ${c.changes.map((x) => `${x.action} ${x.target}`).join(', ')}`);
  for (const id of run.failedSteps) lines.push(`  failed ${id}`);
  // Why it failed, as the run said it (a failed step's error names the step).
  if (run.error) lines.push(`  error: ${run.error.message}`);
  if (run.warnings) lines.push(`  ${run.warnings} warning${run.warnings === 1 ? '' : 's'}`);
  return lines;
}

/** Text status: the last run, then the latest run that did something (or every kept run with --all). */
export function renderHistory(history: readonly RunHistoryEntry[], all: boolean): string[] {
  if (history.length === 0) return [];
  const latest = history.at(-1)!;
  if (all) return [`runs kept (oldest first; at most ${HISTORY_LIMIT}):`, ...history.flatMap((r) => [`- ${runLine(r)}`, ...runLines(r)])];
  const lines = [`last run: ${runLine(latest)}`, ...runLines(latest)];
  const meaningful = history.findLast(isMeaningful);
  if (meaningful && meaningful !== latest) lines.push(`last run that did something: ${runLine(meaningful)}`, ...runLines(meaningful));
  if (history.length > 1) lines.push(`${history.length} runs kept ("machineadm status --all" lists them)`);
  return lines;
}

export function registerStatusCommand(program: Command, io: Io, setExit: (code: number) => void): void {
  const command = program.command('status').description('show what machineadm did on this machine: the last runs, what each changed, its result and exit code');
  addStateDirOption(addOutputOption(addRootOption(command, io)))
    .option('--all', 'list every kept run, not only the last one and the last one that did something')
    .addHelpText('after', '\nExample:\n  $ machineadm status --all\n  $ machineadm status -o json\n')
    .action(async (options: StatusOptions) => {
      const [{ hostFrom, stateFsFrom }, { StateStore, emptyState }, { readLastResult, runFilesOf }, { spoolContents }, { readHistory }, { runLockHolder, RUN_LOCK_FILE }] = await implementation();
      const host = hostFrom(options, io);
      const stateFs = stateFsFrom(options, io, host);
      const store = new StateStore(stateFs);
      // Read in this order: a run that ends between the reads has written its history before it
      // lets the lock go, so a status.json read first is never taken for a killed run's.
      const progress = await readProgress(host.fs, runFilesOf(host.fs.platform).status);
      // A run going now has not written its end yet: said first, so "has not run" is never said of it.
      const running = await runLockHolder(stateFs, RUN_LOCK_FILE).catch(() => undefined);
      // A state file cut short or changed by hand is said, with what to do; the history, the
      // result and the spool still tell what ran, so status shows them (the file stays as it is).
      let stateFileProblem: { message: string; hint?: string } | undefined;
      const state = await store.load().catch((error: unknown) => {
        // parseStateFile's errors are the only ones load ends with "a step failed".
        if (!(error instanceof MachineadmError && error.exitCode === ExitCode.stepFailed)) throw unreadableStateDir(store.directory, error);
        stateFileProblem = { message: error.message, ...(error.hint ? { hint: error.hint } : {}) };
        return emptyState();
      });
      const history = await readHistory(stateFs);
      const lastResult = await readLastResult(host.fs, stateFs);
      const spool = (await spoolContents(stateFs)).filter((s) => s.events > 0);
      const resume = await host.resume.registered().catch(() => undefined);
      const unfinished = unfinishedRun(progress, running !== undefined, [...history.map((r) => r.runId), ...state.runs.map((r) => r.runId)]);
      // Only when and why: the command itself (it may hold a source's credentials) stays in the file.
      const { readResumeRecord } = await import('../../engine/resume-record.ts');
      const { args: _args, ...resumeRecord }: Partial<import('../../engine/resume-record.ts').ResumeRecord> = (await readResumeRecord(stateFs)) ?? {};
      if (options.output !== 'text') {
        const { renderData } = await import('../data-output.ts');
        io.stdout(await renderData(options.output, { stateDir: store.directory, running: running ? { command: running.command, pid: running.pid, startedAt: running.startedAt, ...(running.runId ? { runId: running.runId } : {}) } : null, ...state, history, lastResult: lastResult ?? null, spool, resume: resume ?? null, resumeRecord: Object.keys(resumeRecord).length ? resumeRecord : null, unfinished: unfinished ?? null, stateFileProblem: stateFileProblem ?? null }));
      } else {
        const lines = [`state: ${store.directory}`];
        if (running) lines.push(`running now: ${running.command} (pid ${running.pid}, started ${running.startedAt})`);
        // The run going now is said above: its record, unfinished until it ends, is not a killed run's.
        const last = state.runs.findLast((r) => r.runId !== running?.runId);
        if (history.length) lines.push(...renderHistory(history, options.all ?? false));
        // A run that never reached its end (killed) is in the state file only.
        else if (last) lines.push(`last run: ${last.command} ${last.result ?? 'unfinished'} (started ${last.startedAt}, run ${last.runId})`);
        else if (unfinished) lines.push(`last run: ${unfinished.command} did not finish ${unfinishedLine(unfinished)}`);
        else if (!running) lines.push('machineadm has not run on this machine');
        if (last && history.length && last.runId !== history.at(-1)!.runId) lines.push(`a later run did not finish: ${last.command} ${last.result ?? 'unfinished'} (started ${last.startedAt}, run ${last.runId})`);
        if (unfinished && (history.length || last)) lines.push(`a later run did not finish: ${unfinished.command} ${unfinishedLine(unfinished)}`);
        if (state.pendingReboot) lines.push(`waiting for a reboot requested by ${state.pendingReboot.stepId}: ${state.pendingReboot.reason}`);
        if (resume) lines.push(`pending resume: the next boot runs ${resume.join(' ')}${resumeRecord.registeredAt ? ` (registered ${resumeRecord.registeredAt}, started at ${resumeRecord.boots ?? 0} boot${resumeRecord.boots === 1 ? '' : 's'} so far)` : ''}`);
        if (resumeRecord.gaveUp) lines.push(`resume gave up at ${resumeRecord.gaveUp.at}: ${resumeRecord.gaveUp.reason}; it is no longer registered`);
        if (lastResult && lastResult.state !== 'finished') lines.push(`unfinished result: ${lastResult.command} (run ${lastResult.runId})`);
        if (stateFileProblem) lines.push(`problem: ${stateFileProblem.message}`, ...(stateFileProblem.hint ? [`  hint: ${stateFileProblem.hint}`] : []));
        for (const s of spool) lines.push(`spool: ${s.events} event${s.events === 1 ? '' : 's'} waiting in spool/${s.key} ("machineadm report" sends them)`);
        io.stdout(lines.join('\n') + '\n');
      }
      setExit(ExitCode.ok);
    });
}
