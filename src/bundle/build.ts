// Air-gapped bundles: everything a configuration fetches over the network, downloaded and verified
// once on a connected machine, put in one directory with a manifest of sha256 sums and a
// configuration whose sources are paths relative to it. Copied anywhere (a USB stick, a share),
// `machineadm init --offline -c DIR/config.yaml` needs nothing else. May import config/, verify/
// and host/ (through the Host only).
import { createHash } from 'node:crypto';
import { dump } from 'js-yaml';
import type { Host } from '../host/index.ts';
import { UsageError } from '../errors.ts';
import type { MachineConfig } from '../config/schema/index.ts';
import { fetchVerified, SIGNATURE_MAX_BYTES } from '../verify/fetch.ts';
import { downloadSmall } from '../host/download.ts';

export interface BundleRequest {
  config: MachineConfig;
  /** The bundle directory, a path on this machine (host.local); it must be new or empty. */
  destination: string;
  /** machineadm's own binaries, each checked against its .minisig with this public key (base64 key line). */
  binaries?: { baseUrl: string; platforms: readonly Platform[]; publicKey: string };
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
}

export const MANIFEST = 'SHA256SUMS';
export const BUNDLE_CONFIG = 'config.yaml';

// What a bundle cannot carry yet: the Windows steps read these only from the network or a machine
// path, so a configuration pointing into the bundle would not work there. Refused rather than
// leaving a machine that still needs the network.
function unbundled(config: MachineConfig): string[] {
  const fields: string[] = [];
  config.spec.windows?.hostAgents?.forEach((_, i) => fields.push(`spec.windows.hostAgents[${i}].source`));
  if (config.spec.domainJoin?.windows?.offlineBlob?.url !== undefined) fields.push('spec.domainJoin.windows.offlineBlob.url');
  return fields;
}

// A name that says what the file is and cannot collide: the entry's index, then the target's file name.
function bundleName(index: number, target: string): string {
  const base = target.split(/[\\/]/).pop() || 'file';
  return `files/${index}-${base.replace(/[^A-Za-z0-9._-]/g, '_')}`;
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
export async function buildBundle(host: Host, request: BundleRequest): Promise<BundleResult> {
  const refused = unbundled(request.config);
  if (refused.length) {
    throw new UsageError(`cannot bundle ${refused.join(', ')}: the Windows steps read these only from the network`, {
      hint: 'bundle the Linux configuration, and give Windows host agents and the djoin blob from a machine path',
    });
  }
  const dir = request.destination;
  const info = await host.local.stat(dir);
  if (info && (info.kind !== 'directory' || (await host.local.list(dir)).length > 0)) {
    throw new UsageError(`${dir} ${info.kind === 'directory' ? 'is not empty' : 'exists and is not a directory'}`, { hint: 'give a new or empty directory for the bundle' });
  }
  // The written configuration is the loaded one with each source pointing into the bundle.
  const config = structuredClone(request.config);
  const files: BundledFile[] = [];
  try {
    for (const [index, file] of (config.spec.files ?? []).entries()) {
      if (!file.source) continue;
      const path = bundleName(index, file.path);
      const result = await fetchVerified(host, {
        urls: [file.source.url],
        destination: join(dir, path),
        fileSystem: host.local,
        sha256: file.source.sha256,
        mode: 0o644,
        ...(file.source.caFile ? { ca: await caBundle(host, file.source.caFile, index) } : {}),
      });
      const bundled = { path, sha256: result.sha256, bytes: result.bytes, from: file.source.url };
      files.push(bundled);
      request.onFile?.(bundled);
      file.source = { url: path, sha256: file.source.sha256 };
    }
    if (request.binaries) files.push(...(await bundleBinaries(host, dir, request.binaries, request.onFile)));
    const text = `# Written by machineadm bundle: sources are paths relative to this file.\n${dump(config, { lineWidth: -1, noRefs: true })}`;
    // The configuration can carry secrets (a token given inline): owner only.
    await host.local.writeFile(join(dir, BUNDLE_CONFIG), text, { mode: 0o600, backup: false });
    const sums = [...files.map((f) => ({ path: f.path, sha256: f.sha256 })), { path: BUNDLE_CONFIG, sha256: createHash('sha256').update(text).digest('hex') }];
    // sha256sum's own format: `cd DIR && sha256sum -c SHA256SUMS` checks a copy.
    await host.local.writeFile(join(dir, MANIFEST), sums.map((s) => `${s.sha256}  ${s.path}\n`).join(''), { mode: 0o644, backup: false });
    return { config: join(dir, BUNDLE_CONFIG), files, manifest: join(dir, MANIFEST) };
  } catch (error) {
    if (info) for (const name of [MANIFEST, BUNDLE_CONFIG, 'files', 'bin']) await host.local.remove(join(dir, name));
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
