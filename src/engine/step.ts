// What a step is. A step changes one thing: check() says whether the machine already matches
// (then it is skipped, so reruns converge) and what would change; apply() makes it match.
import type { Host, Facts, OperatingSystem } from '../host/index.ts';
import type { MachineConfig } from '../config/schema/index.ts';
import type { SecretSource } from '../config/schema/secret-field.ts';
import type { SecretOptions } from '../config/secrets.ts';
import type { EventInput } from './events.ts';
import type { StepRecord } from './state.ts';
import type { ProvisionRecord } from './provisioned.ts';

export interface Change {
  /** create, update, delete, run, restart, load, set, ... */
  action: string;
  /** The file, unit, sysctl key or command the change is about. */
  target: string;
  /** One line: "net.ipv4.ip_forward 0 -> 1", "config version 2 (containerd 1.6.20)". */
  detail?: string;
  /** For files: a short unified diff, secrets redacted. */
  diff?: string;
}

export interface CheckResult {
  /** True when the machine already matches: the step is skipped. */
  done: boolean;
  /** What apply() would change; shown by plan. */
  changes: Change[];
  /** Set when the step cannot run in this setting (e.g. a live change under a scratch --root): shown as skipped with this reason. */
  skipReason?: string;
  /**
   * With done: what the operator should hear about a machine that is settled, but not as the
   * configuration says now and cannot be made so by this step (shown instead of "already done").
   */
  note?: string;
  /**
   * What apply() would fetch over the network, one line each ("download https://host/path for
   * spec.files[0]"). Under --offline a run with any of these is refused before anything changes.
   */
  network?: string[];
  /**
   * What the step records when it finds the machine already matching, as apply() would have: a
   * run killed after apply() changed the machine and before the state was written leaves no
   * record, and the next run finds the step done.
   */
  record?: Record<string, unknown>;
}

export interface ApplyResult {
  /** A reboot is needed before the run can go on; the runner stops with exit 4 and resumes after it. */
  rebootRequired?: string;
  /** Finished, but with something the operator should see (result "warning"). */
  warning?: string;
  /** Facts for later steps and the report (e.g. { joined: true }). */
  record?: Record<string, unknown>;
  /**
   * What apply() did, reported instead of the check's changes when it knows more than the plan
   * did (a command's exit code and duration).
   */
  changes?: Change[];
}

export interface StepContext {
  readonly config: MachineConfig;
  readonly facts: Facts;
  readonly host: Host;
  /** verbosity: 0 by default, 1 per -v; at 2 and above a step passes its tools' own verbosity on (kubeadm --v). */
  readonly options: { readonly dryRun: boolean; readonly force: boolean; readonly verbosity?: number; readonly keepDomain?: boolean };
  /** What this step recorded in an earlier run, if anything. */
  readonly previous: StepRecord | undefined;
  /**
   * An earlier run started this step's apply() and never finished it (killed, or the machine went
   * down): what is half-done is machineadm's own (only for steps with recordsStart).
   */
  readonly startedBefore: boolean;
  /** Lines for the console and the report (secrets must already be out of them). */
  log(message: string, level?: 'info' | 'warning'): void;
  output(line: string): void;
  /**
   * The text with every secret known so far replaced (as events are), for a step that cuts text
   * before it is emitted: a cut through a secret would leave a part the event's scrubbing misses.
   * Always given by the runner.
   */
  scrub?(text: string): string;
  /** A download's onProgress for `target` (a machine path): step.progress events, at most once a second. */
  downloadProgress(target: string): (received: number, total: number | undefined) => void;
  emit(event: EventInput): void;
  /** The phases and steps this run has been through so far. */
  readonly run: RunSoFar;
  /**
   * Reads a secret when the step needs it; the value is scrubbed from every event from then on.
   * `exact`: the value is a file's content, kept byte for byte (a secret file's trailing newline too);
   * `encoding`: the file's, so that what the content decodes to is scrubbed as well.
   */
  secret(source: SecretSource, field: string, options?: SecretOptions): Promise<string>;
  /** Other steps' records from this and earlier runs, by step id. */
  recordOf(stepId: string): StepRecord | undefined;
  /** What a step recorded for its undo before its first change (Step.undoRecord), by full step id. */
  undoRecordOf(fullId: string): Record<string, unknown> | undefined;
  /** In apply(): the work this step began when the run started (Step.begin), if it did. */
  readonly early?: EarlyWork;
}

/**
 * Work a step began when the run started, while the steps before it ran (Step.begin). The step's
 * apply() takes what it needs of it; the runner cancels the rest when the step has finished, or
 * when the run ends before the step's turn.
 */
export interface EarlyWork {
  /** When it began, in milliseconds since the process started (the critical path shows it). */
  readonly startMs: number;
  /** Stops what still runs and undoes what apply() did not take: the machine is as if it never began. */
  cancel(): Promise<void>;
}

/**
 * How `machineadm reset` undoes what a step did, from the step's records: a step of the reset
 * phase of its own (reset/<step id>), with check() (is it undone already? what would change) and
 * apply(). Files machineadm wrote need no undo of their own: reset/files restores every one from
 * the records the file system keeps (src/host/written.ts).
 */
