// The Windows loader (docs/loaders/machineadm-loader.ps1) and the cloudbase-init recipe run by
// PowerShell 7 against a real HTTP server on 127.0.0.1: the pinned SHA-256, a hash mismatch, a
// download that fails, one that fails once and is retried, bad settings, and the exit code of what
// they run; the same for the .gz copy the loader takes when the mirror has it (made by the build's
// own compressor), and a .gz that does not inflate; and an https mirror that redirects to plain http. The "machineadm" they download and run is a PowerShell script standing in for it: it
// records its arguments, writes a line to stderr, and writes an error record the way Windows
// PowerShell 5.1 presents each stderr line of a native command whose stderr is redirected (as under
// SetupComplete.cmd and cloudbase-init): under $ErrorActionPreference = 'Stop' that record ends
// the calling script, which is what the recipes must not let happen.
import { createHash } from 'node:crypto';
import { execFile } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import * as fsp from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
// @ts-expect-error the build script is plain JavaScript (it runs before anything is installed)
import { compressFile } from '../../scripts/build.mjs';
import { findPowerShell } from '../support/pwsh.ts';
import { scratchDir } from '../support/tmp.ts';
import { makePki } from '../report/certs.ts';

const REPO = resolve(import.meta.dirname, '../..');
const LOADER = join(REPO, 'docs/loaders/machineadm-loader.ps1');
const CLOUDBASE = join(REPO, 'docs/recipes/windows/cloudbase-init-user-data.ps1');
const tools = findPowerShell();
const skip = 'skip' in tools ? tools.skip : undefined;
const dir = scratchDir('machineadm-loader-run-');

const STANDIN = `# machineadm stand-in
Add-Content -LiteralPath $env:STANDIN_RECORD -Value ($args -join ' ')
[Console]::Error.WriteLine('machineadm: a progress line on stderr')
Write-Error -Message 'machineadm: a stderr line, as Windows PowerShell 5.1 wraps it (NativeCommandError)' -ErrorId NativeCommandError
exit [int]$env:STANDIN_EXIT
`;
const BINARY = Buffer.from(STANDIN);
const SHA = createHash('sha256').update(BINARY).digest('hex');
const SIGNATURE = 'untrusted comment: signature from minisign secret key\nRWQ...\n';

const TAMPERED = Buffer.concat([BINARY, Buffer.from('# changed\n')]);
/** The .gz copies, by the build's compressor: of the binary, and of a tampered one. */
const GZ: Record<string, Buffer> = {};

let server: Server;
let base = '';
/** An https server (test CA) that redirects every request to the http one. */
let tlsServer: Server;
let tlsBase = '';
let caFile = '';
/** Requests by path, in order. */
let requests: string[] = [];
/** Paths that fail with 503 on their first request only. */
const flaky = new Set<string>();
/** Paths that break off halfway through their first body only. */
const brokenOnce = new Set<string>();
/** Paths that stall halfway through their first body only (the connection stays open, silent). */
const stalledOnce = new Set<string>();

function answer(path: string): { status: number; body?: Buffer | string; breakOff?: boolean; stall?: boolean } {
  const [, kind, file] = /^\/([\w-]+)\/(.+)$/.exec(path) ?? [];
  if (kind === 'missing') return { status: 404 };
  if (kind === 'flaky' && !flaky.has(path)) {
    flaky.add(path);
    return { status: 503 };
  }
  if (file === 'machineadm-windows-x64.exe') return { status: 200, body: kind === 'tampered' ? TAMPERED : BINARY };
  if (file === 'machineadm-windows-x64.exe.gz' && kind!.startsWith('gz')) {
    if (kind === 'gz-tampered') return { status: 200, body: GZ.tampered };
    // The gzip header's compression method changed from 8 (deflate): GZipStream refuses it.
    if (kind === 'gz-damaged') return { status: 200, body: Buffer.concat([GZ.binary!.subarray(0, 2), Buffer.from([7]), GZ.binary!.subarray(3)]) };
    const breakOff = kind === 'gz-broken' || (kind === 'gz-broken-once' && !brokenOnce.has(path));
    brokenOnce.add(path);
    const stall = kind === 'gz-stalled-once' && !stalledOnce.has(path);
    stalledOnce.add(path);
    return { status: 200, body: GZ.binary, breakOff, stall };
  }
  if (file === 'machineadm-windows-x64.exe.minisig' && kind !== 'nosig') return { status: 200, body: SIGNATURE };
  return { status: 404 };
}

