// bundle: an air-gapped bundle of everything a configuration downloads. Only its options live
// here; the implementation (HTTP, hashing) is loaded when it runs (./bundle-run.ts).
import type { Command } from 'commander';
import type { Io } from '../io.ts';
import { addConfigOptions } from '../options.ts';
import type { BundleOptions } from './bundle-run.ts';

export function registerBundleCommand(program: Command, io: Io, setExit: (code: number) => void): void {
  addConfigOptions(program.command('bundle').description('download and verify everything a configuration needs from the network, for a machine without one'))
    .option('-d, --destination <dir>', 'the bundle directory (new or empty): the files, SHA256SUMS and a config.yaml whose sources are relative to it')
    .addHelpText(
      'after',
      '\nExit codes: 0 bundled, 1 a download failed, 2 bad usage or configuration, 3 a download did not match its sha256 (nothing is left in the directory).\n\nExample:\n  $ machineadm bundle -c node.yaml -d /media/usb/node-bundle\n  $ machineadm init --offline -c /media/usb/node-bundle/config.yaml   # on the machine without a network\n',
    )
    .action(async (options: BundleOptions) => setExit(await (await import('./bundle-run.ts')).runBundle(options, io)));
}
