// What every secret source is given and shares: the machine (files, environment, --offline,
// waiting), the field the secret is for (named in every error, never the value), where to
// register values to scrub, and one request loop for the secret stores that reads each
// service's own errors, retries what the service says is transient and names the rest.
import type { ConfigHost } from '../../host/config-host.ts';
import { HttpError, httpRequest, retryDelayMs, parseRetryAfter, type HttpResponse, type HttpTimeouts, type RetryPolicy } from '../../host/http.ts';
import { ConfigError, ExitCode, MachineadmError } from '../../errors.ts';
import { MAX_SECRET_FILE_BYTES, OFFLINE_HINT } from './limits.ts';
import { holdsPemCertificate } from '../pem-file.ts';

export interface SecretRead {
  host: ConfigHost;
  /** The field the secret is for, e.g. spec.kubernetes.token. */
  field: string;
  /** Registers a value (the secret, or a credential it was read with) with the run's scrubber. */
  register(value: string): void;
  /** The value is a file's content: kept byte for byte (no trailing newline dropped). A store or an envelope returns what it holds whole; resolveSecret takes a field's form of it. */
  exact: boolean;
}

/** The configuration names something the service refuses or lacks (not found, access denied): exit 2. */
export function secretRefused(read: SecretRead, message: string, hint?: string): ConfigError {
  return new ConfigError([{ path: read.field, message, ...(hint ? { hint } : {}) }]);
}

/** The service could not be used now (throttled past the deadline, 5xx, network): exit 1. */
export class SecretUnavailableError extends MachineadmError {
  constructor(read: SecretRead, message: string, options: { hint?: string; cause?: unknown } = {}) {
    super(`${read.field}: ${message}`, ExitCode.stepFailed, options);
  }
}

/**
 * A value is text, so bytes that are not UTF-8 (a keytab, a DER key) would reach the file changed;
 * they are refused, with the way to pass them unchanged.
 */
export const NOT_UTF8 = {
  message: 'bytes that are not UTF-8 text, which a configuration value cannot carry unchanged',
  hint: 'store the bytes base64-encoded and give the file encoding: base64 (machineadm writes the decoded bytes)',
} as const;

/** The PEM of a caFile on the machine, or undefined when none is given. */
export async function readCaFile(read: SecretRead, caFile: string | undefined): Promise<string | undefined> {
  if (caFile === undefined) return undefined;
  const found = await read.host.fs.readSmallFile(caFile, MAX_SECRET_FILE_BYTES * 16).catch((cause: unknown) => {
    throw secretRefused(read, `cannot read caFile ${caFile}: ${(cause as Error).message}`);
  });
  if ('problem' in found) throw secretRefused(read, `caFile ${caFile} ${found.problem === 'missing' ? 'does not exist' : 'is not a readable PEM file'}`, 'write the CA bundle before machineadm runs');
  const text = found.bytes.toString('utf8');
  // Node would drop a CA it cannot parse without a word, and the store's certificate would then
  // look untrusted: a wrong file is the configuration's to fix, not a TLS failure to report.
  if (!holdsPemCertificate(text)) throw secretRefused(read, `caFile ${caFile} holds no PEM certificate`, 'give the CA bundle as PEM, with -----BEGIN CERTIFICATE----- blocks (openssl x509 -inform der -in CA.crt -out CA.pem converts a DER one)');
  return text;
}

// A secret store is asked at boot, when throttling and cold starts are common: patient, bounded.
export const STORE_RETRY: RetryPolicy = { attempts: 6, baseDelayMs: 500, maxDelayMs: 10_000, deadlineMs: 60_000 };
// Each attempt's bounds: several attempts fit the deadline, so one stalled connection is not the run's end.
export const STORE_TIMEOUTS: HttpTimeouts = { connectMs: 5_000, responseMs: 15_000, totalMs: 20_000 };
const MAX_ANSWER_BYTES = 1024 * 1024;
// Every 4xx and 5xx reaches the judge: the service's own words decide what is retried.
const EVERY_ERROR_STATUS = Array.from({ length: 200 }, (_, i) => 400 + i);

/** What a service's answer means: the value's bytes, a transient failure to retry, or a final one. */
export type Verdict = { ok: HttpResponse } | { retry: string; retryAfterMs?: number } | { fail: MachineadmError };

export interface StoreRequest {
  url: string;
  method?: 'GET' | 'POST' | 'PUT';
  headers: Record<string, string>;
  body?: string;
  ca?: string;
  /** What the answer means, from its status, headers and body (the service's own error codes). */
  judge: (answer: HttpResponse) => Verdict;
  /** How the service is named in messages, e.g. "AWS Secrets Manager". */
  service: string;
  retry?: Partial<RetryPolicy>;
  /** Each attempt's bounds (a metadata service answers in milliseconds or not at all). */
  timeouts?: Partial<HttpTimeouts>;
  /** Builds the request anew for each attempt (a signature is made over the time it is sent). */
  prepare?: () => Promise<{ headers: Record<string, string> }>;
}

