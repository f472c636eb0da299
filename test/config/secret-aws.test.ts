// AWS Secrets Manager and SSM Parameter Store read as the instance role, against a stand-in IMDSv2
// and service (HTTPS with a test CA) that checks every SigV4 signature with the AWS SDK's signer:
// credentials, region, retries, refusals and what is scrubbed.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ConfigHost } from '../../src/host/config-host.ts';
import { resolveSecret, SecretScrubber } from '../../src/config/secrets.ts';
import type { AwsParameterStoreReference, AwsSecretsManagerReference } from '../../src/config/schema/secret-field.ts';
import { ConfigError } from '../../src/errors.ts';
import { CA_FILE, failure, storeMachine } from './helpers/secret-reads.ts';
import { AWS_REGION, startAwsStandIn, type AwsStandIn } from './helpers/aws-stand-in.ts';

const FIELD = 'spec.kubernetes.bootstrapToken';
const VALUE = 'abcdef.0123456789abcdef';
const machine = storeMachine();
let aws: AwsStandIn;
let host: ConfigHost;

beforeEach(async () => {
  aws = await startAwsStandIn(machine.ca);
  aws.secrets.set('prod/cluster-a/join-token', VALUE);
  aws.parameters.set('/cluster-a/join-token', VALUE);
  host = hostFor(false);
});
afterEach(() => aws.close());

function hostFor(offline: boolean): ConfigHost {
  return machine.host(aws.imds.url, offline);
}

const sm = (extra: Partial<AwsSecretsManagerReference> = {}): AwsSecretsManagerReference => ({ secretId: 'prod/cluster-a/join-token', endpoint: aws.service.url, caFile: CA_FILE, ...extra });
const ssm = (extra: Partial<AwsParameterStoreReference> = {}): AwsParameterStoreReference => ({ name: '/cluster-a/join-token', endpoint: aws.service.url, caFile: CA_FILE, ...extra });
const readSm = (extra: Partial<AwsSecretsManagerReference> = {}, scrubber?: SecretScrubber) => resolveSecret({ valueFrom: { awsSecretsManager: sm(extra) } }, host, FIELD, scrubber);
const readSsm = (extra: Partial<AwsParameterStoreReference> = {}, scrubber?: SecretScrubber) => resolveSecret({ valueFrom: { awsParameterStore: ssm(extra) } }, host, FIELD, scrubber);

function expectNothingSecretIn(text: string): void {
  expect(text).not.toContain(VALUE);
  for (const c of aws.issued) {
    expect(text).not.toContain(c.secretAccessKey);
    expect(text).not.toContain(c.sessionToken);
  }
  for (const session of aws.sessions) expect(text).not.toContain(session);
}

