// spec.commands: running one list of the operator's commands, in order, each with its timeout,
// its output streamed as step output (bounded) and a result per command for the report. Events
// are scrubbed of every configured secret by the event bus; this module keeps the output bounded
// and never puts raw output into an error message of its own making.
// May import: config types, host (through the step context), errors, phases' step types.
import type { Change, StepContext } from '../engine/step.ts';
import type { CommandSpec } from '../config/schema/index.ts';
import { secretSources } from '../config/redact.ts';
import { describeReference } from '../config/schema/machine.ts';
import { CommandError, StepDetailsError } from '../errors.ts';
import { windowsCommandLineProblem } from '../host/windows/quote.ts';

/** Test and operations switch: under a scratch --root, run the commands (cwd the root, MACHINEADM_ROOT set) instead of skipping them. */
export const COMMANDS_UNDER_ROOT_ENV = 'MACHINEADM_COMMANDS_UNDER_ROOT';
/** Lines of one command's output streamed into the events; the rest is counted, not kept. */
export const MAX_OUTPUT_LINES = 500;
/** Characters of one output line kept (a line of base64 can be megabytes). */
export const MAX_LINE_CHARS = 1000;
/** Lines of output a failure's details carry. */
export const FAILURE_TAIL_LINES = 20;

export type CommandList = 'boot' | 'beforeKubeadm' | 'afterKubeadm' | 'beforeReset';

export interface CommandOutcome {
  field: string;
  name?: string;
  exitCode?: number;
  durationMs: number;
  timedOut?: boolean;
  /** The signal that ended it from outside, when one did. */
  signal?: string;
  outputLines: number;
}

export function commandField(list: CommandList, index: number): string {
  return `spec.commands.${list}[${index}]`;
}

function label(list: CommandList, index: number, spec: CommandSpec): string {
  return `${commandField(list, index)}${spec.name ? ` (${spec.name})` : ''}`;
}

/** What runs: the argv as given, or the shell line through /bin/sh (Linux) or PowerShell (Windows). */
export function commandArgv(spec: CommandSpec, os: 'linux' | 'windows'): [string, ...string[]] {
  if (spec.argv) return spec.argv as [string, ...string[]];
  return os === 'windows' ? ['powershell.exe', '-NoProfile', '-NonInteractive', '-Command', spec.shell!] : ['/bin/sh', '-c', spec.shell!];
}

/** The command's own variables, machine values already put in (see config/machine-values.ts). */
function literalEnv(spec: CommandSpec): Record<string, string> {
  return Object.fromEntries(Object.entries(spec.env ?? {}).filter((e): e is [string, string] => typeof e[1] === 'string'));
}

/** The command's variables as a plan shows them: a machine value not read yet by its name. */
function displayEnv(spec: CommandSpec): string {
  const entries = Object.entries(spec.env ?? {});
  return entries.length ? `${entries.map(([k, v]) => `${k}=${typeof v === 'string' ? displayArgv([v]) : describeReference(v)}`).join(' ')} ` : '';
}

// Arguments shown as JSON strings when they hold anything a reader could misread.
function displayArgv(argv: readonly string[]): string {
  return argv.map((a) => (/^[\w@%+=:,./-]+$/.test(a) ? a : JSON.stringify(a))).join(' ');
}

/** The plan's lines: one "run" per command, with what runs and its timeout. */
export function plannedChanges(list: CommandList, commands: readonly CommandSpec[], os: 'linux' | 'windows'): Change[] {
  return commands.map((spec, i) => {
    const argv = commandArgv(spec, os);
    // Windows starts no process whose command line is longer: refused before the first change.
    const tooLong = os === 'windows' ? windowsCommandLineProblem(argv) : undefined;
    if (tooLong) return { action: 'refuse', target: label(list, i, spec), detail: `${tooLong}: Windows would not start it; put the work in a script file on the machine and run that` };
    return { action: 'run', target: label(list, i, spec), detail: `${displayEnv(spec)}${displayArgv(argv)}, timeout ${spec.timeoutSeconds}s` };
  });
}

/** Why the commands do not run in this setting, if so (a scratch --root, another operating system). */
export function commandsSkipReason(ctx: StepContext): string | undefined {
  // A plan for another operating system (--os, --facts) shows what would run there.
  if (ctx.host.fs.platform !== ctx.facts.os) return ctx.options.dryRun ? undefined : `commands for ${ctx.facts.os} do not run on this machine`;
  if (ctx.facts.liveRoot || ctx.host.env[COMMANDS_UNDER_ROOT_ENV] === '1') return undefined;
  return `commands change the live machine: not run under --root ${ctx.host.fs.root} (${COMMANDS_UNDER_ROOT_ENV}=1 runs them there, in the root's directory)`;
}

// Environment variables that hold a secret of the configuration are machineadm's, not the commands'.
function secretEnvNames(ctx: StepContext): string[] {
  return secretSources(ctx.config).flatMap((s) => (typeof s === 'object' && 'env' in s.valueFrom ? [s.valueFrom.env] : []));
}