async function gzipped(bytes: Buffer): Promise<Buffer> {
  const source = join(dir, `to-gzip-${bytes.length}`);
  await fsp.writeFile(source, bytes);
  await compressFile(source, `${source}.gz`, 'gzip');
  return fsp.readFile(`${source}.gz`);
}

beforeAll(async () => {
  GZ.binary = await gzipped(BINARY);
  GZ.tampered = await gzipped(TAMPERED);
  server = createServer((req, res) => {
    requests.push(req.url ?? '');
    const { status, body, breakOff, stall } = answer(req.url ?? '');
    if (!breakOff && !stall) return void res.writeHead(status).end(body);
    // The whole length announced, half of it sent, then the connection closed (or left silent).
    res.writeHead(status, { 'content-length': (body as Buffer).length });
    res.write((body as Buffer).subarray(0, (body as Buffer).length >> 1), () => (breakOff ? res.destroy() : undefined));
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const pki = makePki(dir);
  caFile = pki.caFile;
  tlsServer = createHttpsServer({ cert: pki.serverCert, key: pki.serverKey }, (req, res) => {
    requests.push(`https ${req.url ?? ''}`);
    // User info and a query (a signed URL's) in the location: neither may reach the loader's message.
    res.writeHead(302, { location: `${base.replace('//', '//mirror:s3cret@')}/ok/${(req.url ?? '').split('/').pop()}?X-Amz-Signature=abc123` }).end();
  });
  await new Promise<void>((done) => tlsServer.listen(0, '127.0.0.1', done));
  tlsBase = `https://127.0.0.1:${(tlsServer.address() as AddressInfo).port}`;
});
afterAll(async () => {
  for (const s of [server, tlsServer]) {
    s.closeAllConnections();
    await new Promise<void>((done) => s.close(() => done()));
  }
});

interface Ran {
  code: number;
  stdout: string;
  stderr: string;
}

function pwsh(args: string[], env: Record<string, string>, cwd = dir): Promise<Ran> {
  return new Promise((done) => {
    execFile((tools as { pwsh: string }).pwsh, ['-NoLogo', '-NoProfile', '-NonInteractive', ...args], { env: { ...process.env, ...env }, cwd, timeout: 150_000 }, (error, stdout, stderr) => {
      const code = error ? (typeof (error as { code?: unknown }).code === 'number' ? (error as { code: number }).code : -1) : 0;
      done({ code, stdout, stderr });
    });
  });
}

let n = 0;
function install(): { destination: string; record: string } {
  const at = join(dir, `install-${++n}`);
  return { destination: join(at, 'machineadm.ps1'), record: join(dir, `record-${n}.txt`) };
}

function loader(kind: string, where: { destination: string; record: string }, options: { sha?: string; exit?: number; attempts?: number; tmp?: string; stallSeconds?: number; base?: string; env?: Record<string, string> } = {}): Promise<Ran> {
  return pwsh(['-ExecutionPolicy', 'Bypass', '-File', LOADER, '-BaseUrl', `${options.base ?? base}/${kind}/`, '-Sha256', options.sha ?? SHA.toUpperCase(), '-Destination', where.destination,
    '-Arguments', 'init -c C:\\ProgramData\\machineadm\\config.yaml --no-reboot', '-Attempts', String(options.attempts ?? 3),
    ...(options.stallSeconds ? ['-StallSeconds', String(options.stallSeconds)] : [])],
  { STANDIN_RECORD: where.record, STANDIN_EXIT: String(options.exit ?? 0), ProgramFiles: dir, ...(options.tmp ? { TMPDIR: options.tmp } : {}), ...options.env });
}

describe.skipIf(skip)('the Windows loader, run by pwsh against an HTTP server', () => {
  beforeEach(() => {
    requests = [];
  });

  it('verifies the pinned SHA-256, installs the binary and its .minisig, runs it with the arguments and exits with its code', async () => {
    const where = install();
    const ran = await loader('ok', where, { exit: 4 });
    expect(ran.code, ran.stderr).toBe(4);
    expect(readFileSync(where.destination)).toEqual(BINARY);
    expect(readFileSync(`${where.destination}.minisig`, 'utf8')).toBe(SIGNATURE);
    expect(readFileSync(where.record, 'utf8').trim()).toBe('init -c C:\\ProgramData\\machineadm\\config.yaml --no-reboot');
    expect(ran.stderr).toContain(`machineadm-loader: verified SHA-256 ${SHA}`);
    // The .gz first: this mirror has none, so the binary itself.
    expect(requests).toEqual(['/ok/machineadm-windows-x64.exe.gz', '/ok/machineadm-windows-x64.exe', '/ok/machineadm-windows-x64.exe.minisig']);
    expect(ran.stderr).toMatch(/machineadm-loader: no machineadm-windows-x64\.exe\.gz at http:\/\/127\.0\.0\.1:\d+\/ok\/ \(HTTP 404\); downloading machineadm-windows-x64\.exe/);
  }, 180_000);

  it('takes the .gz copy when the mirror has it, inflating it as it arrives: the pinned SHA-256 of the binary, the binary installed, its exit code', async () => {
    const where = install();
    const ran = await loader('gz', where, { exit: 4 });
    expect(ran.code, ran.stderr).toBe(4);
    expect(readFileSync(where.destination)).toEqual(BINARY);
    expect(ran.stderr).toContain(`machineadm-loader: verified SHA-256 ${SHA}`);
    expect(readFileSync(where.record, 'utf8').trim()).toBe('init -c C:\\ProgramData\\machineadm\\config.yaml --no-reboot');
    expect(requests).toEqual(['/gz/machineadm-windows-x64.exe.gz', '/gz/machineadm-windows-x64.exe.minisig']);
  }, 180_000);

  it("hands on machineadm's exit code although it writes to stderr (the error records Windows PowerShell 5.1 makes of it do not stop the loader)", async () => {
    for (const exit of [0, 99]) {
      const where = install();
      const ran = await loader('ok', where, { exit });
      expect(ran.code, ran.stderr).toBe(exit);
      expect(ran.stderr).toContain('machineadm: a progress line on stderr');
      expect(ran.stderr).toContain('NativeCommandError');
    }
  }, 180_000);

  it('refuses a binary whose SHA-256 differs with exit 3: nothing installed, nothing run', async () => {
    const where = install();
    const ran = await loader('tampered', where);
    expect(ran.code).toBe(3);
    expect(ran.stderr).toMatch(/machineadm-loader: error: SHA-256 of http:\/\/127\.0\.0\.1:\d+\/tampered\/machineadm-windows-x64\.exe is [0-9a-f]{64}, expected [0-9a-f]{64}: not installing or running it/);
    expect(existsSync(where.destination)).toBe(false);
    expect(existsSync(where.record)).toBe(false);
    // The signature is not even asked for.
    expect(requests).toEqual(['/tampered/machineadm-windows-x64.exe.gz', '/tampered/machineadm-windows-x64.exe']);
  }, 180_000);

  it.each([
    ['a .gz that inflates to another binary', 'gz-tampered', /machineadm-loader: error: SHA-256 of http:\/\/127\.0\.0\.1:\d+\/gz-tampered\/machineadm-windows-x64\.exe\.gz \(inflated\) is [0-9a-f]{64}, expected [0-9a-f]{64}: not installing or running it/],
    ['a .gz that does not inflate', 'gz-damaged', /machineadm-loader: error: http:\/\/127\.0\.0\.1:\d+\/gz-damaged\/machineadm-windows-x64\.exe\.gz does not inflate with GZipStream \(damaged, or not what its name says\): not installing or running it/],
  ])('refuses %s with exit 3: nothing installed, nothing run, nothing left behind, not the plain binary instead', async (_name, kind, message) => {
    const where = install();
    // .NET's temporary folder (where the loader works) is $TMPDIR here.
    const tmp = join(dir, `tmp-${n}`);
    mkdirSync(tmp);
    const ran = await loader(kind, where, { tmp });
    expect(ran.code).toBe(3);
    expect(ran.stderr).toMatch(message);
    expect(existsSync(join(where.destination, '..'))).toBe(false);
    expect(readdirSync(tmp)).toEqual([]);
    expect(existsSync(where.record)).toBe(false);
    expect(requests).toEqual([`/${kind}/machineadm-windows-x64.exe.gz`]);
  }, 180_000);

  it('retries a .gz download that breaks off, and goes on when a later attempt succeeds', async () => {
    const where = install();
    const ran = await loader('gz-broken-once', where);
    expect(ran.code, ran.stderr).toBe(0);
    expect(requests.filter((r) => !r.endsWith('.minisig'))).toEqual(['/gz-broken-once/machineadm-windows-x64.exe.gz', '/gz-broken-once/machineadm-windows-x64.exe.gz']);
    expect(readFileSync(where.destination)).toEqual(BINARY);
  }, 180_000);

  it('gives up a .gz download that stalls (no data for -StallSeconds), tries again, and goes on when a later attempt succeeds', async () => {
    const where = install();
    const ran = await loader('gz-stalled-once', where, { stallSeconds: 2 });
    expect(ran.code, ran.stderr).toBe(0);
    expect(requests.filter((r) => !r.endsWith('.minisig'))).toEqual(['/gz-stalled-once/machineadm-windows-x64.exe.gz', '/gz-stalled-once/machineadm-windows-x64.exe.gz']);
    expect(readFileSync(where.destination)).toEqual(BINARY);
  }, 180_000);

  it('ends with exit 1 after -Attempts .gz downloads that break off, naming the URL, with nothing installed', async () => {
    const where = install();
    const ran = await loader('gz-broken', where, { attempts: 2 });
    expect(ran.code).toBe(1);
    expect(ran.stderr).toMatch(/machineadm-loader: error: download of http:\/\/127\.0\.0\.1:\d+\/gz-broken\/machineadm-windows-x64\.exe\.gz failed: /);
    expect(requests).toEqual(['/gz-broken/machineadm-windows-x64.exe.gz', '/gz-broken/machineadm-windows-x64.exe.gz']);
    expect(existsSync(where.destination)).toBe(false);
  }, 180_000);

  it('retries a failed download and goes on when a later attempt succeeds', async () => {
    const where = install();
    const ran = await loader('flaky', where, { exit: 0 });
    expect(ran.code, ran.stderr).toBe(0);
    expect(requests.filter((r) => r.endsWith('.exe'))).toEqual(['/flaky/machineadm-windows-x64.exe', '/flaky/machineadm-windows-x64.exe']);
    expect(readFileSync(where.destination)).toEqual(BINARY);
  }, 180_000);

  it('ends with exit 1 after -Attempts failed downloads, naming the URL, with nothing installed', async () => {
    const where = install();
    const ran = await loader('missing', where, { attempts: 2 });
    expect(ran.code).toBe(1);
    expect(ran.stderr).toMatch(/machineadm-loader: error: download of http:\/\/127\.0\.0\.1:\d+\/missing\/machineadm-windows-x64\.exe failed: /);
    expect(requests).toEqual(['/missing/machineadm-windows-x64.exe.gz', '/missing/machineadm-windows-x64.exe', '/missing/machineadm-windows-x64.exe']);
    expect(existsSync(where.destination)).toBe(false);
  }, 180_000);

  it('refuses a redirect from an https base URL to plain http (HttpClient does not follow it): exit 1, nothing asked of the http server, nothing installed', async () => {
    const where = install();
    // .NET on Linux trusts what SSL_CERT_FILE names: the test CA of the https server.
    const ran = await loader('to-http', where, { base: tlsBase, attempts: 3, env: { SSL_CERT_FILE: caFile } });
    expect(ran.code).toBe(1);
    expect(ran.stderr).toMatch(/machineadm-loader: error: download of https:\/\/127\.0\.0\.1:\d+\/to-http\/machineadm-windows-x64\.exe\.gz failed: it was redirected to plain http, which an https base URL does not allow \(the mirror must redirect to https; it redirected to http:\/\/127\.0\.0\.1:\d+\/ok\/machineadm-windows-x64\.exe\.gz\)/);
    expect(ran.stderr).not.toContain('s3cret');
    expect(ran.stderr).not.toContain('X-Amz-Signature');
    // A redirect the client did not follow is the same on every try: one request, no retries.
    expect(requests).toEqual(['https /to-http/machineadm-windows-x64.exe.gz']);
    expect(existsSync(join(where.destination, '..'))).toBe(false);
    expect(existsSync(where.record)).toBe(false);
  }, 180_000);

  it('installs without a .minisig when the mirror has none, says so, and removes an older one beside the binary', async () => {
    const where = install();
    mkdirSync(join(where.destination, '..'), { recursive: true });
    writeFileSync(`${where.destination}.minisig`, 'a signature of an older binary');
    const ran = await loader('nosig', where);
    expect(ran.code, ran.stderr).toBe(0);
    expect(ran.stderr).toMatch(/machineadm-loader: warning: no signature at http:\/\/127\.0\.0\.1:\d+\/nosig\/machineadm-windows-x64\.exe\.minisig/);
    expect(existsSync(`${where.destination}.minisig`)).toBe(false);
  }, 180_000);

  it.each([
    ['a -Sha256 that is not 64 hex digits', ['-Sha256', 'abc'], /-Sha256 must be 64 hexadecimal characters/],
    ['no -BaseUrl', ['-BaseUrl', ''], /-BaseUrl must be an http:\/\/ or https:\/\/ URL/],
  ])('ends with exit 2 before any download for %s', async (_name, override, message) => {
    const where = install();
    const args = ['-BaseUrl', `${base}/ok/`, '-Sha256', SHA, '-Destination', where.destination];
    const i = args.indexOf(override[0]!);
    args[i + 1] = override[1]!;
    const ran = await pwsh(['-File', LOADER, ...args], { STANDIN_RECORD: where.record, STANDIN_EXIT: '0', ProgramFiles: dir });
    expect(ran.code).toBe(2);
    expect(ran.stderr).toMatch(message);
    expect(requests).toEqual([]);
  }, 180_000);
});

describe.skipIf(skip)('the cloudbase-init recipe, run by pwsh', () => {
  it('writes the configuration and hands machineadm\'s exit code (1003: restart and run again) to cloudbase-init, its stderr error records notwithstanding', async () => {
    const work = join(dir, 'cloudbase');
    mkdirSync(work, { recursive: true });
    const standin = join(work, 'machineadm.ps1');
    writeFileSync(standin, STANDIN);
    // The installed machineadm.exe is the stand-in script (as PowerShell 5.1 would present its stderr).
    const text = readFileSync(CLOUDBASE, 'utf8');
    const call = "& (Join-Path $env:ProgramFiles 'machineadm\\machineadm.exe')";
    expect(text).toContain(call);
    // And the configuration goes to a scratch path: there is no drive C: here.
    const configPath = "$config = 'C:\\ProgramData\\machineadm\\config.yaml'";
    expect(text).toContain(configPath);
    const config = join(work, 'ProgramData', 'config.yaml');
    const recipe = join(work, 'recipe.ps1');
    writeFileSync(recipe, text.replace(call, `& '${standin}'`).replace(configPath, `$config = '${config}'`));
    const record = join(work, 'record.txt');
    const ran = await pwsh(['-File', recipe], { STANDIN_RECORD: record, STANDIN_EXIT: '1003' }, work);
    // Exit codes above 255 exist on Windows only: here 1003 arrives as 1003 & 0xff.
    expect(ran.code, ran.stderr).toBe(1003 & 0xff);
    expect(readFileSync(record, 'utf8').trim()).toBe(`init -c ${config} --cloudbase-init`);
    expect(readFileSync(config, 'utf8')).toMatch(/^apiVersion: machineadm\.cluster\.x-k8s\.io\/v1alpha1\nkind: MachineConfig\n/);
    // A negative control: the same recipe with 'Stop' around the call ends with exit 1 at the first record.
    const stopping = join(work, 'stopping.ps1');
    writeFileSync(stopping, readFileSync(recipe, 'utf8').replace("$ErrorActionPreference = 'Continue'", "$ErrorActionPreference = 'Stop'"));
    const stopped = await pwsh(['-File', stopping], { STANDIN_RECORD: record, STANDIN_EXIT: '1003' }, work);
    expect(stopped.code).toBe(1);
  }, 180_000);
});
