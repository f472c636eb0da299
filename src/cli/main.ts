// The command-line program: builds the commander tree, runs it, and turns errors into messages
// and exit codes. The only place that decides what the user sees of an error.
import { Command, CommanderError } from 'commander';
import { ConfigError, ExitCode, MachineadmError, RebootRequiredError } from '../errors.ts';
import type { Io } from './io.ts';
import { registerPhaseCommands } from './commands/phases.ts';
import { PHASE_COMMANDS } from './commands/phase-options.ts';
import { registerConfigCommands } from './commands/config.ts';
import { registerStatusCommand } from './commands/status.ts';
import { registerResumeCommand } from './commands/resume.ts';
import { registerVersionCommand } from './commands/version.ts';
import { registerTrustCommands, TRUST_COMMANDS } from './commands/trust.ts';
import { registerBundleCommand } from './commands/bundle.ts';
import { registerSealCommand } from './commands/seal.ts';
import { registerExplainCommand } from './commands/explain.ts';
import { registerCompletionCommand } from './commands/completion.ts';
import { buildInfo } from '../version.ts';
import { startEarly, type Early } from './early.ts';

type Registrar = (program: Command, io: Io, setExit: (code: number) => void, early: Early) => void;

/** The top-level commands, each with what registers it (one registrar may add several). */
const COMMANDS: readonly { names: readonly string[]; register: Registrar }[] = [
  { names: PHASE_COMMANDS, register: registerPhaseCommands },
  { names: ['config'], register: registerConfigCommands },
  { names: ['explain'], register: registerExplainCommand },
  { names: TRUST_COMMANDS, register: registerTrustCommands },
  { names: ['seal'], register: registerSealCommand },
  { names: ['bundle'], register: registerBundleCommand },
  { names: ['status'], register: registerStatusCommand },
  // resume runs the stopped command in this process, through main itself.
  { names: ['resume'], register: (program, io, setExit) => registerResumeCommand(program, io, setExit, main) },
  { names: ['version'], register: registerVersionCommand },
  { names: ['completion'], register: registerCompletionCommand },
];

/**
 * The commander tree. With `command` (the first argument of a run) naming a command, only that
 * command is registered: building the options of every command is a good part of a start, and a
 * run of one command shows nothing of the others. Anything else (help, an option, an unknown or
 * misspelt command, for the suggestion) gets them all.
 */
export function buildProgram(io: Io, setExit: (code: number) => void, command?: string, early: Early = {}): Command {
  const program = new Command('machineadm')
    .description('Turns a freshly booted Linux or Windows machine into a Kubernetes node.')
    .version(buildInfo.version, '-V, --version', 'print the version')
    .exitOverride()
    // One line of error (commander puts its suggestion on a line of its own) and one line of hint,
    // as every other machineadm error.
    .configureOutput({
      writeOut: io.stdout,
      writeErr: io.stderr,
      outputError: (text, write) => write(text.replace(/\n\(Did you mean (.+?)\?\)/, ' (did you mean $1?)')),
      // Asked of io, not of process.stdout: opening Node's stream loads all of Node's streams. Off a
      // terminal, 80 columns, as commander's own default. The help has no colors, so the terminal
      // is not asked whether it shows them.
      getOutHelpWidth: () => io.terminalColumns?.('stdout') ?? 80,
      getErrHelpWidth: () => io.terminalColumns?.('stderr') ?? 80,
      getOutHasColors: () => false,
      getErrHasColors: () => false,
    })
    .showSuggestionAfterError(true)
    .showHelpAfterError('hint: run "machineadm --help" for the commands and options')
    .addHelpText(
      'after',
      `
Example:
  $ machineadm init -c /etc/machineadm/config.yaml
  $ machineadm plan -c examples/quickstart.yaml --root /tmp/scratch

Exit codes: 0 ok, 1 a step failed, 2 bad usage or configuration, 3 verification failed,
4 reboot required (machineadm resumes after it). The contract: docs/contract.md.
`,
    );
  // completion describes every command, so it needs them all.
  const named = COMMANDS.filter(({ names }) => command !== undefined && command !== 'completion' && names.includes(command));
  for (const { register } of named.length > 0 ? named : COMMANDS) register(program, io, setExit, early);
  const withHint = (command: Command, path: string): void => {
    command.showHelpAfterError(`hint: run "machineadm ${path} --help" for its usage`);
    for (const sub of command.commands) withHint(sub, `${path} ${sub.name()}`);
  };
  for (const command of program.commands) withHint(command, command.name());
  return program;
}

/** Runs machineadm with these arguments (without node and script) and returns the exit code. */
export async function main(args: readonly string[], io: Io): Promise<number> {
  let exitCode: number = ExitCode.ok;
  const program = buildProgram(io, (code) => (exitCode = code), args[0], startEarly(args, io, PHASE_COMMANDS));
  if (args.length === 0) {
    // No command is a usage error: say what there is to run.
    io.stderr(program.helpInformation());
    return ExitCode.usage;
  }
  try {
    await program.parseAsync([...args], { from: 'user' });
    return exitCode;
  } catch (error) {
    // -v asks for detail: an unexpected error's stack too, as MACHINEADM_DEBUG does.
    return reportError(error, io, { verbose: args.some((a) => a === '--verbose' || /^-v+$/.test(a)) });
  }
}

/** Writes the error as "error: ..." and "hint: ..." lines and returns its exit code. */
export function reportError(error: unknown, io: Io, options: { verbose?: boolean } = {}): number {
  if (error instanceof CommanderError) {
    // A command line that names no command it can run (`machineadm config`, `machineadm help bogus`)
    // gets the help on standard error with a non-zero code: a usage error, as `machineadm` alone.
    if (error.code === 'commander.help' && error.exitCode !== 0) return ExitCode.usage;
    // Help and --version end with a CommanderError too, and are not failures.
    if (['commander.helpDisplayed', 'commander.help', 'commander.version'].includes(error.code)) return ExitCode.ok;
    return ExitCode.usage;
  }
  if (error instanceof ConfigError) {
    io.stderr(`error: ${ConfigError.summarize(error.issues)}\n`);
    return error.exitCode;
  }
  if (error instanceof RebootRequiredError) {
    // A planned stop, not a failure: the run goes on after the restart (exit 4 says so to a caller).
    io.stderr(`reboot: ${error.message}\n`);
    return error.exitCode;
  }
  if (error instanceof MachineadmError && error.exitCode === ExitCode.ok) {
    // Not a failure (e.g. user data without a MachineConfig: nothing to do).
    io.stderr(`${error.message}\n${error.hint ? `hint: ${error.hint}\n` : ''}`);
    return ExitCode.ok;
  }
  if (error instanceof MachineadmError) {
    io.stderr(`error: ${error.message}\n${error.hint ? `hint: ${error.hint}\n` : ''}`);
    return error.exitCode;
  }
  const message = error instanceof Error ? error.message : String(error);
  io.stderr(`error: ${message}\nhint: this is a bug in machineadm; rerun with MACHINEADM_DEBUG=1 for details and report it\n`);
  if ((io.env.MACHINEADM_DEBUG || options.verbose) && error instanceof Error) io.stderr(`${error.stack ?? ''}\n`);
  return ExitCode.stepFailed;
}
