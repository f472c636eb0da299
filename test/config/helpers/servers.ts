// Test servers on 127.0.0.1: an HTTPS server with a CA made in the test (openssl), and instance
// metadata servers that speak each cloud's protocol strictly (a request a real service would
// refuse is refused), with switches for slow starts, 5xx and missing user data.
import { execFileSync } from 'node:child_process';
import { writeFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createServer as createHttpsServer } from 'node:https';
import { createServer as createHttpServer, type IncomingMessage, type ServerResponse, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface TestCa {
  caFile: string;
  caPem: string;
  cert: string;
  key: string;
}

/** A throwaway CA and a server certificate for 127.0.0.1 signed by it. */
export function makeTestCa(dir: string): TestCa {
  const run = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  run('req', '-x509', ...ec, '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '2', '-subj', '/CN=machineadm test CA');
  run('req', ...ec, '-keyout', 'server.key', '-out', 'server.csr', '-subj', '/CN=127.0.0.1');
  writeFileSync(join(dir, 'server.ext'), 'subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\n');
  run('x509', '-req', '-in', 'server.csr', '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-out', 'server.pem', '-days', '2', '-extfile', 'server.ext');
  return {
    caFile: join(dir, 'ca.pem'),
    caPem: readFileSync(join(dir, 'ca.pem'), 'utf8'),
    cert: readFileSync(join(dir, 'server.pem'), 'utf8'),
    key: readFileSync(join(dir, 'server.key'), 'utf8'),
  };
}

export type Handler = (req: IncomingMessage, res: ServerResponse) => void;

export interface RunningServer {
  url: string;
  port: number;
  requests: Array<{ method: string; url: string; headers: IncomingMessage['headers'] }>;
  close(): Promise<void>;
}

async function listen(server: Server, port = 0): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve());
  });
  return (server.address() as AddressInfo).port;
}

function wrap(server: Server, scheme: string, port: number, requests: RunningServer['requests']): RunningServer {
  return {
    url: `${scheme}://127.0.0.1:${port}`,
    port,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export async function startHttps(ca: TestCa, handler: Handler): Promise<RunningServer> {
  const requests: RunningServer['requests'] = [];
  const server = createHttpsServer({ cert: ca.cert, key: ca.key }, (req, res) => {
    requests.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers });
    handler(req, res);
  });
  return wrap(server, 'https', await listen(server), requests);
}

export async function startHttp(handler: Handler, port = 0): Promise<RunningServer> {
  const requests: RunningServer['requests'] = [];
  const server = createHttpServer((req, res) => {
    requests.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers });
    handler(req, res);
  });
  return wrap(server, 'http', await listen(server, port), requests);
}

