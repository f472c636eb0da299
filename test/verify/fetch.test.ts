// Verified downloads from real HTTP(S) servers on 127.0.0.1: resume, mirrors, lying servers,
// redirects, TLS, checksums and signatures; a failed check leaves nothing at the destination.
import { execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync, mkdirSync } from 'node:fs';
import * as http from 'node:http';
import * as https from 'node:https';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { scratchDir } from '../support/tmp.ts';
import { missingRequirement } from '../support/environment.ts';
import { runCli } from './cli.ts';
import { createHost } from '../../src/host/index.ts';
import { fetchVerified } from '../../src/verify/fetch.ts';
import { formatPublicKeyLine, formatSignature } from '../../src/verify/minisign.ts';
import { generateKeyPair, signStream } from '../../src/verify/signature.ts';

const dir = scratchDir('machineadm-fetch-');
const content = randomBytes(2 * 1024 * 1024 + 123);
const sha = createHash('sha256').update(content).digest('hex');
const other = Buffer.from('not the file you are looking for\n');
const keys = generateKeyPair();
const publicKey = formatPublicKeyLine(keys.publicKey);
const strangerKey = formatPublicKeyLine(generateKeyPair().publicKey);
let signature = '';
let otherSignature = '';

interface Seen {
  path: string;
  range: string | undefined;
}
const seen: Seen[] = [];
const hits = (path: string) => seen.filter((s) => s.path === path);

function serveRange(req: http.IncomingMessage, res: http.ServerResponse, body: Buffer): void {
  const m = /^bytes=(\d+)-$/.exec(req.headers.range ?? '');
  if (m) {
    const start = Number(m[1]);
    res.writeHead(206, { 'content-length': body.length - start, 'content-range': `bytes ${start}-${body.length - 1}/${body.length}`, etag: '"v1"' });
    res.end(body.subarray(start));
    return;
  }
  res.writeHead(200, { 'content-length': body.length, etag: '"v1"', 'accept-ranges': 'bytes' });
  res.end(body);
}

// Sends part of the body, then drops the connection, as a broken network does.
function breakAfter(res: http.ServerResponse, headers: http.OutgoingHttpHeaders, part: Buffer, status = 200): void {
  res.writeHead(status, headers);
  res.write(part, () => setTimeout(() => res.socket?.destroy(), 20));
}

let port = 0;
function handler(req: http.IncomingMessage, res: http.ServerResponse): void {
  const path = (req.url ?? '/').split('?')[0]!;
  seen.push({ path, range: req.headers.range });
  const count = hits(path).length;
  switch (path) {
    case '/file':
      return serveRange(req, res, content);
    case '/file.minisig':
      res.end(signature);
      return;
    case '/other.minisig':
      res.end(otherSignature);
      return;
    case '/flaky':
      // First connection breaks at 1 MiB; then the server honours Range.
      if (count === 1) return breakAfter(res, { 'content-length': content.length, etag: '"v1"' }, content.subarray(0, 1024 * 1024));
      return serveRange(req, res, content);
    case '/flaky-no-range':
      // The connection breaks, and the server ignores Range afterwards: the copy starts over.
      if (count === 1) return breakAfter(res, { 'content-length': content.length }, content.subarray(0, 700_000));
      res.writeHead(200, { 'content-length': content.length });
      res.end(content);
      return;
    case '/liar':
      // Announces more bytes than it ever sends, on every attempt and every range.
      if (req.headers.range) {
        const start = Number(/^bytes=(\d+)-$/.exec(req.headers.range)?.[1] ?? 0);
        return breakAfter(res, { 'content-length': content.length + 5000 - start, 'content-range': `bytes ${start}-${content.length + 4999}/${content.length + 5000}` }, Buffer.alloc(0), 206);
      }
      return breakAfter(res, { 'content-length': content.length + 5000 }, content);
    case '/short':
      // Announces and sends fewer bytes than the real file: only the checksum can tell.
      res.writeHead(200, { 'content-length': 1000 });
      res.end(content.subarray(0, 1000));
      return;
    case '/missing':
      res.writeHead(404);
      res.end('no');
      return;
    case '/redirect-same':
      res.writeHead(302, { location: '/file' });
      res.end();
      return;
    case '/redirect-other':
      res.writeHead(302, { location: `http://localhost:${port}/file` });
      res.end();
      return;
    default:
      res.writeHead(404);
      res.end();
  }
}

