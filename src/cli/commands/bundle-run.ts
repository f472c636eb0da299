// bundle: what it does, loaded only when it runs.
import { resolve } from 'node:path';
import type { Io } from '../io.ts';
import { createHost } from '../../host/index.ts';
import { ExitCode, UsageError } from '../../errors.ts';
import { loadConfig } from '../../config/load.ts';
import { buildBundle, RELEASE_FILES, type Platform } from '../../bundle/build.ts';
import { formatPublicKeyLine } from '../../verify/minisign.ts';
import { publicKeyFrom } from './trust-run.ts';
import { displayUrl } from '../../redaction.ts';

export interface BundleOptions {
  config?: string[];
  destination?: string;
  binariesUrl?: string;
  platform: string;
  publicKey?: string;
  publicKeyFile?: string;
}

function platforms(list: string): Platform[] {
  const known = Object.keys(RELEASE_FILES);
  const given = list.split(',').map((p) => p.trim()).filter(Boolean);
  const unknown = given.filter((p) => !known.includes(p));
  if (unknown.length || given.length === 0) throw new UsageError(`--platform ${list}: ${unknown.length ? `unknown ${unknown.join(', ')}` : 'empty'}`, { hint: `give some of ${known.join(', ')}` });
  return given as Platform[];
}

export async function runBundle(options: BundleOptions, io: Io): Promise<number> {
  if (!options.config?.length) throw new UsageError('bundle needs the configuration: -c, --config <source>', { hint: 'e.g. machineadm bundle -c node.yaml -d ./node-bundle' });
  if (options.destination === undefined) throw new UsageError('bundle needs the bundle directory: -d, --destination <dir>', { hint: 'e.g. machineadm bundle -c node.yaml -d ./node-bundle' });
  const host = createHost({ env: io.env, offline: false });
  if (options.binariesUrl !== undefined && !/^https?:\/\//.test(options.binariesUrl)) throw new UsageError(`--binaries-url ${options.binariesUrl}: give an http:// or https:// base URL`);
  const binaries = options.binariesUrl === undefined ? undefined : { baseUrl: options.binariesUrl, platforms: platforms(options.platform), publicKey: formatPublicKeyLine(await publicKeyFrom(host, io, options)) };
  const { config } = await loadConfig(host, options.config, { readStdin: (maxBytes) => io.readStdin(maxBytes), cwd: io.cwd });
  const result = await buildBundle(host, {
    config,
    destination: resolve(io.cwd, options.destination),
    ...(binaries ? { binaries } : {}),
    onFile: (file) => io.stdout(`bundled ${displayUrl(file.from)} -> ${file.path} (${file.bytes} bytes, sha256 ${file.sha256})\n`),
  });
  io.stdout(`wrote ${result.config} and ${result.manifest}; on the target: machineadm init --offline -c ${result.config}\n`);
  return ExitCode.ok;
}
