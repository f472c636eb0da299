// The runner owns the rules: ordering, selection, plan (dry-run), timing, failure wrapping, state
// and reboot-and-resume. Steps only check and apply.
import type { Host, Facts } from '../host/index.ts';
import type { MachineConfig } from '../config/schema/index.ts';
import { EventBus, worstResult, type ErrorInfo, type Result } from './events.ts';
import { ConfigError, ExitCode, InterruptedError, MachineadmError, RebootRequiredError, StepError, UsageError, exitCodeOf, type ConfigIssue, type InterruptSignal } from '../errors.ts';
import type { Change, CheckResult, EarlyWork, Phase, PhaseName, RunSoFar, Step, StepContext } from './step.ts';
import { selectSteps, type Selection, type SelectedStep } from './select.ts';
import { DEFAULT_MAX_REBOOTS, StateWriter, mergeUndoRecord, rebootedSince, type MachineState, type StateStore, type StepRecord } from './state.ts';
import { resolveSecret, type SecretScrubber } from '../config/secrets.ts';
import { provisionShortfall } from './provisioned.ts';
import { sinceProcessStart, waitingMeter } from './timing.ts';

export interface RunnerInput {
  command: string;
  phases: readonly Phase[];
  selection: Selection;
  config: MachineConfig;
  facts: Facts;
  host: Host;
  events: EventBus;
  state: StateStore;
  force?: boolean;
  /** reset --keep-domain: the machine stays a member of its domain. */
  keepDomain?: boolean;
  /** How much the run tells: 0 by default, 1 per -v (StepContext.options.verbosity). */
  verbosity?: number;
  /** Registers secrets as steps read them, so events never carry them. */
  secrets: SecretScrubber;
  /**
   * How a run that stops for a reboot resumes: the command registered to run at the next boot, and
   * how many reboots one run may ask for (the loop guard). Without it nothing is registered.
   */
  resume?: {
    argv: readonly string[];
    maxReboots: number;
    /** Why this run cannot be resumed, if so. */
    unavailable?: string;
    /** cloudbase-init reboots and runs the same command again itself: nothing is registered. */
    byCloudbaseInit?: boolean;
  };
  /** Warnings about the input, logged at the start of the run so the report carries them. */
  notes?: readonly string[];
}

export { DEFAULT_MAX_REBOOTS } from './state.ts';

export type PlannedStatus = 'change' | 'up-to-date' | 'skipped' | 'not-selected' | 'not-applicable';

export interface PlannedStep {
  id: string;
  phase: PhaseName;
  summary: string;
  status: PlannedStatus;
  reason?: string;
  changes: Change[];
  /** What the step would fetch over the network (refused under --offline). */
  network?: string[];
}

export interface Plan {
  command: string;
  os: Facts['os'];
  facts: Facts;
  phases: { name: PhaseName; summary: string; steps: PlannedStep[] }[];
}

export interface StepOutcome {
  id: string;
  summary: string;
  result: Result;
  /** Skipped because the machine already matched (not because the step could not run here). */
  upToDate?: boolean;
  durationMs: number;
  changes: Change[];
  message?: string;
  error?: ErrorInfo;
}

export interface PhaseOutcome {
  name: PhaseName;
  result: Result;
  durationMs: number;
  steps: StepOutcome[];
}

export interface RunOutcome {
  runId: string;
  command: string;
  result: Result;
  startedAt: string;
  finishedAt: string;
  durationMs: number;
  phases: PhaseOutcome[];
  /** The error that stopped the run (a failed step, a reboot). */
  error?: MachineadmError;
}

function applicability(step: Step, input: RunnerInput): string | undefined {
  if (step.platforms && !step.platforms.includes(input.facts.os)) return `only on ${step.platforms.join(', ')}`;
  if (step.applies && !step.applies(input.config, input.facts)) return 'not asked for by the configuration';
  return undefined;
}

type RunPhasesSoFar = { failed: boolean; phases: RunSoFar['phases'] };