const servers: http.Server[] = [];
let tlsPort = 0;
let caFile = '';
const skipTls = missingRequirement({ commands: ['openssl'] });

beforeAll(async () => {
  const sig = await signStream([content], keys.secretKey, { trustedComment: 'fetch test file' });
  signature = formatSignature(sig);
  otherSignature = formatSignature(await signStream([other], keys.secretKey, { trustedComment: 'another file' }));
  const server = http.createServer(handler);
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
  if (!skipTls) {
    execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', join(dir, 'tls.key'), '-out', join(dir, 'tls.crt'), '-days', '2', '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1'], { stdio: 'ignore' });
    caFile = join(dir, 'tls.crt');
    const tls = https.createServer({ key: readFileSync(join(dir, 'tls.key')), cert: readFileSync(caFile) }, handler);
    servers.push(tls);
    await new Promise<void>((resolve) => tls.listen(0, '127.0.0.1', resolve));
    tlsPort = (tls.address() as AddressInfo).port;
  }
});

afterAll(async () => {
  for (const s of servers) {
    s.closeAllConnections();
    await new Promise((resolve) => s.close(resolve));
  }
});

beforeEach(() => {
  seen.length = 0;
});

const url = (path: string) => `http://127.0.0.1:${port}${path}`;
let n = 0;
const out = () => join(dir, `out-${++n}`, 'result.bin');
const fetchCli = (...args: string[]) => runCli(['fetch', ...args], { cwd: dir });
function leftovers(path: string): string[] {
  const d = join(path, '..');
  return existsSync(d) ? readdirSync(d) : [];
}

