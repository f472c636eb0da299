// One HTTP request of a download, and the judgement of its failure (worth another attempt or not, a
// refused certificate): both the large and the small download retry on what is decided here. A
// redirect to another host is refused here, as --offline and a URL that does not parse are before
// any request.
import type { IncomingMessage } from 'node:http';
import { UsageError } from '../errors.ts';
import type { Host } from './index.ts';
import { displayUrl, tlsOptions } from './http.ts';
import { hasCredentials } from '../redaction.ts';
import type { DownloadOptions } from './download-copy.ts';

const MAX_REDIRECTS = 5;

interface Attempt {
  /** Status and headers; `complete` tells a whole body from a cut one once it has been read. */
  response: IncomingMessage;
  /** The body; destroying it closes the connection. */
  body: AsyncIterable<Buffer> & { destroy(error?: Error): void };
  url: URL;
}

export class Broken extends Error {
  readonly retry: boolean;
  /** The server's certificate was refused: the hint then says how to trust it. */
  readonly certificate: boolean;
  constructor(message: string, retry: boolean, options?: { cause?: unknown; certificate?: boolean }) {
    super(message, options);
    this.retry = retry;
    this.certificate = options?.certificate ?? false;
  }
}

export function failureHint(certificate: boolean): string {
  return certificate
    ? "the server's certificate is not trusted: give the CA that signed it (machineadm fetch --ca-file PEM; in the configuration spec.files[].source.caFile), or use a mirror with a trusted certificate"
    : 'check the URLs and the network, or list a mirror that has the file';
}

export function assertOnline(host: Host, urls: readonly string[]): void {
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
export function describeNetworkError(error: unknown): { message: string; retry: boolean; certificate: boolean } {
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
export function throwIfInterrupted(options: DownloadOptions): void {
  if (options.signal?.aborted) throw options.signal.reason;
}

// Follows redirects on the same host only: the operator lists every place a file may come from,
// and a redirect elsewhere (or from https to http) is a place nobody listed.
export async function getFollowing(start: URL, headers: Record<string, string>, options: DownloadOptions): Promise<Attempt> {
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
