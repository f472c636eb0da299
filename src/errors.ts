// The one error family of machineadm. Every error carries the exit code it maps to; only src/cli/
// turns errors into messages and exit codes. May import nothing from the project.

export const ExitCode = {
  ok: 0,
  stepFailed: 1,
  usage: 2,
  verification: 3,
  rebootRequired: 4,
  /** Another run holds the state directory: nothing was changed. */
  locked: 5,
  /** A value the configuration takes from the machine could not be read (the metadata service did not answer): nothing was changed. */
  machineValuesUnavailable: 6,
  /** Interrupted by a signal: 128 + the signal's number, as a shell reports it. */
  interruptedHangup: 129,
  interruptedInterrupt: 130,
  interruptedTerminate: 143,
} as const;
export type ExitCode = (typeof ExitCode)[keyof typeof ExitCode];

export interface ErrorOptions {
  hint?: string;
  cause?: unknown;
}

export class MachineadmError extends Error {
  readonly exitCode: ExitCode;
  readonly hint: string | undefined;
  constructor(message: string, exitCode: ExitCode, options: ErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.exitCode = exitCode;
    this.hint = options.hint;
  }
}

/** Bad flags or arguments (exit 2). */
export class UsageError extends MachineadmError {
  constructor(message: string, options: ErrorOptions = {}) {
    super(message, ExitCode.usage, options);
  }
}

/** A capability the command line names but this build does not have yet (exit 2, never pretends). */
export class NotAvailableError extends UsageError {}

export interface ConfigIssue {
  /** Where the value came from: a file path, URL, "stdin" or "(merged)". */
  source?: string;
  line?: number;
  column?: number;
  /** Field path such as spec.containerd.registries["docker.io"].mirrors[0].url */
  path: string;
  message: string;
  hint?: string;
  /** The source could not be read (network, HTTP status, permissions): not a fault of its content. */
  unreadable?: true;
  /** The machine as it is, not the configuration, stops the run (kubeadm's files of another join). */
  refused?: true;
}

/** Invalid configuration: carries every issue found, not only the first (exit 2). */
export class ConfigError extends MachineadmError {
  readonly issues: ConfigIssue[];
  constructor(issues: ConfigIssue[], options: ErrorOptions = {}) {
    super(ConfigError.summarize(issues), ExitCode.usage, options);
    this.issues = issues;
  }
  static summarize(issues: ConfigIssue[]): string {
    const n = issues.length;
    // A server error or an unreadable file says nothing about the configuration itself.
    const what = issues.every((i) => i.unreadable) ? 'could not read the configuration' : issues.every((i) => i.refused) ? 'refused before any change' : 'invalid configuration';
    return `${what} (${n} problem${n === 1 ? '' : 's'}):\n` + issues.map(formatIssue).join('\n');
  }
}

export function formatIssue(issue: ConfigIssue): string {
  const where = [issue.source, issue.line, issue.column].filter((x) => x !== undefined).join(':');
  // The same "hint:" line as every other error, indented under its problem.
  const hint = issue.hint ? `\n    hint: ${issue.hint}` : '';
  return `  ${where ? where + ': ' : ''}${issue.path ? issue.path + ': ' : ''}${issue.message}${hint}`;
}

/**
 * The configuration takes values from the machine, and the machine could not give them: its
 * metadata service did not answer, or no firmware string says whether it is in a cloud at all
 * (exit 6). Not a fault of the configuration: the same run may succeed once the service answers.
 */
export class MachineValuesUnavailableError extends MachineadmError {
  constructor(message: string, options: ErrorOptions = {}) {
    super(message, ExitCode.machineValuesUnavailable, options);
  }
}

/** A signature or checksum did not match (exit 3). */
export class VerificationError extends MachineadmError {
  constructor(message: string, options: ErrorOptions = {}) {
    super(message, ExitCode.verification, options);
  }
}

