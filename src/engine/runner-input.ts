// What the runner is given (the run's configuration, facts, host, selection, state, secrets) and
// what it gives back: the plan of every step, and each step's, phase's and run's outcome.
import type { Host, Facts } from '../host/index.ts';
import type { MachineConfig } from '../config/schema/index.ts';
import { EventBus, type ErrorInfo, type Result } from './events.ts';
import { MachineadmError } from '../errors.ts';
import type { Change, Phase, PhaseName } from './step.ts';
import { type Selection } from './select.ts';
import { type StateStore } from './state.ts';
import { type SecretScrubber } from '../config/secrets.ts';

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
  /** Where each secret of the configuration comes from (never its value). */
  secrets: { field: string; from: string }[];
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
  /** Steps of the phase the configuration asks for that --only/--skip left out of this run. */
  leftOut?: string[];
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
