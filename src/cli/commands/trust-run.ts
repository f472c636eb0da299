// verify, keygen, sign, fetch: what they do, loaded only when one of them runs.
import { basename, resolve } from 'node:path';
import { isSea } from 'node:sea';
import type { Io } from '../io.ts';
import type { Host } from '../../host/index.ts';
import { operatorFileSystem } from '../../host/fs.ts';
import { formatProgress, progressMeter } from '../../host/transfer-progress.ts';
import { ExitCode, UsageError, VerificationError } from '../../errors.ts';
import { buildInfo } from '../../version.ts';
import { formatPublicKey, formatSecretKey, formatSignature, keyIdHex, parsePublicKey, parseSecretKey, parseSignature, formatPublicKeyLine, type PublicKey } from '../../verify/minisign.ts';
import { verifyStream, type VerifiedSignature } from '../../verify/signature.ts';
import { verifySelf, type SelfVerifyResult } from '../../verify/self.ts';
import { displayUrl } from '../../redaction.ts';
import { readOperatorFile } from '../operator-file.ts';

// The whole host (processes, facts, the clock) is loaded only by the commands that need more than files.
async function localHost(io: Io, offline = false): Promise<Host> {
  const { createHost } = await import('../../host/index.ts');
  return createHost({ env: io.env, offline });
}

/** What verify needs of a host: the operator's files. Verifying loads nothing else. */
function operatorFiles(): Pick<Host, 'local'> {
  return { local: operatorFileSystem() };
}

async function readLocal(host: Pick<Host, 'local'>, path: string, what: string): Promise<Buffer> {
  const data = await readOperatorFile(host, path, what);
  if (data === undefined) throw new UsageError(`${what} ${path}: no such file`);
  return data;
}

function describeVerified(what: string, v: VerifiedSignature): string {
  const kind = v.algorithm === 'prehashed' ? 'prehashed' : v.trustedComment === undefined ? 'legacy, signify format' : 'legacy';
  return (
    `verified ${what}: signed by key ${v.keyId} (${kind})\n` +
    (v.trustedComment === undefined ? 'trusted comment: (none: signify signatures have no trusted comment)\n' : `trusted comment: ${v.trustedComment}\n`)
  );
}

/** The running executable, and whether it is the packaged binary (not Node running the sources). */
export function selfExecutable(): { executable: string; packaged: boolean } {
  return { executable: process.execPath, packaged: isSea() };
}

/**
 * security.requireSignedBinary: init verifies this executable before changing anything. Running
 * from source cannot be verified, which counts as a failed verification here (exit 3).
 */
export async function requireSignedSelf(host: Host, publicKey: string | undefined): Promise<SelfVerifyResult> {
  const self = selfExecutable();
  return verifySelf(
    host,
    { ...self, ...(publicKey ? { publicKey } : {}) },
    (message, hint) => new VerificationError(`security.requireSignedBinary is true, but ${message}`, { hint }),
  );
}

export interface VerifyOptions {
  self?: boolean;
  signature?: string;
  publicKeyFile?: string;
  publicKey?: string;
  requirePrehashed?: boolean;
  signify?: boolean;
  quiet?: boolean;
}

// What was given is in the key's own message; what the option takes is the hint (a key that will
// not parse here was given in the wrong place, not damaged on its way).
function parseGivenKey(data: Uint8Array | string, source: string, hint: string): PublicKey {
  try {
    return parsePublicKey(data, source);
  } catch (error) {
    if (error instanceof VerificationError) throw new VerificationError(error.message, { hint, cause: error });
    throw error;
  }
}

export async function publicKeyFrom(host: Pick<Host, 'local'>, io: Io, options: { publicKey?: string; publicKeyFile?: string }): Promise<PublicKey> {
  if (options.publicKey && options.publicKeyFile) throw new UsageError('give the public key either with -P or with -p, not both');
  if (options.publicKey) {
    const given = options.publicKey;
    try {
      return parsePublicKey(given, 'given with -P');
    } catch (error) {
      if (error instanceof VerificationError && (await host.local.isFileFollowingLinks(resolve(io.cwd, given)))) {
        throw new VerificationError(`-P takes the key line itself (RW...), but was given ${given}, a file`, { hint: `give the file with -p ${given}` });
      }
    }
    return parseGivenKey(given, 'given with -P', "-P takes the public key's line (56 characters starting with RW, the last line of the .pub file); give a public key file with -p");
  }
  if (options.publicKeyFile) {
    const path = resolve(io.cwd, options.publicKeyFile);
    return parseGivenKey(
      await readLocal(host, path, 'public key file'),
      path,
      '-p takes the public key file (the .pub written by machineadm keygen or minisign -G); give the key line itself with -P',
    );
  }
  if (buildInfo.releasePublicKey) return parsePublicKey(buildInfo.releasePublicKey, 'built into this binary');
  throw new UsageError('no public key: give one with -P <base64 key line> or -p <public key file>', {
    hint: 'e.g. machineadm verify FILE -p machineadm.pub',
  });
}