describe('machineadm fetch', () => {
  it('downloads, checks the SHA-256 and puts the file in place', async () => {
    const dest = out();
    const run = await fetchCli(url('/file'), '-o', dest, '--sha256', sha, '--mode', '0755');
    expect(run.code, run.stderr).toBe(0);
    expect(readFileSync(dest).equals(content)).toBe(true);
    expect(statSync(dest).mode & 0o777).toBe(0o755);
    expect(leftovers(dest)).toEqual(['result.bin']);
  });

  it('checks the signature at URL.minisig with -P and prints its trusted comment', async () => {
    const dest = out();
    const run = await fetchCli(url('/file'), '-o', dest, '-P', publicKey);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain('trusted comment: fetch test file');
    expect(hits('/file.minisig')).toHaveLength(1);
  });

  it('resumes with Range after a broken connection', async () => {
    const dest = out();
    const run = await fetchCli(url('/flaky'), '-o', dest, '--sha256', sha);
    expect(run.code, run.stderr).toBe(0);
    expect(hits('/flaky').map((h) => h.range)).toEqual([undefined, `bytes=${1024 * 1024}-`]);
    expect(readFileSync(dest).equals(content)).toBe(true);
  });

  it('starts over when the server ignores Range after a broken connection', async () => {
    const dest = out();
    const run = await fetchCli(url('/flaky-no-range'), '-o', dest, '--sha256', sha);
    expect(run.code, run.stderr).toBe(0);
    expect(hits('/flaky-no-range')).toHaveLength(2);
    expect(readFileSync(dest).equals(content)).toBe(true);
    expect(leftovers(dest)).toEqual(['result.bin']);
  });

  it('tries the mirrors in order', async () => {
    const dest = out();
    const run = await fetchCli(url('/missing'), '--mirror', url('/redirect-other'), '--mirror', url('/file'), '-o', dest, '--sha256', sha);
    expect(run.code, run.stderr).toBe(0);
    expect(seen.map((s) => s.path)).toEqual(['/missing', '/redirect-other', '/file']);
    expect(run.stdout).toContain(url('/file'));
  });

  it('follows a redirect on the same host', async () => {
    const run = await fetchCli(url('/redirect-same'), '-o', out(), '--sha256', sha);
    expect(run.code, run.stderr).toBe(0);
  });

  it('shows a progress bar only on a terminal', async () => {
    const tty = await runCli(['fetch', url('/file'), '-o', out(), '--sha256', sha], { cwd: dir, interactive: true });
    expect(tty.stderr).toMatch(/\] 100% 2\.0\/2\.0 MiB/);
    const plain = await fetchCli(url('/file'), '-o', out(), '--sha256', sha);
    expect(plain.stderr).toBe('');
  });

  it.each<[string, () => string[], number, RegExp]>([
    ['a server that lies about Content-Length', () => [url('/liar'), '--sha256', sha], 1, /announced \d+ bytes but the connection ended after \d+/],
    ['a redirect to another host', () => [url('/redirect-other'), '--sha256', sha], 1, /redirected from 127\.0\.0\.1:\d+ to another host \(localhost:\d+\); refused/],
    ['a file that is not there', () => [url('/missing'), '--sha256', sha], 1, /HTTP 404/],
    ['a connection refused', () => ['http://127.0.0.1:1/file', '--sha256', sha], 1, /ECONNREFUSED/],
    ['a short file that matches its own Content-Length', () => [url('/short'), '--sha256', sha], 3, /SHA-256 is [0-9a-f]{64}, expected/],
    ['a wrong SHA-256', () => [url('/file'), '--sha256', 'a'.repeat(64)], 3, /SHA-256 is/],
    ['the signature of another file', () => [url('/file'), '-x', url('/other.minisig'), '-P', publicKey], 3, /signature verification failed/],
    ['a signature by another key', () => [url('/file'), '-P', strangerKey], 3, /made with key [0-9A-F]{16}, but the public key given is key [0-9A-F]{16}/],
    ['a public key of the wrong length', () => [url('/file'), '-P', publicKey.slice(0, 40)], 3, /public key/],
    ['--offline', () => [url('/file'), '--sha256', sha, '--offline'], 2, /--offline: not downloading/],
    ['no checksum and no key', () => [url('/file')], 2, /give --sha256 HEX or a public key/],
    ['a malformed SHA-256', () => [url('/file'), '--sha256', 'abc'], 2, /is not a SHA-256/],
  ])('refuses %s, and writes nothing at -o', async (_name, args, code, message) => {
    const dest = out();
    const run = await fetchCli(...args(), '-o', dest);
    expect(run.stderr).toMatch(message);
    expect(run.code).toBe(code);
    expect(existsSync(dest)).toBe(false);
    expect(leftovers(dest)).toEqual([]);
  });

  it('keeps the existing file when the new one fails its check', async () => {
    const dest = out();
    mkdirSync(join(dest, '..'), { recursive: true });
    writeFileSync(dest, 'old and good\n');
    const run = await fetchCli(url('/file'), '-o', dest, '--sha256', 'b'.repeat(64));
    expect(run.code).toBe(3);
    expect(readFileSync(dest, 'utf8')).toBe('old and good\n');
    expect(leftovers(dest)).toEqual(['result.bin']);
  });

  it('checks the signature before downloading the file when the key id does not match', async () => {
    await fetchCli(url('/file'), '-o', out(), '-P', strangerKey);
    expect(hits('/file')).toHaveLength(0);
  });

  it.skipIf(skipTls)('refuses a server whose certificate is not trusted (exit 1), and trusts it with --ca-file', async () => {
    const tlsUrl = `https://127.0.0.1:${tlsPort}/file`;
    const dest = out();
    const refused = await fetchCli(tlsUrl, '-o', dest, '--sha256', sha);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/TLS error: .*self[- ]signed/i);
    expect(existsSync(dest)).toBe(false);
    const trusted = await fetchCli(tlsUrl, '-o', dest, '--sha256', sha, '--ca-file', caFile);
    expect(trusted.code, trusted.stderr).toBe(0);
  });
});

describe('fetchVerified', () => {
  it('writes a machine path under --root with the mode and owner asked for', async () => {
    const root = join(dir, 'root');
    const host = createHost({ root });
    const result = await fetchVerified(host, { urls: [url('/file')], destination: '/opt/bin/tool', sha256: sha, mode: 0o700, owner: '0:0', signature: { url: url('/file.minisig'), publicKey } });
    expect(result).toMatchObject({ sha256: sha, bytes: content.length, url: url('/file'), signature: { trustedComment: 'fetch test file', algorithm: 'prehashed' } });
    expect(statSync(join(root, 'opt/bin/tool')).mode & 0o777).toBe(0o700);
  });

  it('refuses under --offline before any request', async () => {
    const host = createHost({ root: join(dir, 'root2'), offline: true });
    await expect(fetchVerified(host, { urls: [url('/file')], destination: '/x', sha256: sha })).rejects.toThrow(/--offline/);
    expect(seen).toHaveLength(0);
  });
});
