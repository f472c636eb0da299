// verify, keygen, sign, fetch: minisign-compatible signatures and verified downloads. Only their
// options live here; the implementation (crypto, HTTP) is loaded when one of them runs.
import { Option, type Command } from 'commander';
import type { Io } from '../io.ts';
import type { FetchOptions, KeygenOptions, SignOptions, VerifyOptions } from './trust-run.ts';

const run = () => import('./trust-run.ts');

function collect(value: string, previous: string[] = []): string[] {
  return [...previous, value];
}

export const TRUST_COMMANDS = ['verify', 'keygen', 'sign', 'fetch'] as const;

export function registerTrustCommands(program: Command, io: Io, setExit: (code: number) => void): void {
  program
    .command('verify')
    .description('verify a file (or this executable with --self) against a minisign signature')
    .argument('[file]')
    .addHelpText(
      'after',
      '\nExit codes: 0 verified, 2 bad usage, 3 verification failed.\n\nExample:\n  $ machineadm verify machineadm-linux-x64 -x machineadm-linux-x64.minisig -p machineadm.pub\n  $ machineadm verify --self\n',
    )
    .option('--self', 'verify the running executable (against <executable>.minisig, with the built-in release key)')
    .option('-x, --signature <file>', 'signature file (default: FILE.minisig)')
    .option('-p, --public-key-file <file>', 'public key file')
    .option('-P, --public-key <base64>', 'public key (the base64 key line)')
    .option('--require-prehashed', 'refuse legacy (not prehashed) signatures, like minisign -H')
    .option('--signify', "also accept signify's signatures (no trusted comment); without it a signature must have one, as minisign -V requires")
    .option('-q, --quiet', 'print nothing on success')
    .action(async (file: string | undefined, options: VerifyOptions) => setExit(await (await run()).runVerify(file, options, io)));
  program
    .command('keygen')
    .description('create a minisign-compatible ed25519 key pair')
    .option('-p, --public-key-file <file>', 'where to write the public key', 'machineadm.pub')
    .option('-s, --secret-key-file <file>', 'where to write the secret key (unencrypted, mode 0600)', 'machineadm.key')
    .option('-f, --force', 'overwrite existing key files')
    .addHelpText('after', '\nExample:\n  $ machineadm keygen -p machineadm.pub -s machineadm.key\n')
    .action(async (options: KeygenOptions) => setExit(await (await run()).runKeygen(options, io)));
  program
    .command('sign')
    .description('sign a file, writing FILE.minisig')
    .argument('<file>')
    .option('-s, --secret-key-file <file>', 'secret key file (machineadm keygen, or minisign -G)', 'machineadm.key')
    .option('-t, --trusted-comment <text>', 'trusted comment (signed; default: timestamp and file name)')
    .option('-c, --untrusted-comment <text>', 'untrusted comment (not signed)')
    .option('-x, --signature <file>', 'where to write the signature (default: FILE.minisig)')
    .option('-l, --legacy', 'legacy signature of the whole file instead of its BLAKE2b-512 hash')
    .option('--password-file <file>', 'password of an encrypted (minisign) secret key')
    .addHelpText('after', '\nExample:\n  $ machineadm sign dist/machineadm-linux-x64 -s machineadm.key -t "machineadm 0.1.0"\n')
    .action(async (file: string, options: SignOptions) => setExit(await (await run()).runSign(file, options, io)));
  program
    .command('fetch')
    .description('download a file, verify it, and only then put it in place')
    .argument('<url>')
    .option('-d, --destination <path>', 'where to put the file')
    .addOption(new Option('-o, --output <path>', 'deprecated spelling of --destination').hideHelp())
    .option('--sha256 <hex>', 'expected SHA-256')
    .option('-x, --signature <url>', 'signature URL (default: URL.minisig, when a public key is given)')
    .option('-P, --public-key <base64>', 'public key (the base64 key line)')
    .option('-p, --public-key-file <file>', 'public key file')
    .option('--mirror <url>', 'another URL with the same file, tried in order after URL; repeatable', collect)
    .option('--require-prehashed', 'refuse legacy (not prehashed) signatures')
    .option('--signify', "also accept signify's signatures (no trusted comment)")
    .option('--ca-file <file>', 'extra CA certificates (PEM) to trust for https')
    .option('--mode <octal>', 'file mode of the result, e.g. 0755')
    .option('--offline', 'never use the network (fails at once)')
    .addHelpText(
      'after',
      '\nExit codes: 0 fetched and verified, 1 download failed, 2 bad usage, 3 verification failed (nothing is written at the destination).\n\nExample:\n  $ machineadm fetch https://mirror.example/kubelet -d /usr/local/bin/kubelet --sha256 <hex> --mode 0755\n  $ machineadm fetch https://bucket.example/machineadm -d ./machineadm -P RWQ... --mirror https://mirror.internal/machineadm\n',
    )
    .action(async (url: string, options: FetchOptions) => setExit(await (await run()).runFetch(url, options, io)));
}
