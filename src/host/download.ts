// Streaming HTTP downloads (got) into a PendingFile (nothing at the destination until the caller has
// checked the bytes and commits). Constant memory: each chunk is hashed and written, then dropped.
// A broken connection resumes with Range; mirrors are tried in order; a redirect to another host is
// refused; a body shorter than its Content-Length is caught.
import type { IncomingMessage } from 'node:http';
import { createHash } from 'node:crypto';
import { finished } from 'node:stream/promises';
import { fileURLToPath } from 'node:url';
import { MachineadmError, ExitCode, UsageError } from '../errors.ts';
import type { Host } from './index.ts';
import { displayUrl, isRetryableStatus, tlsOptions } from './http.ts';
import { hasCredentials } from '../redaction.ts';
import type { PendingFile, RootedFileSystem, WriteOptions } from './fs.ts';
import { receivedBytesCollector } from './socket-memory.ts';

/** A download failed on every URL it was offered (exit 1). Nothing was written at the destination. */
export class DownloadError extends MachineadmError {
  constructor(message: string, options: { hint?: string; cause?: unknown } = {}) {
    super(message, ExitCode.stepFailed, options);
  }
}

/** Sees every byte of one attempt at a copy; a fresh observer is made whenever a copy starts over. */
export interface ByteObserver {
  update(chunk: Uint8Array): void;
}

export interface DownloadOptions {
  /** Tried in order; the first that delivers the whole file wins. */
  urls: readonly string[];
  fs: RootedFileSystem;
  destination: string;
  write?: WriteOptions;
  /** Made at the start of each copy (each URL, or a server that ignores Range). May throw to stop. */
  observe?: () => ByteObserver;
  onProgress?: (received: number, total: number | undefined) => void;
  /** Extra trusted CA certificates (PEM), added to Node's built-in list. */
  ca?: string;
  /** Idle time after which a connection counts as broken. */
  idleTimeoutMs?: number;
  /** Attempts per URL in a row that deliver no new byte, before moving to the next URL. */
  attemptsWithoutProgress?: number;
  /** Ends the transfer at once when aborted (the run was interrupted); set from the Host. */
  signal?: AbortSignal;
}

export interface DownloadResult<O extends ByteObserver = ByteObserver> {
  /** Commit after checking; abort otherwise. */
  pending: PendingFile;
  sha256: string;
  bytes: number;
  url: string;
  observer: O | undefined;
}

const MAX_REDIRECTS = 5;
/** Attempts per URL even when each one makes progress: a bound, not a retry policy. */
const MAX_ATTEMPTS = 100;

interface Attempt {
  /** Status and headers; `complete` tells a whole body from a cut one once it has been read. */
  response: IncomingMessage;
  /** The body; destroying it closes the connection. */
  body: AsyncIterable<Buffer> & { destroy(error?: Error): void };
  url: URL;
}

class Broken extends Error {
  readonly retry: boolean;
  /** The server's certificate was refused: the hint then says how to trust it. */
  readonly certificate: boolean;
  constructor(message: string, retry: boolean, options?: { cause?: unknown; certificate?: boolean }) {
    super(message, options);
    this.retry = retry;
    this.certificate = options?.certificate ?? false;
  }
}

function failureHint(certificate: boolean): string {
  return certificate
    ? "the server's certificate is not trusted: give the CA that signed it (machineadm fetch --ca-file PEM; in the configuration spec.files[].source.caFile), or use a mirror with a trusted certificate"
    : 'check the URLs and the network, or list a mirror that has the file';
}

function assertOnline(host: Host, urls: readonly string[]): void {
  if (host.offline) {
    throw new UsageError(`--offline: not downloading ${urls[0] === undefined ? 'anything' : displayUrl(urls[0])}`, {
      hint: 'put the file on the machine beforehand, or run without --offline',
    });
  }
  if (urls.length === 0) throw new UsageError('no URL to download from');
  for (const u of urls) {
    // Named as every URL is shown: a URL that does not parse may still hold a password.
    let parsed: URL;
    try {
      parsed = new URL(u);
    } catch {
      const shown = hasCredentials(u) ? 'a download URL' : JSON.stringify(u);
      throw new UsageError(`${shown} is not a URL that can be parsed (a port above 65535, a space or a character not allowed in the host)${shown === JSON.stringify(u) ? '' : '; it is not shown: it may hold a password'}`, { hint: 'give an http:// or https:// URL, with the user name and password percent-encoded' });
    }
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
      throw new UsageError(`"${displayUrl(u)}": only http:// and https:// downloads are supported`);
    }
  }
}

