// The options every command shares. Registering them loads nothing of the host: commands load
// ./host-options.ts when they run.
import { resolve } from 'node:path';
import { Option, type Command } from 'commander';
import { UsageError } from '../errors.ts';
import type { Io } from './io.ts';

export type OutputFormat = 'text' | 'json' | 'yaml';

export interface CommonOptions {
  /** Absent when no -c was given (the default sources apply). */
  config?: string[];
  root: string;
  offline?: boolean;
  output: OutputFormat;
  stateDir?: string;
}

function collect(value: string, previous: string[] = []): string[] {
  return [...previous, value];
}

// Each command takes only the options it uses (an option that is accepted and ignored misleads).
// No default is shown for -c, --offline and the lists: "(default: [])" and "(default: false)" say nothing.
export function addConfigOptions(command: Command): Command {
  return command.option('-c, --config <source>', 'configuration source: a file, a directory, - (stdin), https://, imds://user-data; repeatable, merged in order', collect);
}

/** --root; a root that is a file is a usage error, found before the command starts. */
export function addRootOption(command: Command, io: Io): Command {
  return command
    .option('--root <dir>', 'work on the machine under this directory instead of / (a scratch root changes nothing live)', '/')
    .hook('preAction', async (_command, action) => {
      const given = (action.opts() as { root?: string }).root;
      if (given === undefined) return;
      // Loaded here, not at start: the host layer is only needed once a command runs.
      const { RootedFileSystem } = await import('../host/fs.ts');
      const info = await new RootedFileSystem('/').stat(resolve(io.cwd, given)).catch(() => undefined);
      if (info && info.kind !== 'directory' && info.kind !== 'symlink') {
        throw new UsageError(`--root ${given}: is a ${info.kind === 'file' ? 'regular file' : 'special file'}, not a directory`, {
          hint: 'give the directory the machine is under: / for this machine, or a scratch directory',
        });
      }
    });
}

export function addOfflineOption(command: Command, what = 'never use the network; anything that would fails at once'): Command {
  return command.option('--offline', what);
}

export function addOutputOption(command: Command): Command {
  return command.addOption(new Option('-o, --output <format>', 'output format (json and yaml: the same data)').choices(['text', 'json', 'yaml']).default('text'));
}

function increase(_value: string, previous = 0): number {
  return previous + 1;
}

export interface VerbosityOptions {
  verbose?: number;
  logFile?: string;
}

/** -v (repeatable) and --log-file, for the commands that run steps. */
export function addVerbosityOptions(command: Command): Command {
  return command
    .option('-v, --verbose', 'say more; repeat for more: -v shows each step as it starts, -vv also runs kubeadm with --v=5, -vvv with --v=6 (MACHINEADM_DEBUG=1 is -v)', increase)
    .option('--log-file <path>', 'also append everything the run shows, at the most detail, to this file (created 0600)');
}

/** The verbosity asked for: -v count, at least 1 when MACHINEADM_DEBUG is set (not empty). */
export function verbosityOf(options: { verbose?: number }, env: NodeJS.ProcessEnv): number {
  return Math.max(options.verbose ?? 0, env.MACHINEADM_DEBUG ? 1 : 0);
}

export function addStateDirOption(command: Command): Command {
  return command.option('--state-dir <dir>', 'where machineadm keeps its state (default: /var/lib/machineadm under --root; Windows: %ProgramData%\\machineadm)');
}

export function addCommonOptions(command: Command, io: Io): Command {
  return addStateDirOption(addOutputOption(addOfflineOption(addRootOption(addConfigOptions(command), io))));
}

export function parseIds(value: string, previous: string[] = []): string[] {
  const ids = value.split(',').map((s) => s.trim()).filter(Boolean);
  if (ids.length === 0) throw new UsageError('an empty step id list', { hint: 'give ids such as prepare/sysctls or containerd' });
  return [...previous, ...ids];
}
