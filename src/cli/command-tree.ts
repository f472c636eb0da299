// The commander tree as data: each command's path, words, options and arguments. Completion
// scripts and the man page are made from it, so they name exactly what the command line takes.
import type { Command } from 'commander';

export interface OptionInfo {
  short?: string;
  long?: string;
  /** The option takes a value (<value> or [value]). */
  takesValue: boolean;
  valueName?: string;
  choices?: readonly string[];
  description: string;
  defaultValue?: unknown;
}

export interface ArgumentInfo {
  name: string;
  required: boolean;
  choices?: readonly string[];
  description: string;
}

export interface CommandInfo {
  /** ['config', 'validate']; [] for machineadm itself. */
  path: string[];
  description: string;
  usage: string;
  options: OptionInfo[];
  args: ArgumentInfo[];
  subcommands: CommandInfo[];
}

const HELP: OptionInfo = { short: '-h', long: '--help', takesValue: false, description: 'display help for command' };

export function commandTree(command: Command, path: string[] = []): CommandInfo {
  const options: OptionInfo[] = command.options
    .filter((o) => !o.hidden)
    .map((o) => ({
      ...(o.short ? { short: o.short } : {}),
      ...(o.long ? { long: o.long } : {}),
      takesValue: o.required || o.optional,
      ...(o.required || o.optional ? { valueName: /<([^>]+)>|\[([^\]]+)\]/.exec(o.flags)?.slice(1).find(Boolean) ?? 'value' } : {}),
      ...(o.argChoices ? { choices: o.argChoices } : {}),
      description: o.description,
      ...(o.defaultValue !== undefined && !Array.isArray(o.defaultValue) && o.defaultValue !== false ? { defaultValue: o.defaultValue } : {}),
    }));
  return {
    path,
    description: command.description(),
    usage: command.usage(),
    options: [...options, HELP],
    args: command.registeredArguments.map((a) => ({ name: a.name(), required: a.required, ...(a.argChoices ? { choices: a.argChoices } : {}), description: a.description })),
    subcommands: command.commands.filter((c) => c.name() !== 'help').map((c) => commandTree(c, [...path, c.name()])),
  };
}

/** Every command depth first, machineadm itself first. */
export function flattenCommands(root: CommandInfo): CommandInfo[] {
  return [root, ...root.subcommands.flatMap(flattenCommands)];
}