// Node's own advice ("try running Node.js with --use-system-ca") is for people who start node;
// the hint gives machineadm's remedy instead.
function withoutNodeAdvice(message: string): string {
  return message.replace(/;\s*if the root CA is installed locally, try running Node\.js with --use-system-ca/i, '');
}

// Decided by the error code only: a connection dropped during the handshake ("...before secure TLS
// connection was established", ECONNRESET) is a network failure worth retrying, not a certificate
// problem, even though its message names TLS.
function describeNetworkError(error: unknown): { message: string; retry: boolean; certificate: boolean } {
  const e = error as NodeJS.ErrnoException & { code?: string };
  const code = e?.code ?? '';
  const certificate = /CERT|UNABLE_TO_|SELF_SIGNED|INVALID_CA|INVALID_PURPOSE|PATH_LENGTH|HOSTNAME_MISMATCH/.test(code);
  if (certificate || /^(ERR_SSL_|ERR_TLS_|EPROTO$)/.test(code)) {
    return { message: `TLS error: ${withoutNodeAdvice(e.message)}${code ? ` (${code})` : ''}`, retry: false, certificate };
  }
  const retry = code !== 'ENOTFOUND';
  return { message: `${e?.message ?? String(error)}${code && !(e?.message ?? '').includes(code) ? ` (${code})` : ''}`, retry, certificate };
}

// One request, no redirects followed and no retries: both are decided here, per attempt.
async function get(url: URL, headers: Record<string, string>, options: DownloadOptions): Promise<Attempt> {
  const { default: got } = await import('got');
  const idleMs = options.idleTimeoutMs ?? 30_000;
  const body = got.stream(url, {
    headers: { 'user-agent': 'machineadm', 'accept-encoding': 'identity', ...headers },
    decompress: false,
    followRedirect: false,
    throwHttpErrors: false,
    retry: { limit: 0 },
    // An idle connection counts as broken; a slow but moving one does not.
    timeout: { connect: idleMs, socket: idleMs },
    https: tlsOptions(options.ca),
    ...(options.signal ? { signal: options.signal } : {}),
  });
  try {
    const response = await new Promise<IncomingMessage>((resolve, reject) => {
      body.once('response', resolve);
      body.once('error', reject);
    });
    return { response, body, url };
  } catch (error) {
    body.destroy();
    throwIfInterrupted(options);
    const d = describeNetworkError(error);
    throw new Broken(d.message, d.retry, { cause: error, certificate: d.certificate });
  }
}

/** An interrupted run ends the transfer with the interruption, not with a retry. */
function throwIfInterrupted(options: DownloadOptions): void {
  if (options.signal?.aborted) throw options.signal.reason;
}

// Follows redirects on the same host only: the operator lists every place a file may come from,
// and a redirect elsewhere (or from https to http) is a place nobody listed.
async function getFollowing(start: URL, headers: Record<string, string>, options: DownloadOptions): Promise<Attempt> {
  let url = start;
  for (let hops = 0; ; hops++) {
    const attempt = await get(url, headers, options);
    const status = attempt.response.statusCode ?? 0;
    if (![301, 302, 303, 307, 308].includes(status)) return attempt;
    attempt.body.destroy();
    const location = attempt.response.headers.location;
    if (!location) throw new Broken(`HTTP ${status} redirect without a Location header`, false);
    const next = new URL(location, url);
    // Another port is another server; only an upgrade of the same host from http to https is allowed.
    const upgrade = start.protocol === 'http:' && next.protocol === 'https:' && next.hostname === start.hostname;
    if (next.hostname !== start.hostname || (next.port !== start.port && !upgrade)) {
      throw new Broken(`redirected from ${start.host} to another ${next.hostname === start.hostname ? 'port' : 'host'} (${next.host}); refused`, false);
    }
    if (start.protocol === 'https:' && next.protocol !== 'https:') throw new Broken(`redirected from https to ${next.protocol}//${next.host}; refused`, false);
    if (hops >= MAX_REDIRECTS) throw new Broken(`more than ${MAX_REDIRECTS} redirects`, false);
    url = next;
  }
}