function contextFor(input: RunnerInput, state: MachineState, fullId: string, dryRun: boolean, soFar: RunPhasesSoFar, early?: EarlyWork): StepContext {
  const events = input.events;
  return {
    ...(early ? { early } : {}),
    run: {
      // Asked for by the steps that record it: a plan makes none.
      get runId() {
        return events.runId;
      },
      command: input.command,
      failed: soFar.failed,
      phases: soFar.phases,
      ...(state.provision ? { lastProvision: state.provision } : {}),
    },
    config: input.config,
    facts: input.facts,
    host: input.host,
    options: { dryRun, force: input.force ?? false, verbosity: input.verbosity ?? 0, keepDomain: input.keepDomain ?? false },
    previous: state.steps[fullId],
    startedBefore: state.started?.stepId === fullId && state.started.runId !== events.runId,
    log: (message, level = 'info') => events.emit({ type: 'log', step: fullId, message, level }),
    output: (line) => events.emit({ type: 'step.output', step: fullId, message: line }),
    emit: (event) => events.emit({ step: fullId, ...event }),
    secret: (source, field) => resolveSecret(source, input.host, field, input.secrets),
    recordOf: (stepId) => state.steps[stepId] ?? Object.entries(state.steps).find(([id]) => id.endsWith('/' + stepId) && !id.startsWith('reset/'))?.[1],
    undoRecordOf: (id) => state.undo?.[id],
  };
}

async function checkStep(step: Step, ctx: StepContext, fullId: string): Promise<CheckResult> {
  try {
    return await step.check(ctx);
  } catch (error) {
    throw new StepError(fullId, error);
  }
}

/** Every action the run would take, in order; touches nothing. `plan` and `--dry-run` both use it. */
export async function computePlan(input: RunnerInput): Promise<Plan> {
  const selected = selectSteps(input.phases, input.selection);
  const state = await input.state.load();
  const phases: Plan['phases'] = input.phases.map((p) => ({ name: p.name, summary: p.summary, steps: [] }));
  // What the run would have been through when it reaches each step, so that a step that depends
  // on earlier ones (the sentinel after provisioning) plans what the run would then do.
  const planned: { name: PhaseName; result: Result; steps: { id: string; result: Result; upToDate?: boolean }[] }[] = [];
  for (const s of selected) {
    const target = phases.find((p) => p.name === s.phase.name)!;
    // As in a run, every phase up to this one has been entered, also those without steps.
    for (const phase of input.phases.slice(0, input.phases.indexOf(s.phase) + 1)) {
      if (!planned.some((p) => p.name === phase.name)) planned.push({ name: phase.name, result: 'skipped', steps: [] });
    }
    const soFar = planned.find((p) => p.name === s.phase.name)!;
    const base = { id: s.fullId, phase: s.phase.name, summary: s.step.summary };
    const notApplicable = applicability(s.step, input);
    if (notApplicable) {
      target.steps.push({ ...base, status: 'not-applicable', reason: notApplicable, changes: [] });
      continue;
    }
    if (!s.selected) {
      target.steps.push({ ...base, status: 'not-selected', reason: 'left out by --only/--skip', changes: [] });
      continue;
    }
    const check = await checkStep(s.step, contextFor(input, state, s.fullId, true, { failed: false, phases: planned }), s.fullId);
    const status: PlannedStatus = check.skipReason ? 'skipped' : check.done ? 'up-to-date' : 'change';
    const network = status === 'change' && check.network?.length ? { network: check.network } : {};
    target.steps.push({ ...base, status, ...(check.skipReason ? { reason: check.skipReason } : {}), changes: check.changes, ...network });
    soFar.steps.push({ id: s.fullId, result: status === 'change' ? 'success' : 'skipped', ...(status === 'up-to-date' ? { upToDate: true } : {}) });
    soFar.result = worstResult(soFar.steps.map((x) => x.result));
  }
  return { command: input.command, os: input.facts.os, facts: input.facts, phases };
}

function runnable(input: RunnerInput): SelectedStep[] {
  return selectSteps(input.phases, input.selection).filter((s) => s.selected && !applicability(s.step, input));
}

