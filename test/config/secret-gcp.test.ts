// Google Cloud Secret Manager read as the VM's service account, against a stand-in metadata
// server and store (HTTPS with a test CA): the token, the project, retries, refusals, the payload's
// CRC32C and scrubbing.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ConfigHost } from '../../src/host/config-host.ts';
import { resolveSecret, SecretScrubber } from '../../src/config/secrets.ts';
import type { GcpSecretManagerReference } from '../../src/config/schema/secret-field.ts';
import { ConfigError } from '../../src/errors.ts';
import { CA_FILE, failure, storeMachine } from './helpers/secret-reads.ts';
import { crc32cBitwise, startGcpStandIn, type GcpStandIn } from './helpers/gcp-stand-in.ts';

const FIELD = 'spec.kubernetes.bootstrapToken';
// Not ASCII, so that the payload's bytes (and their CRC32C) are not its characters.
const VALUE = 'join-tökén-0123456789';
const machine = storeMachine();
let gcp: GcpStandIn;
let host: ConfigHost;

beforeEach(async () => {
  gcp = await startGcpStandIn(machine.ca);
  gcp.secrets.set('cluster-a-prod/join-token', ['first-join-token', VALUE]);
  host = hostFor(false);
});
afterEach(() => gcp.close());

function hostFor(offline: boolean): ConfigHost {
  return machine.host(gcp.metadata.url, offline);
}

const reference = (extra: Partial<GcpSecretManagerReference> = {}): GcpSecretManagerReference => ({ secret: 'join-token', project: 'cluster-a-prod', endpoint: gcp.store.url, caFile: CA_FILE, ...extra });
const read = (extra: Partial<GcpSecretManagerReference> = {}, scrubber?: SecretScrubber) => resolveSecret({ valueFrom: { gcpSecretManager: reference(extra) } }, host, FIELD, scrubber);

/** Neither the value nor any token issued appears in the text. */
function expectNothingSecretIn(text: string): void {
  expect(text).not.toContain(VALUE);
  for (const token of gcp.issued.keys()) expect(text).not.toContain(token);
}