/** Writing the temporary file failed (a full disk, an I/O error): another attempt or mirror cannot help. */
function writeFailed(destination: string, error: unknown): DownloadError {
  return new DownloadError(`writing the download for ${destination} failed: ${(error as Error | undefined)?.message ?? 'the file was closed'}`, {
    hint: 'free space on (or repair) the file system that holds the destination, then run again',
    cause: error,
  });
}

// Synchronous: a write into the page cache takes microseconds, and through the file's stream each
// chunk would take a round trip through the thread pool (~0.3 s of CPU a GiB, on cores the
// download shares with the hashing and the network).
function appendChunk(pending: PendingFile, chunk: Uint8Array, destination: string): void {
  try {
    pending.appendSync(chunk);
  } catch (error) {
    throw writeFailed(destination, error);
  }
}

interface Copy {
  pending: PendingFile;
  hash: ReturnType<typeof createHash>;
  observer: ByteObserver | undefined;
  received: number;
  total: number | undefined;
  validator: string | undefined;
}

async function freshCopy(options: DownloadOptions): Promise<Copy> {
  const pending = await options.fs.openWrite(options.destination, options.write);
  // The stream only closes the file (the bytes are appended directly); an error it meets doing so
  // is found when the download ends it (finished), and must not end the process unheard before.
  pending.stream.on('error', () => undefined);
  return {
    pending,
    hash: createHash('sha256'),
    observer: options.observe?.(),
    received: 0,
    total: undefined,
    validator: undefined,
  };
}

// A copy that cannot be resumed starts over in a new temporary file (a PendingFile only appends).
async function restart(copy: Copy, options: DownloadOptions): Promise<void> {
  await copy.pending.abort();
  Object.assign(copy, await freshCopy(options));
}

function parseContentRange(value: string | undefined): { start: number; total: number | undefined } | undefined {
  const m = /^bytes (\d+)-(\d+)\/(\d+|\*)$/.exec(value ?? '');
  if (!m) return undefined;
  return { start: Number(m[1]), total: m[3] === '*' ? undefined : Number(m[3]) };
}

