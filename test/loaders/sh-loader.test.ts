// The POSIX sh loader, run for real against an HTTP server on 127.0.0.1: it must verify before it
// installs or runs anything, with minisign when present and with openssl when minisign is hidden
// from PATH, and refuse a tampered binary, a changed trusted comment or another key in both.
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { basename, join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { scratchDir } from '../support/tmp.ts';
import { inCI, missingRequirement } from '../support/environment.ts';
import { binaryBuilder } from '../verify/binary-builder.ts';

const ROOT = resolve(import.meta.dirname, '../..');
const LOADER = join(ROOT, 'docs/loaders/machineadm-loader.sh');
const dir = scratchDir('machineadm-loader-');
const skip = missingRequirement({ commands: ['minisign', 'openssl', 'curl', 'sh'] });
const NAME = 'machineadm-linux-x64';

/** Served files: "/<variant>/<name>" -> bytes. */
const files = new Map<string, Buffer>();
let server: http.Server | undefined;
let base = '';
let key = '';
let otherKey = '';
let payloadIsBinary = false;

function run(args: string[], env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  // Asynchronous: the HTTP server answering the loader lives in this process.
  return new Promise((resolvePromise, reject) => {
    const child = spawn('sh', [LOADER, ...args], { env, cwd: dir });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.once('error', reject);
    child.once('close', (code) => resolvePromise({ code, stdout, stderr }));
  });
}

// A PATH with every command of /usr/bin except minisign, so the loader takes its openssl path.
function pathWithoutMinisign(): string {
  const bin = join(dir, 'bin-without-minisign');
  mkdirSync(bin);
  for (const name of readdirSync('/usr/bin')) if (name !== 'minisign') symlinkSync(join('/usr/bin', name), join(bin, name));
  return bin;
}

describe.skipIf(skip)('the sh loader', () => {
  let noMinisign = '';

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
    server = http.createServer((req, res) => {
      const body = files.get(req.url ?? '');
      if (!body) {
        res.writeHead(404);
        res.end();
        return;
      }
      res.writeHead(200, { 'content-length': body.length });
      res.end(body);
    });
    await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    noMinisign = pathWithoutMinisign();
  }, 300_000);

  afterAll(async () => {
    if (!server) return;
    server.closeAllConnections();
    await new Promise((r) => server!.close(r));
  });

  let n = 0;
  const env = (verifier: string, variant: string, extra: Record<string, string> = {}) => {
    const dest = join(dir, `install-${++n}`, 'machineadm');
    return {
      dest,
      env: {
        PATH: verifier === 'openssl' ? noMinisign : (process.env.PATH ?? '/usr/bin:/bin'),
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

  it('refuses a signature made with another key given as the public key (openssl path)', async () => {
    const r = await run([], env('openssl', 'good', { MACHINEADM_PUBKEY: otherKey }).env);
    expect(r.code).toBe(3);
  });
});
