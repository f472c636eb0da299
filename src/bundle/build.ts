// Air-gapped bundles: everything a configuration fetches over the network, downloaded and verified
// once on a connected machine, put in one directory with a manifest of sha256 sums and a
// configuration whose sources are paths relative to it. Copied anywhere (a USB stick, a share),
// `machineadm init --offline -c DIR/config.yaml` needs nothing else. May import config/, verify/,
// host/ (through the Host only) and engine/managed-file's errorForField.
import { createHash } from 'node:crypto';
import { dump } from 'js-yaml';
import type { Host } from '../host/index.ts';
import { UsageError } from '../errors.ts';
import type { MachineConfig } from '../config/schema/index.ts';
import { fetchVerified, SIGNATURE_MAX_BYTES, type FetchRequest } from '../verify/fetch.ts';
import { downloadSmall } from '../host/download-small.ts';
import { errorForField } from '../engine/managed-file.ts';
import { formatSignature, type SecretKey } from '../verify/minisign.ts';
import { signStream } from '../verify/sign.ts';
import { artifacts, parseSha256File, releaseArch } from '../config/install-layout.ts';

export interface BundleRequest {
  config: MachineConfig;
  /** The bundle directory, a path on this machine (host.local); it must be new or empty. */
  destination: string;
  /** machineadm's own binaries, each checked against its .minisig with this public key (base64 key line). */
  binaries?: { baseUrl: string; platforms: readonly Platform[]; publicKey: string };
  /** The platforms whose Kubernetes spec.kubernetes.install installs (default: Linux on x64 and arm64). */
  installPlatforms?: readonly { os: 'linux' | 'windows'; arch: string }[];
  /** Signs SHA256SUMS with the operator's minisign key (SHA256SUMS.minisig, prehashed). */
  sign?: { secretKey: SecretKey; trustedComment: string };
  onFile?: (file: BundledFile) => void;
}

/** The release file name of machineadm for each platform, as scripts/build.mjs names them. */
export const RELEASE_FILES = { 'linux-x64': 'machineadm-linux-x64', 'linux-arm64': 'machineadm-linux-arm64', 'windows-x64': 'machineadm-windows-x64.exe' } as const;
export type Platform = keyof typeof RELEASE_FILES;

export interface BundledFile {
  /** Path inside the bundle, with forward slashes. */
  path: string;
  sha256: string;
  bytes: number;
  /** Where it came from (shown redacted by the caller). */
  from: string;
}

export interface BundleResult {
  config: string;
  files: BundledFile[];
  manifest: string;
  /** SHA256SUMS.minisig, when the bundle was signed. */
  signature?: string;
}

export const MANIFEST = 'SHA256SUMS';
/** minisign's own name for a signature of SHA256SUMS: `minisign -Vm SHA256SUMS -p KEY` checks it. */
export const MANIFEST_SIGNATURE = 'SHA256SUMS.minisig';
export const BUNDLE_CONFIG = 'config.yaml';
/** The first line of a bundle's config.yaml: a -c source with it is checked as its bundle. */
export const BUNDLE_CONFIG_MARKER = '# Written by machineadm bundle: sources are paths relative to this file.';

// A name that says what the file is and cannot collide: its folder, the entry's index, then the
// target's file name.
function bundleName(folder: string, index: number, target: string): string {
  const base = target.split(/[\\/]/).pop() || 'file';
  return `${folder}/${index}-${base.replace(/[^A-Za-z0-9._-]/g, '_')}`;
}

// The file name a URL's path ends in. Never from the URL as written: a presigned URL's query (its
// signature) or a password would become a file name in SHA256SUMS, config.yaml and every message.
function urlFileName(url: string): string {
  try {
    return new URL(url).pathname.split('/').pop() || 'file';
  } catch {
    return 'file';
  }
}

/** One file a configuration fetches, and how the written configuration points at its copy. */
interface BundleSource {
  /** The source's path in the configuration, named when it fails. */
  field: string;
  /** Path inside the bundle. */
  path: string;
  url: string;
  check: Pick<FetchRequest, 'sha256' | 'signature' | 'ca'>;
  mode: number;
  /** The configuration's source now names the bundled copy, checked on the target by its sha256. */
  point: (path: string, sha256: string) => void;
  /** Also write PATH.sha256 (a release's layout, which install reads beside each file). */
  sha256File?: boolean;
}

