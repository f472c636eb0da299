// bundle: what it does, loaded only when it runs.
import { basename, resolve } from 'node:path';
import type { Io } from '../io.ts';
import { createHost } from '../../host/index.ts';
import { ExitCode, UsageError } from '../../errors.ts';
import { loadConfig } from '../../config/load.ts';
import { buildBundle, RELEASE_FILES, type Platform } from '../../bundle/build.ts';
import { formatPublicKeyLine, keyIdHex, parseSecretKey, type SecretKey } from '../../verify/minisign.ts';
import { publicKeyFrom } from './trust-run.ts';
import { displayUrl } from '../../redaction.ts';
import { readOperatorFile } from '../operator-file.ts';

export interface BundleOptions {
  config?: string[];
  destination?: string;
  binariesUrl?: string;
  platform?: string;
  publicKey?: string;
  publicKeyFile?: string;
  signKey?: string;
  passwordFile?: string;
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
  const binaries = options.binariesUrl === undefined ? undefined : { baseUrl: options.binariesUrl, platforms: platforms(options.platform ?? 'linux-x64,linux-arm64,windows-x64'), publicKey: formatPublicKeyLine(await publicKeyFrom(host, io, options)) };
  if (options.passwordFile !== undefined && options.signKey === undefined) throw new UsageError('--password-file goes with --sign-key', { hint: 'give the secret key to sign the bundle with: --sign-key KEY' });
  // The key is read (and its password checked) before anything is downloaded.
  const secretKey = options.signKey === undefined ? undefined : await secretKeyFrom(host, io, options.signKey, options.passwordFile);
  const { config } = await loadConfig(host, options.config, { readStdin: (maxBytes) => io.readStdin(maxBytes), cwd: io.cwd });
  const destination = resolve(io.cwd, options.destination);
  // What spec.kubernetes.install installs is bundled for each platform asked for, else the configuration's.
  const installPlatforms = platforms(options.platform ?? (config.spec.windows ? 'windows-x64' : 'linux-x64,linux-arm64')).map((p) => ({ os: p.startsWith('windows-') ? ('windows' as const) : ('linux' as const), arch: p.slice(p.indexOf('-') + 1) }));
  const result = await buildBundle(host, {
    config,
    destination,
    installPlatforms,
    ...(binaries ? { binaries } : {}),
    ...(secretKey ? { sign: { secretKey, trustedComment: `timestamp:${Math.floor(host.now().getTime() / 1000)}\tfile:SHA256SUMS\thashed\tbundle:${basename(destination)}` } } : {}),
    onFile: (file) => io.stdout(`bundled ${displayUrl(file.from)} -> ${file.path} (${file.bytes} bytes, sha256 ${file.sha256})\n`),
  });
  if (result.signature && secretKey) io.stdout(`signed ${result.manifest} with key ${keyIdHex(secretKey.keyId)}: ${result.signature}\n`);
  const check = result.signature ? ` --bundle-public-key-file KEY.pub` : '';
  io.stdout(`wrote ${result.config} and ${result.manifest}; on the target: machineadm init --offline --bundle ${destination}${check}\n`);
  return ExitCode.ok;
}

async function secretKeyFrom(host: ReturnType<typeof createHost>, io: Io, file: string, passwordFile: string | undefined): Promise<SecretKey> {
  const path = resolve(io.cwd, file);
  const data = await readOperatorFile(host, path, '--sign-key');
  if (data === undefined) throw new UsageError(`--sign-key ${path}: no such file`);
  let password: string | undefined;
  if (passwordFile !== undefined) {
    const text = (await readOperatorFile(host, resolve(io.cwd, passwordFile), '--password-file'))?.toString('utf8');
    if (text === undefined) throw new UsageError(`--password-file ${resolve(io.cwd, passwordFile)}: no such file`);
    password = text.replace(/\r?\n$/, '');
  }
  return parseSecretKey(data, path, password);
}
