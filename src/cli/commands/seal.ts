// seal: encrypts a secret to machines' age identities, for a configuration's valueFrom.age. Only
// its options live here; the encryption is loaded when it runs.
import type { Command } from 'commander';
import type { Io } from '../io.ts';
import type { SealOptions } from './seal-run.ts';

function collect(value: string, previous: string[] = []): string[] {
  return [...previous, value];
}

export function registerSealCommand(program: Command, io: Io, setExit: (code: number) => void): void {
  program
    .command('seal')
    .description('encrypt a secret to machines\' age identities, for valueFrom.age in a configuration')
    .option('-r, --recipient <age1...>', 'a machine\'s age recipient (age-keygen -y prints it from the identity); repeatable', collect)
    .option('-R, --recipients-file <file>', 'a file of recipients, one per line (# comments); repeatable', collect)
    .option('--in <file>', 'the secret to encrypt (default: stdin); its bytes are kept, a final newline too')
    .option('--yaml', 'print a { valueFrom: { age: { armor } } } block to paste as the secret field')
    .addHelpText(
      'after',
      '\nPrints the ASCII-armored envelope (as age -a); the identity that opens it stays on the machine.\nExit codes: 0 sealed, 2 bad usage (no recipient, a recipient that is not one, no input, input that is not UTF-8 text).\n\nExamples:\n  $ machineadm seal -r age1xyqn9ms7gve4vd6flh7lhr7rwe64gwm7r5sl0cu3f65uqg30ppyq6vpl0k --yaml < token.txt\n  $ machineadm seal -R fleet.recipients --in ca.key > ca.key.age\n',
    )
    .action(async (options: SealOptions) => setExit(await (await import('./seal-run.ts')).runSeal(options, io)));
}