// What spec.kubernetes.install downloads, for each platform, in the release's own layout under
// install/: the configuration then names install/release as its base and install/NAME-{os}-{arch}
// for the archives, and the target reads each file's .sha256 beside it (covered by SHA256SUMS).
function installSourcesOf(config: MachineConfig, platforms: readonly { os: 'linux' | 'windows'; arch: string }[]): BundleSource[] {
  const install = config.spec.kubernetes?.install;
  const version = config.spec.kubernetes?.version;
  if (!install || !version) return [];
  const out: BundleSource[] = [];
  for (const { os, arch } of platforms) {
    for (const artifact of artifacts(install, version, arch, os === 'windows' ? 'C:\\unused' : '/unused', os)) {
      const binary = 'path' in artifact.install;
      const exe = os === 'windows' ? '.exe' : '';
      const path = binary ? `install/release/${version}/bin/${os}/${releaseArch(arch)}/${artifact.name}${exe}` : `install/${artifact.name}-${os}-${releaseArch(arch)}.tar.gz`;
      const point = () => {
        // The bundle holds every binary in the release's layout: its own sources are no longer needed.
        install.baseUrl = 'install/release';
        delete install.urls;
        if (artifact.name === 'crictl' && install.crictl) install.crictl = { version: install.crictl.version, url: 'install/crictl-{os}-{arch}.tar.gz' };
        if (artifact.name === 'cni-plugins' && install.cniPlugins) install.cniPlugins = { version: install.cniPlugins.version, url: 'install/cni-plugins-{os}-{arch}.tar.gz' };
      };
      out.push({ field: artifact.field, path, url: artifact.url, check: artifact.sha256 ? { sha256: artifact.sha256 } : {}, mode: binary ? 0o755 : 0o644, point, sha256File: true });
    }
  }
  for (const [index, image] of (install.images ?? []).entries()) {
    out.push({ field: `spec.kubernetes.install.images[${index}]`, path: bundleName('install/images', index, urlFileName(image.url)), url: image.url, check: { sha256: image.sha256 }, mode: 0o644, point: (path) => (image.url = path) });
  }
  return out;
}

// Every source in the configuration: spec.files, the Windows host agents (a signature is checked
// here; the target checks the copy by the sha256 found), and the djoin blob (a secret: 0600).
async function sourcesOf(host: Host, config: MachineConfig): Promise<BundleSource[]> {
  const out: BundleSource[] = [];
  for (const [index, file] of (config.spec.files ?? []).entries()) {
    const source = file.source;
    if (!source) continue;
    const ca = source.caFile ? await caBundle(host, source.caFile, index) : undefined;
    out.push({ field: `spec.files[${index}].source`, path: bundleName('files', index, file.path), url: source.url, check: { sha256: source.sha256, ...(ca ? { ca } : {}) }, mode: 0o644, point: (path) => (file.source = { url: path, sha256: source.sha256 }) });
  }
  for (const [index, agent] of (config.spec.windows?.hostAgents ?? []).entries()) {
    const { url, sha256, signature } = agent.source;
    const check = { ...(sha256 ? { sha256 } : {}), ...(signature ? { signature: { publicKey: signature.publicKey, ...(signature.url ? { url: signature.url } : {}) } } : {}) };
    out.push({ field: `spec.windows.hostAgents[${index}].source`, path: bundleName('agents', index, agent.installPath), url, check, mode: 0o644, point: (path, found) => (agent.source = { url: path, sha256: found }) });
  }
  const blob = config.spec.domainJoin?.windows?.offlineBlob;
  if (blob?.url !== undefined) {
    out.push({ field: 'spec.domainJoin.windows.offlineBlob', path: 'domain-join/offline-blob.odj', url: blob.url, check: { sha256: blob.sha256! }, mode: 0o600, point: (path) => (blob.url = path) });
  }
  return out;
}

// What a bundle writes at its top level: removed again when building it fails.
const BUNDLE_ENTRIES = [MANIFEST, MANIFEST_SIGNATURE, BUNDLE_CONFIG, 'files', 'agents', 'domain-join', 'bin', 'install'];

