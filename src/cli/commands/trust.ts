// verify, keygen, sign, fetch: signatures and verified downloads.
import type { Command } from 'commander';
import type { Io } from '../io.ts';
import { NotAvailableError } from '../../errors.ts';

function notYet(name: string): never {
  throw new NotAvailableError(`"machineadm ${name}" is not available in this build yet`, { hint: 'see docs/contract.md for what this version supports' });
}

export function registerTrustCommands(program: Command, _io: Io, _setExit: (code: number) => void): void {
  program
    .command('verify')
    .description('verify a file (or this executable with --self) against a minisign signature')
    .argument('[file]')
    .allowUnknownOption(false)
    .addHelpText('after', '\nExample:\n  $ machineadm verify machineadm-linux-x64 -x machineadm-linux-x64.minisig -p machineadm.pub\n  $ machineadm verify --self\n')
    .option('--self', 'verify the running executable')
    .option('-x, --signature <file>', 'signature file (default: FILE.minisig)')
    .option('-p, --public-key-file <file>', 'public key file')
    .option('-P, --public-key <base64>', 'public key')
    .action(() => notYet('verify'));
  program
    .command('keygen')
    .description('create a minisign-compatible ed25519 key pair')
    .option('-p, --public-key-file <file>', 'where to write the public key', 'machineadm.pub')
    .option('-s, --secret-key-file <file>', 'where to write the secret key', 'machineadm.key')
    .addHelpText('after', '\nExample:\n  $ machineadm keygen -p machineadm.pub -s machineadm.key\n')
    .action(() => notYet('keygen'));
  program
    .command('sign')
    .description('sign a file, writing FILE.minisig')
    .argument('<file>')
    .option('-s, --secret-key-file <file>', 'secret key file', 'machineadm.key')
    .option('-t, --trusted-comment <text>', 'trusted comment')
    .addHelpText('after', '\nExample:\n  $ machineadm sign dist/machineadm-linux-x64 -s machineadm.key -t "machineadm 0.1.0"\n')
    .action(() => notYet('sign'));
  program
    .command('fetch')
    .description('download a file, verify it, and only then put it in place')
    .argument('<url>')
    .requiredOption('-o, --output <path>', 'where to put the file')
    .option('--sha256 <hex>', 'expected SHA-256')
    .option('-x, --signature <url>', 'signature URL')
    .option('-P, --public-key <base64>', 'public key')
    .addHelpText('after', '\nExample:\n  $ machineadm fetch https://mirror.example/kubelet -o /usr/local/bin/kubelet --sha256 <hex>\n')
    .action(() => notYet('fetch'));
}
