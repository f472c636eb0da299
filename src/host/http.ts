// HTTP for machineadm: one request function over got with the rules every network use shares.
// TLS is always verified (an extra CA may be added, never verification turned off), bodies are
// streamed and cut off at a size limit, transient failures are retried with exponential backoff
// and full jitter, a server's Retry-After is honoured, and nothing is sent when --offline.
// The pieces (tlsOptions, retryDelayMs, parseRetryAfter, isRetryableStatus) are exported for other
// network users such as report delivery and verified downloads.
import type { Headers, Method } from 'got';
import { MachineadmError, ExitCode, UsageError } from '../errors.ts';
import { displayUrl } from '../redaction.ts';

// Every network user names URLs the one way (src/redaction.ts).
export { displayUrl };

export interface RetryPolicy {
  /** Total attempts, the first included (1 = no retry). */
  attempts: number;
  /** Delay before the first retry; doubles every attempt. */
  baseDelayMs: number;
  /** No single wait is longer than this, whatever Retry-After says. */
  maxDelayMs: number;
  /** Stop retrying once this much time has passed since the first attempt. */
  deadlineMs?: number;
}

export const DEFAULT_RETRY: RetryPolicy = { attempts: 5, baseDelayMs: 500, maxDelayMs: 15_000, deadlineMs: 60_000 };

export interface HttpTimeouts {
  /** Until the TCP (and TLS) connection is up. */
  connectMs: number;
  /** Until the response headers arrive. */
  responseMs: number;
  /** The whole attempt, body included. */
  totalMs: number;
}

export const DEFAULT_TIMEOUTS: HttpTimeouts = { connectMs: 10_000, responseMs: 30_000, totalMs: 120_000 };

export interface HttpRequest {
  url: string;
  method?: 'GET' | 'PUT' | 'POST';
  headers?: Record<string, string>;
  body?: string | Buffer;
  /** Extra trusted CA certificates (PEM) added to the system's; verification stays on. */
  ca?: string | Buffer;
  /** The body is cut off and the request fails beyond this many bytes. */
  maxBytes?: number;
  timeouts?: Partial<HttpTimeouts>;
  retry?: Partial<RetryPolicy>;
  /** Statuses returned to the caller instead of failing (e.g. 404 = "no user data"). */
  acceptStatus?: readonly number[];
  /** --offline: refuse before anything is sent. */
  offline: boolean;
  /** Follow redirects (same scheme or an upgrade to https, at most 5); default true. */
  followRedirects?: boolean;
  sleep: (ms: number) => Promise<void>;
  /** Only for tests: replaces Math.random in the jitter. */
  random?: () => number;
}

export interface HttpResponse {
  url: string;
  status: number;
  headers: Headers;
  body: Buffer;
  /** How many attempts it took. */
  attempts: number;
}

export type HttpFailure = 'offline' | 'status' | 'too-large' | 'tls' | 'timeout' | 'network';

/** A request that did not succeed; `reason` says what kind of failure it was. */
export class HttpError extends MachineadmError {
  readonly url: string;
  readonly reason: HttpFailure;
  readonly status: number | undefined;
  readonly attempts: number;
  constructor(message: string, details: { url: string; reason: HttpFailure; status?: number; attempts?: number }, options: { hint?: string; cause?: unknown } = {}) {
    super(message, details.reason === 'offline' ? ExitCode.usage : ExitCode.stepFailed, options);
    this.url = details.url;
    this.reason = details.reason;
    this.status = details.status;
    this.attempts = details.attempts ?? 0;
  }
}

/** got's https options: the system CAs plus `ca`, and verification always on. */
export function tlsOptions(ca?: string | Buffer): { rejectUnauthorized: true; certificateAuthority?: Array<string | Buffer> } {
  if (ca === undefined) return { rejectUnauthorized: true };
  // Node replaces its built-in roots when `ca` is given, so keep them alongside the extra CA.
  // node:tls is loaded here, not with this module: loading it costs more than a whole start of
  // the commands that read configuration and never connect anywhere.
  const { rootCertificates } = process.getBuiltinModule('node:tls');
  return { rejectUnauthorized: true, certificateAuthority: [...rootCertificates, ca] };
}

/** 408, 425, 429 and 5xx except 501/505 are worth another try; anything else is an answer. */
export function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 425 || status === 429 || (status >= 500 && status !== 501 && status !== 505);
}

/** Retry-After in milliseconds (delta-seconds or an HTTP date), or undefined when absent or bad. */
export function parseRetryAfter(value: string | string[] | undefined, now: Date): number | undefined {
  const text = Array.isArray(value) ? value[0] : value;
  if (text === undefined || text.trim() === '') return undefined;
  if (/^\s*\d+\s*$/.test(text)) return Number(text.trim()) * 1000;
  const at = Date.parse(text);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, at - now.getTime());
}