describe('AWS Secrets Manager as the instance role', () => {
  it('reads a secret with IMDSv2 credentials and a signature the SDK\'s signer agrees with', async () => {
    expect(await readSm()).toBe(VALUE);
    const [call] = aws.calls();
    expect(call?.target).toBe('secretsmanager.GetSecretValue');
    expect(call?.body).toEqual({ SecretId: 'prod/cluster-a/join-token' });
    expect(String(call?.headers.authorization)).toContain(`/${AWS_REGION}/secretsmanager/aws4_request`);
    expect(call?.headers['x-amz-security-token']).toBe(aws.issued[0]?.sessionToken);
    // The region came from the instance's metadata, with an IMDSv2 session token.
    const imdsPaths = aws.imds.requests.map((r) => `${r.method} ${r.url}`);
    expect(imdsPaths).toContain('PUT /latest/api/token');
    expect(imdsPaths).toContain('GET /latest/meta-data/placement/region');
    expect(imdsPaths).toContain('GET /latest/meta-data/iam/security-credentials/machineadm-node');
  });

  it('signs for the region the reference names, which the service then refuses when it is not its own', async () => {
    const error = await failure(readSm({ region: 'us-east-2' }));
    expect(error.exitCode).toBe(1);
    expect(error.text).toContain('InvalidSignatureException');
    expect(error.text).toContain('clock');
    expect(aws.imds.requests.some((r) => r.url.endsWith('placement/region'))).toBe(false);
  });

  it('takes a key of a JSON secret, and scrubs the other keys\' values too', async () => {
    aws.secrets.set('db', JSON.stringify({ username: 'kubeadmin', password: 'pa55-w0rd-value', api: 'other-api-key-1' }));
    const scrubber = new SecretScrubber();
    expect(await readSm({ secretId: 'db', jsonKey: 'password' }, scrubber)).toBe('pa55-w0rd-value');
    expect(scrubber.scrub('pw pa55-w0rd-value api other-api-key-1')).not.toMatch(/pa55|other-api/);
  });

  it('refuses (exit 2) a jsonKey the secret lacks, naming the keys but no value', async () => {
    aws.secrets.set('db', JSON.stringify({ username: 'kubeadmin', password: 'pa55-w0rd-value' }));
    const error = await failure(readSm({ secretId: 'db', jsonKey: 'token' }));
    expect(error.exitCode).toBe(2);
    expect(error.text).toContain('"username", "password"');
    expect(error.text).not.toContain('pa55-w0rd-value');
    expect(error.text).not.toContain('kubeadmin');
  });

  it('reads a binary secret as its bytes', async () => {
    aws.secrets.set('bin', Buffer.from('binary-held-value\n'));
    expect(await resolveSecret({ valueFrom: { awsSecretsManager: sm({ secretId: 'bin' }) } }, host, FIELD, undefined, { exact: true })).toBe('binary-held-value\n');
  });

  it('refuses (exit 2) a binary secret that is not UTF-8 text, rather than pass on other bytes', async () => {
    aws.secrets.set('keytab', Buffer.from([0x05, 0x02, 0x00, 0x00, 0x00, 0x47, 0x80, 0xff, 0xfe, 0x10]));
    const error = await failure(resolveSecret({ valueFrom: { awsSecretsManager: sm({ secretId: 'keytab' }) } }, host, FIELD, undefined, { exact: true }));
    expect(error.exitCode).toBe(2);
    expect(error.text).toContain(FIELD);
    expect(error.text).toContain('not UTF-8 text');
    expect(error.text).toContain('encoding: base64');
  });

  it('drops one final newline for a field, keeps it for a file, and asks the store once for both', async () => {
    // What `aws secretsmanager create-secret --secret-string file://token.txt` stores from a file written with echo.
    aws.secrets.set('echoed', `${VALUE}\n`);
    expect(await readSm({ secretId: 'echoed' })).toBe(VALUE);
    expect(await resolveSecret({ valueFrom: { awsSecretsManager: sm({ secretId: 'echoed' }) } }, host, 'spec.files[0].content', undefined, { exact: true })).toBe(`${VALUE}\n`);
    expect(aws.calls()).toHaveLength(1);
  });

  it('keeps the credentials and region for the run: a second secret asks IMDS nothing', async () => {
    aws.secrets.set('other', 'other-secret-value');
    await readSm();
    const asked = aws.imds.requests.length;
    expect(await readSm({ secretId: 'other' })).toBe('other-secret-value');
    expect(aws.imds.requests).toHaveLength(asked);
    expect(aws.issued).toHaveLength(1);
  });

  it('retries throttling twice, waiting as Retry-After asks, signing each attempt anew', async () => {
    aws.retryAfterSeconds = 2;
    aws.inject('throttle', 2);
    expect(await readSm()).toBe(VALUE);
    expect(aws.calls()).toHaveLength(3);
    expect(machine.waits).toHaveLength(2);
    for (const wait of machine.waits) expect(wait).toBeGreaterThanOrEqual(2000);
  });

  it('waits the whole Retry-After a throttling store asks for, beyond the 10 s its own backoff stops at', async () => {
    aws.retryAfterSeconds = 30;
    aws.inject('throttle', 1);
    expect(await readSm()).toBe(VALUE);
    expect(aws.calls()).toHaveLength(2);
    expect(machine.waits).toHaveLength(1);
    expect(machine.waits[0]).toBeGreaterThanOrEqual(30_000);
  });

  it('gives up (exit 1) at once, without waiting, when Retry-After asks for longer than the 60 s budget leaves', async () => {
    aws.retryAfterSeconds = 90;
    aws.inject('throttle', 100);
    const error = await failure(readSm());
    expect(error.exitCode).toBe(1);
    expect(error.text).toContain(FIELD);
    expect(error.text).toContain('ThrottlingException');
    expect(error.text).toContain('asked to wait 90 s');
    expect(aws.calls()).toHaveLength(1);
    expect(machine.waits).toEqual([]);
  });

  it('retries an internal error', async () => {
    aws.inject('unavailable');
    expect(await readSm()).toBe(VALUE);
    expect(aws.calls()).toHaveLength(2);
  });

  it('gives up (exit 1) naming the field, the secret and the throttling when it outlasts the budget', async () => {
    aws.inject('throttle', 100);
    const error = await failure(readSm());
    expect(error.exitCode).toBe(1);
    expect(error.text).toContain(FIELD);
    expect(error.text).toContain('prod/cluster-a/join-token');
    expect(error.text).toContain('ThrottlingException');
    expect(aws.calls()).toHaveLength(6);
    expectNothingSecretIn(error.text);
  });

  it('fails (exit 1) at once on an answer larger than any secret, saying so, without retrying', async () => {
    aws.inject('oversized', 6);
    const error = await failure(readSm());
    expect(error.exitCode).toBe(1);
    expect(error.text).toContain(FIELD);
    expect(error.text).toContain('larger than');
    expect(error.text).not.toContain('did not answer');
    expect(aws.calls()).toHaveLength(1);
    expect(machine.waits).toHaveLength(0);
  });

  it('fails (exit 1) at once on a 200 that is not JSON (a sign-in page of a proxy), saying something other than the service answered, without retrying', async () => {
    aws.inject('login-page', 6);
    const error = await failure(readSm());
    expect(error.exitCode).toBe(1);
    expect(error.text).toContain(FIELD);
    expect(error.text).toContain('not JSON');
    expect(error.text).toContain('something other than the service answered');
    expect(aws.calls()).toHaveLength(1);
    expect(machine.waits).toHaveLength(0);
  });

  it('asks IMDS for new credentials once when the service says the token expired', async () => {
    aws.inject('expired');
    expect(await readSm()).toBe(VALUE);
    expect(aws.issued).toHaveLength(2);
    const keys = aws.calls().map((c) => c.headers['x-amz-security-token']);
    expect(keys[0]).not.toBe(keys[1]);
  });

  it('fails (exit 1) when even fresh credentials are refused as expired', async () => {
    aws.inject('expired', 2);
    const error = await failure(readSm());
    expect(error.exitCode).toBe(1);
    expect(error.text).toContain('ExpiredTokenException');
    expect(aws.issued).toHaveLength(2);
    expectNothingSecretIn(error.text);
  });

  it('refuses (exit 2) a secret the role may not read, naming the action, without retrying', async () => {
    aws.denied.add('prod/cluster-a/join-token');
    const error = await failure(readSm());
    expect(error.exitCode).toBe(2);
    expect(error).toBeInstanceOf(ConfigError);
    expect(error.text).toContain(FIELD);
    expect(error.text).toContain('AccessDeniedException');
    expect(error.text).toContain('secretsmanager:GetSecretValue');
    expect(aws.calls()).toHaveLength(1);
    expectNothingSecretIn(error.text);
  });

  it('refuses (exit 2) a secret that does not exist, naming it and the region', async () => {
    const error = await failure(readSm({ secretId: 'prod/missing' }));
    expect(error.exitCode).toBe(2);
    expect(error.text).toContain('prod/missing');
    expect(error.text).toContain('ResourceNotFoundException');
    expect(error.text).toContain(AWS_REGION);
    expect(aws.calls()).toHaveLength(1);
  });

  it('refuses (exit 2) a secret whose KMS key the role may not use, naming kms:Decrypt', async () => {
    aws.undecryptable.add('prod/cluster-a/join-token');
    const error = await failure(readSm());
    expect(error.exitCode).toBe(2);
    expect(error.text).toContain('DecryptionFailure');
    expect(error.text).toContain('kms:Decrypt');
  });

  it('refuses (exit 2) on an instance without an IAM role, before asking the service', async () => {
    aws.role = undefined;
    const error = await failure(readSm());
    expect(error.exitCode).toBe(2);
    expect(error.text).toContain('no IAM role');
    expect(error.text).toContain('instance profile');
    expect(aws.calls()).toHaveLength(0);
  });

  it('refuses (exit 2) with --offline and sends nothing', async () => {
    host = hostFor(true);
    const error = await failure(readSm());
    expect(error.exitCode).toBe(2);
    expect(error.text).toContain('--offline');
    expect(aws.imds.requests).toHaveLength(0);
    expect(aws.calls()).toHaveLength(0);
  });

  it('fails (exit 1) without a retry on an endpoint whose certificate it does not trust', async () => {
    const error = await failure(readSm({ caFile: undefined }));
    expect(error.exitCode).toBe(1);
    expect(error.text).toContain('caFile');
    expect(aws.calls()).toHaveLength(0);
    expect(machine.waits).toHaveLength(0);
  });

  it.each([
    ['the CA in DER, not PEM', () => Buffer.from(machine.ca.caPem.replace(/-----[A-Z ]+-----|\s/g, ''), 'base64')],
    ['a private key', () => '-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIO8fq6jF5Yf1qW0kQn2d5Gx2kqkV6t2b3c4d5e6f7g8h\n-----END PRIVATE KEY-----\n'],
  ])('refuses (exit 2) a caFile that holds no PEM certificate (%s), naming it, before asking the service', async (_, content) => {
    writeFileSync(join(machine.root, 'etc/ssl/not-a-ca.pem'), content());
    const error = await failure(readSm({ caFile: '/etc/ssl/not-a-ca.pem' }));
    expect(error.exitCode).toBe(2);
    expect(error.text).toContain(FIELD);
    expect(error.text).toContain('caFile /etc/ssl/not-a-ca.pem');
    expect(error.text).toContain('BEGIN CERTIFICATE');
    expect(aws.calls()).toHaveLength(0);
    expect(machine.waits).toHaveLength(0);
  });

  it('retries a metadata service that is not up yet', async () => {
    const imdsUrl = aws.imds.url;
    await aws.imds.close();
    host = machine.host(imdsUrl);
    const error = await failure(readSm());
    expect(error.exitCode).toBe(1);
    expect(error.text).toContain('instance metadata');
    expect(machine.waits.length).toBeGreaterThanOrEqual(3);
  });
});

