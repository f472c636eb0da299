// Verified downloads: stream to a temporary file while hashing, check, and only then rename into
// place. Used by `machineadm fetch`, files[].source and anything else that downloads.
import type { Host, PendingFile, RootedFileSystem } from '../host/index.ts';
import { download } from '../host/download.ts';
import { DownloadError, type ByteObserver } from '../host/download-copy.ts';
import { downloadSmall } from '../host/download-small.ts';
import { copyLocal } from '../host/copy-local.ts';
import { displayUrl } from '../host/http.ts';
import { MachineadmError, UsageError, VerificationError } from '../errors.ts';
import { parsePublicKey, parseSignature, type PublicKey, type Signature } from './minisign.ts';
import { checkSignatureFits, finishVerification, MessageDigester, type VerifiedSignature } from './signature.ts';

export interface FetchRequest {
  /** Tried in order: the first is the primary location, the rest mirrors. */
  urls: string[];
  /** Path on `fileSystem` (default host.fs, i.e. a machine path under --root) where the verified file goes. */
  destination: string;
  sha256?: string;
  /**
   * A minisign signature, checked with this public key (base64 key line). Without `url` (or
   * `urls`), the signature is looked for at `<url>.minisig` next to each URL in order.
   */
  signature?: { url?: string; urls?: string[]; publicKey: string; requirePrehashed?: boolean; signify?: boolean; fetched?: { data: Buffer; url: string } };
  mode?: number;
  owner?: string;
  /** False for a file machineadm removes itself (a scratch download): no backup, no record for reset. */
  backup?: boolean;
  /** Where `destination` is: host.fs (the default) or host.local for the operator's own paths. */
  fileSystem?: RootedFileSystem;
  /** Called as bytes arrive (progress bar). */
  onProgress?: (received: number, total: number | undefined) => void;
  /** Extra trusted CA certificates (PEM). */
  ca?: string;
}

export interface FetchResult {
  sha256: string;
  bytes: number;
  url: string;
  /** Set when a signature was checked. */
  signature?: VerifiedSignature;
}

export const SIGNATURE_MAX_BYTES = 64 * 1024;

export function normalizeSha256(value: string): string {
  const hex = value.trim().replace(/^sha256:/i, '').toLowerCase();
  if (!/^[0-9a-f]{64}$/.test(hex)) {
    throw new UsageError(`"${value}" is not a SHA-256 (64 hexadecimal characters)`, { hint: 'compute it with sha256sum FILE' });
  }
  return hex;
}

async function fetchSignature(host: Host, request: FetchRequest, publicKey: PublicKey): Promise<{ signature: Signature; url: string }> {
  const given = request.signature!;
  const urls = given.urls ?? (given.url ? [given.url] : request.urls.map((u) => `${u}.minisig`));
  // Already fetched by a caller that keeps it (a bundle): the bytes checked are the bytes kept.
  const { data, url } = given.fetched ?? (await downloadSmall(host, urls, { maxBytes: SIGNATURE_MAX_BYTES, ...(request.ca ? { ca: request.ca } : {}) }));
  // Named as every URL in a message is: a presigned signature URL's query is a credential.
  const signature = parseSignature(data, displayUrl(url));
  checkSignatureFits(signature, publicKey, { requirePrehashed: given.requirePrehashed ?? false, signify: given.signify ?? false });
  return { signature, url };
}

/**
 * Downloads the first URL that works, checks the SHA-256 and/or the signature while streaming, and
 * only then puts the file at `destination`. A failed check leaves nothing there (and an existing
 * file untouched): VerificationError (exit 3); a download failure is exit 1.
 */
export async function fetchVerified(host: Host, request: FetchRequest): Promise<FetchResult> {
  const { result, pending } = await fetchVerifiedPending(host, request);
  try {
    await pending.commit().catch((error: unknown) => {
      // fsync or rename failing (a full disk) is the machine's problem, not a bug to report.
      throw error instanceof MachineadmError
        ? error
        : new DownloadError(`could not put the verified download in place at ${request.destination}: ${(error as Error).message}`, {
            hint: 'free space on (or repair) the file system that holds the destination, then run again',
            cause: error,
          });
    });
    return result;
  } catch (error) {
    await pending.abort();
    throw error;
  }
}

/**
 * fetchVerified without the last step: the checked file waits beside `destination` until the
 * caller commits it (or aborts), so several downloads can be placed all or none.
 */
export async function fetchVerifiedPending(host: Host, request: FetchRequest): Promise<{ result: FetchResult; pending: PendingFile }> {
  if (request.sha256 === undefined && request.signature === undefined) {
    throw new UsageError(`refusing to download ${request.urls[0] === undefined ? '' : displayUrl(request.urls[0])} without a check: give a SHA-256 or a signature and public key`, {
      hint: 'every file machineadm downloads is checked before it is used',
    });
  }
  const expectedSha = request.sha256 === undefined ? undefined : normalizeSha256(request.sha256);
  const publicKey = request.signature ? parsePublicKey(request.signature.publicKey, 'given for the signature') : undefined;
  // A file: source (an air-gapped bundle) is checked the same way; only where the bytes come from differs.
  const local = request.urls.length === 1 && request.urls[0]!.startsWith('file:');
  if (local && request.signature) throw new UsageError(`${request.urls[0]}: a local file is checked by its sha256, not a signature`, { hint: 'give the sha256' });
  // The signature is small and fetched first: a wrong key id fails before a large download.
  const signed = publicKey ? await fetchSignature(host, request, publicKey) : undefined;
  const copy = {
    fs: request.fileSystem ?? host.fs,
    destination: request.destination,
    write: { ...(request.mode !== undefined ? { mode: request.mode } : {}), ...(request.owner !== undefined ? { owner: request.owner } : {}), ...(request.backup === false ? { backup: false } : {}) },
    ...(signed ? { observe: (): ByteObserver => new MessageDigester(signed.signature.algorithm) } : {}),
    ...(request.onProgress ? { onProgress: request.onProgress } : {}),
  };
  const result = local ? await copyLocal(host, { ...copy, url: request.urls[0]! }) : await download(host, { ...copy, urls: request.urls, ...(request.ca ? { ca: request.ca } : {}) });
  try {
    if (expectedSha !== undefined && result.sha256 !== expectedSha) {
      throw new VerificationError(`${displayUrl(result.url)}: SHA-256 is ${result.sha256}, expected ${expectedSha}`, {
        hint: 'the file on the server is not the one expected: check the mirror, or the checksum you were given',
      });
    }
    let verified: VerifiedSignature | undefined;
    if (signed && publicKey) {
      verified = finishVerification(signed.signature, publicKey, result.observer as MessageDigester, {
        fileName: displayUrl(result.url),
        requirePrehashed: request.signature?.requirePrehashed ?? false,
        signify: request.signature?.signify ?? false,
      });
    }
    return { result: { sha256: result.sha256, bytes: result.bytes, url: result.url, ...(verified ? { signature: verified } : {}) }, pending: result.pending };
  } catch (error) {
    await result.pending.abort();
    throw error;
  }
}
