// Azure Key Vault secrets read as the VM's managed identity, against a stand-in metadata service
// and vault (HTTPS with a test CA): the token, the vault's audience, retries, refusals and scrubbing.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ConfigHost } from '../../src/host/config-host.ts';
import { resolveSecret, SecretScrubber } from '../../src/config/secrets.ts';
import type { AzureKeyVaultReference } from '../../src/config/schema/secret-field.ts';
import { ConfigError } from '../../src/errors.ts';
import { CA_FILE, failure, storeMachine } from './helpers/secret-reads.ts';
import { startAzureStandIn, type AzureStandIn } from './helpers/azure-stand-in.ts';

const FIELD = 'spec.kubernetes.bootstrapToken';
const VALUE = 'abcdef.0123456789abcdef';
const CLIENT_ID = '6f1a9c3e-2b4d-4e8f-9a0b-1c2d3e4f5a6b';
const machine = storeMachine();
let azure: AzureStandIn;
let host: ConfigHost;

beforeEach(async () => {
  azure = await startAzureStandIn(machine.ca);
  azure.secrets.set('join-token', [
    { version: '0123456789abcdef0123456789abcdef', value: 'old-join-token-value' },
    { version: 'fedcba9876543210fedcba9876543210', value: VALUE },
  ]);
  host = hostFor(false);
});
afterEach(() => azure.close());

function hostFor(offline: boolean): ConfigHost {
  return machine.host(azure.imds.url, offline);
}

const reference = (extra: Partial<AzureKeyVaultReference> = {}): AzureKeyVaultReference => ({ vault: azure.vault.url, name: 'join-token', caFile: CA_FILE, ...extra });
const read = (extra: Partial<AzureKeyVaultReference> = {}, scrubber?: SecretScrubber) => resolveSecret({ valueFrom: { azureKeyVault: reference(extra) } }, host, FIELD, scrubber);

/** Neither the value nor any token issued appears in the text. */
function expectNothingSecretIn(text: string): void {
  expect(text).not.toContain(VALUE);
  for (const token of azure.issued.keys()) expect(text).not.toContain(token);
}