/** The sha256 the server publishes beside a release file (integrity: the bundle's SHA256SUMS then carries it). */
async function publishedSha256(host: Host, source: BundleSource): Promise<string> {
  const { data } = await downloadSmall(host, [`${source.url}.sha256`], { maxBytes: 4096 }).catch((error: unknown) => {
    throw errorForField(source.field, error);
  });
  const hex = parseSha256File(data.toString('utf8'));
  if (!hex) throw errorForField(source.field, new UsageError(`${source.url}.sha256 holds no sha256`, { hint: 'point the URL at the release layout, or pin the sha256 in the configuration' }));
  return hex;
}

function join(dir: string, relative: string): string {
  return `${dir.replace(/[\\/]+$/, '')}/${relative}`;
}

async function caBundle(host: Host, path: string, index: number): Promise<string> {
  const text = await host.local.readText(path);
  if (text === undefined) throw new UsageError(`spec.files[${index}].source.caFile: ${path} does not exist on this machine`, { hint: 'bundle where the CA file is, or copy it here first' });
  return text;
}

/** Builds the bundle; on any failure the directory is left as it was found (new or empty). */
/**
 * A pinned sha256 is one file's, so one platform's: bundling install for several platforms would
 * download each other platform's file only to fail on it (exit 3). Refused before any download.
 */
function refusePinsForSeveralPlatforms(config: MachineConfig, platforms: readonly { os: string; arch: string }[]): void {
  const install = config.spec.kubernetes?.install;
  if (!install || !config.spec.kubernetes?.version || platforms.length < 2) return;
  const pinned = [
    ...Object.keys(install.sha256 ?? {}).map((name) => `spec.kubernetes.install.sha256.${name}`),
    ...(install.crictl?.sha256 ? ['spec.kubernetes.install.crictl.sha256'] : []),
    ...(install.cniPlugins?.sha256 ? ['spec.kubernetes.install.cniPlugins.sha256'] : []),
  ];
  if (pinned.length === 0) return;
  const names = platforms.map((p) => `${p.os}-${p.arch}`).join(', ');
  throw new UsageError(`${pinned.join(', ')} ${pinned.length === 1 ? 'pins one file' : 'pin one file each'}, so one platform's, and the bundle is for ${names}: the others' files would not match`, {
    hint: 'give --platform with the one platform the sha256s are for (e.g. --platform linux-x64), or leave them out to check each file against the .sha256 published beside it',
  });
}

// A new directory under a file cannot be made: said before the first download, not by the
// first write after it (and the cleanup of a directory that was never made).
async function refuseFileAbove(host: Host, dir: string): Promise<void> {
  for (let above = dir.replace(/[\\/][^\\/]*$/, ''); above !== ''; above = above.replace(/[\\/][^\\/]*$/, '')) {
    const info = await host.local.stat(above);
    if (info === undefined) continue;
    // A link is left to the write, which follows one that leads to a directory.
    if (info.kind === 'directory' || info.kind === 'symlink') return;
    throw new UsageError(`${dir} cannot be made: ${above} is ${info.kind === 'file' ? 'a file' : 'a special file'}, not a directory`, { hint: 'give a new or empty directory for the bundle' });
  }
}

