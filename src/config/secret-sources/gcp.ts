// Google Cloud Secret Manager, read with the metadata server's service-account token.
// The token (the VM's default service account) is kept per run until 5 minutes before it
// expires; the payload's CRC32C, when the service gives one, is checked before the value is used.
import { isUtf8 } from 'node:buffer';
import type { ConfigHost } from '../../host/config-host.ts';
import type { HttpResponse } from '../../host/http.ts';
import { baseUrl, IMDS_TIMEOUTS } from '../imds.ts';
import type { GcpSecretManagerReference } from '../schema/secret-field.ts';
import { jsonBody, notTheService, NOT_UTF8, readCaFile, secretRefused, SecretUnavailableError, storeRequest, transient, type SecretRead, type Verdict } from './read.ts';

const SECRET_MANAGER = 'Google Cloud Secret Manager';
const METADATA = 'the GCE metadata server';
const DEFAULT_ENDPOINT = 'https://secretmanager.googleapis.com';
// A token is used only while it has more than this left: a step may run minutes after the read.
const TOKEN_MARGIN_MS = 5 * 60_000;

const tokens = new WeakMap<ConfigHost, { value: string; expiresAtMs: number }>();

/** The secret version's payload as text, read as the VM's service account. */
export async function readGcpSecret(reference: GcpSecretManagerReference, read: SecretRead): Promise<string> {
  const { secret } = reference;
  const version = reference.version ?? 'latest';
  const ca = await readCaFile(read, reference.caFile);
  const project = reference.project ?? (await projectId(read));
  const what = `secret ${secret} version ${version} in project ${project}`;
  const endpoint = (reference.endpoint ?? DEFAULT_ENDPOINT).replace(/\/+$/, '');
  let renew = false;
  let renewed = false;
  let value = '';
  const judge = (answer: HttpResponse): Verdict => {
    const error = serviceError(answer);
    if (answer.status === 200) {
      const body = jsonBody(answer);
      if (!body) return { fail: notTheService(read, SECRET_MANAGER, what, answer) };
      const payload = body.payload as { data?: unknown; dataCrc32c?: unknown } | undefined;
      if (typeof payload?.data !== 'string') return { fail: new SecretUnavailableError(read, `${SECRET_MANAGER} answered ${what} without a payload`) };
      const bytes = Buffer.from(payload.data, 'base64');
      if (payload.dataCrc32c !== undefined && String(payload.dataCrc32c) !== String(crc32c(bytes))) {
        return { fail: new SecretUnavailableError(read, `the payload of ${what} does not match its CRC32C checksum: it was damaged on the way`, { hint: 'retry; if it persists, check proxies between the machine and the service' }) };
      }
      if (!isUtf8(bytes)) return { fail: secretRefused(read, `the payload of ${what} is ${NOT_UTF8.message}`, NOT_UTF8.hint) };
      value = bytes.toString('utf8');
      return { ok: answer };
    }
    if (answer.status === 401 && !renewed) {
      // An expired or revoked token: ask the metadata server for a new one, once.
      renew = renewed = true;
      return { retry: `${SECRET_MANAGER} refused the token (HTTP 401)`, retryAfterMs: 0 };
    }
    if (answer.status === 401) return { fail: secretRefused(read, `${SECRET_MANAGER} refused the service account's token for ${what} (HTTP 401${error})`, 'check the VM\'s service account and its access scopes') };
    if (answer.status === 403) {
      return { fail: secretRefused(read, `the VM's service account may not access ${what} (HTTP 403${error})`, 'grant the VM\'s service account roles/secretmanager.secretAccessor on the secret (or project), give the VM the cloud-platform access scope, and enable the Secret Manager API') };
    }
    if (answer.status === 404) return { fail: secretRefused(read, `${what} does not exist (HTTP 404${error})`, 'check the project, the secret\'s id and the version') };
    if (answer.status === 400) return { fail: secretRefused(read, `${SECRET_MANAGER} refused to give ${what} (HTTP 400${error})`, 'a disabled or destroyed version cannot be read: enable it or name another') };
    return transient(answer, `${SECRET_MANAGER} could not serve ${what}`) ?? { fail: new SecretUnavailableError(read, `${SECRET_MANAGER} answered HTTP ${answer.status} for ${what}${error}`) };
  };
  await storeRequest(read, {
    url: `${endpoint}/v1/projects/${encodeURIComponent(project)}/secrets/${encodeURIComponent(secret)}/versions/${encodeURIComponent(version)}:access`,
    headers: {},
    ...(ca !== undefined ? { ca } : {}),
    service: SECRET_MANAGER,
    judge,
    prepare: async () => {
      const token = await accessToken(read, renew);
      renew = false;
      return { headers: { Authorization: `Bearer ${token}`, Accept: 'application/json' } };
    },
  });
  return value;
}

