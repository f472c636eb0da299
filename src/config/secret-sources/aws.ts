// AWS Secrets Manager and SSM Parameter Store, read as the instance role: credentials from IMDSv2,
// each request signed with SigV4 (aws4) over the service's JSON 1.1 protocol. The credentials and
// the region are kept per run; credentials until 5 minutes before they expire, or until a service
// says they have (then they are asked for again, once).
import { isUtf8 } from 'node:buffer';
import aws4 from 'aws4';
import type { ConfigHost } from '../../host/config-host.ts';
import type { HttpResponse } from '../../host/http.ts';
import type { MachineadmError } from '../../errors.ts';
import { baseUrl, IMDS_TIMEOUTS } from '../imds.ts';
import type { AwsParameterStoreReference, AwsSecretsManagerReference } from '../schema/secret-field.ts';
import { jsonBody, notTheService, NOT_UTF8, readCaFile, retryAfter, secretRefused, SecretUnavailableError, storeRequest, transient, type SecretRead, type Verdict } from './read.ts';

const IMDS = 'the EC2 instance metadata service (IMDSv2)';
const CREDENTIALS_MARGIN_MS = 5 * 60_000;

interface Credentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken: string;
  expiresAtMs: number;
}
interface InstanceIdentity {
  credentials?: Credentials;
  region?: string;
}
const identities = new WeakMap<ConfigHost, InstanceIdentity>();

interface Service {
  /** The name in messages. */
  name: string;
  /** SigV4's service name and the endpoint's first label. */
  signingName: 'secretsmanager' | 'ssm';
  target: string;
  body: Record<string, unknown>;
  what: string;
  /** The IAM action the role needs. */
  action: string;
  notFound: readonly string[];
  /** The value from the service's answer, or a final failure. */
  value: (answer: Record<string, unknown>) => string | { fail: string; hint?: string };
}

type AwsReference = { awsSecretsManager: AwsSecretsManagerReference } | { awsParameterStore: AwsParameterStoreReference };

/** The secret's value, read as the instance role. */
export async function readAwsSecret(reference: AwsReference, read: SecretRead): Promise<string> {
  const service = 'awsSecretsManager' in reference ? secretsManager(reference.awsSecretsManager, read) : parameterStore(reference.awsParameterStore);
  const target = 'awsSecretsManager' in reference ? reference.awsSecretsManager : reference.awsParameterStore;
  const ca = await readCaFile(read, target.caFile);
  const region = target.region ?? (await instanceRegion(read));
  const endpoint = new URL(target.endpoint ?? `https://${service.signingName}.${region}.amazonaws.com${region.startsWith('cn-') ? '.cn' : ''}`);
  const body = JSON.stringify(service.body);
  let renew = false;
  let renewed = false;
  let value = '';
  const judge = (answer: HttpResponse): Verdict => {
    const parsed = jsonBody(answer);
    if (answer.status === 200) {
      if (!parsed) return { fail: notTheService(read, service.name, service.what, answer) };
      const found = service.value(parsed);
      if (typeof found !== 'string') return { fail: secretRefused(read, `${service.name} answered ${service.what} with ${found.fail}`, found.hint) };
      value = found;
      return { ok: answer };
    }
    const { type, message } = awsError(answer, parsed);
    const said = `HTTP ${answer.status} ${type}${message ? `: ${message}` : ''}`;
    if (/^(ExpiredToken|ExpiredTokenException|UnrecognizedClientException|InvalidClientTokenId)$/.test(type)) {
      if (!renewed) {
        // The instance role's credentials rotated under us: ask the metadata service again, once.
        renew = renewed = true;
        return { retry: `${service.name} refused the credentials (${type})`, retryAfterMs: 0 };
      }
      return { fail: new SecretUnavailableError(read, `${service.name} refused the instance role's fresh credentials (${said})`, { hint: 'check the machine\'s clock and the instance profile' }) };
    }
    if (/Throttl|TooManyRequests|RequestLimitExceeded/.test(type)) return { retry: `${service.name} is throttling reads of ${service.what} (${said})`, ...retryAfter(answer) };
    if (type === 'AccessDeniedException') return { fail: secretRefused(read, `the instance role may not read ${service.what} (${said})`, `allow ${service.action} on it in the instance profile's policy (and kms:Decrypt on its key when that is a customer managed key)`) };
    if (service.notFound.includes(type)) return { fail: secretRefused(read, `${service.what} does not exist in ${region} (${said})`, 'check the name, the region and the account') };
    if (/KMS|Decryption|InvalidKeyId/.test(type)) return { fail: secretRefused(read, `${service.name} cannot decrypt ${service.what} for the instance role (${said})`, 'allow kms:Decrypt on the secret\'s key for the instance profile, and check that the key is enabled') };
    if (/Signature/.test(type)) return { fail: new SecretUnavailableError(read, `${service.name} refused the request's signature (${said})`, { hint: 'a signature is valid for 5 minutes: check the machine\'s clock (NTP)' }) };
    if (answer.status >= 400 && answer.status < 500 && !/^(RequestTimeout|RequestTimeoutException)$/.test(type)) return { fail: secretRefused(read, `${service.name} refused to give ${service.what} (${said})`) };
    return transient(answer, `${service.name} could not serve ${service.what}${type ? ` (${type})` : ''}`) ?? { fail: new SecretUnavailableError(read, `${service.name} answered ${said}`) };
  };
  await storeRequest(read, {
    url: endpoint.href,
    method: 'POST',
    headers: {},
    body,
    ...(ca !== undefined ? { ca } : {}),
    service: service.name,
    judge,
    prepare: async () => {
      const credentials = await instanceCredentials(read, renew);
      renew = false;
      // Signed anew for each attempt: a signature carries the time it was made.
      const signed = aws4.sign(
        {
          host: endpoint.host,
          path: endpoint.pathname,
          method: 'POST',
          service: service.signingName,
          region,
          headers: { 'Content-Type': 'application/x-amz-json-1.1', 'X-Amz-Target': service.target },
          body,
        },
        credentials,
      );
      return { headers: signed.headers as Record<string, string> };
    },
  });
  return value;
}

