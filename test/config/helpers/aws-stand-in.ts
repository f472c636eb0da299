// A stand-in for EC2's instance metadata service (IMDSv2 only: a PUT session token, then reads
// that carry it) over HTTP, and for Secrets Manager and SSM Parameter Store over HTTPS with the test
// CA, as strict as the real ones: every request's SigV4 signature is computed again here with
// @smithy/signature-v4 (the AWS SDK's signer, not the one machineadm uses) and compared; the
// credential scope must name this region and the service the target belongs to; an unknown or
// rotated key is refused as AWS refuses it. Faults are queued per test.
import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Sha256 } from '@aws-crypto/sha256-js';
import { SignatureV4 } from '@smithy/signature-v4';
import { startHttp, startHttps, type RunningServer, type TestCa } from './servers.ts';

export const AWS_REGION = 'eu-west-1';
// 'oversized': an answer of 2 MiB, as something other than the service (a proxy's page, a wrong endpoint) sends.
// 'login-page': a 200 with a proxy's HTML sign-in page instead of the service's JSON.
export type AwsFault = 'throttle' | 'unavailable' | 'expired' | 'oversized' | 'login-page';

interface Credentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken: string;
}

export interface AwsStandIn {
  imds: RunningServer;
  service: RunningServer;
  /** Secrets Manager secrets by name: a string, or bytes (SecretBinary). */
  secrets: Map<string, string | Buffer>;
  /** SSM parameters by name (SecureString values, decrypted when asked WithDecryption). */
  parameters: Map<string, string>;
  /** Names the role may not read (AccessDeniedException). */
  denied: Set<string>;
  /** Names whose KMS key the role may not use (DecryptionFailure / InvalidKeyId). */
  undecryptable: Set<string>;
  /** The instance profile's role, or undefined for an instance without one. */
  role: string | undefined;
  /** Every set of credentials handed out, newest last. */
  issued: Credentials[];
  /** Every IMDS session token handed out. */
  sessions: string[];
  /** Seconds a throttled answer's Retry-After asks (none when 0). */
  retryAfterSeconds: number;
  inject(fault: AwsFault, times?: number): void;
  /** The service requests, with their X-Amz-Target and parsed body. */
  calls(): Array<{ target: string; body: Record<string, unknown>; headers: IncomingMessage['headers'] }>;
  close(): Promise<void>;
}

function json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/x-amz-json-1.1', ...headers });
  res.end(JSON.stringify(body));
}

function awsError(res: ServerResponse, status: number, type: string, message: string, headers: Record<string, string> = {}): void {
  json(res, status, { __type: type, message }, { 'x-amzn-errortype': `${type}:http://internal.amazon.com/coral/com.amazon.coral.service/`, ...headers });
}

function newCredentials(): Credentials {
  return { accessKeyId: `ASIA${randomBytes(8).toString('hex').toUpperCase()}`, secretAccessKey: randomBytes(30).toString('base64'), sessionToken: `IQoJb3JpZ2luX2Vj${randomBytes(48).toString('base64')}` };
}