/** GET from the metadata server, checking that it is the metadata server that answers. */
function fromMetadata(read: SecretRead, path: string, what: string, on404: () => Verdict) {
  return storeRequest(read, {
    url: `${baseUrl(read.host, 'gce')}/computeMetadata/v1/${path}`,
    timeouts: IMDS_TIMEOUTS,
    headers: { 'Metadata-Flavor': 'Google' },
    service: METADATA,
    judge: (a) => {
      if ((a.status === 200 || a.status === 404) && a.headers['metadata-flavor'] !== 'Google') {
        return { fail: new SecretUnavailableError(read, `the answer for ${what} lacks "Metadata-Flavor: Google"`, { hint: 'something other than the metadata server answered; check the network' }) };
      }
      if (a.status === 200) return { ok: a };
      if (a.status === 404) return on404();
      return transient(a, `${what} is not available`) ?? { fail: new SecretUnavailableError(read, `${METADATA} answered HTTP ${a.status} for ${what}`) };
    },
  });
}

async function projectId(read: SecretRead): Promise<string> {
  const answer = await fromMetadata(read, 'project/project-id', 'the project id', () => ({ fail: secretRefused(read, `${METADATA} names no project`, 'give gcpSecretManager.project') }));
  const project = answer.body.toString('utf8').trim();
  if (!/^[a-z0-9][a-z0-9.:-]{4,62}$/.test(project)) throw new SecretUnavailableError(read, `${METADATA} answered a project id that is not one`, { hint: 'give gcpSecretManager.project' });
  return project;
}

/** The default service account's token, from the run's cache unless it is near expiry or `renew` is asked. */
async function accessToken(read: SecretRead, renew: boolean): Promise<string> {
  const cached = tokens.get(read.host);
  if (cached && !renew && cached.expiresAtMs - TOKEN_MARGIN_MS > Date.now()) {
    read.register(cached.value);
    return cached.value;
  }
  const answer = await fromMetadata(read, 'instance/service-accounts/default/token', 'a service account token', () => ({
    fail: secretRefused(read, 'the VM has no service account to read Secret Manager secrets with', 'attach a service account to the VM (with the cloud-platform access scope)'),
  }));
  const body = jsonBody(answer);
  const value = body?.access_token;
  const expiresIn = Number(body?.expires_in);
  if (typeof value !== 'string' || value === '') throw new SecretUnavailableError(read, `${METADATA} answered without an access_token`);
  read.register(value);
  tokens.set(read.host, { value, expiresAtMs: Date.now() + (Number.isFinite(expiresIn) ? expiresIn * 1000 : 0) });
  return value;
}

/** ": STATUS: message" from the service's error body. */
function serviceError(answer: HttpResponse): string {
  if (answer.status === 200) return '';
  const error = jsonBody(answer)?.error as { status?: unknown; message?: unknown } | undefined;
  if (!error || typeof error !== 'object') return '';
  return `, ${typeof error.status === 'string' ? error.status : 'error'}${typeof error.message === 'string' ? `: ${error.message.slice(0, 300)}` : ''}`;
}

// CRC32C (Castagnoli, reflected polynomial 0x82f63b78), as the service computes it over the payload.
const CRC32C_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0x82f63b78 : c >>> 1;
  return c >>> 0;
});
function crc32c(bytes: Uint8Array): number {
  let crc = 0xffffffff;
  for (const byte of bytes) crc = CRC32C_TABLE[(crc ^ byte) & 0xff]! ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}