function secretsManager(reference: AwsSecretsManagerReference, read: SecretRead): Service {
  const what = `secret ${reference.secretId}`;
  return {
    name: 'AWS Secrets Manager',
    signingName: 'secretsmanager',
    target: 'secretsmanager.GetSecretValue',
    body: { SecretId: reference.secretId },
    what,
    action: 'secretsmanager:GetSecretValue',
    notFound: ['ResourceNotFoundException'],
    value: (answer) => {
      const binary = typeof answer.SecretBinary === 'string' ? Buffer.from(answer.SecretBinary, 'base64') : undefined;
      if (typeof answer.SecretString !== 'string' && binary && !isUtf8(binary)) return { fail: `a SecretBinary of ${NOT_UTF8.message}`, hint: NOT_UTF8.hint };
      const text = typeof answer.SecretString === 'string' ? answer.SecretString : binary?.toString('utf8');
      if (text === undefined) return { fail: 'neither SecretString nor SecretBinary' };
      if (reference.jsonKey === undefined) return text;
      return jsonKeyOf(text, reference.jsonKey, read);
    },
  };
}

/** The string under `key` of a secret that holds a JSON object (the console's key/value secrets). */
function jsonKeyOf(text: string, key: string, read: SecretRead): string | { fail: string } {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return { fail: `a value that is not JSON, so jsonKey ${key} cannot be read from it` };
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return { fail: `a JSON value that is not an object, so jsonKey ${key} cannot be read from it` };
  const found = (parsed as Record<string, unknown>)[key];
  // The other keys' values are secrets too: they are scrubbed, never shown.
  for (const other of Object.values(parsed)) if (typeof other === 'string' && other.length >= 4) read.register(other);
  if (typeof found === 'string') return found;
  return { fail: `a JSON object without a string at key ${JSON.stringify(key)} (its keys: ${Object.keys(parsed).map((k) => JSON.stringify(k)).join(', ') || 'none'})` };
}

function parameterStore(reference: AwsParameterStoreReference): Service {
  return {
    name: 'AWS Systems Manager Parameter Store',
    signingName: 'ssm',
    target: 'AmazonSSM.GetParameter',
    body: { Name: reference.name, WithDecryption: true },
    what: `parameter ${reference.name}`,
    action: 'ssm:GetParameter',
    notFound: ['ParameterNotFound', 'ParameterVersionNotFound'],
    value: (answer) => {
      const value = (answer.Parameter as { Value?: unknown } | undefined)?.Value;
      return typeof value === 'string' ? value : { fail: 'no Parameter.Value' };
    },
  };
}

/** The error's type (x-amzn-ErrorType, or the body's __type without its namespace) and message. */
function awsError(answer: HttpResponse, body: Record<string, unknown> | undefined): { type: string; message: string } {
  const header = answer.headers['x-amzn-errortype'];
  const raw = (typeof header === 'string' ? header : typeof body?.__type === 'string' ? body.__type : '').split(':')[0] ?? '';
  const type = raw.split('#').pop() ?? '';
  const message = typeof body?.message === 'string' ? body.message : typeof body?.Message === 'string' ? body.Message : '';
  return { type, message: message.slice(0, 300) };
}

