// The parts of the build script that need no build: reading the release key, the pins it builds
// from, and the compressed copies written beside a binary (with SHA256SUMS).
import { execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gunzipSync, zstdDecompressSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
// @ts-expect-error the build script is plain JavaScript (it runs before anything is installed)
import { compressBinary, compressFile, releasePublicKey, TARGETS, NODE_VERSION, writeSha256Sums } from '../../scripts/build.mjs';
import { missingRequirement } from '../support/environment.ts';
import { scratchDir } from '../support/tmp.ts';

const key = Buffer.concat([Buffer.from('Ed'), randomBytes(40)]).toString('base64');

describe('releasePublicKey', () => {
  it.each<[string, Record<string, string>, string | undefined]>([
    ['no key at all', {}, undefined],
    ['the base64 line in MACHINEADM_RELEASE_PUBKEY', { MACHINEADM_RELEASE_PUBKEY: key }, key],
    ['the line with surrounding whitespace', { MACHINEADM_RELEASE_PUBKEY: `  ${key}\n` }, key],
    ['a whole .pub file pasted into MACHINEADM_RELEASE_PUBKEY', { MACHINEADM_RELEASE_PUBKEY: `untrusted comment: minisign public key 1234\n${key}\n` }, key],
  ])('reads %s', (_name, env, expected) => {
    expect(releasePublicKey(env)).toBe(expected);
  });

  it('reads a minisign .pub file named by MACHINEADM_RELEASE_PUBKEY_FILE', () => {
    const file = join(scratchDir(), 'release.pub');
    writeFileSync(file, `untrusted comment: minisign public key 1234\r\n${key}\r\n`);
    expect(releasePublicKey({ MACHINEADM_RELEASE_PUBKEY_FILE: file })).toBe(key);
  });

  it.each([
    ['not base64', 'not a key!'],
    ['too short', key.slice(0, 40)],
    ['a signify key (other algorithm tag)', Buffer.concat([Buffer.from('Xx'), randomBytes(40)]).toString('base64')],
  ])('refuses a key that is %s', (_name, value) => {
    expect(() => releasePublicKey({ MACHINEADM_RELEASE_PUBKEY: value })).toThrow(/not a minisign public key/);
  });

  it('names a key file it cannot read', () => {
    expect(() => releasePublicKey({ MACHINEADM_RELEASE_PUBKEY_FILE: '/nonexistent/release.pub' })).toThrow(/cannot read \/nonexistent\/release\.pub/);
  });
});

describe('the pinned base binaries', () => {
  it('pins every target to a Node package of the embedded release by sha256', () => {
    expect(NODE_VERSION).toBe('24.21.0');
    for (const spec of Object.values(TARGETS) as { package: string; sha256: string }[]) {
      expect(spec.package).toMatch(/^node-(linux-x64|linux-arm64|win-x64)$/);
      expect(spec.sha256).toMatch(/^[0-9a-f]{64}$/);
    }
  });

  it('embeds the Node release the project is developed and tested with (the pinned "node" package)', () => {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { devDependencies: Record<string, string> };
    expect(pkg.devDependencies.node).toBe(NODE_VERSION);
  });
});

/** Something like a binary: stretches of random bytes between repeated ones. */
function binaryLike(bytes: number): Buffer {
  const parts: Buffer[] = [];
  for (let size = 0; size < bytes; size += 48 * 1024) parts.push(randomBytes(16 * 1024), Buffer.alloc(32 * 1024, `section ${size % 7} `));
  return Buffer.concat(parts).subarray(0, bytes);
}

interface Output {
  name: string;
  path: string;
  sha256: string;
  size: number;
}

describe('the compressed copies', () => {
  it('compresses the same input to the same bytes every time, with nothing of the machine or the clock in them (gzip: no name, time 0, OS 3; zstd: a checksum and the content size)', async () => {
    const dir = scratchDir();
    const input = join(dir, 'machineadm-linux-x64');
    const bytes = binaryLike(2 * 1048576);
    writeFileSync(input, bytes);
    for (const format of ['gzip', 'zstd']) {
      await compressFile(input, join(dir, `${format}.1`), format);
      await compressFile(input, join(dir, `${format}.2`), format);
      expect(readFileSync(join(dir, `${format}.1`)).equals(readFileSync(join(dir, `${format}.2`))), format).toBe(true);
    }
    const gz = readFileSync(join(dir, 'gzip.1'));
    // Magic, deflate, no flags (no name, comment or extra field), time 0, "maximum compression", Unix.
    expect([...gz.subarray(0, 10)]).toEqual([0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 2, 3]);
    expect(gunzipSync(gz).equals(bytes)).toBe(true);
    const zst = readFileSync(join(dir, 'zstd.1'));
    expect([...zst.subarray(0, 4)]).toEqual([0x28, 0xb5, 0x2f, 0xfd]);
    // The frame header's descriptor: a content checksum (bit 2) and the content size (bits 6-7 or single segment).
    expect(zst[4]! & 0x04).toBe(0x04);
    expect(zst[4]! & 0xe0).not.toBe(0);
    expect(zstdDecompressSync(zst).equals(bytes)).toBe(true);
    // And the tools the loader inflates with agree (zstd is a Debian package .ci/run installs).
    if (missingRequirement({ commands: ['gzip', 'zstd'] })) return;
    expect(execFileSync('gzip', ['-dc', join(dir, 'gzip.1')], { maxBuffer: 1 << 24 }).equals(bytes)).toBe(true);
    expect(execFileSync('zstd', ['-dcq', join(dir, 'zstd.1')], { maxBuffer: 1 << 24 }).equals(bytes)).toBe(true);
  });

  it('writes NAME.gz beside every binary and NAME.zst beside the Linux ones, removes the copies of an earlier build, and SHA256SUMS lists every file', async () => {
    const dir = scratchDir();
    const binary = (name: string): Output => {
      const bytes = binaryLike(256 * 1024);
      writeFileSync(join(dir, name), bytes);
      return { name, path: join(dir, name), sha256: createHash('sha256').update(bytes).digest('hex'), size: bytes.length };
    };
    const linux = binary('machineadm-linux-x64');
    const windows = binary('machineadm-windows-x64.exe');
    // Copies of an earlier build: a .zst the Windows binary no longer gets, and stale bytes.
    writeFileSync(`${windows.path}.zst`, 'an earlier build');
    writeFileSync(`${windows.path}.gz`, 'an earlier build');
    const copies: Output[] = [...(await compressBinary(linux, 'linux-x64', { compress: true })), ...(await compressBinary(windows, 'windows-x64', { compress: true }))];
    expect(copies.map((c) => c.name).sort()).toEqual(['machineadm-linux-x64.gz', 'machineadm-linux-x64.zst', 'machineadm-windows-x64.exe.gz']);
    expect(existsSync(`${windows.path}.zst`)).toBe(false);
    expect(gunzipSync(readFileSync(`${windows.path}.gz`)).equals(readFileSync(windows.path))).toBe(true);
    await writeSha256Sums(dir, [linux, windows, ...copies]);
    const listed = () => readFileSync(join(dir, 'SHA256SUMS'), 'utf8').trim().split('\n').map((line) => line.split('  ')[1]);
    expect(listed()).toEqual(['machineadm-linux-x64', 'machineadm-linux-x64.gz', 'machineadm-linux-x64.zst', 'machineadm-windows-x64.exe', 'machineadm-windows-x64.exe.gz']);
    expect(execFileSync('sha256sum', ['-c', 'SHA256SUMS'], { cwd: dir, encoding: 'utf8' })).toMatch(/machineadm-linux-x64\.zst: OK/);
    // A rebuild with --no-compress: the binary's copies go, and SHA256SUMS with them.
    expect(await compressBinary(linux, 'linux-x64', { compress: false })).toEqual([]);
    await writeSha256Sums(dir, [linux]);
    expect(listed()).toEqual(['machineadm-linux-x64', 'machineadm-windows-x64.exe', 'machineadm-windows-x64.exe.gz']);
    expect(readdirSync(dir).filter((f) => f.endsWith('.partial'))).toEqual([]);
  });
});