export interface Undo {
  readonly summary: string;
  /**
   * Before machineadm's files are restored (the default: leave the domain while its krb5.conf is
   * there, reset kubeadm while its files are), or after (restart containerd on its restored config,
   * set sysctls back once their file is).
   */
  readonly when?: 'before-files' | 'after-files';
  /** Where the undo runs, when that is fewer platforms than its step's (a step that only refuses elsewhere). */
  readonly platforms?: readonly OperatingSystem[];
  /** What would make this undo fail, found before reset changes anything (as Step.preflight). */
  preflight?(ctx: UndoContext): Promise<void>;
  /** Machine files this undo keeps as they are in this reset (--keep-domain keeps the keytab): reset/files leaves them. */
  keeps?(ctx: UndoContext): string[];
  check(ctx: UndoContext): Promise<CheckResult>;
  apply(ctx: UndoContext, check: CheckResult): Promise<ApplyResult | void>;
}

export interface UndoContext extends StepContext {
  /** The undone step's own record (from the last run that did or found it done), if any. */
  readonly done: StepRecord | undefined;
  /** What the undone step recorded before its first change (Step.undoRecord), if anything. */
  readonly undoRecord: Record<string, unknown> | undefined;
  /** The machine paths reset/files gives back in this reset (for plans, where it has not run yet). */
  filesToGiveBack(): Promise<string[]>;
}

export interface Step {
  /** Slash path, e.g. "containerd/config"; the phase name is prefixed by the runner. */
  readonly id: string;
  readonly summary: string;
  /** Operating systems the step runs on; all when absent. */
  readonly platforms?: readonly OperatingSystem[];
  /** False when the configuration does not ask for this step at all (it is then left out of the plan). */
  applies?(config: MachineConfig, facts: Facts): boolean;
  /**
   * Whether the record of the step's last run (its data) names something it left on the machine
   * that it takes away once the configuration no longer asks for it. The step then runs although
   * applies() is false: taking a whole section out of the configuration must take away what the
   * section made, as taking out one entry of it does. Its apply() records that nothing is left.
   */
  leftBehind?(earlier: Record<string, unknown> | undefined): boolean;
  /**
   * The machine paths this step writes whole for this configuration, where they are fixed by it.
   * Two steps that write one file would each rewrite it on every run: refused before the first
   * change (preflightRun).
   */
  writes?(config: MachineConfig): string[];
  /**
   * Finds, before any step of the run changes anything, what would make this step fail on its
   * input: secrets it will read (resolved and checked now), files it needs. Throws a ConfigError.
   */
  preflight?(ctx: StepContext): Promise<void>;
  /**
   * Machine paths this step creates only while it runs and removes after (files holding secrets).
   * A run that was killed cannot remove them; the next run does, before its first step.
   */
  leftovers?(facts: Facts): string[];
  /** The runner records that apply() started, so a later run can tell its own half-done work (see startedBefore). */
  readonly recordsStart?: boolean;
  /**
   * apply()'s record may wait for the run's next state write: a run killed before then leaves a
   * next run that rebuilds it (check() returns it as CheckResult.record when the machine matches)
   * or never reads it. Without this the record is on disk before the run goes on (two fsyncs).
   */
  readonly recordCanWait?: boolean;
  /**
   * The step's record is an outcome operators look for (which domain, which computer name): it is
   * carried in the step's step.finished event and kept in the result file under this key.
   */
  readonly reportsRecordAs?: 'domainJoin';
  check(ctx: StepContext): Promise<CheckResult>;
  apply(ctx: StepContext, check: CheckResult): Promise<ApplyResult | void>;
  /**
   * Begins, when the run starts, the part of the step's work that takes long and changes nothing
   * the steps before it make or look at, and nothing at the step's targets (downloads into
   * temporary files beside them); apply() finishes it. The runner calls it only in a run (never
   * for a plan), and only when every step that runs before this one is `overtakable`. Returns
   * undefined when there is nothing to begin.
   */
  begin?(ctx: StepContext): EarlyWork | undefined;
  /**
   * A later step's early work (begin) may run while this step does: it changes no file system
   * layout (disks, mounts), no users or groups, and runs no command of the operator's.
   */
  readonly overtakable?: boolean;
  /**
   * What reset needs that apply() is about to destroy (a sysctl's value before it is set): the
   * runner writes it to the state file before apply() begins. Each top-level entry that is a map is
   * merged key by key with what earlier runs recorded, the earliest value winning, so the record
   * keeps the machine as it was before the first run.
   */
  undoRecord?(ctx: StepContext, check: CheckResult): Promise<Record<string, unknown> | undefined>;
  /** How reset undoes this step beyond restoring its files (see Undo). */
  readonly undo?: Undo;
}

export type PhaseName = 'prepare' | 'provision' | 'report' | 'reset';

export interface Phase {
  readonly name: PhaseName;
  readonly summary: string;
  readonly steps: readonly Step[];
  /** Runs even when an earlier phase failed (the report phase: a failure must be reported too). */
  readonly runsAfterFailure?: boolean;
}

/** The run so far, as the report phase sees it. */
export interface RunSoFar {
  readonly runId: string;
  readonly command: string;
  /** The error that stopped the earlier phases, if any. */
  readonly failed: boolean;
  readonly phases: readonly { name: PhaseName; result: string; steps: readonly { id: string; result: string; upToDate?: boolean }[]; leftOut?: readonly string[] }[];
  /** The last run that went through the provision phase, as the state file keeps it. */
  readonly lastProvision?: ProvisionRecord;
}