/** A fresh IMDSv2 session token: every read of the instance's metadata carries one. */
async function imdsSession(read: SecretRead): Promise<Record<string, string>> {
  const answer = await storeRequest(read, {
    url: `${baseUrl(read.host, 'aws')}/latest/api/token`,
    method: 'PUT',
    headers: { 'X-aws-ec2-metadata-token-ttl-seconds': '300' },
    timeouts: IMDS_TIMEOUTS,
    service: IMDS,
    judge: (a) => {
      if (a.status === 200 && a.body.length > 0) return { ok: a };
      return (
        transient(a, 'no session token') ?? {
          fail: new SecretUnavailableError(read, `${IMDS} refused a session token (HTTP ${a.status})`, { hint: 'enable the instance metadata service; behind a container or proxy, raise its hop limit (HttpPutResponseHopLimit)' }),
        }
      );
    },
  });
  const token = answer.body.toString('utf8').trim();
  read.register(token);
  return { 'X-aws-ec2-metadata-token': token };
}

async function metadata(read: SecretRead, session: Record<string, string>, path: string, onMissing: () => MachineadmError): Promise<string> {
  const answer = await storeRequest(read, {
    url: `${baseUrl(read.host, 'aws')}/latest/meta-data/${path}`,
    headers: session,
    timeouts: IMDS_TIMEOUTS,
    service: IMDS,
    judge: (a) => {
      if (a.status === 200) return { ok: a };
      if (a.status === 404) return { fail: onMissing() };
      return transient(a, `no ${path}`) ?? { fail: new SecretUnavailableError(read, `${IMDS} answered HTTP ${a.status} for ${path}`) };
    },
  });
  return answer.body.toString('utf8').trim();
}

async function instanceRegion(read: SecretRead): Promise<string> {
  const known = identities.get(read.host) ?? {};
  identities.set(read.host, known);
  if (known.region) return known.region;
  const region = await metadata(read, await imdsSession(read), 'placement/region', () => secretRefused(read, `${IMDS} names no region`, 'give the region in the reference'));
  if (!/^[a-z]{2}(-[a-z]+)+-\d+$/.test(region)) throw new SecretUnavailableError(read, `${IMDS} answered a region that is not one: ${JSON.stringify(region.slice(0, 40))}`);
  known.region = region;
  return region;
}

/** The instance role's credentials, from the run's cache unless they near expiry or `renew` is asked. */
async function instanceCredentials(read: SecretRead, renew: boolean): Promise<Credentials> {
  const known = identities.get(read.host) ?? {};
  identities.set(read.host, known);
  const cached = known.credentials;
  if (cached && !renew && cached.expiresAtMs - CREDENTIALS_MARGIN_MS > Date.now()) {
    read.register(cached.secretAccessKey);
    read.register(cached.sessionToken);
    return cached;
  }
  const session = await imdsSession(read);
  const noRole = () => secretRefused(read, 'the instance has no IAM role to read secrets with', 'attach an instance profile whose role may read the secret');
  const role = (await metadata(read, session, 'iam/security-credentials/', noRole)).split('\n')[0]?.trim() ?? '';
  if (role === '') throw noRole();
  const raw = await metadata(read, session, `iam/security-credentials/${encodeURIComponent(role)}`, noRole);
  let body: Record<string, unknown> = {};
  try {
    body = JSON.parse(raw) as Record<string, unknown>;
  } catch {
    // Judged below: an answer without credentials.
  }
  const { Code, AccessKeyId, SecretAccessKey, Token, Expiration } = body;
  if (typeof SecretAccessKey === 'string') read.register(SecretAccessKey);
  if (typeof Token === 'string') read.register(Token);
  if (Code !== 'Success' || typeof AccessKeyId !== 'string' || typeof SecretAccessKey !== 'string' || typeof Token !== 'string') {
    throw new SecretUnavailableError(read, `${IMDS} gave no usable credentials for role ${role}${typeof Code === 'string' ? ` (Code ${Code.slice(0, 60)})` : ''}`, { hint: 'check the instance profile; the role may have just been attached' });
  }
  const expiresAtMs = typeof Expiration === 'string' ? Date.parse(Expiration) : Number.NaN;
  known.credentials = { accessKeyId: AccessKeyId, secretAccessKey: SecretAccessKey, sessionToken: Token, expiresAtMs: Number.isNaN(expiresAtMs) ? 0 : expiresAtMs };
  return known.credentials;
}