/**
 * Everything that can be found wrong before the first change, found at once: each step's own
 * preflight (secrets read and checked, files it needs), every refusal a step's check shows (a
 * "refuse" change: the plan shows it, the run would stop there), and, under --offline, every
 * network use a step would make. Throws a ConfigError (exit 2) listing all, or a UsageError for
 * --offline.
 */
export async function preflightRun(input: RunnerInput): Promise<void> {
  const steps = runnable(input);
  const state = await input.state.load();
  const issues: ConfigIssue[] = [];
  const refusedBy = new Set<string>();
  for (const s of steps) {
    if (!s.step.preflight) continue;
    try {
      await s.step.preflight(contextFor(input, state, s.fullId, true, { failed: false, phases: [] }));
    } catch (error) {
      if (!(error instanceof ConfigError)) throw new StepError(s.fullId, error);
      issues.push(...error.issues);
      refusedBy.add(s.fullId);
    }
  }
  const needs: string[] = [];
  for (const s of steps) {
    // A check that fails here fails again, with its own message, when the step runs.
    const check = await s.step.check(contextFor(input, state, s.fullId, true, { failed: false, phases: [] })).catch(() => undefined);
    if (!check || check.done || check.skipReason) continue;
    if (!refusedBy.has(s.fullId)) {
      for (const c of check.changes.filter((c) => c.action === 'refuse')) issues.push({ path: '', message: `step ${s.fullId} would refuse ${c.target}${c.detail ? `: ${c.detail}` : ''}`, refused: true });
    }
    if (input.host.offline) needs.push(...(check.network ?? []).map((n) => `${s.fullId}: ${n}`));
  }
  if (issues.length) throw new ConfigError(issues);
  if (needs.length) {
    throw new UsageError(`--offline: this run would use the network, so nothing was changed:\n${needs.map((n) => `  ${n}`).join('\n')}`, {
      hint: 'put those files on the machine beforehand (their sha256 is checked), or run without --offline',
    });
  }
}

/**
 * Removes what steps of a run that was killed left behind (files holding secrets), for every step
 * that could have run: a killed `init` leaves files that a later `prepare` must not keep.
 */
export async function removeLeftovers(host: Host, facts: Facts, phases: readonly Phase[]): Promise<void> {
  if (host.fs.platform !== facts.os) return;
  for (const step of phases.flatMap((p) => p.steps)) {
    for (const path of step.leftovers?.(facts) ?? []) await host.fs.remove(path);
  }
}

function interruption(input: RunnerInput, stepId?: string): InterruptedError | undefined {
  const signal = input.host.signal;
  if (!signal?.aborted) return undefined;
  const reason: unknown = signal.reason;
  const name: InterruptSignal = reason instanceof InterruptedError ? reason.signal : 'SIGTERM';
  return new InterruptedError(name, stepId);
}

function errorInfo(error: unknown): ErrorInfo {
  const info: ErrorInfo = { message: error instanceof Error ? error.message : String(error), code: exitCodeOf(error) };
  if (error instanceof StepError) {
    info.stepId = error.stepId;
    if (Object.keys(error.details).length) info.details = error.details;
  }
  if (error instanceof MachineadmError && error.hint) info.hint = error.hint;
  if (error instanceof InterruptedError) {
    if (error.stepId) info.stepId = error.stepId;
    info.details = { signal: error.signal };
  }
  return info;
}

