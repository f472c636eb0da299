// The POSIX sh loader, run for real against an HTTP server on 127.0.0.1: it must verify before it
// installs or runs anything, with minisign when present and with openssl when minisign is hidden
// from PATH, and refuse a tampered binary, a changed trusted comment or another key in both. It
// takes the .zst or .gz copy (made by the build's own compressor) when the server has it and the
// machine can inflate it, and refuses one that does not inflate or inflates to another binary.
// Behind an https base URL it refuses a redirect to plain http (an http mirror, and its redirect to
// https, keep working); a transfer that stalls is given up and tried again from its start.
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import * as fsp from 'node:fs/promises';
import * as http from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { basename, join, resolve } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
// @ts-expect-error the build script is plain JavaScript (it runs before anything is installed)
import { compressFile } from '../../scripts/build.mjs';
import { scratchDir } from '../support/tmp.ts';
import { inCI, missingRequirement } from '../support/environment.ts';
import { binaryBuilder } from '../verify/binary-builder.ts';
import { makePki } from '../report/certs.ts';

const ROOT = resolve(import.meta.dirname, '../..');
const LOADER = join(ROOT, 'docs/loaders/machineadm-loader.sh');
const dir = scratchDir('machineadm-loader-');
const skip = missingRequirement({ commands: ['minisign', 'openssl', 'curl', 'wget', 'sh', 'zstd', 'gzip'] });
const NAME = 'machineadm-linux-x64';

/** Served files: "/<variant>/<name>" -> bytes. */
const files = new Map<string, Buffer>();
/** The paths asked for, in order (cleared before each test). */
const requests: string[] = [];
/** Paths of the flaky variant that have failed once (503) already. */
const failedOnce = new Set<string>();
/** Paths of the stalled-once variants that have stalled once already. */
const stalledOnce = new Set<string>();
let server: http.Server | undefined;
let tlsServer: http.Server | undefined;
let base = '';
/** The https server: the same files, and redirects to the http one. */
let tlsBase = '';
/** Settings that make curl and wget trust the test CA of the https server. */
let trustTestCa: Record<string, string> = {};
let key = '';
let otherKey = '';
let payloadIsBinary = false;

function run(args: string[], env: Record<string, string>, umask?: string, killAfterMs?: number): Promise<{ code: number | null; stdout: string; stderr: string }> {
  // Asynchronous: the HTTP server answering the loader lives in this process.
  return new Promise((resolvePromise, reject) => {
    const argv = umask ? ['-c', `umask ${umask} && exec sh "$0" "$@"`, LOADER, ...args] : [LOADER, ...args];
    // Its own process group, so that a loader that hangs is killed with its curl or wget.
    const child = spawn('sh', argv, { env, cwd: dir, detached: killAfterMs !== undefined });
    const timer = killAfterMs === undefined ? undefined : setTimeout(() => process.kill(-child.pid!, 'SIGKILL'), killAfterMs);
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.once('error', reject);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolvePromise({ code, stdout, stderr });
    });
  });
}

// A PATH with every command of /usr/bin except those named: without minisign the loader takes its
// openssl path; without zstd (and gzip) it cannot inflate that form and takes the next.
function pathWithout(...names: string[]): string {
  const bin = join(dir, `bin-without-${names.join('-')}`);
  mkdirSync(bin);
  for (const name of readdirSync('/usr/bin')) if (!names.includes(name)) symlinkSync(join('/usr/bin', name), join(bin, name));
  return bin;
}

/** The build's compressor (the format the release ships), at a fast level: the loader does not care about the level. */
async function compressed(bytes: Buffer, format: 'gzip' | 'zstd'): Promise<Buffer> {
  const source = join(dir, `to-compress-${format}`);
  await fsp.writeFile(source, bytes);
  await compressFile(source, `${source}.out`, format, format === 'gzip' ? 1 : 3);
  return fsp.readFile(`${source}.out`);
}

/** The same bytes with one flipped in the middle: a damaged download the container's own check catches. */
function damaged(bytes: Buffer): Buffer {
  const copy = Buffer.from(bytes);
  copy[copy.length >> 1]! ^= 0x55;
  return copy;
}