// One request: appends what arrives to the copy. Returns when the whole file is there; throws
// Broken for a connection to retry (or not).
async function transfer(url: URL, copy: Copy, options: DownloadOptions): Promise<string> {
  const resuming = copy.received > 0;
  const headers: Record<string, string> = {};
  if (resuming) {
    headers.range = `bytes=${copy.received}-`;
    if (copy.validator) headers['if-range'] = copy.validator;
  }
  const { response, body, url: finalUrl } = await getFollowing(url, headers, options);
  const status = response.statusCode ?? 0;
  let expectedEnd: number | undefined;
  if (resuming && status === 206) {
    const range = parseContentRange(response.headers['content-range']);
    // Without a validator for If-Range, a changed total is the only sign that the file changed
    // between attempts; appending its tail to the old head would make a file nobody published.
    const changed = range?.total !== undefined && copy.total !== undefined && range.total !== copy.total;
    if (!range || range.start !== copy.received || changed) {
      body.destroy();
      await restart(copy, options);
      throw new Broken(`the server answered a resume with a different range (${response.headers['content-range'] ?? 'none'}); starting over`, true);
    }
    expectedEnd = range.total ?? copy.total;
  } else if (status === 200) {
    if (resuming) await restart(copy, options);
    const length = response.headers['content-length'];
    copy.total = length !== undefined && /^\d+$/.test(length) ? Number(length) : undefined;
    copy.validator = response.headers.etag && !response.headers.etag.startsWith('W/') ? response.headers.etag : response.headers['last-modified'];
    expectedEnd = copy.total;
  } else {
    body.destroy();
    if (resuming && status === 416) {
      await restart(copy, options);
      throw new Broken('the server refused to resume (HTTP 416); starting over', true);
    }
    throw new Broken(`HTTP ${status} ${response.statusMessage ?? ''}`.trim(), isRetryableStatus(status));
  }
  options.onProgress?.(copy.received, expectedEnd);
  const received = receivedBytesCollector();
  try {
    for await (const chunk of body) {
      received(chunk.length);
      copy.hash.update(chunk);
      copy.observer?.update(chunk);
      copy.received += chunk.length;
      if (expectedEnd !== undefined && copy.received > expectedEnd) {
        throw new Broken(`the server sent more than the ${expectedEnd} bytes it announced`, false);
      }
      appendChunk(copy.pending, chunk, options.destination);
      options.onProgress?.(copy.received, expectedEnd);
    }
  } catch (error) {
    body.destroy();
    throwIfInterrupted(options);
    if (error instanceof Broken || error instanceof MachineadmError) throw error;
    const d = describeNetworkError(error);
    const what = expectedEnd !== undefined ? `the server announced ${expectedEnd} bytes but the connection ended after ${copy.received}` : `connection broken after ${copy.received} bytes`;
    throw new Broken(`${what}: ${d.message}`, d.retry, { cause: error, certificate: d.certificate });
  }
  if (!response.complete || (expectedEnd !== undefined && copy.received !== expectedEnd)) {
    throw new Broken(
      expectedEnd !== undefined
        ? `the server announced ${expectedEnd} bytes but the connection ended after ${copy.received}`
        : `the connection ended before the response was complete (${copy.received} bytes)`,
      true,
    );
  }
  return finalUrl.toString();
}

/**
 * Downloads the first URL that works into a pending file at `destination` (on `fs`). Resolves with
 * the pending file still uncommitted: the caller checks the hash/signature, then commits or aborts.
 */
export async function download(host: Host, given: DownloadOptions): Promise<DownloadResult> {
  assertOnline(host, given.urls);
  const options: DownloadOptions = host.signal ? { ...given, signal: host.signal } : given;
  const failures: string[] = [];
  let certificate = false;
  let copy: Copy | undefined;
  try {
    for (const raw of options.urls) {
      const url = new URL(raw);
      await copy?.pending.abort();
      const current = await freshCopy(options);
      copy = current;
      let stalled = 0;
      const limit = options.attemptsWithoutProgress ?? 3;
      for (let attempt = 1; ; attempt++) {
        const before = current.received;
        try {
          const finalUrl = await transfer(url, current, options);
          // A write can fail after write() accepted it; ending here makes that a download failure
          // like any other write error, before anyone checks or commits the file.
          current.pending.stream.end();
          await finished(current.pending.stream).catch((error: unknown) => {
            throw writeFailed(options.destination, error);
          });
          return { pending: current.pending, sha256: current.hash.digest('hex'), bytes: current.received, url: finalUrl, observer: current.observer };
        } catch (error) {
          if (!(error instanceof Broken)) throw error;
          stalled = current.received > before ? 0 : stalled + 1;
          // A connection that breaks again and again, a little further each time, also ends.
          const gaveUp = stalled >= limit ? ` (gave up after ${limit} attempts without progress)` : attempt >= MAX_ATTEMPTS ? ` (gave up after ${MAX_ATTEMPTS} attempts)` : '';
          if (!error.retry || gaveUp) {
            // Shown by displayUrl: a presigned URL's token must not reach events or logs.
            failures.push(`${displayUrl(raw)}: ${error.message}${error.retry ? gaveUp : ''}`);
            certificate ||= error.certificate;
            break;
          }
          await host.sleep(Math.min(200 * 2 ** stalled, 5000));
        }
      }
    }
  } catch (error) {
    await copy?.pending.abort();
    throw error;
  }
  await copy?.pending.abort();
  throw new DownloadError(`download failed from ${options.urls.length === 1 ? 'its only URL' : `all ${options.urls.length} URLs`}:\n  ${failures.join('\n  ')}`, {
    hint: failureHint(certificate),
  });
}