describe('AWS Systems Manager Parameter Store as the instance role', () => {
  it('reads a SecureString WithDecryption, signed for ssm', async () => {
    expect(await readSsm()).toBe(VALUE);
    const [call] = aws.calls();
    expect(call?.target).toBe('AmazonSSM.GetParameter');
    expect(call?.body).toEqual({ Name: '/cluster-a/join-token', WithDecryption: true });
    expect(String(call?.headers.authorization)).toContain(`/${AWS_REGION}/ssm/aws4_request`);
  });

  it('refuses (exit 2) a parameter that does not exist', async () => {
    const error = await failure(readSsm({ name: '/cluster-a/missing' }));
    expect(error.exitCode).toBe(2);
    expect(error.text).toContain('ParameterNotFound');
    expect(error.text).toContain('/cluster-a/missing');
  });

  it('refuses (exit 2) a parameter the role may not read, naming ssm:GetParameter', async () => {
    aws.denied.add('/cluster-a/join-token');
    const error = await failure(readSsm());
    expect(error.exitCode).toBe(2);
    expect(error.text).toContain('ssm:GetParameter');
    expectNothingSecretIn(error.text);
  });

  it('registers the value and the credentials with the scrubber', async () => {
    const scrubber = new SecretScrubber();
    await readSsm({}, scrubber);
    const [credentials] = aws.issued;
    const scrubbed = scrubber.scrub(`v=${VALUE} k=${credentials?.secretAccessKey} t=${credentials?.sessionToken} s=${aws.sessions[0]}`);
    expectNothingSecretIn(scrubbed);
  });
});