/** Runs the selected steps of the phases in order, stopping at the first failure. */
export async function runPhases(input: RunnerInput): Promise<RunOutcome> {
  const selected = selectSteps(input.phases, input.selection);
  const state = await input.state.load();
  // Before each state write, the machine's changes so far are made durable (see StateWriter).
  const writer = new StateWriter(input.state, state, () => input.host.fs.syncDirectories());
  const { events } = input;
  const started = input.host.now();
  const runRecord = { runId: events.runId, command: input.command, startedAt: started.toISOString() };
  const outcome: RunOutcome = { runId: events.runId, command: input.command, result: 'success', startedAt: runRecord.startedAt, finishedAt: '', durationMs: 0, phases: [] };
  const runStart = sinceProcessStart();
  events.emit({ type: 'run.started', command: input.command, sinceStartMs: runStart });
  const runWaiting = waitingMeter();
  for (const note of input.notes ?? []) events.emit({ type: 'log', level: 'warning', message: note });

  // Reboots this run asked for before (it resumes as the same run): the loop guard counts them.
  let rebootsSoFar = 0;
  const pending = state.pendingReboot;
  if (pending && input.command === 'reset') {
    // The run that asked for the reboot is being undone: nothing is left to resume.
    delete state.pendingReboot;
    writer.mark();
  } else if (pending) {
    if (!input.force && !rebootedSince(pending, input.facts.bootId)) {
      outcome.error = new RebootRequiredError(pending.stepId, `${pending.reason} (the machine has not rebooted yet)`, { alreadyPending: true });
    } else {
      if (pending.runId === events.runId) rebootsSoFar = pending.reboots ?? 1;
      delete state.pendingReboot;
      // Once resumed, the same boot must not find the reboot pending again after a crash.
      writer.mark();
    }
  }
  state.runs.push(runRecord);
  // Begun before the first state write: the downloads of spec.files overlap everything up to their step.
  const early = outcome.error ? new Map<string, EarlyWork>() : beginEarlyWork(input, state, selected);
  try {
    await writer.flush();
    await runPhaseSteps(input, selected, writer, outcome, rebootsSoFar, early);
  } finally {
    // A run that ended before a step's turn (a failure, an interruption) undoes what it began.
    for (const work of early.values()) await work.cancel();
  }

  // The run ended other than by asking for a reboot: a resume registered for it has done its job.
  if (input.resume && !(outcome.error instanceof RebootRequiredError) && (await input.host.resume.registered())) await input.host.resume.remove();
  const finished = input.host.now();
  outcome.finishedAt = finished.toISOString();
  outcome.durationMs = sinceProcessStart() - runStart;
  outcome.result = outcome.error && !(outcome.error instanceof RebootRequiredError) ? 'failure' : worstResult(outcome.phases.map((p) => p.result));
  const recorded = outcome.error instanceof RebootRequiredError ? 'reboot-required' : outcome.error instanceof InterruptedError ? 'interrupted' : outcome.result;
  Object.assign(runRecord, { finishedAt: outcome.finishedAt, result: recorded });
  await writer.finish();
  events.emit({
    type: 'run.finished',
    command: input.command,
    result: outcome.result,
    durationMs: outcome.durationMs,
    waitingMs: runWaiting(),
    sinceStartMs: sinceProcessStart(),
    ...(outcome.error ? { error: errorInfo(outcome.error) } : {}),
  });
  return outcome;
}