// One request for a small file, read whole; throws Broken like transfer().
async function readSmall(url: URL, host: Host, options: { maxBytes: number; ca?: string; idleTimeoutMs?: number }): Promise<{ data: Buffer; url: string }> {
  const { response, body, url: finalUrl } = await getFollowing(url, {}, { urls: [], fs: host.local, destination: '/', ...options });
  const status = response.statusCode ?? 0;
  if (status !== 200) {
    body.destroy();
    throw new Broken(`HTTP ${status} ${response.statusMessage ?? ''}`.trim(), isRetryableStatus(status));
  }
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of body) {
      size += chunk.length;
      if (size > options.maxBytes) {
        body.destroy();
        throw new Broken(`larger than ${options.maxBytes} bytes; not a signature file`, false);
      }
      chunks.push(chunk);
    }
  } catch (error) {
    if (error instanceof Broken) throw error;
    const d = describeNetworkError(error);
    throw new Broken(`connection broken: ${d.message}`, d.retry, { cause: error, certificate: d.certificate });
  }
  if (!response.complete) throw new Broken('the connection ended before the response was complete', true);
  return { data: Buffer.concat(chunks), url: finalUrl.toString() };
}

/**
 * Downloads a small file (a signature) into memory, refusing more than maxBytes. A failure that may
 * pass (network, 5xx) is retried like a large download's, so a signature is not the weak link on a
 * first boot that races the network.
 */
export async function downloadSmall(host: Host, urls: readonly string[], options: { maxBytes: number; ca?: string; idleTimeoutMs?: number; attempts?: number }): Promise<{ data: Buffer; url: string }> {
  assertOnline(host, urls);
  const failures: string[] = [];
  let certificate = false;
  const limit = options.attempts ?? 3;
  for (const raw of urls) {
    for (let attempt = 1; ; attempt++) {
      try {
        return await readSmall(new URL(raw), host, options);
      } catch (error) {
        if (!(error instanceof Broken)) throw error;
        if (error.retry && attempt < limit) {
          await host.sleep(Math.min(200 * 2 ** attempt, 5000));
          continue;
        }
        failures.push(`${displayUrl(raw)}: ${error.message}${error.retry ? ` (gave up after ${limit} attempts)` : ''}`);
        certificate ||= error.certificate;
        break;
      }
    }
  }
  throw new DownloadError(`download failed:\n  ${failures.join('\n  ')}`, { hint: failureHint(certificate) });
}

/**
 * A file on this machine (a file: URL, as an air-gapped bundle's configuration names its files)
 * copied into a pending file at `destination` exactly as a download is: hashed and observed while
 * copied, nothing at the destination until the caller has checked it and commits. Needs no network,
 * so --offline allows it. The source is a path on the machine machineadm runs on, not under --root.
 */
export async function copyLocal(host: Host, options: Omit<DownloadOptions, 'urls' | 'ca'> & { url: string }): Promise<DownloadResult> {
  let path: string;
  try {
    path = fileURLToPath(options.url);
  } catch {
    throw new UsageError(`"${options.url}" is not a file: URL of a local path`);
  }
  const info = await host.local.stat(path);
  if (!info || info.kind === 'directory') {
    throw new DownloadError(`${path} ${info ? 'is a directory' : 'does not exist'}`, { hint: 'copy the whole bundle directory, or fix the source path' });
  }
  const copy = await freshCopy({ ...options, urls: [] });
  try {
    for await (const block of host.local.readBlocks(path)) {
      copy.hash.update(block);
      copy.observer?.update(block);
      copy.received += block.length;
      // Written before the next block is read into the same buffer.
      appendChunk(copy.pending, block, options.destination);
      options.onProgress?.(copy.received, info.size);
    }
    copy.pending.stream.end();
    await finished(copy.pending.stream).catch((error: unknown) => {
      throw writeFailed(options.destination, error);
    });
  } catch (error) {
    await copy.pending.abort();
    throw error;
  }
  return { pending: copy.pending, sha256: copy.hash.digest('hex'), bytes: copy.received, url: options.url, observer: copy.observer };
}
