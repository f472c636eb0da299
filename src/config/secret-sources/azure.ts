// Azure Key Vault secrets, read with the VM's managed identity (a token from the instance metadata service).
// The token is asked of the metadata service for the vault's audience (system-assigned identity,
// or the user-assigned one named by clientId) and kept per run until 5 minutes before it expires.
import type { ConfigHost } from '../../host/config-host.ts';
import type { HttpResponse } from '../../host/http.ts';
import { baseUrl, IMDS_TIMEOUTS } from '../imds.ts';
import type { AzureKeyVaultReference } from '../schema/secret-field.ts';
import { jsonBody, notTheService, readCaFile, secretRefused, SecretUnavailableError, storeRequest, transient, type SecretRead, type Verdict } from './read.ts';

const VAULT_TAG = 'machineadm-key-vault';
const KEY_VAULT = 'Azure Key Vault';
const IDENTITY = 'the Azure instance metadata service (managed identity)';
// A token is used only while it has more than this left: a step may run minutes after the read.
const TOKEN_MARGIN_MS = 5 * 60_000;

interface Token {
  value: string;
  expiresAtMs: number;
}
const tokens = new WeakMap<ConfigHost, Map<string, Token>>();

/** The secret's value, from the vault the reference (or the VM's tag) names, as the VM's managed identity. */
export async function readAzureKeyVault(reference: AzureKeyVaultReference, read: SecretRead): Promise<string> {
  const { name, version } = reference;
  const ca = await readCaFile(read, reference.caFile);
  const vault = vaultUrl(read, reference.vault ?? (await vaultFromTag(read)));
  const resource = audience(vault);
  const what = `secret ${name}${version ? ` version ${version}` : ''} in vault ${vault}`;
  let renew = false;
  let renewed = false;
  let token = '';
  const judge = (answer: HttpResponse): Verdict => {
    if (answer.status === 200) {
      const body = jsonBody(answer);
      if (!body) return { fail: notTheService(read, KEY_VAULT, what, answer) };
      const value = body.value;
      return typeof value === 'string' ? { ok: answer } : { fail: new SecretUnavailableError(read, `${KEY_VAULT} answered ${what} without a string value`) };
    }
    const error = vaultError(answer, token);
    if (answer.status === 401 && !renewed) {
      // An expired or revoked token: ask the metadata service for a new one, once.
      renew = renewed = true;
      return { retry: `${KEY_VAULT} refused the token (HTTP 401)`, retryAfterMs: 0 };
    }
    if (answer.status === 401) return { fail: secretRefused(read, `${KEY_VAULT} refused the managed identity's token for ${what} (HTTP 401${error})`, `check that the vault's tenant is the VM's, and that the vault is reached at its own URL`) };
    if (answer.status === 403) {
      return {
        fail: secretRefused(read, `the VM's managed identity may not read ${what} (HTTP 403${error})`, `grant the identity${reference.clientId ? ` ${reference.clientId}` : ''} the "Key Vault Secrets User" role on the vault (or, for a vault using access policies, a policy with the "get" secret permission), and check the vault's firewall`),
      };
    }
    if (answer.status === 404) return { fail: secretRefused(read, `${what} does not exist (HTTP 404${error})`, 'check the vault, the secret\'s name and version, and that the secret is enabled') };
    if (answer.status === 400) return { fail: secretRefused(read, `${KEY_VAULT} refused the request for ${what} (HTTP 400${error})`) };
    return transient(answer, `${KEY_VAULT} could not serve ${what}`) ?? { fail: new SecretUnavailableError(read, `${KEY_VAULT} answered HTTP ${answer.status} for ${what}${error}`) };
  };
  const answer = await storeRequest(read, {
    url: `${vault}/secrets/${encodeURIComponent(name)}${version ? `/${encodeURIComponent(version)}` : ''}?api-version=7.4`,
    headers: {},
    ...(ca !== undefined ? { ca } : {}),
    service: KEY_VAULT,
    judge,
    prepare: async () => {
      token = await identityToken(read, resource, reference.clientId, renew);
      renew = false;
      return { headers: { Authorization: `Bearer ${token}`, Accept: 'application/json' } };
    },
  });
  return jsonBody(answer)?.value as string;
}

