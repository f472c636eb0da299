// Checks an air-gapped bundle as a whole before anything of it is used: its SHA256SUMS (with a
// public key: signed, SHA256SUMS.minisig, by the operator's minisign key) names every file in it,
// and every file has the sum written there. The configuration's own sha256 fields only say that a
// file matches the configuration; editing a file and its sha256 in config.yaml together changes
// config.yaml's sum, and editing SHA256SUMS as well breaks its signature. Reads only through the
// Host's operator file system.
import { createHash } from 'node:crypto';
import type { Host } from '../host/index.ts';
import { UsageError, VerificationError } from '../errors.ts';
import { parseSignature, type PublicKey } from '../verify/minisign.ts';
import { verifyStream, type VerifiedSignature } from '../verify/signature.ts';
import { BUNDLE_CONFIG, BUNDLE_CONFIG_MARKER, MANIFEST, MANIFEST_SIGNATURE } from './build.ts';

export interface BundleCheck {
  /** DIR/config.yaml, the configuration the bundle was made for. */
  config: string;
  /** How many files SHA256SUMS names (all checked). */
  files: number;
  /** The manifest's signature, when a public key was given. */
  signature?: VerifiedSignature;
}

const LINE = /^([0-9a-f]{64}) [ *]([^\r\n]+)$/;
// A path inside the bundle: relative, forward slashes, no "." or ".." segment.
const INSIDE = /^(?!\/)(?!.*(?:^|\/)\.\.?(?:\/|$))[^\\\0]+$/;

function at(dir: string, relative: string): string {
  return `${dir.replace(/[\\/]+$/, '')}/${relative}`;
}

/** The sums SHA256SUMS lists, by path; a malformed line or path refuses the bundle. */
function parseManifest(text: string, where: string): Map<string, string> {
  const sums = new Map<string, string>();
  text.split('\n').forEach((line, i) => {
    if (line === '') return;
    const m = LINE.exec(line);
    if (!m || !INSIDE.test(m[2]!)) throw new VerificationError(`${where}:${i + 1}: not a line of sha256sum's format naming a file inside the bundle`, { hint: 'make the bundle again with machineadm bundle' });
    if (sums.has(m[2]!)) throw new VerificationError(`${where}:${i + 1}: ${m[2]} is listed twice`, { hint: 'make the bundle again with machineadm bundle' });
    sums.set(m[2]!, m[1]!);
  });
  return sums;
}

/** Every file under dir (relative paths, forward slashes); anything but files and directories is refused. */
async function filesUnder(host: Pick<Host, 'local'>, dir: string, prefix = ''): Promise<string[]> {
  const out: string[] = [];
  for (const name of await host.local.list(at(dir, prefix))) {
    const relative = `${prefix}${name}`;
    const info = await host.local.stat(at(dir, relative));
    if (info?.kind === 'directory') out.push(...(await filesUnder(host, dir, `${relative}/`)));
    else if (info?.kind === 'file') out.push(relative);
    else throw new VerificationError(`bundle ${dir}: ${relative} is a ${info?.kind ?? 'missing'} entry, not a file`, { hint: 'a bundle holds only files and directories; make it again with machineadm bundle' });
  }
  return out;
}

async function sha256Of(host: Pick<Host, 'local'>, path: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const block of host.local.readBlocks(path)) hash.update(block);
  return hash.digest('hex');
}

/**
 * Checks the bundle in dir; throws VerificationError (exit 3) naming the first file that differs,
 * is missing or is not listed, and UsageError (exit 2) when dir is not a bundle at all.
 */
export async function checkBundle(host: Pick<Host, 'local'>, dir: string, publicKey?: PublicKey): Promise<BundleCheck> {
  if ((await host.local.stat(dir))?.kind !== 'directory') throw new UsageError(`--bundle ${dir}: no such directory`, { hint: 'give the directory machineadm bundle -d wrote' });
  const manifestPath = at(dir, MANIFEST);
  const manifest = await host.local.readFile(manifestPath);
  if (manifest === undefined) throw new UsageError(`--bundle ${dir}: it has no ${MANIFEST}, so it is not a bundle machineadm made`, { hint: 'give the directory machineadm bundle -d wrote' });
  let signature: VerifiedSignature | undefined;
  if (publicKey) {
    const sigPath = at(dir, MANIFEST_SIGNATURE);
    const sigData = await host.local.readFile(sigPath);
    if (sigData === undefined) throw new VerificationError(`bundle ${dir} is not signed: ${MANIFEST_SIGNATURE} is missing, and a public key was given to check it`, { hint: 'sign the bundle: machineadm bundle ... --sign-key KEY (or minisign -Sm SHA256SUMS)' });
    signature = await verifyStream([manifest], parseSignature(sigData, sigPath), publicKey, { fileName: manifestPath });
  }
  const sums = parseManifest(manifest.toString('utf8'), manifestPath);
  if (!sums.has(BUNDLE_CONFIG)) throw new VerificationError(`${manifestPath} does not list ${BUNDLE_CONFIG}`, { hint: 'make the bundle again with machineadm bundle' });
  const own = new Set([MANIFEST, MANIFEST_SIGNATURE]);
  const present = (await filesUnder(host, dir)).filter((f) => !own.has(f));
  const unlisted = present.filter((f) => !sums.has(f));
  if (unlisted.length > 0) throw new VerificationError(`bundle ${dir} holds ${unlisted.join(', ')}, which ${MANIFEST} does not list`, { hint: 'a file was added to the bundle after it was made: remove it, or make the bundle again' });
  for (const [path, expected] of sums) {
    if (!present.includes(path)) throw new VerificationError(`bundle ${dir}: ${path} is missing (${MANIFEST} lists it)`, { hint: 'copy the whole bundle again' });
    const actual = await sha256Of(host, at(dir, path));
    if (actual !== expected) throw new VerificationError(`bundle ${dir}: ${path} has sha256 ${actual}, but ${MANIFEST} says ${expected}`, { hint: 'the file was changed or damaged after the bundle was made: copy the bundle again from its source' });
  }
  return { config: at(dir, BUNDLE_CONFIG), files: sums.size, ...(signature ? { signature } : {}) };
}

/**
 * The bundle directory a configuration file belongs to: a config.yaml that machineadm bundle
 * wrote (its first line says so) with a SHA256SUMS beside it; undefined for any other file.
 */
export async function bundleOf(host: Pick<Host, 'local'>, path: string): Promise<string | undefined> {
  const dir = path.replace(/[\\/][^\\/]*$/, '');
  // Either separator: a Windows path (D:\bundle\config.yaml) names a bundle as much as a POSIX one.
  if (!/[\\/]config\.yaml$/.test(path) || (await host.local.stat(at(dir, MANIFEST)))?.kind !== 'file') return undefined;
  const text = await host.local.readText(path);
  return text?.startsWith(`${BUNDLE_CONFIG_MARKER}\n`) ? dir : undefined;
}