export async function buildBundle(host: Host, request: BundleRequest): Promise<BundleResult> {
  const dir = request.destination;
  const info = await host.local.stat(dir);
  if (info && (info.kind !== 'directory' || (await host.local.list(dir)).length > 0)) {
    throw new UsageError(`${dir} ${info.kind === 'directory' ? 'is not empty' : 'exists and is not a directory'}`, { hint: 'give a new or empty directory for the bundle' });
  }
  if (!info) await refuseFileAbove(host, dir);
  const platforms = request.installPlatforms ?? [{ os: 'linux', arch: 'x64' }, { os: 'linux', arch: 'arm64' }];
  refusePinsForSeveralPlatforms(request.config, platforms);
  // The written configuration is the loaded one with each source pointing into the bundle.
  const config = structuredClone(request.config);
  const files: BundledFile[] = [];
  try {
    const install = installSourcesOf(config, platforms);
    for (const source of [...(await sourcesOf(host, config)), ...install]) {
      const check = source.check.sha256 || source.check.signature || !source.sha256File ? source.check : { ...source.check, sha256: await publishedSha256(host, source) };
      const result = await fetchVerified(host, { urls: [source.url], destination: join(dir, source.path), fileSystem: host.local, mode: source.mode, ...check }).catch((error: unknown) => {
        throw errorForField(source.field, error);
      });
      const bundled = { path: source.path, sha256: result.sha256, bytes: result.bytes, from: source.url };
      files.push(bundled);
      request.onFile?.(bundled);
      if (source.sha256File) {
        const text = `${result.sha256}\n`;
        await host.local.writeFile(join(dir, `${source.path}.sha256`), text, { mode: 0o644, backup: false });
        files.push({ path: `${source.path}.sha256`, sha256: createHash('sha256').update(text).digest('hex'), bytes: text.length, from: `${source.url}.sha256` });
      }
      source.point(source.path, result.sha256);
    }
    if (request.binaries) files.push(...(await bundleBinaries(host, dir, request.binaries, request.onFile)));
    const text = `${BUNDLE_CONFIG_MARKER}\n${dump(config, { lineWidth: -1, noRefs: true })}`;
    // The configuration can carry secrets (a token given inline): owner only.
    await host.local.writeFile(join(dir, BUNDLE_CONFIG), text, { mode: 0o600, backup: false });
    const sums = [...files.map((f) => ({ path: f.path, sha256: f.sha256 })), { path: BUNDLE_CONFIG, sha256: createHash('sha256').update(text).digest('hex') }];
    // sha256sum's own format: `cd DIR && sha256sum -c SHA256SUMS` checks a copy.
    const manifest = sums.map((s) => `${s.sha256}  ${s.path}\n`).join('');
    await host.local.writeFile(join(dir, MANIFEST), manifest, { mode: 0o644, backup: false });
    if (!request.sign) return { config: join(dir, BUNDLE_CONFIG), files, manifest: join(dir, MANIFEST) };
    // The manifest names every file with its sum: signing it signs the bundle as a whole.
    const signature = await signStream([Buffer.from(manifest)], request.sign.secretKey, { trustedComment: request.sign.trustedComment, legacy: false });
    await host.local.writeFile(join(dir, MANIFEST_SIGNATURE), formatSignature(signature), { mode: 0o644, backup: false });
    return { config: join(dir, BUNDLE_CONFIG), files, manifest: join(dir, MANIFEST), signature: join(dir, MANIFEST_SIGNATURE) };
  } catch (error) {
    if (info) for (const name of BUNDLE_ENTRIES) await host.local.remove(join(dir, name));
    else await host.local.remove(dir);
    throw error;
  }
}

// Each binary with its signature: the .minisig is fetched once, and the binary is checked against
// exactly the bytes kept beside it, so `machineadm verify` on the target sees what was checked here.
async function bundleBinaries(host: Host, dir: string, binaries: NonNullable<BundleRequest['binaries']>, onFile: BundleRequest['onFile']): Promise<BundledFile[]> {
  const out: BundledFile[] = [];
  for (const platform of binaries.platforms) {
    const name = RELEASE_FILES[platform];
    const url = `${binaries.baseUrl.replace(/\/+$/, '')}/${name}`;
    const signature = await downloadSmall(host, [`${url}.minisig`], { maxBytes: SIGNATURE_MAX_BYTES });
    const result = await fetchVerified(host, {
      urls: [url],
      destination: join(dir, `bin/${name}`),
      fileSystem: host.local,
      mode: 0o755,
      signature: { publicKey: binaries.publicKey, fetched: signature },
    });
    await host.local.writeFile(join(dir, `bin/${name}.minisig`), signature.data, { mode: 0o644, backup: false });
    const bundled = [
      { path: `bin/${name}`, sha256: result.sha256, bytes: result.bytes, from: url },
      { path: `bin/${name}.minisig`, sha256: createHash('sha256').update(signature.data).digest('hex'), bytes: signature.data.length, from: signature.url },
    ];
    for (const b of bundled) onFile?.(b);
    out.push(...bundled);
  }
  return out;
}
