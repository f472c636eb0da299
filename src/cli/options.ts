// The options every command shares. Registering them loads nothing of the host: commands load
// ./host-options.ts when they run.
import { Option, type Command } from 'commander';
import { UsageError } from '../errors.ts';

export interface CommonOptions {
  config: string[];
  root: string;
  offline: boolean;
  output: 'text' | 'json';
  stateDir?: string;
}

function collect(value: string, previous: string[] = []): string[] {
  return [...previous, value];
}

export function addCommonOptions(command: Command): Command {
  return command
    .option('-c, --config <source>', 'configuration source: a file, a directory, - (stdin), https://, imds://user-data; repeatable, merged in order', collect, [])
    .option('--root <dir>', 'work on the machine under this directory instead of / (a scratch root changes nothing live)', '/')
    .option('--offline', 'never use the network; anything that would fails at once', false)
    .addOption(new Option('-o, --output <format>', 'output format').choices(['text', 'json']).default('text'))
    .option('--state-dir <dir>', 'where machineadm keeps its state (default: /var/lib/machineadm under --root)');
}

export function parseIds(value: string, previous: string[] = []): string[] {
  const ids = value.split(',').map((s) => s.trim()).filter(Boolean);
  if (ids.length === 0) throw new UsageError('an empty step id list', { hint: 'give ids such as prepare/sysctls or containerd' });
  return [...previous, ...ids];
}