describe('Azure Key Vault as the managed identity', () => {
  it('reads the current version with a token for the vault\'s audience', async () => {
    expect(await read()).toBe(VALUE);
    const [token] = azure.tokenRequests();
    expect(token?.get('resource')).toBe(azure.vault.url);
    expect(token?.has('client_id')).toBe(false);
    expect(azure.vaultRequests().map((r) => r.url)).toEqual(['/secrets/join-token?api-version=7.4']);
  });

  it('reads the version given', async () => {
    expect(await read({ version: '0123456789abcdef0123456789abcdef' })).toBe('old-join-token-value');
    expect(azure.vaultRequests().map((r) => r.url)).toEqual(['/secrets/join-token/0123456789abcdef0123456789abcdef?api-version=7.4']);
  });

  it('takes the vault from the VM\'s machineadm-key-vault tag when none is given', async () => {
    azure.tags.push({ name: 'env', value: 'prod' }, { name: 'machineadm-key-vault', value: azure.vault.url });
    expect(await read({ vault: undefined })).toBe(VALUE);
    expect(azure.imds.requests.some((r) => r.url === '/metadata/instance?api-version=2021-02-01' && r.headers.metadata === 'true')).toBe(true);
  });

  it('refuses (exit 2) when neither the reference nor a tag names the vault', async () => {
    const error = await failure(read({ vault: undefined }));
    expect(error.exitCode).toBe(2);
    expect(error.text).toContain('machineadm-key-vault');
    expect(error.text).toContain(FIELD);
    expect(azure.vaultRequests()).toHaveLength(0);
  });

  it('asks for the user-assigned identity named by clientId', async () => {
    azure.identity = { system: false, userAssigned: [CLIENT_ID] };
    expect(await read({ clientId: CLIENT_ID })).toBe(VALUE);
    expect(azure.tokenRequests().map((q) => q.get('client_id'))).toEqual([CLIENT_ID]);
    expect([...azure.issued.values()].map((w) => w.clientId)).toEqual([CLIENT_ID]);
  });

  it('drops one final newline for a field, keeps it for a file, and asks the vault once for both', async () => {
    // What `az keyvault secret set --file token.txt` stores from a file written with echo.
    azure.secrets.set('echoed', [{ version: '00112233445566778899aabbccddeeff', value: `${VALUE}\n` }]);
    expect(await read({ name: 'echoed' })).toBe(VALUE);
    expect(await resolveSecret({ valueFrom: { azureKeyVault: reference({ name: 'echoed' }) } }, host, 'spec.files[0].content', undefined, { exact: true })).toBe(`${VALUE}\n`);
    expect(azure.vaultRequests()).toHaveLength(1);
  });

  it('keeps the token for the run: a second secret asks no new one', async () => {
    azure.secrets.set('other', [{ version: '1', value: 'other-secret-value' }]);
    expect(await read()).toBe(VALUE);
    expect(await read({ name: 'other' })).toBe('other-secret-value');
    expect(azure.tokenRequests()).toHaveLength(1);
    expect(azure.vaultRequests()).toHaveLength(2);
  });

  it('retries a vault that throttles twice, waiting as Retry-After asks', async () => {
    azure.retryAfterSeconds = 2;
    azure.inject('throttle', 2);
    expect(await read()).toBe(VALUE);
    expect(azure.vaultRequests()).toHaveLength(3);
    expect(azure.tokenRequests()).toHaveLength(1);
    expect(machine.waits).toHaveLength(2);
    for (const wait of machine.waits) expect(wait).toBeGreaterThanOrEqual(2000);
  });

  it('fails (exit 1) at once on a 200 that is not JSON (a sign-in page of a proxy), saying something other than the service answered, without retrying', async () => {
    azure.inject('login-page', 6);
    const error = await failure(read());
    expect(error.exitCode).toBe(1);
    expect(error.text).toContain(FIELD);
    expect(error.text).toContain('not JSON');
    expect(error.text).toContain('something other than the service answered');
    expect(azure.vaultRequests()).toHaveLength(1);
    expect(machine.waits).toHaveLength(0);
  });

  it('retries a 503 and an identity endpoint that answers 410 while it updates', async () => {
    azure.identityFaults.push(410, 404);
    azure.inject('unavailable');
    expect(await read()).toBe(VALUE);
    expect(azure.tokenRequests()).toHaveLength(3);
    expect(azure.vaultRequests()).toHaveLength(2);
  });

  it('gives up (exit 1) naming the field and the secret when throttling outlasts the budget', async () => {
    azure.inject('throttle', 100);
    const error = await failure(read());
    expect(error.exitCode).toBe(1);
    expect(error.text).toContain(FIELD);
    expect(error.text).toContain('join-token');
    expect(error.text).toContain('429');
    expect(azure.vaultRequests()).toHaveLength(6);
    expectNothingSecretIn(error.text);
  });

  it('refuses (exit 2) a secret the identity may not read, naming vault, secret and code, without value or token', async () => {
    azure.denied.add('join-token');
    const error = await failure(read());
    expect(error.exitCode).toBe(2);
    expect(error).toBeInstanceOf(ConfigError);
    expect(error.text).toContain(FIELD);
    expect(error.text).toContain('secret join-token');
    expect(error.text).toContain(azure.vault.url);
    expect(error.text).toContain('Forbidden (ForbiddenByRbac)');
    expect(error.text).toContain('Key Vault Secrets User');
    expect(azure.vaultRequests()).toHaveLength(1);
    expectNothingSecretIn(error.text);
  });

  it.each([
    ['a secret that does not exist', { name: 'missing' }],
    ['a version that does not exist', { version: 'ffffffffffffffffffffffffffffffff' }],
  ])('refuses (exit 2) %s without retrying', async (_, extra) => {
    const error = await failure(read(extra));
    expect(error.exitCode).toBe(2);
    expect(error.text).toContain('SecretNotFound');
    expect(error.text).toContain(FIELD);
    expect(azure.vaultRequests()).toHaveLength(1);
  });

  it('gets a new token once when the vault says the token expired', async () => {
    azure.inject('expired');
    expect(await read()).toBe(VALUE);
    expect(azure.tokenRequests()).toHaveLength(2);
    const used = azure.vaultRequests().map((r) => r.headers.authorization);
    expect(used).toHaveLength(2);
    expect(used[0]).not.toBe(used[1]);
  });

  it('refuses (exit 2) when the token is refused again after a new one', async () => {
    azure.inject('expired', 2);
    const error = await failure(read());
    expect(error.exitCode).toBe(2);
    expect(error.text).toContain('401');
    expect(azure.tokenRequests()).toHaveLength(2);
    expectNothingSecretIn(error.text);
  });

  it.each([
    ['the VM has no system-assigned identity', { system: false, userAssigned: [] }, {}],
    ['the VM lacks the user-assigned identity named', { system: true, userAssigned: [] }, { clientId: CLIENT_ID }],
  ])('refuses (exit 2) when %s', async (_, identity, extra) => {
    azure.identity = identity;
    const error = await failure(read(extra));
    expect(error.exitCode).toBe(2);
    expect(error.text).toContain(FIELD);
    expect(error.text).toContain('Identity not found');
    expect(azure.vaultRequests()).toHaveLength(0);
  });

  it('refuses (exit 2) with --offline and sends nothing', async () => {
    host = hostFor(true);
    const error = await failure(read({ vault: undefined }));
    expect(error.exitCode).toBe(2);
    expect(error.text).toContain('--offline');
    expect(azure.imds.requests).toHaveLength(0);
    expect(azure.vaultRequests()).toHaveLength(0);
  });

  it('registers the value and the token with the scrubber', async () => {
    const scrubber = new SecretScrubber();
    expect(await read({}, scrubber)).toBe(VALUE);
    const [token] = [...azure.issued.keys()];
    const scrubbed = scrubber.scrub(`value=${VALUE} header=Bearer ${token}`);
    expect(token).toBeDefined();
    expect(scrubbed).toBe('value=<redacted> header=Bearer <redacted>');
  });

  it('fails (exit 1) on a vault whose certificate is not trusted, without caFile', async () => {
    const error = await failure(read({ caFile: undefined }));
    expect(error.exitCode).toBe(1);
    expect(error.text).toContain(FIELD);
    expect(error.text).toContain('caFile');
  });

  it('sends the Metadata header the metadata service requires', async () => {
    await read();
    expect(azure.imds.requests.every((r) => r.headers.metadata === 'true')).toBe(true);
  });
});