/**
 * Sends a request to a secret store and judges every answer; 4xx bodies reach the judge, since
 * services say "throttled" or "expired credentials" in a 400's body. Transient failures are
 * retried with backoff (a Retry-After is honoured); the last one becomes a SecretUnavailableError.
 */
export async function storeRequest(read: SecretRead, request: StoreRequest): Promise<HttpResponse> {
  const policy: RetryPolicy = { ...STORE_RETRY, ...request.retry };
  const started = performance.now();
  for (let attempt = 1; ; attempt++) {
    const headers = request.prepare ? (await request.prepare()).headers : request.headers;
    let verdict: Verdict;
    try {
      const answer = await httpRequest({
        url: request.url,
        method: request.method ?? 'GET',
        headers,
        ...(request.body !== undefined ? { body: request.body } : {}),
        ...(request.ca !== undefined ? { ca: request.ca } : {}),
        offline: read.host.offline,
        sleep: (ms) => read.host.sleep(ms),
        maxBytes: MAX_ANSWER_BYTES,
        // Each attempt once: the judge decides what is retried, from the service's own words.
        retry: { attempts: 1 },
        acceptStatus: EVERY_ERROR_STATUS,
        timeouts: { ...STORE_TIMEOUTS, ...request.timeouts },
        // A store never redirects; following one would hand a signed request or a token elsewhere.
        followRedirects: false,
      });
      verdict = request.judge(answer);
    } catch (error) {
      if (!(error instanceof HttpError)) throw error;
      if (error.reason === 'offline') throw secretRefused(read, `is read from ${request.service}, which machineadm cannot reach with --offline`, OFFLINE_HINT);
      if (error.reason === 'tls') throw new SecretUnavailableError(read, `${request.service}: ${error.message}`, { hint: 'check the endpoint, or give its CA as caFile', cause: error });
      // No secret is that large (Secrets Manager's limit is 64 KiB): whatever answered will answer so again.
      if (error.reason === 'too-large') throw new SecretUnavailableError(read, `${request.service}: ${error.message} (no secret is that large)`, { hint: 'check the endpoint: something other than the service answered (a proxy, another server)', cause: error });
      verdict = { retry: error.message };
    }
    if ('ok' in verdict) return verdict.ok;
    if ('fail' in verdict) throw verdict.fail;
    // A throttling store's Retry-After is waited in full, past the backoff's own cap: asking sooner
    // only adds to the throttling. The deadline still bounds the run, so a long one ends it at once.
    const wait = Math.max(retryDelayMs(attempt, policy), verdict.retryAfterMs ?? 0);
    if (attempt >= policy.attempts || performance.now() - started + wait > (policy.deadlineMs ?? Infinity)) {
      const asked = verdict.retryAfterMs !== undefined && verdict.retryAfterMs === wait && attempt < policy.attempts ? ` (it asked to wait ${Math.ceil(wait / 1000)} s, longer than the ${Math.round((policy.deadlineMs ?? 0) / 1000)} s budget leaves)` : '';
      throw new SecretUnavailableError(read, `${request.service} did not answer after ${attempt} attempts: ${verdict.retry}${asked}`, { hint: 'retry later; the run picks up where it stopped' });
    }
    await read.host.sleep(wait);
  }
}

/** The standard transient answers: 408, 429 and 5xx (with the Retry-After the service gave). */
export function transient(answer: HttpResponse, why: string): Verdict | undefined {
  if (answer.status === 408 || answer.status === 429 || answer.status >= 500) return { retry: `${why} (HTTP ${answer.status})`, ...retryAfter(answer) };
  return undefined;
}

/** The wait the answer's Retry-After asks, when it gives one. */
export function retryAfter(answer: HttpResponse): { retryAfterMs?: number } {
  const ms = parseRetryAfter(answer.headers['retry-after'], new Date());
  return ms === undefined ? {} : { retryAfterMs: ms };
}

/**
 * A 200 that is not JSON is no store's answer (a proxy's sign-in page, another server at the
 * endpoint): exit 1 like the oversized answer, since no configuration change is what fixes it.
 */
export function notTheService(read: SecretRead, service: string, what: string, answer: HttpResponse): SecretUnavailableError {
  const type = answer.headers['content-type'];
  return new SecretUnavailableError(read, `${service} answered ${what} with content that is not JSON${typeof type === 'string' ? ` (${type.slice(0, 60)})` : ''}: something other than the service answered`, {
    hint: 'check the endpoint, and any proxy between the machine and the service (a proxy that wants a sign-in must let the machine through)',
  });
}

/** The answer's body as JSON, or undefined when it is not JSON. */
export function jsonBody(answer: HttpResponse): Record<string, unknown> | undefined {
  try {
    const parsed: unknown = JSON.parse(answer.body.toString('utf8'));
    return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}