export async function runVerify(file: string | undefined, options: VerifyOptions, io: Io): Promise<number> {
  const host = operatorFiles();
  if (options.self) {
    if (file) throw new UsageError('--self verifies this executable; do not also name a file');
    if (options.publicKeyFile) throw new UsageError('--self takes the key with -P (or uses the built-in release key), not -p');
    const self = selfExecutable();
    const result = await verifySelf(host, {
      ...self,
      ...(options.signature ? { signaturePath: resolve(io.cwd, options.signature) } : {}),
      ...(options.publicKey ? { publicKey: options.publicKey } : {}),
      requirePrehashed: options.requirePrehashed ?? false,
    });
    if (!options.quiet) io.stdout(describeVerified(`${result.executable} (this executable, ${result.keySource === 'built-in' ? 'built-in release key' : 'key given with -P'})`, result));
    return ExitCode.ok;
  }
  if (!file) throw new UsageError('name the file to verify, or use --self', { hint: 'machineadm verify FILE -p machineadm.pub' });
  const path = resolve(io.cwd, file);
  // A link to a file is read through, as minisign reads it.
  if (!(await host.local.isFileFollowingLinks(path))) throw new UsageError(`${path}: no such file`);
  const publicKey = await publicKeyFrom(host, io, options);
  const sigPath = options.signature ? resolve(io.cwd, options.signature) : `${path}.minisig`;
  const sigData = await readOperatorFile(host, sigPath, 'signature file');
  if (sigData === undefined) throw new VerificationError(`no signature file ${sigPath}`, { hint: 'give its path with -x' });
  const signature = parseSignature(sigData, sigPath);
  const result = await verifyStream(host.local.readBlocks(path), signature, publicKey, { fileName: path, requirePrehashed: options.requirePrehashed ?? false, signify: options.signify ?? false });
  if (!options.quiet) io.stdout(describeVerified(path, result));
  return ExitCode.ok;
}

export interface KeygenOptions {
  publicKeyFile: string;
  secretKeyFile: string;
  force?: boolean;
}

export async function runKeygen(options: KeygenOptions, io: Io): Promise<number> {
  const host = await localHost(io);
  const { generateKeyPair } = await import('../../verify/sign.ts');
  const pubPath = resolve(io.cwd, options.publicKeyFile);
  const keyPath = resolve(io.cwd, options.secretKeyFile);
  // The public key is written second: it would replace the secret key, which would be lost.
  if (pubPath === keyPath) throw new UsageError(`keygen was given ${keyPath} for both the public and the secret key`, { hint: 'give each its own file: -p machineadm.pub -s machineadm.key' });
  if (!options.force) {
    for (const p of [keyPath, pubPath]) {
      if (await host.local.exists(p)) throw new UsageError(`${p} already exists; not overwriting a key`, { hint: 'choose other paths, or add --force' });
    }
  }
  const pair = generateKeyPair();
  await host.local.writeFile(keyPath, formatSecretKey(pair.secretKey), { mode: 0o600, backup: false });
  await host.local.writeFile(pubPath, formatPublicKey(pair.publicKey), { mode: 0o644, backup: false });
  io.stdout(
    `key ${keyIdHex(pair.publicKey.keyId)}: secret key ${keyPath} (unencrypted, mode 0600: keep it secret), public key ${pubPath}\n` +
      `verify with: machineadm verify FILE -P ${formatPublicKeyLine(pair.publicKey)}\n`,
  );
  return ExitCode.ok;
}

export interface SignOptions {
  secretKeyFile: string;
  trustedComment?: string;
  untrustedComment?: string;
  signature?: string;
  legacy?: boolean;
  passwordFile?: string;
}

export async function runSign(file: string, options: SignOptions, io: Io): Promise<number> {
  const host = await localHost(io);
  const { checkCommentLengths, defaultTrustedComment, signStream } = await import('../../verify/sign.ts');
  checkCommentLengths(
    { trustedComment: options.trustedComment ?? '', ...(options.untrustedComment ? { untrustedComment: options.untrustedComment } : {}) },
    { trusted: '-t/--trusted-comment', untrusted: '-c/--untrusted-comment' },
  );
  const path = resolve(io.cwd, file);
  const keyPath = resolve(io.cwd, options.secretKeyFile);
  const keyData = await readLocal(host, keyPath, 'secret key file');
  const password = options.passwordFile ? (await readLocal(host, resolve(io.cwd, options.passwordFile), 'password file')).toString('utf8').replace(/\r?\n$/, '') : undefined;
  const secret = parseSecretKey(keyData, keyPath, password);
  // A link to a file is read through, as minisign reads it.
  if (!(await host.local.isFileFollowingLinks(path))) throw new UsageError(`${path}: no such file`);
  const signature = await signStream(host.local.readBlocks(path), secret, {
    trustedComment: options.trustedComment ?? defaultTrustedComment(basename(path), host.now(), options.legacy),
    ...(options.untrustedComment ? { untrustedComment: options.untrustedComment } : {}),
    legacy: options.legacy ?? false,
  });
  const sigPath = options.signature ? resolve(io.cwd, options.signature) : `${path}.minisig`;
  await host.local.writeFile(sigPath, formatSignature(signature), { mode: 0o644, backup: false });
  io.stdout(`signed ${path} with key ${keyIdHex(secret.keyId)}: ${sigPath}\n`);
  return ExitCode.ok;
}