/** The phases' steps in order, stopping at the first failure (the report phase runs all the same). */
async function runPhaseSteps(input: RunnerInput, selected: SelectedStep[], writer: StateWriter, outcome: RunOutcome, rebootsSoFar: number, early: Map<string, EarlyWork>): Promise<void> {
  const { events } = input;
  for (const phase of input.phases) {
    if (outcome.error instanceof RebootRequiredError || outcome.error instanceof InterruptedError) break;
    if (outcome.error && !phase.runsAfterFailure) continue;
    const steps = selected.filter((s) => s.phase === phase && s.selected && !applicability(s.step, input));
    // Until its steps finish, a phase is what a phase without steps is.
    const phaseOutcome: PhaseOutcome = { name: phase.name, result: worstResult([]), durationMs: 0, steps: [] };
    outcome.phases.push(phaseOutcome);
    const phaseStart = sinceProcessStart();
    events.emit({ type: 'phase.started', phase: phase.name, summary: phase.summary });
    for (const s of steps) {
      const interrupted = interruption(input);
      if (interrupted) {
        outcome.error = interrupted;
        break;
      }
      const stepOutcome = await runStep(s, input, writer, outcome, rebootsSoFar, early.get(s.fullId));
      // What the step's apply() did not take of its early work is undone now (see Step.begin).
      await early.get(s.fullId)?.cancel();
      early.delete(s.fullId);
      phaseOutcome.steps.push(stepOutcome.outcome);
      if (stepOutcome.stop) {
        // The first error decides the exit code; a failing report step does not hide it.
        outcome.error ??= stepOutcome.stop;
        // The steps whose work began early will not have their turn: it is undone now, before
        // the run reports.
        for (const work of early.values()) await work.cancel();
        early.clear();
        break;
      }
    }
    // A phase's changes are on disk before the next phase builds on them (provisioning joins a
    // cluster on the prepared machine; reporting tells the world): one fsync per directory written.
    await input.host.fs.syncDirectories();
    phaseOutcome.durationMs = sinceProcessStart() - phaseStart;
    phaseOutcome.result = worstResult(phaseOutcome.steps.map((s) => s.result));
    if (phase.name === 'provision') {
      // What a later `machineadm report` writes the sentinel by: this provisioning, failed or not.
      const shortfall = outcome.error ? input.secrets.scrub(outcome.error.message) : provisionShortfall(phaseOutcome, input.config.spec.kubernetes !== undefined);
      writer.state.provision = { runId: events.runId, at: input.host.now().toISOString(), provisioned: shortfall === undefined, ...(shortfall ? { reason: shortfall } : {}) };
      writer.mark();
    }
    events.emit({ type: 'phase.finished', phase: phase.name, result: phaseOutcome.result, durationMs: phaseOutcome.durationMs });
  }
}

/**
 * Begins the early work (Step.begin) of every step that may begin it: one before which each step
 * this run runs is overtakable. A step that cannot begin does its work at its turn, as always.
 */
function beginEarlyWork(input: RunnerInput, state: MachineState, selected: readonly SelectedStep[]): Map<string, EarlyWork> {
  const began = new Map<string, EarlyWork>();
  for (const s of selected) {
    if (!s.selected || applicability(s.step, input)) continue;
    if (s.step.begin) {
      try {
        const work = s.step.begin(contextFor(input, state, s.fullId, false, { failed: false, phases: [] }));
        if (work) began.set(s.fullId, work);
      } catch {
        // Nothing begun: the step does all of its work at its turn.
      }
    }
    if (!s.step.overtakable) break;
  }
  return began;
}

