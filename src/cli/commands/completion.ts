// completion SHELL: the shell completion script, made from this command line's own definitions.
import { Argument, type Command } from 'commander';
import type { Io } from '../io.ts';
import { ExitCode } from '../../errors.ts';

export const COMPLETION_SHELLS = ['bash', 'zsh', 'fish', 'powershell'] as const;

export function registerCompletionCommand(program: Command, io: Io, setExit: (code: number) => void): void {
  program
    .command('completion')
    .description('print the shell completion script for bash, zsh, fish or powershell')
    .addArgument(new Argument('<shell>', 'the shell').choices(COMPLETION_SHELLS))
    .addHelpText(
      'after',
      '\nExamples:\n  $ machineadm completion bash > /etc/bash_completion.d/machineadm\n  $ source <(machineadm completion bash)      # in ~/.bashrc\n  $ machineadm completion zsh > "${fpath[1]}/_machineadm"\n' +
        '  $ machineadm completion fish > ~/.config/fish/completions/machineadm.fish\n  PS> machineadm completion powershell | Out-String | Invoke-Expression\n',
    )
    .action(async (shell: (typeof COMPLETION_SHELLS)[number]) => {
      const [{ commandTree }, { renderCompletion }, { machineConfigJsonSchema }, { allFields }] = await Promise.all([
        import('../command-tree.ts'),
        import('../completion.ts'),
        import('../../config/schema/index.ts'),
        import('../../config/schema/fields.ts'),
      ]);
      // explain completes the field paths (a map key has no fixed name: those paths are left out).
      const fields = allFields(machineConfigJsonSchema()).map((f) => f.path).filter((p) => !p.includes('*'));
      io.stdout(renderCompletion(shell, commandTree(program), { explain: fields }));
      setExit(ExitCode.ok);
    });
}