export interface FetchOptions {
  destination?: string;
  /** The old spelling of --destination: -o is the output format in every other command. */
  output?: string;
  sha256?: string;
  signature?: string;
  publicKey?: string;
  publicKeyFile?: string;
  mirror?: string[];
  requirePrehashed?: boolean;
  signify?: boolean;
  caFile?: string;
  offline?: boolean;
  mode?: string;
}

function progressBar(io: Io): { update: (received: number, total: number | undefined) => void; done: () => void } {
  let shown = false;
  const update = progressMeter((p) => {
    shown = true;
    const width = 30;
    const bar = p.totalBytes ? `[${'#'.repeat(Math.min(width, Math.floor((p.receivedBytes / p.totalBytes) * width))).padEnd(width)}] ` : '';
    // Cleared to the end of the line: the text may get shorter (a time left of fewer digits).
    io.stderr(`\r${bar}${formatProgress(p)}\x1b[K`);
  }, 100);
  return {
    update,
    done: () => {
      if (shown) io.stderr('\n');
    },
  };
}

export async function runFetch(url: string, options: FetchOptions, io: Io): Promise<number> {
  const host = await localHost(io, options.offline ?? false);
  if (options.output !== undefined) {
    if (options.destination !== undefined) throw new UsageError('give the destination once, with --destination (-o is its old spelling)');
    io.stderr('warning: fetch -o/--output is deprecated (-o is the output format in every other command); use -d/--destination\n');
  }
  const target = options.destination ?? options.output;
  if (target === undefined) throw new UsageError('fetch needs the destination: -d, --destination <path>', { hint: 'e.g. machineadm fetch URL -d /usr/local/bin/kubelet --sha256 HEX' });
  if (!options.sha256 && !options.publicKey && !options.publicKeyFile) {
    throw new UsageError('give --sha256 HEX or a public key (-P/-p) to check the download with', { hint: 'machineadm never puts an unchecked download in place' });
  }
  if (options.signature && !options.publicKey && !options.publicKeyFile) throw new UsageError('-x SIG_URL needs the public key to check it with (-P or -p)');
  let publicKey: string | undefined;
  if (options.publicKey || options.publicKeyFile) publicKey = formatPublicKeyLine(await publicKeyFrom(host, io, options));
  const destination = resolve(io.cwd, target);
  // Refused before the first request: a large download would otherwise end in the same refusal.
  const existing = await host.local.stat(destination);
  if (existing?.kind === 'symlink' || existing?.kind === 'directory') {
    throw new UsageError(`${destination}: the destination is ${existing.kind === 'symlink' ? 'a symbolic link' : 'a directory'}; fetch writes a file there and follows no link`, {
      hint: existing.kind === 'symlink' ? 'give the path the link points to, or remove the link first' : 'give the path of the file to write, e.g. -d DIR/NAME',
    });
  }
  const ca = options.caFile ? (await readLocal(host, resolve(io.cwd, options.caFile), 'CA file')).toString('utf8') : undefined;
  let mode: number | undefined;
  if (options.mode !== undefined) {
    if (!/^0?[0-7]{3,4}$/.test(options.mode)) throw new UsageError(`--mode ${options.mode}: give an octal mode such as 0755`);
    mode = parseInt(options.mode, 8);
  }
  const bar = io.interactive ? progressBar(io) : undefined;
  try {
    // HTTP (got, tls) is loaded only by the command that downloads.
    const { fetchVerified } = await import('../../verify/fetch.ts');
    const result = await fetchVerified(host, {
      urls: [url, ...(options.mirror ?? [])],
      destination,
      fileSystem: host.local,
      ...(options.sha256 ? { sha256: options.sha256 } : {}),
      ...(publicKey
        ? { signature: { publicKey, ...(options.signature ? { url: options.signature } : {}), requirePrehashed: options.requirePrehashed ?? false, signify: options.signify ?? false } }
        : {}),
      ...(mode !== undefined ? { mode } : {}),
      ...(bar ? { onProgress: bar.update } : {}),
      ...(ca ? { ca } : {}),
    });
    bar?.done();
    io.stdout(
      `fetched ${displayUrl(result.url)} -> ${destination} (${result.bytes} bytes, sha256 ${result.sha256})\n` +
        (result.signature ? describeVerified(destination, result.signature) : ''),
    );
    return ExitCode.ok;
  } catch (error) {
    bar?.done();
    throw error;
  }
}