/** A vault's URL: a name is https://NAME.vault.azure.net; a URL (a sovereign cloud, a private endpoint) is used as given. */
function vaultUrl(read: SecretRead, vault: string): string {
  if (/^https:\/\//i.test(vault) && URL.canParse(vault)) return vault.replace(/\/+$/, '');
  if (/^[A-Za-z][A-Za-z0-9-]{1,22}[A-Za-z0-9]$/.test(vault)) return `https://${vault.toLowerCase()}.vault.azure.net`;
  throw secretRefused(read, `key vault ${JSON.stringify(vault)} is neither a vault name nor an https:// URL`, 'give a vault name (3-24 letters, digits and dashes) or the vault\'s URL');
}

/** The token's audience: https://vault.azure.net for NAME.vault.azure.net (and likewise in other clouds), else the vault's origin. */
function audience(vault: string): string {
  const url = new URL(vault);
  const cloud = /^[^.]+\.(vault\..+)$/.exec(url.hostname)?.[1];
  return cloud ? `https://${cloud}` : url.origin;
}

async function vaultFromTag(read: SecretRead): Promise<string> {
  const answer = await storeRequest(read, {
    url: `${baseUrl(read.host, 'azure')}/metadata/instance?api-version=2021-02-01`,
    timeouts: IMDS_TIMEOUTS,
    headers: { Metadata: 'true' },
    service: 'the Azure instance metadata service',
    judge: (a) => (a.status === 200 ? { ok: a } : (transient(a, 'the instance metadata is not available') ?? { fail: new SecretUnavailableError(read, `the Azure instance metadata service answered HTTP ${a.status} for the VM's tags`) })),
  });
  const compute = jsonBody(answer)?.compute as { tagsList?: unknown } | undefined;
  const tags = Array.isArray(compute?.tagsList) ? (compute.tagsList as Array<{ name?: unknown; value?: unknown }>) : [];
  const value = tags.find((tag) => tag?.name === VAULT_TAG)?.value;
  if (typeof value === 'string' && value.trim() !== '') return value.trim();
  throw secretRefused(read, `no key vault is named: the reference gives no vault and the VM has no tag "${VAULT_TAG}"`, `give azureKeyVault.vault, or tag the VM ${VAULT_TAG}=<vault name>`);
}

/** A managed identity token for the audience, from the run's cache unless it is near expiry or `renew` is asked. */
async function identityToken(read: SecretRead, resource: string, clientId: string | undefined, renew: boolean): Promise<string> {
  const cache = tokens.get(read.host) ?? new Map<string, Token>();
  tokens.set(read.host, cache);
  const key = `${resource}\n${clientId ?? ''}`;
  const cached = cache.get(key);
  if (cached && !renew && cached.expiresAtMs - TOKEN_MARGIN_MS > Date.now()) {
    read.register(cached.value);
    return cached.value;
  }
  const identity = clientId ? `user-assigned managed identity ${clientId}` : 'system-assigned managed identity';
  const query = new URLSearchParams({ 'api-version': '2018-02-01', resource, ...(clientId ? { client_id: clientId } : {}) });
  const answer = await storeRequest(read, {
    url: `${baseUrl(read.host, 'azure')}/metadata/identity/oauth2/token?${query.toString()}`,
    timeouts: IMDS_TIMEOUTS,
    headers: { Metadata: 'true' },
    service: IDENTITY,
    judge: (a) => {
      if (a.status === 200) return { ok: a };
      // Azure documents 404 and 410 (the service is updating) as transient, as well as 429 and 5xx.
      if (a.status === 404 || a.status === 410) return { retry: `the identity endpoint is not ready (HTTP ${a.status})` };
      const said = jsonBody(a)?.error_description;
      if (a.status === 400) {
        return {
          fail: secretRefused(read, `the VM has no ${identity} to read key vault secrets with${typeof said === 'string' ? ` (${said.slice(0, 200)})` : ''}`, clientId ? 'assign that user-assigned identity to the VM, or check clientId' : 'enable the VM\'s system-assigned identity, or give clientId of a user-assigned one'),
        };
      }
      return transient(a, 'no managed identity token') ?? { fail: new SecretUnavailableError(read, `${IDENTITY} answered HTTP ${a.status}`) };
    },
  });
  const body = jsonBody(answer);
  const value = body?.access_token;
  const expiresOn = Number(body?.expires_on);
  if (typeof value !== 'string' || value === '') throw new SecretUnavailableError(read, `${IDENTITY} answered without an access_token`);
  read.register(value);
  cache.set(key, { value, expiresAtMs: Number.isFinite(expiresOn) ? expiresOn * 1000 : 0 });
  return value;
}

/** ": CODE (INNER): message" from Key Vault's error body, without the token. */
function vaultError(answer: HttpResponse, token: string): string {
  const error = jsonBody(answer)?.error as { code?: unknown; message?: unknown; innererror?: { code?: unknown } } | undefined;
  if (!error || typeof error !== 'object') return '';
  const inner = typeof error.innererror?.code === 'string' ? ` (${error.innererror.code})` : '';
  const message = typeof error.message === 'string' ? `: ${error.message.slice(0, 300)}` : '';
  const text = `, ${typeof error.code === 'string' ? error.code : 'error'}${inner}${message}`;
  return token ? text.split(token).join('<redacted>') : text;
}
