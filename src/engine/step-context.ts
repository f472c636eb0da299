// Which selected steps run here, the context each step is given (its host, facts, secrets, log
// and what the run did so far), a step's check wrapped as its failure, and a failure or an
// interruption as report data.
import { type ErrorInfo } from './events.ts';
import { InterruptedError, MachineadmError, StepError, exitCodeOf, type InterruptSignal } from '../errors.ts';
import type { CheckResult, EarlyWork, Phase, RunSoFar, Step, StepContext } from './step.ts';
import { selectSteps, type SelectedStep } from './select.ts';
import { type MachineState, type StepRecord } from './state.ts';
import { resolveSecret } from '../config/secrets.ts';
import type { RunnerInput } from './runner-input.ts';
import { progressMeter } from '../host/transfer-progress.ts';

/** Why the step does not run here, or undefined. `earlier`: its record in the state, where the caller has it (Step.leftBehind). */
export function applicability(step: Step, input: RunnerInput, earlier?: StepRecord): string | undefined {
  if (step.platforms && !step.platforms.includes(input.facts.os)) return `only on ${step.platforms.join(', ')}`;
  if (step.applies && !step.applies(input.config, input.facts) && !(earlier && step.leftBehind?.(earlier.data))) return 'not asked for by the configuration';
  return undefined;
}

export type RunPhasesSoFar = { failed: boolean; phases: RunSoFar['phases'] };

export function contextFor(input: RunnerInput, state: MachineState, fullId: string, dryRun: boolean, soFar: RunPhasesSoFar, early?: EarlyWork): StepContext {
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
    scrub: (text) => input.secrets.scrub(text),
    downloadProgress: (target) => progressMeter((progress) => events.emit({ type: 'step.progress', step: fullId, progress: { target, ...progress } })),
    emit: (event) => events.emit({ step: fullId, ...event }),
    secret: (source, field, options) => resolveSecret(source, input.host, field, input.secrets, options),
    recordOf: (stepId) => state.steps[stepId] ?? Object.entries(state.steps).find(([id]) => id.endsWith('/' + stepId) && !id.startsWith('reset/'))?.[1],
    undoRecordOf: (id) => state.undo?.[id],
  };
}

export async function checkStep(step: Step, ctx: StepContext, fullId: string): Promise<CheckResult> {
  try {
    return await step.check(ctx);
  } catch (error) {
    throw new StepError(fullId, error);
  }
}

export function runnable(input: RunnerInput): SelectedStep[] {
  return selectSteps(input.phases, input.selection).filter((s) => s.selected && !applicability(s.step, input));
}

/**
 * The steps of a phase the configuration asks for that --only/--skip left out: what reads the phase
 * (the sentinel, the provision record) must not take it as done without them.
 */
export function leftOutOf(selected: readonly SelectedStep[], phase: Phase, input: RunnerInput): string[] {
  return selected.filter((s) => s.phase === phase && !s.selected && !applicability(s.step, input)).map((s) => s.fullId);
}

export function interruption(input: RunnerInput, stepId?: string): InterruptedError | undefined {
  const signal = input.host.signal;
  if (!signal?.aborted) return undefined;
  const reason: unknown = signal.reason;
  const name: InterruptSignal = reason instanceof InterruptedError ? reason.signal : 'SIGTERM';
  return new InterruptedError(name, stepId);
}

export function errorInfo(error: unknown): ErrorInfo {
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
