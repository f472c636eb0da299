// The contract's command reference, made from the command line itself: every command's --help
// (usage, arguments, options with their defaults, examples), walked from main.ts's commander tree,
// and the exit codes of src/errors.ts. docs/contract/command-reference.md carries it between generated
// markers.
import type { Command } from 'commander';
import { buildProgram } from '../../src/cli/main.ts';
import { ExitCode } from '../../src/errors.ts';
import type { Io } from '../../src/cli/io.ts';
import { runCli } from './cli.ts';

export const BEGIN = '<!-- generated: command reference (UPDATE_GOLDEN=1 npx vitest run test/docs/contract-reference.test.ts) -->';
export const END = '<!-- end of generated command reference -->';

const silent: Io = { stdout: () => {}, stderr: () => {}, readStdin: async () => Buffer.alloc(0), env: {}, cwd: '/', interactive: false };

/** Every command path, depth first in registration order: ['init'], ['config'], ['config', 'view'], ... */
export function commandPaths(): string[][] {
  const paths: string[][] = [];
  const walk = (command: Command, prefix: string[]): void => {
    for (const sub of command.commands) {
      const path = [...prefix, sub.name()];
      paths.push(path);
      walk(sub, path);
    }
  };
  walk(buildProgram(silent, () => {}), []);
  return paths;
}

// Help is wrapped at commander's default width (80) whatever the terminal: the reference must not
// depend on who generates it.
async function helpOf(path: string[]): Promise<string> {
  const { code, stdout } = await runCli([...path, '--help'], { env: {} });
  if (code !== 0) throw new Error(`machineadm ${path.join(' ')} --help exited ${code}`);
  return stdout.trimEnd();
}

export async function renderCommandReference(): Promise<string> {
  const sections = [`#### machineadm\n\n\`\`\`\n${await helpOf([])}\n\`\`\``];
  for (const path of commandPaths()) sections.push(`#### machineadm ${path.join(' ')}\n\n\`\`\`\n${await helpOf(path)}\n\`\`\``);
  return `${BEGIN}\n\n${sections.join('\n\n')}\n\n${END}`;
}

/** The exit codes machineadm can return, from the code. */
export function exitCodes(): number[] {
  return [...new Set(Object.values(ExitCode))].sort((a, b) => a - b);
}
