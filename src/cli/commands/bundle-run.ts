// bundle: what it does, loaded only when it runs.
import { resolve } from 'node:path';
import type { Io } from '../io.ts';
import { createHost } from '../../host/index.ts';
import { ExitCode, UsageError } from '../../errors.ts';
import { loadConfig } from '../../config/load.ts';
import { buildBundle } from '../../bundle/build.ts';
import { displayUrl } from '../../redaction.ts';

export interface BundleOptions {
  config?: string[];
  destination?: string;
}

export async function runBundle(options: BundleOptions, io: Io): Promise<number> {
  if (!options.config?.length) throw new UsageError('bundle needs the configuration: -c, --config <source>', { hint: 'e.g. machineadm bundle -c node.yaml -d ./node-bundle' });
  if (options.destination === undefined) throw new UsageError('bundle needs the bundle directory: -d, --destination <dir>', { hint: 'e.g. machineadm bundle -c node.yaml -d ./node-bundle' });
  const host = createHost({ env: io.env, offline: false });
  const { config } = await loadConfig(host, options.config, { readStdin: (maxBytes) => io.readStdin(maxBytes), cwd: io.cwd });
  const result = await buildBundle(host, {
    config,
    destination: resolve(io.cwd, options.destination),
    onFile: (file) => io.stdout(`bundled ${displayUrl(file.from)} -> ${file.path} (${file.bytes} bytes, sha256 ${file.sha256})\n`),
  });
  io.stdout(`wrote ${result.config} and ${result.manifest}; on the target: machineadm init --offline -c ${result.config}\n`);
  return ExitCode.ok;
}