/** A command the host ran exited non-zero, timed out or could not start (exit 1). */
export class CommandError extends MachineadmError {
  readonly argv: readonly string[];
  readonly commandExitCode: number | undefined;
  readonly stderrTail: string;
  readonly stdoutTail: string;
  readonly timedOut: boolean;
  /** Stopped because machineadm itself was interrupted (a signal), not because the command failed. */
  readonly interrupted: boolean;
  /** The signal that ended the command from outside (the OOM killer's SIGKILL), when one did. */
  readonly signal: string | undefined;
  constructor(
    message: string,
    details: { argv: readonly string[]; exitCode?: number; stderrTail?: string; stdoutTail?: string; timedOut?: boolean; interrupted?: boolean; signal?: string },
    options: ErrorOptions = {},
  ) {
    super(message, ExitCode.stepFailed, options);
    this.argv = details.argv;
    this.signal = details.signal;
    this.commandExitCode = details.exitCode;
    this.stderrTail = details.stderrTail ?? '';
    this.stdoutTail = details.stdoutTail ?? '';
    this.timedOut = details.timedOut ?? false;
    this.interrupted = details.interrupted ?? false;
  }
}

/** Structured data a failing step attaches for the report (kubeadm phase, output tail, ...). */
export type FailureDetails = Record<string, unknown>;

/** A step failed; wraps the cause with the step id (exit 1, or the cause's code for 2 and 3). */
export class StepError extends MachineadmError {
  readonly stepId: string;
  readonly details: FailureDetails;
  constructor(stepId: string, cause: unknown, details: FailureDetails = {}) {
    const inner = cause instanceof Error ? cause.message : String(cause);
    const code = cause instanceof MachineadmError && cause.exitCode !== ExitCode.ok ? cause.exitCode : ExitCode.stepFailed;
    super(`step ${stepId} failed: ${inner}`, code, {
      cause,
      hint: cause instanceof MachineadmError ? cause.hint : undefined,
    });
    this.stepId = stepId;
    this.details = { ...(cause instanceof StepDetailsError ? cause.details : {}), ...details };
  }
}

/** Thrown by a step to attach report data (for example kubeadm's failing phase) to its failure. */
export class StepDetailsError extends MachineadmError {
  readonly details: FailureDetails;
  constructor(message: string, details: FailureDetails, options: ErrorOptions = {}) {
    super(message, ExitCode.stepFailed, options);
    this.details = details;
  }
}

/** Another machineadm run holds the state directory (exit 5): this one changed nothing. */
export class RunLockedError extends MachineadmError {
  constructor(message: string, options: ErrorOptions = {}) {
    super(message, ExitCode.locked, options);
  }
}

/** A step needs the machine to reboot before the run can go on; the resume is registered (exit 4). */
export class RebootRequiredError extends MachineadmError {
  readonly stepId: string;
  readonly reason: string;
  /** Asked for by an earlier run, and the machine has not rebooted since (nothing new to register). */
  readonly alreadyPending: boolean;
  constructor(stepId: string, reason: string, options: { alreadyPending?: boolean } = {}) {
    super(`step ${stepId} requires a reboot: ${reason}; machineadm resumes after it`, ExitCode.rebootRequired);
    this.stepId = stepId;
    this.reason = reason;
    this.alreadyPending = options.alreadyPending ?? false;
  }
}

/** The signals machineadm handles, and the exit code each ends a run with. */
export const INTERRUPT_SIGNALS = { SIGHUP: ExitCode.interruptedHangup, SIGINT: ExitCode.interruptedInterrupt, SIGTERM: ExitCode.interruptedTerminate } as const;
export type InterruptSignal = keyof typeof INTERRUPT_SIGNALS;

/** The run was stopped by a signal (exit 128 + its number); the step it was in is recorded. */
export class InterruptedError extends MachineadmError {
  readonly signal: InterruptSignal;
  readonly stepId: string | undefined;
  constructor(signal: InterruptSignal, stepId?: string) {
    super(`interrupted by ${signal}${stepId ? ` during step ${stepId}` : ''}`, INTERRUPT_SIGNALS[signal], {
      hint: 'run the same command again: completed steps are skipped and the interrupted one starts over',
    });
    this.signal = signal;
    this.stepId = stepId;
  }
}

export function exitCodeOf(error: unknown): ExitCode {
  return error instanceof MachineadmError ? error.exitCode : ExitCode.stepFailed;
}