async function runStep(s: SelectedStep, input: RunnerInput, writer: StateWriter, run: RunOutcome, rebootsSoFar: number, early?: EarlyWork): Promise<{ outcome: StepOutcome; stop?: MachineadmError }> {
  const { events } = input;
  const state = writer.state;
  const ctx = contextFor(input, state, s.fullId, false, { failed: run.error !== undefined, phases: run.phases }, early);
  // On the process's own clock, as the run's start and end: the wall clock may be set mid-run (a
  // boot's first time sync), and one clock keeps a step's start, end and early work in order.
  const begin = sinceProcessStart();
  const waiting = waitingMeter();
  events.emit({ type: 'step.started', phase: s.phase.name, step: s.fullId, summary: s.step.summary, sinceStartMs: begin });
  // `lasting`: the record cannot be rebuilt by checking the machine again (what an apply found or
  // did, which later runs read; a reboot asked for), so it is written before the run goes on.
  const finish = async (result: Result, extra: Partial<StepOutcome>, data?: Record<string, unknown>, lasting = false): Promise<StepOutcome> => {
    const durationMs = sinceProcessStart() - begin;
    const outcome: StepOutcome = { id: s.fullId, summary: s.step.summary, result, durationMs, changes: [], ...extra };
    // Ended in this run, unless interrupted: a later run redoes the interrupted step's half-done work.
    const ended = state.started?.stepId === s.fullId && !interruption(input);
    if (ended) delete state.started;
    if (result !== 'failure') {
      const previousData = state.steps[s.fullId]?.data;
      const record: StepRecord = { result, at: input.host.now().toISOString(), runId: events.runId, durationMs };
      const merged = data ?? previousData;
      if (merged) record.data = merged;
      state.steps[s.fullId] = record;
      if (lasting || ended) await writer.now();
      else writer.mark();
    } else if (ended) {
      await writer.now();
    }
    events.emit({
      type: 'step.finished',
      phase: s.phase.name,
      step: s.fullId,
      summary: s.step.summary,
      result,
      durationMs,
      waitingMs: Math.min(durationMs, waiting()),
      ...(early ? { earlyStartMs: Math.round(early.startMs) } : {}),
      ...(outcome.message ? { message: outcome.message } : {}),
      ...(outcome.changes.length ? { changes: outcome.changes.map(({ action, target, detail }) => ({ action, target, ...(detail ? { detail } : {}) })) } : {}),
      ...(outcome.error ? { error: outcome.error } : {}),
      ...(s.step.reportsRecordAs && result !== 'failure' && (data ?? state.steps[s.fullId]?.data) ? { record: (data ?? state.steps[s.fullId]!.data)!, recordAs: s.step.reportsRecordAs } : {}),
    });
    return outcome;
  };
  try {
    const check = await s.step.check(ctx);
    if (check.skipReason) return { outcome: await finish('skipped', { message: check.skipReason, changes: check.changes }) };
    if (check.done) return { outcome: await finish('skipped', { message: 'already done', upToDate: true }, check.record) };
    if (s.step.undoRecord) {
      // Before the change it is about: a run killed during apply() still leaves what reset needs.
      const added = await s.step.undoRecord(ctx, check);
      const merged = added && mergeUndoRecord(state.undo?.[s.fullId], added);
      if (merged) {
        state.undo = { ...state.undo, [s.fullId]: merged };
        await writer.now();
      }
    }
    if (s.step.recordsStart) {
      state.started = { stepId: s.fullId, runId: events.runId, at: input.host.now().toISOString() };
      await writer.now();
    }
    const applied = (await s.step.apply(ctx, check)) ?? {};
    if (applied.rebootRequired) {
      const reboots = rebootsSoFar + 1;
      const limit = input.resume?.maxReboots ?? DEFAULT_MAX_REBOOTS;
      if (reboots > limit) {
        throw new MachineadmError(`asked for reboot number ${reboots} of this run (${applied.rebootRequired}); the limit is ${limit}, so machineadm stops instead of rebooting again`, ExitCode.stepFailed, {
          hint: 'the step does not settle after a reboot: look at what it reports after each boot (machineadm status --all); --max-reboots raises the limit',
        });
      }
      const reboot = new RebootRequiredError(s.fullId, applied.rebootRequired);
      state.pendingReboot = { stepId: s.fullId, at: input.host.now().toISOString(), reason: applied.rebootRequired, runId: events.runId, reboots, ...(input.facts.bootId ? { bootId: input.facts.bootId } : {}) };
      // Registered before the run reports, so a registration that fails is this step's failure.
      if (input.resume?.unavailable && !input.resume.byCloudbaseInit) {
        throw new UsageError(`needs a reboot (${applied.rebootRequired}), but ${input.resume.unavailable}`, { hint: 'restart the machine, then run machineadm again with the configuration in a file (-c FILE)' });
      }
      if (input.resume && !input.resume.byCloudbaseInit) await input.host.resume.register(input.resume.argv);
      const outcome = await finish('warning', { message: reboot.message, changes: check.changes }, applied.record, true);
      return { outcome, stop: reboot };
    }
    const result: Result = applied.warning ? 'warning' : 'success';
    const lasting = applied.record !== undefined && !s.step.recordCanWait;
    return { outcome: await finish(result, { changes: applied.changes ?? check.changes, ...(applied.warning ? { message: applied.warning } : {}) }, applied.record, lasting) };
  } catch (cause) {
    // A step that failed because the run was interrupted (its command stopped, its wait cut
    // short) is recorded as interrupted, not as a failure of its own.
    const interrupted = interruption(input, s.fullId);
    const error = interrupted ?? (cause instanceof StepError ? cause : new StepError(s.fullId, cause));
    return { outcome: await finish('failure', { error: errorInfo(error), message: error.message }), stop: error };
  }
}
