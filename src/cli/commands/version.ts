// version: the build's identity.
import type { Command } from 'commander';
import { Option } from 'commander';
import type { Io } from '../io.ts';
import { buildInfo } from '../../version.ts';
import { ExitCode } from '../../errors.ts';

export function versionInfo() {
  return {
    version: buildInfo.version,
    commit: buildInfo.commit,
    node: process.version,
    platform: `${process.platform === 'win32' ? 'windows' : process.platform}-${process.arch}`,
  };
}

export function registerVersionCommand(program: Command, io: Io, setExit: (code: number) => void): void {
  program
    .command('version')
    .description('print the version, commit, Node version and platform')
    .addOption(new Option('-o, --output <format>', 'output format').choices(['text', 'json', 'yaml']).default('text'))
    .addHelpText('after', '\nExample:\n  $ machineadm version -o json\n')
    .action(async (options: { output: 'text' | 'json' | 'yaml' }) => {
      const info = versionInfo();
      io.stdout(options.output === 'text' ? `machineadm ${info.version} (commit ${info.commit}, node ${info.node}, ${info.platform})\n` : await (await import('../data-output.ts')).renderData(options.output, info, { compactJson: true }));
      setExit(ExitCode.ok);
    });
}