/**
 * Runs the commands in order and stops at the first that fails (non-zero exit, timeout, cannot
 * start): a StepDetailsError names it, with its exit code and the tail of its output.
 */
export async function runCommands(ctx: StepContext, list: CommandList, commands: readonly CommandSpec[]): Promise<{ outcomes: CommandOutcome[]; changes: Change[] }> {
  const outcomes: CommandOutcome[] = [];
  const changes: Change[] = [];
  const underRoot = !ctx.facts.liveRoot;
  for (const [index, spec] of commands.entries()) {
    const what = label(list, index, spec);
    const argv = commandArgv(spec, ctx.facts.os);
    const tail: string[] = [];
    let lines = 0;
    const started = performance.now();
    const outcome: CommandOutcome = { field: commandField(list, index), ...(spec.name ? { name: spec.name } : {}), durationMs: 0, outputLines: 0 };
    let failure: string | undefined;
    // Said before it starts: a long command shows what the run waits for.
    ctx.log(`${what}: running ${displayArgv(argv)} (timeout ${spec.timeoutSeconds}s)`);
    try {
      const result = await ctx.host.proc.run(argv, {
        timeoutMs: spec.timeoutSeconds * 1000,
        allowFailure: true,
        withoutEnv: secretEnvNames(ctx),
        env: { ...literalEnv(spec), ...(underRoot ? { MACHINEADM_ROOT: ctx.host.fs.root } : {}) },
        ...(underRoot ? { cwd: ctx.host.fs.root } : {}),
        onLine: (head, _stream, chars) => {
          lines++;
          // Scrubbed before the cut: a secret the cut went through would keep its first part.
          const clean = ctx.scrub ? ctx.scrub(head) : head;
          const line = clean.length > MAX_LINE_CHARS || chars > head.length ? `${clean.slice(0, MAX_LINE_CHARS)}... (${chars} characters)` : clean;
          tail.push(line);
          if (tail.length > FAILURE_TAIL_LINES) tail.shift();
          if (lines <= MAX_OUTPUT_LINES) ctx.output(`${outcome.field}: ${line}`);
          else if (lines === MAX_OUTPUT_LINES + 1) ctx.output(`${outcome.field}: (output cut after ${MAX_OUTPUT_LINES} lines; the last ${FAILURE_TAIL_LINES} are kept for a failure)`);
        },
      });
      outcome.exitCode = result.exitCode;
      if (result.exitCode !== 0) failure = `exited with code ${result.exitCode}`;
    } catch (error) {
      if (!(error instanceof CommandError) || error.interrupted) throw error;
      if (error.timedOut) {
        outcome.timedOut = true;
        failure = `timed out after ${spec.timeoutSeconds}s (the command and every process it started were stopped)`;
      } else if (error.commandExitCode !== undefined) {
        outcome.exitCode = error.commandExitCode;
        failure = `exited with code ${error.commandExitCode}`;
      } else if (error.signal !== undefined) {
        // It ran and was ended from outside (the OOM killer, an operator's kill): not "could not start".
        outcome.signal = error.signal;
        failure = `was killed by ${error.signal}`;
      } else {
        // The runner's message names the program and why it could not start (ENOENT, EACCES).
        failure = `could not start: ${error.message.split('\n')[0]}`;
      }
    }
    outcome.durationMs = Math.round(performance.now() - started);
    outcome.outputLines = lines;
    outcomes.push(outcome);
    const result = outcome.timedOut
      ? `timed out after ${outcome.durationMs} ms`
      : outcome.signal
        ? `killed by ${outcome.signal} after ${outcome.durationMs} ms`
        : outcome.exitCode === undefined
          ? 'did not start'
          : `exit code ${outcome.exitCode} in ${outcome.durationMs} ms`;
    ctx.log(`${what}: ${result}`, failure ? 'warning' : 'info');
    changes.push({ action: 'ran', target: what, detail: result });
    if (failure) {
      const left = commands.length - index - 1;
      throw new StepDetailsError(
        `${what} ${failure}${tail.length ? `; its last output line: ${tail[tail.length - 1]}` : ''}${left ? ` (${left} later command${left === 1 ? '' : 's'} of spec.commands.${list} not run)` : ''}`,
        { command: outcome.field, ...(spec.name ? { name: spec.name } : {}), ...(outcome.exitCode !== undefined ? { exitCode: outcome.exitCode } : {}), durationMs: outcome.durationMs, ...(outcome.timedOut ? { timedOut: true } : {}), ...(outcome.signal ? { signal: outcome.signal } : {}), outputTail: tail.join('\n'), commands: outcomes },
        { hint: `read the output above (machineadm status shows the tail); fix the command or what it needs, and run again: ${list === 'boot' ? 'boot commands run on every run' : list === 'beforeReset' ? 'reset undid nothing yet; its commands run again on every reset run' : 'the commands run again until they succeed'}` },
      );
    }
  }
  return { outcomes, changes };
}
