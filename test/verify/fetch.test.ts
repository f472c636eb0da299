// Verified downloads from real HTTP(S) servers on 127.0.0.1: resume, mirrors, lying servers,
// redirects, TLS, checksums and signatures; a failed check leaves nothing at the destination.
import { execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, linkSync, lstatSync, readdirSync, readFileSync, statSync, symlinkSync, utimesSync, writeFileSync, mkdirSync } from 'node:fs';
import * as http from 'node:http';
import * as https from 'node:https';
import * as net from 'node:net';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { scratchDir } from '../support/tmp.ts';
import { missingRequirement } from '../support/environment.ts';
import { runCli } from '../support/cli.ts';
import { createHost, RootedFileSystem, STATE_DIR, type WriteOptions } from '../../src/host/index.ts';
import { TEMP_MARK, type PendingFile } from '../../src/host/fs.ts';
import { download } from '../../src/host/download.ts';
import { fetchVerified } from '../../src/verify/fetch.ts';
import { formatPublicKeyLine, formatSignature } from '../../src/verify/minisign.ts';
import { generateKeyPair, signStream } from '../../src/verify/sign.ts';

const dir = scratchDir('machineadm-fetch-');
const content = randomBytes(2 * 1024 * 1024 + 123);
const sha = createHash('sha256').update(content).digest('hex');
const other = Buffer.from('not the file you are looking for\n');
const keys = generateKeyPair();
const publicKey = formatPublicKeyLine(keys.publicKey);
const strangerKey = formatPublicKeyLine(generateKeyPair().publicKey);
let signature = '';
let otherSignature = '';
let strippedSignature = '';

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

// Sends part of the body, then drops the connection, as a broken network does. It drops it only
// once the client has written every byte sent (offset + part) to its temporary file: bytes still in
// the client's socket and stream buffers when the connection breaks are lost with it, so cutting
// at a fixed time makes the resume offset depend on the machine's load (bytes=1035124- instead of
// bytes=1048576-), not on what is tested.
function breakAfter(res: http.ServerResponse, headers: http.OutgoingHttpHeaders, part: Buffer, status = 200, offset = 0): void {
  res.writeHead(status, headers);
  res.write(part, () => void clientHas(offset + part.length, res).finally(() => res.socket?.destroy()));
}

