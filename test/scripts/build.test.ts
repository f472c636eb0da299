// The pure parts of the build script: reading the release key, and the pins it builds from.
import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
// @ts-expect-error the build script is plain JavaScript (it runs before anything is installed)
import { releasePublicKey, TARGETS, NODE_VERSION } from '../../scripts/build.mjs';
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
