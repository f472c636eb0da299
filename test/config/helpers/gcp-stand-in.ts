// A stand-in for the GCE metadata server (service-account tokens, the project id) over HTTP and
// Secret Manager over HTTPS with the test CA, as strict as the real ones: the metadata server
// refuses a request without "Metadata-Flavor: Google" (403) and marks its answers with it; the
// store takes only a token the metadata server issued and that has not expired. Faults are
// queued per test.
import { randomBytes } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { startHttp, startHttps, type RunningServer, type TestCa } from './servers.ts';

// 'login-page': a 200 with a proxy's HTML sign-in page instead of the service's JSON.
export type SecretManagerFault = 'throttle' | 'unavailable' | 'expired' | 'bad-crc' | 'login-page';

export interface GcpStandIn {
  metadata: RunningServer;
  store: RunningServer;
  /** Tokens issued, with when they expire (ms since the epoch). */
  issued: Map<string, number>;
  /** The instance's project id (the metadata server's project/project-id). */
  project: string;
  /** Whether a service account is attached (no: the token answers 404). */
  serviceAccount: boolean;
  /** Secrets by "project/secret": versions in order, numbered from 1. */
  /** Versions by project/secret: text, or bytes. */
  secrets: Map<string, (string | Buffer)[]>;
  /** "project/secret" the service account may not access (403). */
  denied: Set<string>;
  /** Seconds a 429 asks to wait. */
  retryAfterSeconds: number;
  /** The next store requests fail this way, one fault each. */
  inject(fault: SecretManagerFault, times?: number): void;
  tokenRequests(): RunningServer['requests'];
  storeRequests(): RunningServer['requests'];
  close(): Promise<void>;
}

/** CRC32C bit by bit (no table), so that the client's table version is checked against another. */
export function crc32cBitwise(bytes: Uint8Array): number {
  let crc = 0xffffffff;
  for (const byte of bytes) {
    crc ^= byte;
    for (let k = 0; k < 8; k++) crc = (crc >>> 1) ^ (0x82f63b78 & -(crc & 1));
  }
  return (crc ^ 0xffffffff) >>> 0;
}

function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  res.writeHead(status, { 'content-type': typeof body === 'string' ? 'application/text' : 'application/json; charset=UTF-8', ...headers });
  res.end(text);
}

function googleError(res: ServerResponse, code: number, status: string, message: string, headers: Record<string, string> = {}): void {
  send(res, code, { error: { code, message, status } }, headers);
}

export async function startGcpStandIn(ca: TestCa): Promise<GcpStandIn> {
  const faults: SecretManagerFault[] = [];
  const state = {
    issued: new Map<string, number>(),
    project: 'cluster-a-prod',
    serviceAccount: true,
    secrets: new Map<string, (string | Buffer)[]>(),
    denied: new Set<string>(),
    retryAfterSeconds: 0,
  };
  const flavor = { 'metadata-flavor': 'Google' };
  const metadata = await startHttp((req, res) => {
    if (req.headers['metadata-flavor'] !== 'Google') return send(res, 403, 'Missing required header "Metadata-Flavor": "Google"');
    if (req.headers['x-forwarded-for']) return send(res, 403, 'Request had X-Forwarded-For header');
    const url = new URL(req.url ?? '/', 'http://x');
    if (url.pathname === '/computeMetadata/v1/project/project-id') return send(res, 200, state.project, flavor);
    if (url.pathname === '/computeMetadata/v1/instance/service-accounts/default/token') {
      if (!state.serviceAccount) return send(res, 404, 'Not Found', flavor);
      const token = `ya29.${randomBytes(30).toString('base64url')}`;
      state.issued.set(token, Date.now() + 3599_000);
      return send(res, 200, { access_token: token, expires_in: 3599, token_type: 'Bearer' }, flavor);
    }
    return send(res, 404, 'Not Found', flavor);
  });
  const store = await startHttps(ca, (req, res) => {
    const auth = /^Bearer (\S+)$/.exec(String(req.headers.authorization ?? ''))?.[1];
    const expiresAt = auth === undefined ? undefined : state.issued.get(auth);
    if (auth === undefined || expiresAt === undefined || expiresAt <= Date.now()) {
      return googleError(res, 401, 'UNAUTHENTICATED', 'Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.', { 'www-authenticate': 'Bearer realm="https://accounts.google.com/"' });
    }
    const fault = faults.shift();
    if (fault === 'throttle') return googleError(res, 429, 'RESOURCE_EXHAUSTED', 'Quota exceeded for quota metric \'Access requests\'.', { 'retry-after': String(state.retryAfterSeconds) });
    if (fault === 'unavailable') return googleError(res, 503, 'UNAVAILABLE', 'The service is currently unavailable.');
    if (fault === 'login-page') return void res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end('<!doctype html><html><head><title>Sign in</title></head><body><form action="/login"><input name="user"><input name="password" type="password"></form></body></html>\n');
    if (fault === 'expired') {
      state.issued.set(auth, 0);
      return googleError(res, 401, 'UNAUTHENTICATED', 'Request had invalid authentication credentials.');
    }
    const path = /^\/v1\/projects\/([^/]+)\/secrets\/([^/]+)\/versions\/([^/:]+):access$/.exec(new URL(req.url ?? '/', 'https://x').pathname);
    if (!path || req.method !== 'GET') return googleError(res, 404, 'NOT_FOUND', 'The requested URL was not found on this server.');
    const [, project = '', secret = '', version = ''] = path;
    const key = `${project}/${secret}`;
    if (state.denied.has(key)) return googleError(res, 403, 'PERMISSION_DENIED', `Permission 'secretmanager.versions.access' denied for resource 'projects/${project}/secrets/${secret}/versions/${version}' (or it may not exist).`);
    const versions = state.secrets.get(key);
    if (!versions) return googleError(res, 404, 'NOT_FOUND', `Secret [projects/${project}/secrets/${secret}] not found or has no versions.`);
    const number = version === 'latest' ? versions.length : Number(version);
    const value = versions[number - 1];
    if (value === undefined) return googleError(res, 404, 'NOT_FOUND', `Secret Version [projects/${project}/secrets/${secret}/versions/${version}] not found.`);
    const bytes = typeof value === 'string' ? Buffer.from(value, 'utf8') : value;
    const crc = crc32cBitwise(bytes) ^ (fault === 'bad-crc' ? 1 : 0);
    return send(res, 200, { name: `projects/${project}/secrets/${secret}/versions/${number}`, payload: { data: bytes.toString('base64'), dataCrc32c: String(crc >>> 0) } });
  });
  return Object.assign(state, {
    metadata,
    store,
    inject: (fault: SecretManagerFault, times = 1) => faults.push(...Array<SecretManagerFault>(times).fill(fault)),
    tokenRequests: () => metadata.requests.filter((r) => r.url.endsWith('/token')),
    storeRequests: () => store.requests,
    close: async () => {
      await Promise.all([metadata.close(), store.close()]);
    },
  });
}