/** A free port nobody listens on yet (for a service that starts late). */
export async function freePort(): Promise<number> {
  const server = createHttpServer();
  const port = await listen(server);
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

export type Cloud = 'aws' | 'azure' | 'gce';

export interface ImdsBehaviour {
  /** The raw user data; undefined = the instance has none (404). */
  userData?: Buffer | string;
  /** The first N requests answer 503 (a service still starting). */
  failFirst?: number;
  /** Answers 500 forever. */
  broken?: boolean;
  /** The first request is answered only after this long (a service busy at boot). */
  firstAnswerDelayMs?: number;
  /** The instance's id (AWS instance-id, Azure vmId, GCE instance id); undefined = 404. */
  instanceId?: string;
  /**
   * More instance metadata, at each cloud's documented place: AWS and GCE by path under
   * /latest/meta-data/ and /computeMetadata/v1/ (e.g. "placement/availability-zone",
   * "instance/zone"); Azure as the /metadata/instance document (compute, network).
   */
  metadata?: Record<string, string> | { compute: Record<string, unknown>; network?: unknown };
}

/** A metadata service speaking one cloud's protocol, as strict as the real one about headers. */
export function imdsHandler(cloud: Cloud, behaviour: ImdsBehaviour): Handler {
  const tokens = new Set<string>();
  let served = 0;
  return (req, res) => {
    served++;
    if (served === 1 && behaviour.firstAnswerDelayMs) {
      const timer = setTimeout(() => res.writableEnded || (res.writeHead(200), res.end('late')), behaviour.firstAnswerDelayMs);
      res.on('close', () => clearTimeout(timer));
      return;
    }
    const send = (status: number, body = '', headers: Record<string, string> = {}) => {
      res.writeHead(status, { 'content-type': 'text/plain', ...headers });
      res.end(body);
    };
    if (behaviour.broken) return send(500, 'internal error');
    if (behaviour.failFirst && served <= behaviour.failFirst) return send(503, 'starting');
    const url = new URL(req.url ?? '/', 'http://x');
    const data = behaviour.userData === undefined ? undefined : Buffer.from(behaviour.userData);
    if (cloud === 'aws') {
      if (url.pathname === '/latest/api/token') {
        if (req.method !== 'PUT') return send(405);
        const ttl = Number(req.headers['x-aws-ec2-metadata-token-ttl-seconds']);
        if (!(ttl >= 1 && ttl <= 21600)) return send(400, 'missing or bad ttl');
        const token = `token-${served}-${Math.random().toString(36).slice(2)}`;
        tokens.add(token);
        return send(200, token);
      }
      if (url.pathname === '/latest/meta-data/instance-id') {
        if (!tokens.has(String(req.headers['x-aws-ec2-metadata-token'] ?? ''))) return send(401, 'unauthorized');
        return behaviour.instanceId === undefined ? send(404) : send(200, behaviour.instanceId);
      }
      if (url.pathname.startsWith('/latest/meta-data/') && behaviour.metadata) {
        if (!tokens.has(String(req.headers['x-aws-ec2-metadata-token'] ?? ''))) return send(401, 'unauthorized');
        const value = (behaviour.metadata as Record<string, unknown>)[url.pathname.slice('/latest/meta-data/'.length)];
        return typeof value === 'string' ? send(200, value) : send(404);
      }
      if (url.pathname === '/latest/user-data') {
        if (req.method !== 'GET') return send(405);
        if (!tokens.has(String(req.headers['x-aws-ec2-metadata-token'] ?? ''))) return send(401, 'unauthorized');
        return data === undefined ? send(404, '<html>not found</html>', { 'content-type': 'text/html' }) : (res.writeHead(200, { 'content-type': 'application/octet-stream' }), res.end(data));
      }
      return send(404);
    }
    if (cloud === 'azure') {
      if (req.headers.metadata !== 'true') return send(400, JSON.stringify({ error: 'Bad request. Required metadata header not specified' }));
      if (!url.searchParams.get('api-version')) return send(400, JSON.stringify({ error: 'Bad request. api-version was not specified' }));
      if (url.pathname === '/metadata/instance') return send(200, JSON.stringify(behaviour.metadata ?? { compute: { vmId: 'x' }, network: {} }), { 'content-type': 'application/json' });
      if (url.pathname === '/metadata/instance/compute/vmId') {
        if (url.searchParams.get('format') !== 'text') return send(400, 'format=text required for leaf');
        return behaviour.instanceId === undefined ? send(404) : send(200, behaviour.instanceId);
      }
      if (url.pathname === '/metadata/instance/compute/userData') {
        if (url.searchParams.get('format') !== 'text') return send(400, 'format=text required for leaf');
        // Azure answers 200 with an empty body when no user data was set.
        return send(200, data === undefined ? '' : data.toString('base64'));
      }
      return send(404);
    }
    // GCE
    if (req.headers['metadata-flavor'] !== 'Google') return send(403, 'Missing Metadata-Flavor:Google header');
    if (req.headers['x-forwarded-for']) return send(403);
    const flavor = { 'metadata-flavor': 'Google' };
    if (url.pathname === '/computeMetadata/v1/') return send(200, 'instance/\nproject/\n', flavor);
    if (url.pathname === '/computeMetadata/v1/instance/id') return behaviour.instanceId === undefined ? send(404, 'not found', flavor) : send(200, behaviour.instanceId, flavor);
    const key = url.pathname.slice('/computeMetadata/v1/'.length);
    if (behaviour.metadata && key !== 'instance/id' && !key.startsWith('instance/attributes/')) {
      const value = (behaviour.metadata as Record<string, unknown>)[key];
      return typeof value === 'string' ? send(200, value, flavor) : send(404, 'not found', flavor);
    }
    if (url.pathname === '/computeMetadata/v1/instance/attributes/user-data') {
      return data === undefined ? send(404, 'not found', flavor) : (res.writeHead(200, { 'content-type': 'application/text', ...flavor }), res.end(data));
    }
    return send(404, '', flavor);
  };
}

/** Multipart user data as cloud-init users write it. */
export function multipart(parts: Array<{ type: string; body: string | Buffer; encoding?: 'base64' }>, options: { crlf?: boolean; noBlankLine?: boolean; noFinalBoundary?: boolean } = {}): string {
  const nl = options.crlf ? '\r\n' : '\n';
  const b = '==BOUNDARY==';
  let out = `Content-Type: multipart/mixed; boundary="${b}"${nl}MIME-Version: 1.0${nl}${nl}`;
  for (const part of parts) {
    const body = part.encoding === 'base64' ? Buffer.from(part.body).toString('base64').replace(/(.{76})/g, `$1${nl}`) : Buffer.from(part.body).toString('latin1');
    out += `--${b}${nl}Content-Type: ${part.type}; charset="us-ascii"${nl}MIME-Version: 1.0${nl}`;
    if (part.encoding) out += `Content-Transfer-Encoding: ${part.encoding}${nl}`;
    if (!options.noBlankLine) out += nl;
    out += body.replace(/\n/g, nl) + nl;
  }
  if (!options.noFinalBoundary) out += `--${b}--${nl}`;
  return out;
}
