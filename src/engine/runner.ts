// The runner owns the rules: ordering, selection, plan (dry-run), timing, failure wrapping, state
// and reboot-and-resume. Steps only check and apply. What it is given and returns is
// ./runner-input.ts's, a step's context ./step-context.ts's, the plan and preflight ./plan.ts's.
import { worstResult, type Result } from './events.ts';
import { ExitCode, InterruptedError, MachineadmError, RebootRequiredError, StepError, UsageError } from '../errors.ts';
import type { EarlyWork } from './step.ts';
import { selectSteps, type SelectedStep } from './select.ts';
import { DEFAULT_MAX_REBOOTS, StateWriter, mergeUndoRecord, rebootedSince, resumesPendingReboot, type MachineState, type StepRecord } from './state.ts';
import { provisionShortfall } from './provisioned.ts';
import { sinceProcessStart, waitedSinceProcessStart, waitingMeter } from './timing.ts';
import type { PhaseOutcome, RunnerInput, RunOutcome, StepOutcome } from './runner-input.ts';
import { applicability, contextFor, interruption, errorInfo, leftOutOf } from './step-context.ts';

export { DEFAULT_MAX_REBOOTS } from './state.ts';
export type { Plan, PlannedStatus, PlannedStep, PhaseOutcome, RunnerInput, RunOutcome, StepOutcome } from './runner-input.ts';
export { computePlan, preflightRun, refuseRunPaths, removeLeftovers } from './plan.ts';

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
  events.emit({ type: 'run.started', command: input.command, sinceStartMs: runStart, waitingMs: waitedSinceProcessStart() });
  const runWaiting = waitingMeter();
  for (const note of input.notes ?? []) events.emit({ type: 'log', level: 'warning', message: note });

  // Reboots this run asked for before (it resumes as the same run): the loop guard counts them.
  let rebootsSoFar = 0;
  const pending = state.pendingReboot;
  // Another command's run waits for its resume: this run neither takes its place nor removes it.
  const othersResume = pending !== undefined && input.command !== 'reset' && !resumesPendingReboot(state, input.command);
  if (pending && input.command === 'reset') {
    // The run that asked for the reboot is being undone: nothing is left to resume. Its
    // registration goes now, not at reset/resume's turn: a reset that failed before then would
    // leave the run it was undoing to start again at the next boot.
    delete state.pendingReboot;
    writer.mark();
    if ((await input.host.resume.registered()) !== undefined) await input.host.resume.remove();
  } else if (pending) {
    if (!input.force && !rebootedSince(pending, input.facts.bootId)) {
      outcome.error = new RebootRequiredError(pending.stepId, `${pending.reason} (the machine has not rebooted yet)`, { alreadyPending: true });
    } else if (!othersResume) {
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
  if (input.resume && !othersResume && !(outcome.error instanceof RebootRequiredError) && (await input.host.resume.registered())) await input.host.resume.remove();
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
    const steps = selected.filter((s) => s.phase === phase && s.selected && !applicability(s.step, input, writer.state.steps[s.fullId]));
    const leftOut = leftOutOf(selected, phase, input);
    // Until its steps finish, a phase is what a phase without steps is.
    const phaseOutcome: PhaseOutcome = { name: phase.name, result: worstResult([]), durationMs: 0, steps: [], ...(leftOut.length ? { leftOut } : {}) };
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
    if (!s.selected || applicability(s.step, input, state.steps[s.fullId])) continue;
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
    if (check.done) return { outcome: await finish('skipped', { message: check.note ?? 'already done', upToDate: true }, check.record) };
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
      // A signal during the step ends the run as interrupted: the reboot is still recorded (a run
      // in this boot waits for it), but the stopped run is not resumed and the machine not restarted.
      const interrupted = interruption(input, s.fullId);
      state.pendingReboot = { stepId: s.fullId, at: input.host.now().toISOString(), reason: applied.rebootRequired, ...(interrupted ? {} : { runId: events.runId, command: input.command, reboots }), ...(input.facts.bootId ? { bootId: input.facts.bootId } : {}) };
      // Registered before the run reports, so a registration that fails is this step's failure.
      if (!interrupted && input.resume?.unavailable && !input.resume.byCloudbaseInit) {
        throw new UsageError(`needs a reboot (${applied.rebootRequired}), but ${input.resume.unavailable}`, { hint: 'restart the machine, then run machineadm again with the configuration in a file (-c FILE)' });
      }
      if (!interrupted && input.resume && !input.resume.byCloudbaseInit) await input.host.resume.register(input.resume.argv);
      const outcome = await finish('warning', { message: reboot.message, changes: check.changes }, applied.record, true);
      return { outcome, stop: interrupted ?? reboot };
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
