// Sending data to a collector: one POST with got, retried with exponential backoff and full
// jitter, Retry-After honoured on 429/503, never past a hard deadline. TLS trusts a given CA and
// may present a client certificate (mTLS). Returns how it went; never throws for HTTP or network
// failures, because the caller decides what an undelivered event means (it stays spooled).
import type { Agent as HttpAgent, IncomingHttpHeaders, IncomingMessage } from 'node:http';
import type { Agent as HttpsAgent } from 'node:https';
import type { Got } from 'got';
import { displayUrl, isRetryableStatus, parseRetryAfter } from './http.ts';

export interface TlsMaterial {
  /** PEM text of the CA bundle that signs the collector's certificate; it replaces the system's CAs for this request. */
  ca?: string;
  /** PEM text of the client certificate and key for mutual TLS. */
  cert?: string;
  key?: string;
}

export interface PostRequest {
  url: string;
  body: string | Uint8Array;
  headers: Record<string, string>;
  tls?: TlsMaterial;
  /** Absolute time (ms since the epoch) after which nothing more is tried, however it is going. */
  deadline: number;
  /**
   * Connecting may take this long. Default 10 s. Once connected, the answer is awaited until the
   * deadline: an attempt cut off after the collector took the event, then retried, delivers it
   * twice, and on a loaded machine a starved process finds its timer due before the answer that
   * already arrived.
   */
  attemptTimeoutMs?: number;
  /** Attempts in total, the first included. Default 5. */
  maxAttempts?: number;
  /** Backoff: attempt n waits a random time in [0, min(capMs, baseMs * 2^n)) ("full jitter"). */
  backoff?: { baseMs: number; capMs: number };
  /** Aborts the attempt in flight and any wait at once (the run is over). */
  signal?: AbortSignal;
}

export type PostOutcome =
  | { ok: true; status: number; attempts: number }
  | {
      ok: false;
      /** HTTP status of the last answer, when there was one. */
      status?: number;
      /** One line: what happened on the last attempt. */
      reason: string;
      /** True when trying again later may help (network, 408, 429, 5xx, deadline); false for other answers. */
      retryable: boolean;
      /** Attempts that got an answer or failed on their own: one cut off by the deadline or the signal is not counted. */
      attempts: number;
      /**
       * When the last answer's Retry-After (plus the random spread below) lets the next attempt go,
       * as ms since the epoch: the caller must not send to this collector before then.
       */
      retryAt?: number;
    };

export interface HttpPoster {
  post(request: PostRequest): Promise<PostOutcome>;
  /** Closes kept-alive connections so the process can exit. */
  close(): void;
}

export interface PosterOptions {
  now?: () => number;
  random?: () => number;
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
}

const DEFAULT_BACKOFF = { baseMs: 200, capMs: 10_000 };
// A Retry-After far in the future is a collector asking not to be bothered; past this we give up for now.
const MAX_RETRY_AFTER_MS = 5 * 60_000;

function abortableSleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done(): void {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}

function describeFailure(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const code = (error as { code?: unknown }).code;
  const prefix = typeof code === 'string' && !error.message.includes(code) ? `${code}: ` : '';
  return `${prefix}${error.message}`.split('\n')[0]!;
}

// got's timeouts of an attempt: `request` is always the deadline; the others are when the deadline
// shortened them below the attempt's own timeout.
function cutByDeadline(error: unknown, connectShortened: boolean): boolean {
  if (!(error instanceof Error) || error.name !== 'TimeoutError') return false;
  return (error as { event?: unknown }).event === 'request' || connectShortened;
}

// got is loaded on the first request: most commands never post anything, and loading it costs startup time.
let loaded: Promise<Got> | undefined;
const loadGot = (): Promise<Got> => (loaded ??= import('got').then((m) => m.default));

// got's stream, with the body written to it: given as `body`, got checks it against the global
// FormData, whose first use loads Node's fetch implementation (undici), ~20-35 ms of CPU in each
// process that reports. The answer's body is read and dropped, so the connection can be kept.
async function send(got: Got, request: PostRequest, how: { agent: { http: HttpAgent } | { https: HttpsAgent }; connect: number; remaining: number }): Promise<{ statusCode: number; headers: IncomingHttpHeaders }> {
  const body = typeof request.body === 'string' ? Buffer.from(request.body, 'utf8') : request.body;
  const stream = got.stream.post(request.url, {
    headers: { ...request.headers, 'content-length': String(body.length) },
    // A collector that cannot be reached costs at most `connect`; one that never answers, the deadline.
    timeout: { lookup: how.connect, connect: how.connect, secureConnect: how.connect, request: how.remaining },
    retry: { limit: 0 },
    followRedirect: false,
    throwHttpErrors: false,
    agent: how.agent,
    ...(request.signal ? { signal: request.signal } : {}),
    https: {
      ...(request.tls?.ca ? { certificateAuthority: request.tls.ca } : {}),
      ...(request.tls?.cert ? { certificate: request.tls.cert } : {}),
      ...(request.tls?.key ? { key: request.tls.key } : {}),
    },
  });
  return new Promise((resolve, reject) => {
    // The answer is its status and headers: a 2xx acknowledges, whatever its body does after. The
    // body is read and dropped so the connection can be kept, up to a few KiB and a moment; a
    // collector (or proxy) that sends more, or stalls mid-body, has its connection closed instead.
    stream.once('response', (r: IncomingMessage) => {
      resolve({ statusCode: r.statusCode ?? 0, headers: r.headers });
      let read = 0;
      const cut = setTimeout(() => stream.destroy(), ANSWER_BODY_MS);
      cut.unref();
      stream.on('data', (chunk: Buffer) => {
        read += chunk.length;
        if (read > ANSWER_BODY_BYTES) stream.destroy();
      });
      stream.once('close', () => clearTimeout(cut));
    });
    // on, not once: a second error (after the first ended the attempt) must not be left unheard.
    // After the answer, an error is the cut body's: the answer stands.
    stream.on('error', reject);
    stream.once('end', () => reject(new Error('the connection ended without an answer')));
    stream.resume();
    stream.end(body);
  });
}