/**
 * The wait before retry number `retry` (1 = the first retry): full jitter over an exponential
 * ceiling, so machines booted together do not retry in lockstep; a server's Retry-After wins when
 * it asks for longer, both capped at maxDelayMs.
 */
export function retryDelayMs(retry: number, policy: Pick<RetryPolicy, 'baseDelayMs' | 'maxDelayMs'>, retryAfterMs?: number, random: () => number = Math.random): number {
  const ceiling = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** Math.max(0, retry - 1));
  const jittered = Math.round(ceiling / 2 + random() * (ceiling / 2));
  if (retryAfterMs !== undefined) return Math.min(policy.maxDelayMs, Math.max(jittered, retryAfterMs));
  return jittered;
}

const TLS_CODES = new Set([
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'ERR_TLS_CERT_ALTNAME_INVALID',
  'CERT_SIGNATURE_FAILURE',
  'CERT_UNTRUSTED',
  'CERT_REJECTED',
  'CERT_REVOKED',
  'INVALID_PURPOSE',
  'INVALID_CA',
  'UNABLE_TO_DECRYPT_CERT_SIGNATURE',
  'UNABLE_TO_DECODE_ISSUER_PUBLIC_KEY',
  'CERT_CHAIN_TOO_LONG',
  'HOSTNAME_MISMATCH',
  'ERR_SSL_WRONG_VERSION_NUMBER',
]);

class Attempt {
  readonly error: HttpError;
  readonly retryable: boolean;
  readonly retryAfterMs: number | undefined;
  constructor(error: HttpError, retryable: boolean, retryAfterMs?: number) {
    this.error = error;
    this.retryable = retryable;
    this.retryAfterMs = retryAfterMs;
  }
}

/** Sends the request, retrying what is transient; returns a 2xx (or accepted) response. */
export async function httpRequest(request: HttpRequest): Promise<HttpResponse> {
  const shown = displayUrl(request.url);
  if (request.offline) {
    throw new HttpError(`${shown}: refused, machineadm runs offline`, { url: request.url, reason: 'offline' }, { hint: 'drop --offline, or give the content from a local file' });
  }
  const scheme = safeProtocol(request.url);
  if (scheme !== 'https:' && scheme !== 'http:') throw new UsageError(`${shown}: only http:// and https:// URLs can be fetched`);
  const policy: RetryPolicy = { ...DEFAULT_RETRY, ...request.retry };
  // Elapsed on the process's clock: a boot's first time sync may set the wall clock meanwhile.
  const started = performance.now();
  for (let attempt = 1; ; attempt++) {
    const outcome = await attemptOnce(request, shown, attempt);
    if (!(outcome instanceof Attempt)) return outcome;
    const elapsed = performance.now() - started;
    const wait = retryDelayMs(attempt, policy, outcome.retryAfterMs, request.random);
    const pastDeadline = policy.deadlineMs !== undefined && elapsed + wait > policy.deadlineMs;
    if (!outcome.retryable || attempt >= policy.attempts || pastDeadline) throw outcome.error;
    await request.sleep(wait);
  }
}

function safeProtocol(url: string): string | undefined {
  try {
    return new URL(url).protocol;
  } catch {
    return undefined;
  }
}

