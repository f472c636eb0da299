// bundle: an air-gapped bundle of everything a configuration downloads. Only its options live
// here; the implementation (HTTP, hashing) is loaded when it runs (./bundle-run.ts).
import type { Command } from 'commander';
import type { Io } from '../io.ts';
import { addConfigOptions } from '../options.ts';
import type { BundleOptions } from './bundle-run.ts';

export function registerBundleCommand(program: Command, io: Io, setExit: (code: number) => void): void {
  addConfigOptions(program.command('bundle').description('download and verify everything a configuration needs from the network, for a machine without one'))
    .option('-d, --destination <dir>', 'the bundle directory (new or empty): the files, SHA256SUMS and a config.yaml whose sources are relative to it')
    .option('--binaries-url <url>', "also bundle machineadm's binaries and their .minisig from this base URL (BASE/machineadm-linux-x64 ...), each verified")
    .option('--platform <list>', 'the platforms whose binaries to bundle (comma-separated): machineadm\'s with --binaries-url (default all three), and what spec.kubernetes.install installs (default: windows-x64 for a configuration with spec.windows, else linux-x64,linux-arm64)')
    .option('-P, --public-key <base64>', 'public key the binaries are signed with (default: the release key built into this binary)')
    .option('-p, --public-key-file <file>', 'public key file the binaries are signed with')
    .option('--sign-key <file>', "sign the bundle (its SHA256SUMS, as SHA256SUMS.minisig) with this minisign secret key (machineadm keygen, or minisign -G); init --bundle-public-key checks it")
    .option('--password-file <file>', 'password of an encrypted (minisign) secret key given with --sign-key')
    .addHelpText(
      'after',
      '\nExit codes: 0 bundled, 1 a download failed, 2 bad usage or configuration, 3 a download did not match its sha256 (nothing is left in the directory).\n\nExample:\n  $ machineadm bundle -c node.yaml -d /media/usb/node-bundle\n  $ machineadm bundle -c node.yaml -d ./bundle --binaries-url https://releases.example/machineadm/v0.1.0 --platform linux-x64 -p machineadm.pub\n  $ machineadm bundle -c node.yaml -d ./bundle --sign-key operator.key\n  $ machineadm init --offline --bundle /media/usb/node-bundle --bundle-public-key-file operator.pub   # on the machine without a network\n',
    )
    .action(async (options: BundleOptions) => setExit(await (await import('./bundle-run.ts')).runBundle(options, io)));
}