// What is read of an answer's body before its connection is closed instead of kept.
const ANSWER_BODY_BYTES = 64 * 1024;
const ANSWER_BODY_MS = 1_000;

export function createHttpPoster(options: PosterOptions = {}): HttpPoster {
  const now = options.now ?? Date.now;
  const random = options.random ?? Math.random;
  const sleep = options.sleep ?? abortableSleep;
  // Kept-alive connections: a backlog of spooled events goes over one connection, not one each.
  // Each made at the first post of its scheme: a run that posts nothing (plan, an offline run) does
  // not load the network stack, and one that posts to http:// only does not load TLS.
  let http: HttpAgent | undefined;
  let https: HttpsAgent | undefined;
  const agentFor = (url: string): { http: HttpAgent } | { https: HttpsAgent } =>
    /^https:/i.test(url)
      ? { https: (https ??= new (process.getBuiltinModule('node:https').Agent)({ keepAlive: true, maxSockets: 4 })) }
      : { http: (http ??= new (process.getBuiltinModule('node:http').Agent)({ keepAlive: true, maxSockets: 4 })) };
  return {
    close(): void {
      http?.destroy();
      https?.destroy();
    },
    async post(request: PostRequest): Promise<PostOutcome> {
      const maxAttempts = request.maxAttempts ?? 5;
      const backoff = request.backoff ?? DEFAULT_BACKOFF;
      let last: Extract<PostOutcome, { ok: false }> = { ok: false, reason: 'not tried: the deadline had already passed', retryable: true, attempts: 0 };
      for (let attempt = 0; attempt < maxAttempts; attempt++) {
        const remaining = request.deadline - now();
        if (remaining <= 0 || request.signal?.aborted) break;
        const connect = Math.min(request.attemptTimeoutMs ?? 10_000, remaining);
        let waitMs: number | undefined;
        try {
          const response = await send(await loadGot(), request, { agent: agentFor(request.url), connect, remaining });
          const status = response.statusCode;
          if (status >= 200 && status < 300) return { ok: true, status, attempts: attempt + 1 };
          const retryable = isRetryableStatus(status);
          // The reason reaches result.json and the console unscrubbed: a Location repeating the
          // endpoint's query or user info would show credentials.
          const target = response.headers.location ? displayUrl(URL.parse(response.headers.location, request.url)?.href ?? '') : 'nowhere';
          const location = status >= 300 && status < 400 ? ` (redirect to ${target} not followed: configure the final URL)` : '';
          last = { ok: false, status, reason: `HTTP ${status}${location}`, retryable, attempts: attempt + 1 };
          if (!retryable) return last;
          if (status === 429 || status === 503) {
            const header = response.headers['retry-after'];
            waitMs = parseRetryAfter(header, new Date(now()));
            if (waitMs !== undefined && waitMs > MAX_RETRY_AFTER_MS) {
              return { ...last, reason: `${last.reason}, Retry-After ${Math.round(waitMs / 1000)}s is too far away`, retryAt: now() + waitMs };
            }
          }
        } catch (error) {
          // The cut-off attempt does not count; the failure before it says more. An attempt begun
          // a few ms before the deadline times out whatever the collector does: after a wrong
          // certificate, "Timeout awaiting 'request' for 6ms" would hide why nothing was delivered.
          if (request.signal?.aborted) return last.attempts > 0 ? last : { ok: false, reason: 'stopped: the delivery deadline passed', retryable: true, attempts: attempt };
          if (cutByDeadline(error, connect < (request.attemptTimeoutMs ?? 10_000))) {
            return last.attempts > 0 ? last : { ok: false, reason: `${describeFailure(error)}, the delivery deadline`, retryable: true, attempts: 0 };
          }
          last = { ok: false, reason: describeFailure(error), retryable: true, attempts: attempt + 1 };
        }
        // After Retry-After, a random extra of up to half of it (1 s at least, the cap at most): a
        // fleet told "in 5 s" together would otherwise come back together, to another 429.
        const delay =
          waitMs !== undefined
            ? waitMs + Math.floor(random() * Math.min(backoff.capMs, Math.max(1_000, waitMs / 2)))
            : Math.floor(random() * Math.min(backoff.capMs, backoff.baseMs * 2 ** attempt));
        // The caller that tries again later must wait as the collector asked, too.
        if (waitMs !== undefined) last = { ...last, retryAt: now() + delay };
        if (attempt + 1 >= maxAttempts) break;
        if (now() + delay >= request.deadline) {
          return { ...last, reason: `${last.reason}; the next attempt would pass the deadline` };
        }
        await sleep(delay, request.signal);
      }
      return last;
    },
  };
}