async function attemptOnce(request: HttpRequest, shown: string, attempt: number): Promise<HttpResponse | Attempt> {
  const scheme = safeProtocol(request.url);
  const timeouts: HttpTimeouts = { ...DEFAULT_TIMEOUTS, ...request.timeouts };
  const maxBytes = request.maxBytes ?? Number.POSITIVE_INFINITY;
  // Loaded on first use: importing got costs ~30 ms of startup that most commands never need.
  const { default: got } = await import('got');
  const stream = got.stream(request.url, {
    method: (request.method ?? 'GET') as Method,
    headers: { 'user-agent': 'machineadm', ...request.headers },
    // A PUT or POST stream waits for a body to be written: an empty one ends it.
    ...(request.body !== undefined ? { body: request.body } : (request.method ?? 'GET') !== 'GET' ? { body: '' } : {}),
    https: tlsOptions(request.ca),
    timeout: { connect: timeouts.connectMs, secureConnect: timeouts.connectMs, response: timeouts.responseMs, request: timeouts.totalMs },
    retry: { limit: 0 },
    throwHttpErrors: false,
    followRedirect: request.followRedirects ?? true,
    maxRedirects: 5,
    hooks: {
      beforeRedirect: [
        (options) => {
          // A redirect must not drop TLS: what was asked over https stays over https.
          const next = options.url instanceof URL ? options.url.protocol : String(options.url ?? '').split(':')[0] + ':';
          if (scheme === 'https:' && next !== 'https:') throw new HttpError(`${shown}: redirected to plain ${next.replace(/:$/, '')}, refused`, { url: request.url, reason: 'tls', attempts: attempt }, { hint: 'fix the server to redirect to https://' });
        },
      ],
    },
    decompress: true,
  });
  let status = 0;
  let headers: Headers = {};
  let url = request.url;
  let wanted = false;
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    await new Promise<void>((resolve, reject) => {
      stream.on('response', (response: { statusCode: number; headers: Headers; url: string }) => {
        status = response.statusCode;
        headers = response.headers;
        url = response.url;
        wanted = (status >= 200 && status < 300) || request.acceptStatus?.includes(status) === true;
        // An error page's body is never used: not reading it keeps a large one from turning a
        // retryable 503 into a size failure.
        if (!wanted) return resolve();
        const declared = Number(headers['content-length']);
        if (Number.isFinite(declared) && declared > maxBytes) reject(tooLarge(request, shown, maxBytes, attempt));
      });
      stream.on('data', (chunk: Buffer) => {
        if (!wanted) return;
        size += chunk.length;
        // Stop reading at the limit: a huge or endless body must not fill memory.
        if (size > maxBytes) return reject(tooLarge(request, shown, maxBytes, attempt));
        chunks.push(chunk);
      });
      stream.on('end', () => resolve());
      stream.on('error', reject);
    });
  } catch (error) {
    stream.destroy();
    // Our own refusals (size limit, redirect downgrade) may arrive wrapped by got.
    const own = error instanceof HttpError ? error : (error as { cause?: unknown }).cause instanceof HttpError ? ((error as { cause: HttpError }).cause) : undefined;
    if (own) return new Attempt(own, false);
    return classify(error, request.url, shown, attempt);
  }
  if (wanted) return { url, status, headers, body: Buffer.concat(chunks), attempts: attempt };
  stream.destroy();
  const retryable = isRetryableStatus(status);
  const error = new HttpError(`${shown}: the server answered ${status}${attempt > 1 ? ` (after ${attempt} attempts)` : ''}`, { url: request.url, reason: 'status', status, attempts: attempt }, {
    hint:
      status === 401 || status === 403
        ? 'check the access rights of the URL'
        : status === 404
          ? 'check the URL'
          : retryable
            ? 'retry later, or check the server'
            : // 501, 505 and the like: the same request gets the same answer, so waiting does not help.
              'the server does not serve this request: check that the URL names a file the server hands out',
  });
  return new Attempt(error, retryable, retryable ? parseRetryAfter(headers['retry-after'], new Date()) : undefined);
}

function tooLarge(request: HttpRequest, shown: string, maxBytes: number, attempt: number): HttpError {
  return new HttpError(`${shown}: the content is larger than the limit of ${formatBytes(maxBytes)}`, { url: request.url, reason: 'too-large', attempts: attempt }, { hint: 'check the URL; a configuration is never that large' });
}

export function formatBytes(bytes: number): string {
  if (bytes >= 1024 * 1024) return `${+(bytes / 1024 / 1024).toFixed(1)} MiB`;
  if (bytes >= 1024) return `${+(bytes / 1024).toFixed(1)} KiB`;
  return `${bytes} bytes`;
}

function classify(error: unknown, rawUrl: string, shown: string, attempt: number): Attempt {
  const code = (error as { code?: string }).code ?? '';
  const inner = error as { cause?: { code?: string } };
  const causeCode = inner.cause?.code ?? '';
  const after = attempt > 1 ? ` (after ${attempt} attempts)` : '';
  if (TLS_CODES.has(code) || TLS_CODES.has(causeCode)) {
    const which = TLS_CODES.has(code) ? code : causeCode;
    return new Attempt(
      new HttpError(`${shown}: the server's TLS certificate is not trusted (${which})`, { url: rawUrl, reason: 'tls', attempts: attempt }, { cause: error, hint: 'give the CA that signed it (a configuration source takes #ca=<path of a PEM file>), or fix the server certificate; verification is never turned off' }),
      false,
    );
  }
  if (code === 'ETIMEDOUT' || (error as Error).name === 'TimeoutError') {
    return new Attempt(new HttpError(`${shown}: timed out${after}`, { url: rawUrl, reason: 'timeout', attempts: attempt }, { cause: error, hint: 'check that the server is reachable from this machine' }), true);
  }
  const what = code || causeCode || (error as Error).message;
  return new Attempt(new HttpError(`${shown}: cannot connect (${what})${after}`, { url: rawUrl, reason: 'network', attempts: attempt }, { cause: error, hint: 'check the address and the network' }), true);
}