describe('Google Cloud Secret Manager as the service account', () => {
  it('the stand-in\'s CRC32C is Castagnoli\'s (check value of "123456789")', () => {
    expect(crc32cBitwise(Buffer.from('123456789'))).toBe(0xe3069283);
  });

  it('reads the latest version, checking its CRC32C', async () => {
    expect(await read()).toBe(VALUE);
    expect(gcp.storeRequests().map((r) => r.url)).toEqual(['/v1/projects/cluster-a-prod/secrets/join-token/versions/latest:access']);
    const [request] = gcp.storeRequests();
    expect(gcp.issued.has(String(request?.headers.authorization).replace(/^Bearer /, ''))).toBe(true);
    expect(gcp.tokenRequests().every((r) => r.headers['metadata-flavor'] === 'Google')).toBe(true);
  });

  it('refuses (exit 2) a payload that is not UTF-8 text, rather than pass on other bytes', async () => {
    gcp.secrets.set('cluster-a-prod/keytab', [Buffer.from([0x05, 0x02, 0x00, 0x47, 0x80, 0xff, 0xfe, 0x10])]);
    const error = await failure(read({ secret: 'keytab' }));
    expect(error.exitCode).toBe(2);
    expect(error.text).toContain(FIELD);
    expect(error.text).toContain('not UTF-8 text');
    expect(error.text).toContain('encoding: base64');
  });

  it('reads the version given', async () => {
    expect(await read({ version: '1' })).toBe('first-join-token');
    expect(gcp.storeRequests().map((r) => r.url)).toEqual(['/v1/projects/cluster-a-prod/secrets/join-token/versions/1:access']);
  });

  it('takes the project from the metadata server when none is given', async () => {
    gcp.project = 'other-project-7';
    gcp.secrets.set('other-project-7/join-token', ['from-the-vm-project']);
    expect(await read({ project: undefined })).toBe('from-the-vm-project');
    expect(gcp.metadata.requests.map((r) => r.url)).toContain('/computeMetadata/v1/project/project-id');
  });

  it('drops one final newline for a field, keeps it for a file, and asks the store once for both', async () => {
    // What `echo VALUE | gcloud secrets create echoed --data-file=-` stores.
    gcp.secrets.set('cluster-a-prod/echoed', [`${VALUE}\n`]);
    expect(await read({ secret: 'echoed' })).toBe(VALUE);
    expect(await resolveSecret({ valueFrom: { gcpSecretManager: reference({ secret: 'echoed' }) } }, host, 'spec.files[0].content', undefined, { exact: true })).toBe(`${VALUE}\n`);
    expect(gcp.storeRequests()).toHaveLength(1);
  });

  it('keeps the token for the run: a second secret asks no new one', async () => {
    gcp.secrets.set('cluster-a-prod/other', ['other-secret-value']);
    expect(await read()).toBe(VALUE);
    expect(await read({ secret: 'other' })).toBe('other-secret-value');
    expect(gcp.tokenRequests()).toHaveLength(1);
    expect(gcp.storeRequests()).toHaveLength(2);
  });

  it('retries a store that throttles twice, waiting as Retry-After asks', async () => {
    gcp.retryAfterSeconds = 3;
    gcp.inject('throttle', 2);
    expect(await read()).toBe(VALUE);
    expect(gcp.storeRequests()).toHaveLength(3);
    expect(gcp.tokenRequests()).toHaveLength(1);
    expect(machine.waits).toHaveLength(2);
    for (const wait of machine.waits) expect(wait).toBeGreaterThanOrEqual(3000);
  });

  it('fails (exit 1) at once on a 200 that is not JSON (a sign-in page of a proxy), saying something other than the service answered, without retrying', async () => {
    gcp.inject('login-page', 6);
    const error = await failure(read());
    expect(error.exitCode).toBe(1);
    expect(error.text).toContain(FIELD);
    expect(error.text).toContain('not JSON');
    expect(error.text).toContain('something other than the service answered');
    expect(gcp.storeRequests()).toHaveLength(1);
    expect(machine.waits).toHaveLength(0);
  });

  it('retries a 503', async () => {
    gcp.inject('unavailable', 2);
    expect(await read()).toBe(VALUE);
    expect(gcp.storeRequests()).toHaveLength(3);
  });

  it('gives up (exit 1) naming the field and the secret when throttling outlasts the budget', async () => {
    gcp.inject('throttle', 100);
    const error = await failure(read());
    expect(error.exitCode).toBe(1);
    expect(error.text).toContain(FIELD);
    expect(error.text).toContain('secret join-token');
    expect(error.text).toContain('429');
    expect(gcp.storeRequests()).toHaveLength(6);
    expectNothingSecretIn(error.text);
  });

  it('refuses (exit 2) a secret the service account may not access, naming project, secret and version, without value or token', async () => {
    gcp.denied.add('cluster-a-prod/join-token');
    const error = await failure(read({ version: '2' }));
    expect(error.exitCode).toBe(2);
    expect(error).toBeInstanceOf(ConfigError);
    expect(error.text).toContain(FIELD);
    expect(error.text).toContain('secret join-token version 2 in project cluster-a-prod');
    expect(error.text).toContain('PERMISSION_DENIED');
    expect(error.text).toContain('roles/secretmanager.secretAccessor');
    expect(gcp.storeRequests()).toHaveLength(1);
    expectNothingSecretIn(error.text);
  });

  it.each([
    ['a secret that does not exist', { secret: 'missing' }],
    ['a version that does not exist', { version: '9' }],
  ])('refuses (exit 2) %s without retrying', async (_, extra) => {
    const error = await failure(read(extra));
    expect(error.exitCode).toBe(2);
    expect(error.text).toContain('NOT_FOUND');
    expect(error.text).toContain(FIELD);
    expect(gcp.storeRequests()).toHaveLength(1);
  });

  it('gets a new token once when the store says the token expired', async () => {
    gcp.inject('expired');
    expect(await read()).toBe(VALUE);
    expect(gcp.tokenRequests()).toHaveLength(2);
    const used = gcp.storeRequests().map((r) => r.headers.authorization);
    expect(used).toHaveLength(2);
    expect(used[0]).not.toBe(used[1]);
  });

  it('refuses (exit 2) when the token is refused again after a new one', async () => {
    gcp.inject('expired', 2);
    const error = await failure(read());
    expect(error.exitCode).toBe(2);
    expect(error.text).toContain('UNAUTHENTICATED');
    expect(gcp.tokenRequests()).toHaveLength(2);
    expectNothingSecretIn(error.text);
  });

  it('refuses (exit 2) when the VM has no service account', async () => {
    gcp.serviceAccount = false;
    const error = await failure(read());
    expect(error.exitCode).toBe(2);
    expect(error.text).toContain(FIELD);
    expect(error.text).toContain('no service account');
    expect(gcp.storeRequests()).toHaveLength(0);
  });

  it('fails (exit 1) on a payload whose CRC32C does not match', async () => {
    gcp.inject('bad-crc');
    const error = await failure(read());
    expect(error.exitCode).toBe(1);
    expect(error.text).toContain(FIELD);
    expect(error.text).toContain('CRC32C');
    expectNothingSecretIn(error.text);
  });

  it('refuses (exit 2) with --offline and sends nothing', async () => {
    host = hostFor(true);
    const error = await failure(read({ project: undefined }));
    expect(error.exitCode).toBe(2);
    expect(error.text).toContain('--offline');
    expect(gcp.metadata.requests).toHaveLength(0);
    expect(gcp.storeRequests()).toHaveLength(0);
  });

  it('registers the value and the token with the scrubber', async () => {
    const scrubber = new SecretScrubber();
    expect(await read({}, scrubber)).toBe(VALUE);
    const [token] = [...gcp.issued.keys()];
    expect(token).toBeDefined();
    expect(scrubber.scrub(`value=${VALUE} header=Bearer ${token}`)).toBe('value=<redacted> header=Bearer <redacted>');
  });

  it('fails (exit 1) on a store whose certificate is not trusted, without caFile', async () => {
    const error = await failure(read({ caFile: undefined }));
    expect(error.exitCode).toBe(1);
    expect(error.text).toContain(FIELD);
    expect(error.text).toContain('caFile');
  });
});