describe.skipIf(skip)('the sh loader', () => {
  let noMinisign = '';
  const paths: Record<string, string> = {};

  beforeAll(async () => {
    execFileSync('minisign', ['-G', '-W', '-p', 'release.pub', '-s', 'release.key'], { cwd: dir, stdio: 'ignore' });
    execFileSync('minisign', ['-G', '-W', '-p', 'other.pub', '-s', 'other.key'], { cwd: dir, stdio: 'ignore' });
    key = readFileSync(join(dir, 'release.pub'), 'utf8').split('\n')[1]!;
    otherKey = readFileSync(join(dir, 'other.pub'), 'utf8').split('\n')[1]!;

    // The real binary when it can be built here; otherwise any executable shows download+verify+exec.
    let payload = join(dir, NAME);
    const builder = await binaryBuilder();
    if (typeof builder === 'string') {
      if (inCI) throw new Error(`CI cannot build the binary for the loader test: ${builder}`);
      console.warn(`the loader test runs a stand-in payload: ${builder}`);
      writeFileSync(payload, '#!/bin/sh\necho "machineadm stand-in ran with: $*"\n', { mode: 0o755 });
    } else {
      payload = await builder({ releasePublicKey: key, outDir: join(dir, 'dist') });
      payloadIsBinary = true;
    }
    const sign = (file: string, sigFile: string, keyFile: string, extra: string[] = []) =>
      execFileSync('minisign', ['-S', '-s', keyFile, '-m', file, '-x', sigFile, '-t', `loader test ${basename(sigFile)}`, ...extra], { cwd: dir, stdio: 'ignore' });
    sign(payload, join(dir, 'good.minisig'), 'release.key');
    sign(payload, join(dir, 'legacy.minisig'), 'release.key', ['-l']);
    sign(payload, join(dir, 'other.minisig'), 'other.key');
    const bytes = readFileSync(payload);
    const tampered = Buffer.from(bytes);
    const at = tampered.indexOf('Pacific/Chatham');
    tampered[at >= 0 ? at : tampered.length - 1]! ^= 0x01;
    const good = readFileSync(join(dir, 'good.minisig'));
    const variants: Record<string, [Buffer, Buffer]> = {
      good: [bytes, good],
      crlf: [bytes, Buffer.from(good.toString('latin1').replace(/\n/g, '\r\n'), 'latin1')],
      legacy: [bytes, readFileSync(join(dir, 'legacy.minisig'))],
      tampered: [tampered, good],
      'other-key': [bytes, readFileSync(join(dir, 'other.minisig'))],
      'changed-comment': [bytes, Buffer.from(good.toString('latin1').replace('loader test', 'loader TEST'), 'latin1')],
    };
    for (const [variant, [binary, sig]] of Object.entries(variants)) {
      files.set(`/${variant}/${NAME}`, binary);
      files.set(`/${variant}/${NAME}.minisig`, sig);
    }
    // The compressed copies, beside the plain binary and its signature, as a release mirror has them.
    const zst = await compressed(bytes, 'zstd');
    const gz = await compressed(bytes, 'gzip');
    const compressedVariants: Record<string, Record<string, Buffer>> = {
      compressed: { '.zst': zst, '.gz': gz },
      'gz-only': { '.gz': gz },
      flaky: { '.zst': zst },
      'broken-off': { '.zst': zst },
      'tampered-zst': { '.zst': await compressed(tampered, 'zstd') },
      'tampered-gz': { '.gz': await compressed(tampered, 'gzip') },
      'damaged-zst': { '.zst': damaged(zst) },
      'damaged-gz': { '.gz': damaged(gz) },
      // A mirror that answers every name with the plain binary (zstd -d inflates gzip, so not that).
      'not-zstd': { '.zst': bytes },
      // The first request for the .zst stalls after half of it (the connection open, silent); or every one does.
      'stalled-once-curl': { '.zst': zst },
      'stalled-once-wget': { '.zst': zst },
      stalled: { '.zst': zst },
    };
    for (const [variant, copies] of Object.entries(compressedVariants)) {
      files.set(`/${variant}/${NAME}`, bytes);
      files.set(`/${variant}/${NAME}.minisig`, good);
      for (const [suffix, body] of Object.entries(copies)) files.set(`/${variant}/${NAME}${suffix}`, body);
    }
    const serve = (scheme: string) => (req: http.IncomingMessage, res: http.ServerResponse) => {
      const url = req.url ?? '';
      requests.push(scheme === 'http' ? url : `${scheme} ${url}`);
      // A mirror that hands every download to another server: https to http (a downgrade), or http to https.
      const [, redirect, file] = /^\/(to-http|to-https)\/(.+)$/.exec(url) ?? [];
      if (redirect) {
        res.writeHead(302, { location: `${redirect === 'to-http' ? base : tlsBase}/good/${file}` }).end();
        return;
      }
      const body = files.get(url);
      if (!body) {
        res.writeHead(404);
        res.end();
        return;
      }
      // Fails before its first byte once (curl retries that), or breaks off halfway (it does not).
      if (url === `/flaky/${NAME}.zst` && !failedOnce.has(url)) {
        failedOnce.add(url);
        res.writeHead(503).end();
        return;
      }
      res.writeHead(200, { 'content-length': body.length });
      const stall = url === `/stalled/${NAME}.zst` || (url.startsWith('/stalled-once-') && url.endsWith('.zst') && !stalledOnce.has(url));
      if (stall) stalledOnce.add(url);
      if (url === `/broken-off/${NAME}.zst`) res.write(body.subarray(0, body.length >> 1), () => res.destroy());
      else if (stall) res.write(body.subarray(0, body.length >> 1));
      else res.end(body);
    };
    server = http.createServer(serve('http'));
    await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const pki = makePki(dir);
    tlsServer = createHttpsServer({ cert: pki.serverCert, key: pki.serverKey }, serve('https'));
    await new Promise<void>((r) => tlsServer!.listen(0, '127.0.0.1', r));
    tlsBase = `https://127.0.0.1:${(tlsServer.address() as AddressInfo).port}`;
    writeFileSync(join(dir, 'wgetrc'), `ca_certificate = ${pki.caFile}\n`);
    trustTestCa = { CURL_CA_BUNDLE: pki.caFile, WGETRC: join(dir, 'wgetrc') };
    noMinisign = pathWithout('minisign');
    paths.wget = pathWithout('curl');
    paths['without zstd'] = pathWithout('zstd');
    paths['without zstd or gzip'] = pathWithout('zstd', 'gzip');
  }, 300_000);

  beforeEach(() => {
    requests.length = 0;
  });

  afterAll(async () => {
    for (const s of [server, tlsServer]) {
      if (!s) continue;
      s.closeAllConnections();
      await new Promise((r) => s.close(r));
    }
  });

  let n = 0;
  const env = (verifier: string, variant: string, extra: Record<string, string> = {}) => {
    const dest = join(dir, `install-${++n}`, 'machineadm');
    return {
      dest,
      env: {
        PATH: verifier === 'openssl' ? noMinisign : (paths[verifier] ?? process.env.PATH ?? '/usr/bin:/bin'),
        HOME: dir,
        MACHINEADM_BASE_URL: `${base}/${variant}`,
        MACHINEADM_PUBKEY: key,
        MACHINEADM_ARCH: 'x64',
        MACHINEADM_DEST: dest,
        ...extra,
      },
    };
  };

  it.each(['minisign', 'openssl'])('with %s: verifies, installs with its .minisig, then runs it', async (verifier) => {
    const { dest, env: e } = env(verifier, 'good');
    const r = await run(['version'], e);
    expect(r.stderr).toContain(`verified with ${verifier}: loader test good.minisig`);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(payloadIsBinary ? /^machineadm \d+\.\d+\.\d+/ : /stand-in ran with: version/);
    expect(existsSync(`${dest}.minisig`)).toBe(true);
    if (payloadIsBinary) {
      // Installed this way, the binary can check itself with the release key built into it.
      const self = execFileSync(dest, ['verify', '--self'], { encoding: 'utf8' });
      expect(self).toContain('built-in release key');
    }
  });

  it.each([
    ['minisign', 'tampered', /signature verification FAILED/],
    ['openssl', 'tampered', /signature verification FAILED/],
    ['minisign', 'other-key', /signature verification FAILED/],
    ['openssl', 'other-key', /made with key id [0-9a-f]{16}, not with the key given/],
    ['minisign', 'changed-comment', /signature verification FAILED/],
    ['openssl', 'changed-comment', /trusted comment of the signature was changed/],
  ])('with %s: refuses the %s binary with exit 3, installing and running nothing', async (verifier, variant, message) => {
    const { dest, env: e } = env(verifier, variant);
    const r = await run(['version'], e);
    expect(r.stderr).toMatch(message);
    expect(r.code).toBe(3);
    expect(r.stdout).toBe('');
    expect(existsSync(join(dest, '..'))).toBe(false);
  });

  it.each([
    ['openssl', 'legacy'],
    ['openssl', 'crlf'],
    ['minisign', 'crlf'],
  ])('with %s: accepts a %s signature', async (verifier, variant) => {
    const { env: e } = env(verifier, variant);
    const r = await run(['version'], e);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain(`verified with ${verifier}`);
  });

  it('installs nothing group- or world-writable under a umask of 000', async () => {
    const { dest, env: e } = env('minisign', 'good');
    const r = await run(['version'], e, '000');
    expect(r.code, r.stderr).toBe(0);
    const mode = (path: string) => statSync(path).mode & 0o777;
    expect(mode(join(dest, '..')).toString(8)).toBe('755');
    expect(mode(dest).toString(8)).toBe('755');
    expect(mode(`${dest}.minisig`).toString(8)).toBe('644');
  });

  it('fails with exit 1 when the binary is not at the base URL', async () => {
    const r = await run([], env('minisign', 'nowhere').env);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('download of');
  });

  it('fails with exit 2 without a public key', async () => {
    const r = await run([], env('minisign', 'good', { MACHINEADM_PUBKEY: '' }).env);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('MACHINEADM_PUBKEY is not set');
  });

  it.each(['amd64', 'aarch64', 'x64 '])('fails with exit 2, downloading nothing, when MACHINEADM_ARCH is %j (not x64 or arm64)', async (arch) => {
    const { dest, env: e } = env('minisign', 'good', { MACHINEADM_ARCH: arch });
    const r = await run(['version'], e);
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toContain('MACHINEADM_ARCH must be x64 or arm64');
    expect(requests).toEqual([]);
    expect(existsSync(join(dest, '..'))).toBe(false);
  });

  it('refuses a signature made with another key given as the public key (openssl path)', async () => {
    const r = await run([], env('openssl', 'good', { MACHINEADM_PUBKEY: otherKey }).env);
    expect(r.code).toBe(3);
  });

  const plainBytes = () => files.get(`/good/${NAME}`)!;

  it.each([
    ['minisign', 'compressed', '.zst'],
    ['openssl', 'compressed', '.zst'],
    ['minisign', 'gz-only', '.gz'],
    ['openssl', 'gz-only', '.gz'],
  ])('with %s: takes the compressed copy the %s mirror has (%s), inflates it as it arrives, verifies the inflated binary, installs and runs it', async (verifier, variant, suffix) => {
    const { dest, env: e } = env(verifier, variant);
    const r = await run(['version'], e);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain(`verified with ${verifier}: loader test good.minisig`);
    expect(r.stdout).toMatch(payloadIsBinary ? /^machineadm \d+\.\d+\.\d+/ : /stand-in ran with: version/);
    // The signature first, then the best copy; the plain binary is never asked for.
    const tried = suffix === '.zst' ? [`${NAME}.zst`] : [`${NAME}.zst`, `${NAME}.gz`];
    expect(requests).toEqual([`/${variant}/${NAME}.minisig`, ...tried.map((f) => `/${variant}/${f}`)]);
    expect(readFileSync(dest).equals(plainBytes())).toBe(true);
    expect(readFileSync(`${dest}.minisig`)).toEqual(files.get(`/${variant}/${NAME}.minisig`));
  });

  it('falls back to the plain binary when the mirror has no compressed copy (an HTTP error), and says so', async () => {
    const r = await run(['version'], env('minisign', 'good').env);
    expect(r.code, r.stderr).toBe(0);
    expect(requests).toEqual([`/good/${NAME}.minisig`, `/good/${NAME}.zst`, `/good/${NAME}.gz`, `/good/${NAME}`]);
    expect(r.stderr).toMatch(/no machineadm-linux-x64\.zst at http:\/\/127\.0\.0\.1:\d+\/good \(curl: \(22\) .*404\); trying the next form/);
    // Nothing else about the copies it did not find (an inflater given an empty answer complains).
    expect(r.stderr).not.toMatch(/unexpected end of file/);
  });

  it.each([
    ['without zstd', [`${NAME}.gz`]],
    ['without zstd or gzip', [NAME]],
  ])('chooses the form by what the machine can inflate: %s, it asks for %j', async (path, asked) => {
    const { dest, env: e } = env(path, 'compressed');
    const r = await run(['version'], e);
    expect(r.code, r.stderr).toBe(0);
    expect(requests).toEqual([`/compressed/${NAME}.minisig`, ...asked.map((f) => `/compressed/${f}`)]);
    expect(readFileSync(dest).equals(plainBytes())).toBe(true);
  });

  it.each([
    ['minisign', 'tampered-zst', /signature verification FAILED/],
    ['openssl', 'tampered-zst', /signature verification FAILED/],
    ['openssl', 'tampered-gz', /signature verification FAILED/],
    ['minisign', 'damaged-zst', /does not inflate with zstd \(damaged, or not what its name says\): not installing or running it/],
    ['openssl', 'damaged-gz', /does not inflate with gzip \(damaged, or not what its name says\): not installing or running it/],
    ['minisign', 'not-zstd', /does not inflate with zstd/],
  ])('with %s: refuses the %s copy with exit 3, installing and running nothing, leaving nothing behind', async (verifier, variant, message) => {
    const { dest, env: e } = env(verifier, variant);
    const tmp = join(dir, `tmp-${n}`);
    mkdirSync(tmp);
    const r = await run(['version'], { ...e, TMPDIR: tmp });
    expect(r.stderr).toMatch(message);
    expect(r.code).toBe(3);
    expect(r.stdout).toBe('');
    expect(existsSync(join(dest, '..'))).toBe(false);
    // Not the plain binary instead: a copy that does not verify is an attack or a broken mirror, not a missing file.
    expect(requests).not.toContain(`/${variant}/${NAME}`);
    // The inflated bytes, verified or not, went with the loader's work folder.
    expect(readdirSync(tmp)).toEqual([]);
  });

  it('fails with exit 1 when the compressed download breaks off, installing nothing', async () => {
    const { dest, env: e } = env('minisign', 'broken-off', { MACHINEADM_ATTEMPTS: '2' });
    const r = await run(['version'], e);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/download of http:\/\/127\.0\.0\.1:\d+\/broken-off\/machineadm-linux-x64\.zst failed/);
    expect(requests.filter((u) => u.endsWith('.zst'))).toEqual([`/broken-off/${NAME}.zst`, `/broken-off/${NAME}.zst`]);
    expect(existsSync(join(dest, '..'))).toBe(false);
  }, 60_000);

  it('retries a compressed download that fails before its first byte (503) and goes on with it', async () => {
    const { dest, env: e } = env('openssl', 'flaky');
    const r = await run(['version'], e);
    expect(r.code, r.stderr).toBe(0);
    expect(requests).toEqual([`/flaky/${NAME}.minisig`, `/flaky/${NAME}.zst`, `/flaky/${NAME}.zst`]);
    expect(readFileSync(dest).equals(plainBytes())).toBe(true);
  });

  // curl, or wget when it is the only one installed.
  const tools = [['curl', 'minisign'], ['wget', 'wget']] as const;

  it.each(tools)('with %s: refuses a redirect from an https base URL to plain http with exit 1, asking nothing of the http server, installing nothing', async (_tool, path) => {
    const { dest, env: e } = env(path, 'good', { ...trustTestCa, MACHINEADM_BASE_URL: `${tlsBase}/to-http` });
    const r = await run(['version'], e, undefined, 60_000);
    expect(r.stderr).toMatch(/download of https:\/\/127\.0\.0\.1:\d+\/to-http\/machineadm-linux-x64\.minisig failed: it was redirected to plain http/);
    expect(r.code, r.stderr).toBe(1);
    expect(r.stdout).toBe('');
    expect(requests).toEqual([`https /to-http/${NAME}.minisig`]);
    expect(existsSync(join(dest, '..'))).toBe(false);
  }, 60_000);

  it.each(tools)('with %s: follows a redirect from an http base URL to https, verifies and installs', async (_tool, path) => {
    const { dest, env: e } = env(path, 'to-https', trustTestCa);
    const r = await run(['version'], e, undefined, 60_000);
    expect(r.code, r.stderr).toBe(0);
    expect(requests).toContain(`https /good/${NAME}`);
    expect(readFileSync(dest).equals(plainBytes())).toBe(true);
  }, 60_000);

  it.each(tools)('with %s: gives up a download that stalls (nothing for MACHINEADM_STALL_SECONDS), starts it again, and verifies and installs what a later attempt brings', async (tool, path) => {
    const { dest, env: e } = env(path, `stalled-once-${tool}`, { MACHINEADM_STALL_SECONDS: '1' });
    const r = await run(['version'], e, undefined, 40_000);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain('verified with minisign');
    expect(requests).toEqual([`/stalled-once-${tool}/${NAME}.minisig`, `/stalled-once-${tool}/${NAME}.zst`, `/stalled-once-${tool}/${NAME}.zst`]);
    expect(readFileSync(dest).equals(plainBytes())).toBe(true);
  }, 60_000);

  it.each(tools)('with %s: ends with exit 1 after MACHINEADM_ATTEMPTS downloads that stall, within their stall limits, installing nothing and leaving nothing behind', async (_tool, path) => {
    const { dest, env: e } = env(path, 'stalled', { MACHINEADM_STALL_SECONDS: '1', MACHINEADM_ATTEMPTS: '2' });
    const tmp = join(dir, `tmp-${n}`);
    mkdirSync(tmp);
    const started = Date.now();
    const r = await run(['version'], { ...e, TMPDIR: tmp }, undefined, 45_000);
    // Two stalls of 1 s (curl notices one up to 6 s late: it averages over its last 5 seconds) and a 2 s pause.
    expect(Date.now() - started).toBeLessThan(30_000);
    expect(r.code, r.stderr).toBe(1);
    expect(r.stderr).toMatch(/download of http:\/\/127\.0\.0\.1:\d+\/stalled\/machineadm-linux-x64\.zst failed/);
    expect(requests).toEqual([`/stalled/${NAME}.minisig`, `/stalled/${NAME}.zst`, `/stalled/${NAME}.zst`]);
    expect(r.stdout).toBe('');
    expect(existsSync(join(dest, '..'))).toBe(false);
    expect(readdirSync(tmp)).toEqual([]);
  }, 60_000);

  it.each([
    ['MACHINEADM_ATTEMPTS', '0'],
    ['MACHINEADM_ATTEMPTS', 'five'],
    ['MACHINEADM_STALL_SECONDS', '-1'],
    ['MACHINEADM_STALL_SECONDS', '1.5'],
  ])('fails with exit 2, downloading nothing, when %s is %j (not a whole number of at least 1)', async (name, value) => {
    const { dest, env: e } = env('minisign', 'good', { [name]: value });
    const r = await run(['version'], e);
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toContain(`${name} must be a whole number of at least 1`);
    expect(requests).toEqual([]);
    expect(existsSync(join(dest, '..'))).toBe(false);
  });
});
