// A stand-in for Azure's instance metadata service (managed identity tokens, the VM's tags) over
// HTTP and a Key Vault over HTTPS with the test CA, as strict as the real ones: the metadata
// service refuses a request without "Metadata: true" (400) and an unknown identity (400), the vault
// takes only a token it issued for its own audience. Faults are queued per test.
import { randomBytes } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { startHttp, startHttps, type RunningServer, type TestCa } from './servers.ts';

// 'login-page': a 200 with a proxy's HTML sign-in page instead of the vault's JSON.
export type VaultFault = 'throttle' | 'unavailable' | 'expired' | 'login-page';

export interface AzureStandIn {
  imds: RunningServer;
  vault: RunningServer;
  /** Every token issued, with the audience and identity it was issued for. */
  issued: Map<string, { resource: string; clientId: string | undefined }>;
  /** Secrets by name: versions oldest first (the last is the current one). */
  secrets: Map<string, Array<{ version: string; value: string }>>;
  /** Secrets the identity may not read (403). */
  denied: Set<string>;
  /** The VM's identities: its system-assigned one, and user-assigned ones by client id. */
  identity: { system: boolean; userAssigned: string[] };
  /** compute.tagsList of the instance metadata. */
  tags: Array<{ name: string; value: string }>;
  /** Seconds a 429 asks to wait. */
  retryAfterSeconds: number;
  /** The next vault requests fail this way, one fault each. */
  inject(fault: VaultFault, times?: number): void;
  /** The next token requests answer these statuses (e.g. 410 while the service updates). */
  identityFaults: number[];
  tokenRequests(): URLSearchParams[];
  vaultRequests(): RunningServer['requests'];
  close(): Promise<void>;
}

function json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', ...headers });
  res.end(JSON.stringify(body));
}

export async function startAzureStandIn(ca: TestCa): Promise<AzureStandIn> {
  const faults: VaultFault[] = [];
  const expired = new Set<string>();
  const state = {
    issued: new Map<string, { resource: string; clientId: string | undefined }>(),
    secrets: new Map<string, Array<{ version: string; value: string }>>(),
    denied: new Set<string>(),
    identity: { system: true, userAssigned: [] as string[] },
    tags: [] as Array<{ name: string; value: string }>,
    retryAfterSeconds: 0,
    identityFaults: [] as number[],
  };
  const imds = await startHttp((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    if (req.headers.metadata !== 'true') return json(res, 400, { error: 'bad_request_102', error_description: 'Required metadata header not specified' });
    if (req.method !== 'GET') return json(res, 405, { error: 'Method not allowed' });
    if (url.pathname === '/metadata/instance') {
      if (url.searchParams.get('api-version') !== '2021-02-01') return json(res, 400, { error: 'Bad request. api-version is invalid' });
      return json(res, 200, { compute: { vmId: 'b5f6c0a2-0000-4000-8000-000000000001', tagsList: state.tags }, network: {} });
    }
    if (url.pathname === '/metadata/identity/oauth2/token') {
      if (url.searchParams.get('api-version') !== '2018-02-01') return json(res, 400, { error: 'invalid_request', error_description: 'api-version is invalid' });
      const fault = state.identityFaults.shift();
      if (fault !== undefined) return json(res, fault, { error: 'temporarily_unavailable', error_description: 'the service is updating' });
      const resource = url.searchParams.get('resource');
      if (!resource) return json(res, 400, { error: 'invalid_resource', error_description: 'AADSTS50001: resource is required' });
      const clientId = url.searchParams.get('client_id') ?? undefined;
      const known = clientId === undefined ? state.identity.system : state.identity.userAssigned.includes(clientId);
      if (!known) return json(res, 400, { error: 'invalid_request', error_description: 'Identity not found' });
      const token = `eyJ0${randomBytes(24).toString('base64url')}`;
      state.issued.set(token, { resource, clientId });
      const now = Math.floor(Date.now() / 1000);
      return json(res, 200, { access_token: token, client_id: clientId ?? 'system', expires_in: '86399', expires_on: String(now + 86399), not_before: String(now), resource, token_type: 'Bearer' });
    }
    return json(res, 404, { error: 'Not found' });
  });
  let origin = '';
  const vault = await startHttps(ca, (req, res) => {
    const url = new URL(req.url ?? '/', origin);
    const challenge = { 'www-authenticate': `Bearer authorization="https://login.microsoftonline.com/tenant", resource="${origin}"` };
    const auth = /^Bearer (\S+)$/.exec(String(req.headers.authorization ?? ''))?.[1];
    const who = auth === undefined ? undefined : state.issued.get(auth);
    if (!auth || !who || expired.has(auth)) return json(res, 401, { error: { code: 'Unauthorized', message: 'AKV10000: Request is missing a Bearer or PoP token.' } }, challenge);
    if (who.resource !== origin) return json(res, 401, { error: { code: 'Unauthorized', message: `AKV10022: Invalid audience. Expected ${origin}, found: ${who.resource}.` } }, challenge);
    if (url.searchParams.get('api-version') !== '7.4') return json(res, 400, { error: { code: 'BadParameter', message: 'The specified version of the API is not supported' } });
    const fault = faults.shift();
    if (fault === 'throttle') return json(res, 429, { error: { code: 'Throttled', message: 'Request was not processed because too many requests were received.' } }, { 'retry-after': String(state.retryAfterSeconds) });
    if (fault === 'unavailable') return json(res, 503, { error: { code: 'ServiceUnavailable', message: 'The service is unavailable.' } });
    if (fault === 'login-page') return void res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end('<!doctype html><html><head><title>Sign in</title></head><body><form action="/login"><input name="user"><input name="password" type="password"></form></body></html>\n');
    if (fault === 'expired') {
      expired.add(auth);
      return json(res, 401, { error: { code: 'Unauthorized', message: 'AKV10032: Token expired.' } }, challenge);
    }
    const path = /^\/secrets\/([A-Za-z0-9-]+)(?:\/([A-Za-z0-9]+))?\/?$/.exec(url.pathname);
    if (!path) return json(res, 404, { error: { code: 'NotFound', message: 'Not found' } });
    const [, name = '', version] = path;
    if (state.denied.has(name)) {
      return json(res, 403, { error: { code: 'Forbidden', message: `Caller is not authorized to perform action on resource. Action: 'Microsoft.KeyVault/vaults/secrets/getSecret/action'`, innererror: { code: 'ForbiddenByRbac' } } });
    }
    const versions = state.secrets.get(name) ?? [];
    const found = version === undefined ? versions.at(-1) : versions.find((v) => v.version === version);
    if (!found) return json(res, 404, { error: { code: 'SecretNotFound', message: `A secret with (name/id) ${name}${version ? `/${version}` : ''} was not found in this key vault.` } });
    return json(res, 200, { value: found.value, id: `${origin}/secrets/${name}/${found.version}`, attributes: { enabled: true } });
  });
  origin = vault.url;
  return Object.assign(state, {
    imds,
    vault,
    inject: (fault: VaultFault, times = 1) => faults.push(...Array<VaultFault>(times).fill(fault)),
    tokenRequests: () => imds.requests.filter((r) => r.url.startsWith('/metadata/identity/')).map((r) => new URL(r.url, 'http://x').searchParams),
    vaultRequests: () => vault.requests,
    close: async () => {
      await Promise.all([imds.close(), vault.close()]);
    },
  });
}