// Until a download's temporary file (anywhere under the test's folder; one download runs at a time)
// holds `bytes`, or the client has closed the connection itself.
async function clientHas(bytes: number, res: http.ServerResponse): Promise<void> {
  const until = Date.now() + 10_000;
  while (Date.now() < until && !res.socket?.destroyed) {
    if (temporarySizes().includes(bytes)) return;
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}

function temporarySizes(): (number | undefined)[] {
  try {
    const names = readdirSync(dir, { recursive: true }) as string[];
    return names.filter((name) => name.includes(TEMP_MARK)).map((name) => statSync(join(dir, name), { throwIfNoEntry: false })?.size);
  } catch {
    // A folder went away while it was read (a download that gave up): look again.
    return [];
  }
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
    case '/busy.minisig':
      // Busy on the first request, as a server that is still starting.
      if (count === 1) {
        res.writeHead(503);
        res.end();
        return;
      }
      res.end(signature);
      return;
    case '/other.minisig':
      res.end(otherSignature);
      return;
    case '/stripped.minisig':
      res.end(strippedSignature);
      return;
    case '/garbled.minisig':
      res.end('untrusted comment: not a signature\nnot base64 at all!\n');
      return;
    case '/flaky':
      // First connection breaks at 1 MiB; then the server honours Range.
      if (count === 1) return breakAfter(res, { 'content-length': content.length, etag: '"v1"' }, content.subarray(0, 1024 * 1024));
      return serveRange(req, res, content);
    case '/replaced':
      // Breaks; then, with no validator to send in If-Range, resumes a longer (replaced) file; then the real one.
      if (count === 1) return breakAfter(res, { 'content-length': content.length }, content.subarray(0, 1024 * 1024));
      if (count === 2 && req.headers.range) {
        const start = Number(/^bytes=(\d+)-$/.exec(req.headers.range)?.[1]);
        res.writeHead(206, { 'content-length': content.length + 10 - start, 'content-range': `bytes ${start}-${content.length + 9}/${content.length + 10}` });
        res.end(Buffer.alloc(content.length + 10 - start));
        return;
      }
      res.writeHead(200, { 'content-length': content.length });
      res.end(content);
      return;
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
        return breakAfter(res, { 'content-length': content.length + 5000 - start, 'content-range': `bytes ${start}-${content.length + 4999}/${content.length + 5000}` }, Buffer.alloc(0), 206, start);
      }
      return breakAfter(res, { 'content-length': content.length + 5000 }, content);
    case '/short':
      // Announces and sends fewer bytes than the real file: only the checksum can tell.
      res.writeHead(200, { 'content-length': 1000 });
      res.end(content.subarray(0, 1000));
      return;
    case '/trickle': {
      // Every connection delivers 1000 more bytes, then breaks: progress each time, never the end.
      const start = Number(/^bytes=(\d+)-$/.exec(req.headers.range ?? '')?.[1]) || 0;
      const range = req.headers.range ? { 'content-range': `bytes ${start}-${content.length - 1}/${content.length}` } : {};
      return breakAfter(res, { 'content-length': content.length - start, ...range }, Buffer.alloc(1000), req.headers.range ? 206 : 200, start);
    }
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
    case '/redirect-port':
      // Same host, another port: another server, which nobody listed.
      res.writeHead(302, { location: `http://127.0.0.1:${port === 65535 ? 1 : port + 1}/file` });
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
  // A legacy signature with its trusted comment cut off: the bytes of a signify signature.
  strippedSignature = formatSignature(await signStream([content], keys.secretKey, { trustedComment: 'cut off', legacy: true })).split('\n').slice(0, 2).join('\n') + '\n';
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
    const run = await fetchCli(url('/file'), '-d', dest, '--sha256', sha, '--mode', '0755');
    expect(run.code, run.stderr).toBe(0);
    expect(readFileSync(dest).equals(content)).toBe(true);
    expect(statSync(dest).mode & 0o777).toBe(0o755);
    expect(leftovers(dest)).toEqual(['result.bin']);
  });

  it('checks the signature at URL.minisig with -P and prints its trusted comment', async () => {
    const dest = out();
    const run = await fetchCli(url('/file'), '-d', dest, '-P', publicKey);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain('trusted comment: fetch test file');
    expect(hits('/file.minisig')).toHaveLength(1);
  });

  it('accepts a signature without a trusted comment (signify) with --signify', async () => {
    const run = await fetchCli(url('/file'), '-d', out(), '-x', url('/stripped.minisig'), '-P', publicKey, '--signify');
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain('signify format');
  });

  it('retries a signature whose server is busy, as it retries the file', async () => {
    const run = await fetchCli(url('/file'), '-d', out(), '-x', url('/busy.minisig'), '-P', publicKey);
    expect(run.code, run.stderr).toBe(0);
    expect(hits('/busy.minisig')).toHaveLength(2);
  });

  it('resumes with Range after a broken connection', async () => {
    const dest = out();
    const run = await fetchCli(url('/flaky'), '-d', dest, '--sha256', sha);
    expect(run.code, run.stderr).toBe(0);
    expect(hits('/flaky').map((h) => h.range)).toEqual([undefined, `bytes=${1024 * 1024}-`]);
    expect(readFileSync(dest).equals(content)).toBe(true);
  });

  it('starts over when a resume shows the file was replaced (another total length)', async () => {
    const dest = out();
    const run = await fetchCli(url('/replaced'), '-d', dest, '--sha256', sha);
    expect(run.code, run.stderr).toBe(0);
    expect(hits('/replaced').map((h) => h.range)).toEqual([undefined, `bytes=${1024 * 1024}-`, undefined]);
    expect(readFileSync(dest).equals(content)).toBe(true);
    expect(leftovers(dest)).toEqual(['result.bin']);
  });

  it('starts over when the server ignores Range after a broken connection', async () => {
    const dest = out();
    const run = await fetchCli(url('/flaky-no-range'), '-d', dest, '--sha256', sha);
    expect(run.code, run.stderr).toBe(0);
    expect(hits('/flaky-no-range')).toHaveLength(2);
    expect(readFileSync(dest).equals(content)).toBe(true);
    expect(leftovers(dest)).toEqual(['result.bin']);
  });

  it('tries the mirrors in order', async () => {
    const dest = out();
    const run = await fetchCli(url('/missing'), '--mirror', url('/redirect-other'), '--mirror', url('/file'), '-d', dest, '--sha256', sha);
    expect(run.code, run.stderr).toBe(0);
    expect(seen.map((s) => s.path)).toEqual(['/missing', '/redirect-other', '/file']);
    expect(run.stdout).toContain(url('/file'));
  });

  it('follows a redirect on the same host', async () => {
    const run = await fetchCli(url('/redirect-same'), '-d', out(), '--sha256', sha);
    expect(run.code, run.stderr).toBe(0);
  });

  it('shows a progress bar only on a terminal, with the bytes, the rate and the time left', async () => {
    const tty = await runCli(['fetch', url('/file'), '-d', out(), '--sha256', sha], { cwd: dir, interactive: true });
    expect(tty.stderr).toMatch(/\[#{30}\] 2\.0 of 2\.0 MiB \(100%\), \d+\.\d MiB\/s\x1b\[K\n$/);
    const plain = await fetchCli(url('/file'), '-d', out(), '--sha256', sha);
    expect(plain.stderr).toBe('');
  });

  it.each<[string, () => string[], number, RegExp]>([
    ['a server that lies about Content-Length', () => [url('/liar'), '--sha256', sha], 1, /announced \d+ bytes but the connection ended after \d+/],
    ['a redirect to another host', () => [url('/redirect-other'), '--sha256', sha], 1, /redirected from 127\.0\.0\.1:\d+ to another host \(localhost:\d+\); refused/],
    ['a redirect to another port of the same host', () => [url('/redirect-port'), '--sha256', sha], 1, /redirected from 127\.0\.0\.1:\d+ to another port \(127\.0\.0\.1:\d+\); refused/],
    ['a file that is not there', () => [url('/missing'), '--sha256', sha], 1, /HTTP 404/],
    ['a connection refused', () => ['http://127.0.0.1:1/file', '--sha256', sha], 1, /ECONNREFUSED/],
    ['a short file that matches its own Content-Length', () => [url('/short'), '--sha256', sha], 3, /SHA-256 is [0-9a-f]{64}, expected/],
    ['a wrong SHA-256', () => [url('/file'), '--sha256', 'a'.repeat(64)], 3, /SHA-256 is/],
    ['the signature of another file', () => [url('/file'), '-x', url('/other.minisig'), '-P', publicKey], 3, /signature verification failed/],
    ['a signature by another key', () => [url('/file'), '-P', strangerKey], 3, /made with key [0-9A-F]{16}, but the public key given is key [0-9A-F]{16}/],
    ['a signature without its trusted comment (without --signify)', () => [url('/file'), '-x', url('/stripped.minisig'), '-P', publicKey], 3, /no trusted comment.*\n.*give --signify/],
    ['a public key of the wrong length', () => [url('/file'), '-P', publicKey.slice(0, 40)], 3, /public key/],
    ['--offline', () => [url('/file'), '--sha256', sha, '--offline'], 2, /--offline: not downloading/],
    ['no checksum and no key', () => [url('/file')], 2, /give --sha256 HEX or a public key/],
    ['a malformed SHA-256', () => [url('/file'), '--sha256', 'abc'], 2, /is not a SHA-256/],
  ])('refuses %s, and writes nothing at -o', async (_name, args, code, message) => {
    const dest = out();
    const run = await fetchCli(...args(), '-d', dest);
    expect(run.stderr).toMatch(message);
    expect(run.code).toBe(code);
    expect(existsSync(dest)).toBe(false);
    expect(leftovers(dest)).toEqual([]);
  });

  it.each<[string, string[], number]>([
    ['a file that is not there', ['/missing?token=s3cret', '--sha256', sha], 1],
    ['a wrong SHA-256', ['/file?token=s3cret', '--sha256', 'c'.repeat(64)], 3],
    ['a signature that does not match', ['/file?token=s3cret', '-x', '/other.minisig', '-P', publicKey], 3],
    ['a download that works', ['/file?token=s3cret', '--sha256', sha], 0],
  ])('names a URL without its query (a presigned token) on %s', async (_name, [path, ...args], code) => {
    const run = await fetchCli(url(path!), ...args.map((a) => (a.startsWith('/') ? url(a) : a)), '-d', out());
    expect(run.code, run.stderr).toBe(code);
    expect(run.stdout + run.stderr).toContain(url(path!.split('?')[0]!));
    expect(run.stdout + run.stderr).not.toContain('s3cret');
  });

  it('names a signature URL without its query (a presigned token) when the signature is damaged', async () => {
    const run = await fetchCli(url('/file'), '-x', url('/garbled.minisig?X-Amz-Signature=s3cret'), '-P', publicKey, '-d', out());
    expect(run.code, run.stderr).toBe(3);
    expect(run.stderr).toContain(`${url('/garbled.minisig')}?X-Amz-Signature=<redacted> line 2 is not valid base64`);
    expect(run.stdout + run.stderr).not.toContain('s3cret');
  });

  it('keeps the existing file when the new one fails its check', async () => {
    const dest = out();
    mkdirSync(join(dest, '..'), { recursive: true });
    writeFileSync(dest, 'old and good\n');
    const run = await fetchCli(url('/file'), '-d', dest, '--sha256', 'b'.repeat(64));
    expect(run.code).toBe(3);
    expect(readFileSync(dest, 'utf8')).toBe('old and good\n');
    expect(leftovers(dest)).toEqual(['result.bin']);
  });

  // -o names the operator's own file: a backup copy would double the disk used for a large one.
  it('replaces an existing file without a backup anywhere and without reading the old file', async () => {
    const dest = out();
    mkdirSync(join(dest, '..'), { recursive: true });
    writeFileSync(dest, 'the old version\n');
    // A second name keeps the old inode after the rename; an access time older than the
    // modification time is moved forward by any read of it (relatime), a copy included.
    const oldInode = join(dir, `old-inode-${n}`);
    linkSync(dest, oldInode);
    utimesSync(oldInode, new Date('2000-01-01T00:00:00Z'), new Date());
    const run = await fetchCli(url('/file'), '-d', dest, '--sha256', sha);
    expect(run.code, run.stderr).toBe(0);
    expect(readFileSync(dest).equals(content)).toBe(true);
    expect(leftovers(dest)).toEqual(['result.bin']);
    expect(existsSync(join(STATE_DIR, 'backup', dest))).toBe(false);
    expect(statSync(oldInode).atime.toISOString()).toBe('2000-01-01T00:00:00.000Z');
  });

  it.each([
    ['directly under a regular file', 'result.bin'],
    ['further under a regular file', 'sub/result.bin'],
  ])('says a destination %s cannot be written, naming that file, not that machineadm has a bug', async (_name, below) => {
    const file = join(dir, `out-${++n}`, 'a-file');
    mkdirSync(join(file, '..'), { recursive: true });
    writeFileSync(file, 'stays as it is\n');
    const run = await fetchCli(url('/file'), '-d', join(file, below), '--sha256', sha);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(`error: cannot write ${join(file, below)}: ${file} is a file, not a directory`);
    expect(run.stderr).not.toMatch(/bug in machineadm|EEXIST|ENOTDIR/);
    expect(readFileSync(file, 'utf8')).toBe('stays as it is\n');
    expect(readdirSync(join(file, '..'))).toEqual(['a-file']);
  });

  it.each([
    ['a symbolic link', (dest: string) => symlinkSync(join(dest, '..', 'elsewhere'), dest)],
    ['a directory', (dest: string) => mkdirSync(dest)],
  ])('refuses a destination that is %s before any request (exit 2), naming it', async (_name, make) => {
    const dest = out();
    mkdirSync(join(dest, '..'), { recursive: true });
    make(dest);
    const before = lstatSync(dest);
    const run = await fetchCli(url('/file'), '-d', dest, '-P', publicKey);
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toContain(`error: ${dest}`);
    expect(seen).toEqual([]);
    expect(lstatSync(dest)).toMatchObject({ ino: before.ino, mode: before.mode });
    expect(readdirSync(join(dest, '..'))).toEqual(['result.bin']);
  });

  it('checks the signature before downloading the file when the key id does not match', async () => {
    await fetchCli(url('/file'), '-d', out(), '-P', strangerKey);
    expect(hits('/file')).toHaveLength(0);
  });

  it.skipIf(skipTls)('refuses a server whose certificate is not trusted (exit 1), and trusts it with --ca-file', async () => {
    const tlsUrl = `https://127.0.0.1:${tlsPort}/file`;
    const dest = out();
    const refused = await fetchCli(tlsUrl, '-d', dest, '--sha256', sha);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/TLS error: .*self[- ]signed/i);
    // Node's own advice (a flag of node's) is of no use to a user of the binary: machineadm's is given.
    expect(refused.stderr).not.toContain('--use-system-ca');
    expect(refused.stderr).toContain('hint: the server\'s certificate is not trusted: give the CA that signed it (machineadm fetch --ca-file PEM; in the configuration spec.files[].source.caFile)');
    expect(existsSync(dest)).toBe(false);
    const trusted = await fetchCli(tlsUrl, '-d', dest, '--sha256', sha, '--ca-file', caFile);
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

// The real temporary file is made (and must be removed), but what is written goes to a disk that
// fills up after `room` bytes: the write that passes it fails with ENOSPC, as write(2) does.
class FullDisk extends RootedFileSystem {
  readonly room: number;
  constructor(root: string, room: number) {
    super(root);
    this.room = room;
  }
  override async openWrite(path: string, options?: WriteOptions): Promise<PendingFile> {
    const real = await super.openWrite(path, options);
    let written = 0;
    return {
      ...real,
      appendSync: (bytes) => {
        written += bytes.length;
        if (written > this.room) throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
      },
    };
  }
}

describe('download failures that are not the network', () => {
  it.each([
    ['an early write fails', 300_000],
    ['only the last write fails', content.length - 1],
  ])('stops at once on a full disk (%s), without retrying, hanging or leaving a file', async (_name, room) => {
    const root = join(dir, `full-${room}`);
    const fs = new FullDisk(root, room);
    const host = createHost({ root });
    await expect(fetchVerified(host, { urls: [url('/file')], destination: '/opt/tool', sha256: sha, fileSystem: fs })).rejects.toThrow(/writing the download for \/opt\/tool failed: ENOSPC/);
    expect(hits('/file')).toHaveLength(1);
    expect(readdirSync(root)).toEqual([]);
  });

  it('says where a file that cannot be put in place was to go (exit 1), not that machineadm has a bug', async () => {
    const root = join(dir, 'no-commit');
    const fs = new (class extends RootedFileSystem {
      override async openWrite(path: string, options?: WriteOptions): Promise<PendingFile> {
        const real = await super.openWrite(path, options);
        return { ...real, commit: async () => Promise.reject(Object.assign(new Error('EIO: i/o error, fsync'), { code: 'EIO' })) };
      }
    })(root);
    const failed = await fetchVerified(createHost({ root }), { urls: [url('/file')], destination: '/opt/tool', sha256: sha, fileSystem: fs }).catch((e: unknown) => e);
    expect(failed).toMatchObject({ exitCode: 1, message: expect.stringMatching(/could not put the verified download in place at \/opt\/tool: EIO/), hint: expect.stringMatching(/file system/) });
    expect(readdirSync(root)).toEqual([]);
  });

  it('gives up on a URL after 100 attempts that each make a little progress, and says why', async () => {
    const root = join(dir, 'trickle');
    const host = { ...createHost({ root }), sleep: async () => undefined };
    await expect(download(host, { urls: [url('/trickle')], fs: host.fs, destination: '/x' })).rejects.toThrow(/\/trickle: .*\(gave up after 100 attempts\)/);
    // Each connection resumed exactly where the one before ended.
    expect(hits('/trickle').map((h) => h.range)).toEqual([undefined, ...Array.from({ length: 99 }, (_, i) => `bytes=${(i + 1) * 1000}-`)]);
    expect(readdirSync(root)).toEqual([]);
  });
});

describe('TLS failures', () => {
  let dropper: net.Server;
  let drops = 0;
  beforeAll(async () => {
    // Reads the TLS ClientHello, then closes: a handshake cut short, as by an overloaded balancer.
    dropper = net.createServer((socket) => {
      drops += 1;
      socket.once('data', () => socket.destroy());
    });
    await new Promise<void>((resolve) => dropper.listen(0, '127.0.0.1', resolve));
  });
  afterAll(() => new Promise<void>((resolve) => dropper.close(() => resolve())));

  it('retries a handshake cut short as a network failure, not a certificate problem', async () => {
    drops = 0;
    const run = await fetchCli(`https://127.0.0.1:${(dropper.address() as AddressInfo).port}/file`, '-d', out(), '--sha256', sha);
    expect(run.code).toBe(1);
    expect(drops).toBe(3);
    expect(run.stderr).toMatch(/gave up after 3 attempts without progress/);
    expect(run.stderr).toMatch(/hint: check the URLs and the network/);
  });

  it('refuses https to a port that speaks plain http at once, without blaming the certificate', async () => {
    const run = await fetchCli(`https://127.0.0.1:${port}/file`, '-d', out(), '--sha256', sha);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/TLS error: .*wrong version number/);
    expect(run.stderr).not.toMatch(/certificate/);
    expect(seen).toHaveLength(0);
  });
});