async function body(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/** The Authorization header AWS would compute for this request with these credentials, or why it cannot. */
async function expectedAuthorization(req: IncomingMessage, text: string, credentials: Credentials, service: string): Promise<string | { problem: string }> {
  const auth = String(req.headers.authorization ?? '');
  const match = /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request, SignedHeaders=([a-z0-9;-]+), Signature=[0-9a-f]{64}$/.exec(auth);
  if (!match) return { problem: 'Authorization header is not a SigV4 header' };
  const [, , day, region, scopeService, signedList] = match;
  if (region !== AWS_REGION) return { problem: `Credential should be scoped to a valid region, not '${region}'` };
  if (scopeService !== service) return { problem: `Credential should be scoped to correct service: '${service}'` };
  const amzDate = String(req.headers['x-amz-date'] ?? '');
  if (!/^\d{8}T\d{6}Z$/.test(amzDate) || amzDate.slice(0, 8) !== day) return { problem: 'X-Amz-Date is missing or does not match the credential scope' };
  const signingDate = new Date(`${amzDate.slice(0, 4)}-${amzDate.slice(4, 6)}-${amzDate.slice(6, 8)}T${amzDate.slice(9, 11)}:${amzDate.slice(11, 13)}:${amzDate.slice(13, 15)}Z`);
  if (Math.abs(Date.now() - signingDate.getTime()) > 5 * 60_000) return { problem: 'Signature expired: the request time is more than 5 minutes from the server time' };
  const signed = (signedList ?? '').split(';');
  for (const required of ['host', 'x-amz-date', 'x-amz-target', 'x-amz-security-token']) if (!signed.includes(required)) return { problem: `SignedHeaders must include ${required}` };
  const headers: Record<string, string> = {};
  for (const name of signed) headers[name] = String(req.headers[name] ?? '');
  const [hostname, port] = String(req.headers.host).split(':');
  const signer = new SignatureV4({ credentials, region: AWS_REGION, service, sha256: Sha256, applyChecksum: false });
  const request = await signer.sign({ method: req.method ?? '', protocol: 'https:', hostname: hostname ?? '', ...(port ? { port: Number(port) } : {}), path: new URL(req.url ?? '/', 'https://x').pathname, query: {}, headers, body: text }, { signingDate });
  return String(request.headers.authorization);
}

export async function startAwsStandIn(ca: TestCa): Promise<AwsStandIn> {
  const faults: AwsFault[] = [];
  const calls: ReturnType<AwsStandIn['calls']> = [];
  let current = newCredentials();
  const state = {
    secrets: new Map<string, string | Buffer>(),
    parameters: new Map<string, string>(),
    denied: new Set<string>(),
    undecryptable: new Set<string>(),
    role: 'machineadm-node' as string | undefined,
    issued: [] as Credentials[],
    sessions: [] as string[],
    retryAfterSeconds: 0,
  };

  const imds = await startHttp((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    const text = (status: number, value: string) => {
      res.writeHead(status, { 'content-type': 'text/plain' });
      res.end(value);
    };
    if (url.pathname === '/latest/api/token') {
      if (req.method !== 'PUT') return text(405, '');
      const ttl = Number(req.headers['x-aws-ec2-metadata-token-ttl-seconds']);
      if (!Number.isInteger(ttl) || ttl < 1 || ttl > 21600) return text(400, '');
      const token = `AQAEA${randomBytes(30).toString('base64url')}`;
      state.sessions.push(token);
      return text(200, token);
    }
    // IMDSv2 only (HttpTokens=required): a read without a valid session token is refused.
    if (!state.sessions.includes(String(req.headers['x-aws-ec2-metadata-token'] ?? ''))) return text(401, '');
    if (req.method !== 'GET') return text(405, '');
    if (url.pathname === '/latest/meta-data/placement/region') return text(200, AWS_REGION);
    if (url.pathname === '/latest/meta-data/iam/security-credentials/') return state.role ? text(200, `${state.role}\n`) : text(404, '');
    if (state.role && url.pathname === `/latest/meta-data/iam/security-credentials/${state.role}`) {
      state.issued.push(current);
      const expiration = new Date(Date.now() + 6 * 3600_000).toISOString().replace(/\.\d+Z$/, 'Z');
      return json(res, 200, { Code: 'Success', LastUpdated: new Date().toISOString(), Type: 'AWS-HMAC', AccessKeyId: current.accessKeyId, SecretAccessKey: current.secretAccessKey, Token: current.sessionToken, Expiration: expiration });
    }
    return text(404, '');
  });

  const service = await startHttps(ca, (req, res) => {
    void (async () => {
      const text = await body(req);
      const target = String(req.headers['x-amz-target'] ?? '');
      let parsed: Record<string, unknown> = {};
      try {
        parsed = JSON.parse(text) as Record<string, unknown>;
      } catch {
        return awsError(res, 400, 'SerializationException', 'the body is not JSON');
      }
      calls.push({ target, body: parsed, headers: req.headers });
      if (req.method !== 'POST' || (req.url ?? '') !== '/') return awsError(res, 404, 'UnknownOperationException', '');
      if (req.headers['content-type'] !== 'application/x-amz-json-1.1') return awsError(res, 400, 'UnknownOperationException', 'content-type must be application/x-amz-json-1.1');
      const signingName = target.startsWith('secretsmanager.') ? 'secretsmanager' : target.startsWith('AmazonSSM.') ? 'ssm' : undefined;
      if (!signingName) return awsError(res, 400, 'UnknownOperationException', `unknown target ${target}`);
      const keyId = /Credential=([^/]+)\//.exec(String(req.headers.authorization ?? ''))?.[1];
      const known = state.issued.find((c) => c.accessKeyId === keyId);
      if (!known) return awsError(res, 400, 'UnrecognizedClientException', 'The security token included in the request is invalid.');
      if (req.headers['x-amz-security-token'] !== known.sessionToken) return awsError(res, 400, 'UnrecognizedClientException', 'The security token included in the request is invalid.');
      const fault = faults.shift();
      if (fault === 'expired') {
        // The role's credentials rotate: the metadata service hands out new ones from now on.
        current = newCredentials();
        return awsError(res, 400, 'ExpiredTokenException', 'The security token included in the request is expired');
      }
      if (known !== current) return awsError(res, 400, 'ExpiredTokenException', 'The security token included in the request is expired');
      const expected = await expectedAuthorization(req, text, known, signingName);
      if (typeof expected !== 'string') return awsError(res, 400, 'InvalidSignatureException', expected.problem);
      if (expected !== req.headers.authorization) return awsError(res, 400, 'InvalidSignatureException', 'The request signature we calculated does not match the signature you provided.');
      if (fault === 'throttle') return awsError(res, 400, 'ThrottlingException', 'Rate exceeded', state.retryAfterSeconds ? { 'retry-after': String(state.retryAfterSeconds) } : {});
      if (fault === 'unavailable') return awsError(res, 500, 'InternalServiceError', 'We encountered an internal error. Please try again.');
      if (fault === 'oversized') return json(res, 200, { SecretString: 'x'.repeat(2 * 1024 * 1024) });
      if (fault === 'login-page') return void res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end('<!doctype html><html><head><title>Sign in</title></head><body><form action="/login"><input name="user"><input name="password" type="password"></form></body></html>\n');
      if (target === 'secretsmanager.GetSecretValue') {
        const id = String(parsed.SecretId ?? '');
        if (state.denied.has(id)) return awsError(res, 400, 'AccessDeniedException', `User: arn:aws:sts::123456789012:assumed-role/${state.role}/i-0abc is not authorized to perform: secretsmanager:GetSecretValue on resource: ${id}`);
        if (state.undecryptable.has(id)) return awsError(res, 400, 'DecryptionFailure', 'Access to KMS is not allowed');
        const value = state.secrets.get(id);
        if (value === undefined) return awsError(res, 400, 'ResourceNotFoundException', "Secrets Manager can't find the specified secret.");
        const payload = typeof value === 'string' ? { SecretString: value } : { SecretBinary: value.toString('base64') };
        return json(res, 200, { ARN: `arn:aws:secretsmanager:${AWS_REGION}:123456789012:secret:${id}-AbCdEf`, Name: id, VersionId: 'a1b2c3', VersionStages: ['AWSCURRENT'], CreatedDate: 1.7e9, ...payload });
      }
      if (target === 'AmazonSSM.GetParameter') {
        const name = String(parsed.Name ?? '');
        if (parsed.WithDecryption !== true) return awsError(res, 400, 'ValidationException', 'the stand-in holds only SecureStrings: ask WithDecryption');
        if (state.denied.has(name)) return awsError(res, 400, 'AccessDeniedException', `User is not authorized to perform: ssm:GetParameter on resource: ${name}`);
        if (state.undecryptable.has(name)) return awsError(res, 400, 'InvalidKeyId', 'The KMS key is disabled');
        const value = state.parameters.get(name);
        if (value === undefined) return awsError(res, 400, 'ParameterNotFound', '');
        return json(res, 200, { Parameter: { Name: name, Type: 'SecureString', Value: value, Version: 1, ARN: `arn:aws:ssm:${AWS_REGION}:123456789012:parameter${name}`, DataType: 'text' } });
      }
      return awsError(res, 400, 'UnknownOperationException', `unknown target ${target}`);
    })();
  });

  return Object.assign(state, {
    imds,
    service,
    inject: (fault: AwsFault, times = 1) => {
      for (let i = 0; i < times; i++) faults.push(fault);
    },
    calls: () => calls,
    close: async () => {
      await imds.close();
      await service.close();
    },
  });
}
