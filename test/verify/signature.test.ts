// Signatures against the real tools: minisign signs and machineadm verifies, machineadm signs and
// minisign verifies, signify's signatures verify in legacy mode; and every kind of bad input.
import { execFileSync, spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import nacl from 'tweetnacl';
import { scratchDir } from '../support/tmp.ts';
import { missingRequirement } from '../support/environment.ts';
import { runCli } from '../support/cli.ts';
import { blake2b } from '../../src/verify/blake2b.ts';
import { formatPublicKey, formatSignature, parsePublicKey, parseSignature } from '../../src/verify/minisign.ts';
import { generateKeyPair } from '../../src/verify/sign.ts';

const dir = scratchDir('machineadm-sig-');
const skip = missingRequirement({ commands: ['minisign', 'signify-openbsd'] });
const cli = (...args: string[]) => runCli(args, { cwd: dir });
const minisign = (...args: string[]) => spawnSync('minisign', args, { cwd: dir, encoding: 'utf8', input: '' });
const keyLine = (file: string) => readFileSync(join(dir, file), 'utf8').split('\n')[1]!;

describe('BLAKE2b with a chosen output length', () => {
  it.each([0, 1, 111, 128, 129, 300, 4096])('gives node:crypto\'s BLAKE2b-512 for %i bytes', (n) => {
    const data = randomBytes(n);
    expect(Buffer.from(blake2b(data, 64)).toString('hex')).toBe(createHash('blake2b512').update(data).digest('hex'));
  });
  it('gives the RFC 7693 style BLAKE2b-256 of "abc" (as Python hashlib computes it)', () => {
    expect(Buffer.from(blake2b(Buffer.from('abc'), 32)).toString('hex')).toBe('bddd813c634239723171ef3fee98579b94964e3bb1cb3e427262c8c068d52319');
  });
});

describe.skipIf(skip)('minisign and signify interoperability', () => {
  beforeAll(() => {
    writeFileSync(join(dir, 'artifact'), randomBytes(3 * 1024 * 1024 + 17));
    writeFileSync(join(dir, 'other'), 'another file\n');
    execFileSync('minisign', ['-G', '-W', '-p', 'mini.pub', '-s', 'mini.key'], { cwd: dir, stdio: 'ignore' });
    execFileSync('minisign', ['-G', '-W', '-p', 'mini2.pub', '-s', 'mini2.key'], { cwd: dir, stdio: 'ignore' });
    execFileSync('minisign', ['-S', '-s', 'mini.key', '-m', 'artifact', '-t', 'release 1.2.3'], { cwd: dir, stdio: 'ignore' });
    execFileSync('minisign', ['-S', '-l', '-s', 'mini.key', '-m', 'artifact', '-x', 'artifact.legacy.minisig', '-t', 'legacy one'], { cwd: dir, stdio: 'ignore' });
    execFileSync('minisign', ['-S', '-s', 'mini.key', '-m', 'other', '-x', 'other.minisig'], { cwd: dir, stdio: 'ignore' });
    execFileSync('signify-openbsd', ['-G', '-n', '-p', 'signify.pub', '-s', 'signify.sec'], { cwd: dir, stdio: 'ignore' });
    execFileSync('signify-openbsd', ['-S', '-s', 'signify.sec', '-m', 'artifact', '-x', 'artifact.sig'], { cwd: dir, stdio: 'ignore' });
  });

  it('verifies a prehashed minisign signature and prints its trusted comment', async () => {
    const run = await cli('verify', 'artifact', '-p', 'mini.pub');
    expect(run).toMatchObject({ code: 0 });
    expect(run.stdout).toContain('(prehashed)');
    expect(run.stdout).toContain('trusted comment: release 1.2.3');
    expect(parseSignature(readFileSync(join(dir, 'artifact.minisig')), 'x').algorithm).toBe('prehashed');
  });

  it('signs and verifies through a symbolic link to the file, as minisign does', async () => {
    symlinkSync('artifact', join(dir, 'artifact-link'));
    const signed = await cli('sign', 'artifact-link', '-s', 'mini.key', '-x', 'artifact-link.minisig');
    expect(signed.code, signed.stderr).toBe(0);
    expect(minisign('-V', '-p', 'mini.pub', '-m', 'artifact-link', '-x', 'artifact-link.minisig').status).toBe(0);
    const verified = await cli('verify', 'artifact-link', '-p', 'mini.pub', '-x', 'artifact.minisig');
    expect(verified.code, verified.stderr).toBe(0);
    symlinkSync('missing', join(dir, 'dangling-link'));
    const dangling = await cli('verify', 'dangling-link', '-p', 'mini.pub');
    expect(dangling.code).toBe(2);
    expect(dangling.stderr).toContain('dangling-link: no such file');
  });

  it('verifies a legacy minisign signature given as -P, and refuses it with --require-prehashed', async () => {
    const ok = await cli('verify', 'artifact', '-x', 'artifact.legacy.minisig', '-P', keyLine('mini.pub'));
    expect(ok.code).toBe(0);
    expect(ok.stdout).toContain('trusted comment: legacy one');
    const strict = await cli('verify', 'artifact', '-x', 'artifact.legacy.minisig', '-P', keyLine('mini.pub'), '--require-prehashed');
    expect(strict.code).toBe(3);
    expect(strict.stderr).toContain('legacy (not prehashed)');
  });

  it('verifies a signify signature (no trusted comment) in legacy mode when --signify asks for it', async () => {
    const run = await cli('verify', 'artifact', '-x', 'artifact.sig', '-p', 'signify.pub', '--signify');
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('signify format');
    const unasked = await cli('verify', 'artifact', '-x', 'artifact.sig', '-p', 'signify.pub');
    expect(unasked.code).toBe(3);
    expect(unasked.stderr).toContain('give --signify');
    copyFileSync(join(dir, 'artifact'), join(dir, 'artifact.changed'));
    writeFileSync(join(dir, 'artifact.changed'), 'x', { flag: 'a' });
    expect((await cli('verify', 'artifact.changed', '-x', 'artifact.sig', '-p', 'signify.pub', '--signify')).code).toBe(3);
    expect((await cli('verify', 'artifact', '-x', 'artifact.sig', '-p', 'signify.pub', '--signify', '--require-prehashed')).code).toBe(3);
  });

  it('refuses a legacy minisign signature whose trusted comment was cut off, as minisign -V does, unless --signify', async () => {
    const [untrusted, line] = readFileSync(join(dir, 'artifact.legacy.minisig'), 'utf8').split('\n');
    writeFileSync(join(dir, 'artifact.stripped.minisig'), `${untrusted}\n${line}\n`);
    const tool = minisign('-V', '-p', 'mini.pub', '-m', 'artifact', '-x', 'artifact.stripped.minisig');
    expect(tool.status).not.toBe(0);
    const ours = await cli('verify', 'artifact', '-x', 'artifact.stripped.minisig', '-p', 'mini.pub');
    expect(ours).toMatchObject({ code: 3, stdout: '' });
    expect(ours.stderr).toMatch(/no trusted comment/);
    // The bytes are a valid signify signature of the file: signify accepts them, and so does --signify.
    expect(spawnSync('signify-openbsd', ['-V', '-p', 'mini.pub', '-m', 'artifact', '-x', 'artifact.stripped.minisig'], { cwd: dir }).status).toBe(0);
    expect((await cli('verify', 'artifact', '-x', 'artifact.stripped.minisig', '-P', keyLine('mini.pub'), '--signify')).code).toBe(0);
  });

  it.each([
    ['prehashed', []],
    ['legacy', ['-l']],
  ])('signs %s with a minisign-made key, and minisign -V accepts it', async (_kind, extra) => {
    const run = await cli('sign', 'artifact', '-s', 'mini.key', '-x', `ours-${_kind}.minisig`, '-t', `by machineadm ${_kind}`, ...extra);
    expect(run.code).toBe(0);
    const v = minisign('-V', '-p', 'mini.pub', '-m', 'artifact', '-x', `ours-${_kind}.minisig`);
    expect(v.status, v.stderr).toBe(0);
    expect(v.stdout).toContain(`Trusted comment: by machineadm ${_kind}`);
    // minisign -H insists on a prehashed signature: it must accept ours and refuse the legacy one.
    expect(minisign('-V', '-H', '-p', 'mini.pub', '-m', 'artifact', '-x', `ours-${_kind}.minisig`).status).toBe(_kind === 'prehashed' ? 0 : 1);
  });

  it('makes keys that minisign signs with and verifies with, and keeps the secret key 0600', async () => {
    const run = await cli('keygen', '-p', 'ours.pub', '-s', 'ours.key');
    expect(run.code).toBe(0);
    expect(statSync(join(dir, 'ours.key')).mode & 0o777).toBe(0o600);
    expect((await cli('keygen', '-p', 'ours.pub', '-s', 'ours.key')).code).toBe(2);
    const s = minisign('-S', '-s', 'ours.key', '-m', 'other', '-x', 'other.ours.minisig', '-t', 'minisign with our key');
    expect(s.status, s.stderr).toBe(0);
    expect((await cli('verify', 'other', '-x', 'other.ours.minisig', '-p', 'ours.pub')).stdout).toContain('minisign with our key');
    expect((await cli('sign', 'other', '-s', 'ours.key', '-x', 'other.ours2.minisig')).code).toBe(0);
    expect(minisign('-V', '-p', 'ours.pub', '-m', 'other', '-x', 'other.ours2.minisig').status).toBe(0);
    // The default trusted comment is minisign's: timestamp, file name and "hashed".
    expect(readFileSync(join(dir, 'other.ours2.minisig'), 'utf8')).toMatch(/^trusted comment: timestamp:\d+\tfile:other\thashed$/m);
  });

  it('refuses (exit 2) to write the public key over the secret key it just made', async () => {
    for (const force of [[], ['-f']]) {
      const run = await cli('keygen', '-p', 'both.key', '-s', './both.key', ...force);
      expect(run.code).toBe(2);
      expect(run.stderr).toContain(`${join(dir, 'both.key')} for both the public and the secret key`);
      expect(existsSync(join(dir, 'both.key'))).toBe(false);
    }
  });

  it('signs with a password-encrypted minisign key, and says so when the password is wrong', async () => {
    const made = spawnSync('minisign', ['-G', '-p', 'enc.pub', '-s', 'enc.key'], { cwd: dir, input: 'correct horse\ncorrect horse\n', encoding: 'utf8' });
    expect(made.status, made.stderr).toBe(0);
    writeFileSync(join(dir, 'pw'), 'correct horse\n');
    writeFileSync(join(dir, 'bad-pw'), 'wrong\n');
    expect((await cli('sign', 'other', '-s', 'enc.key')).stderr).toContain('encrypted with a password');
    const wrong = await cli('sign', 'other', '-s', 'enc.key', '--password-file', 'bad-pw', '-x', 'enc-bad.minisig');
    expect(wrong.code).toBe(2);
    expect(wrong.stderr).toContain('wrong password');
    expect((await cli('sign', 'other', '-s', 'enc.key', '--password-file', 'pw', '-x', 'enc.minisig')).code).toBe(0);
    expect(minisign('-V', '-p', 'enc.pub', '-m', 'other', '-x', 'enc.minisig').status).toBe(0);
    // Three scrypt derivations of minisign's (about a GiB of memory each): slow on a loaded machine.
  }, 240_000);

  const good = () => readFileSync(join(dir, 'artifact.minisig'), 'latin1');
  const lines = () => good().split('\n');
  it.each<[string, () => string, RegExp]>([
    ['a signature cut after line 2', () => lines().slice(0, 2).join('\n') + '\n', /truncated: the trusted comment \(line 3\) is missing/],
    ['a signature cut after line 3', () => lines().slice(0, 3).join('\n'), /truncated: the signature of the trusted comment/],
    ['a signature line cut in half', () => [lines()[0], lines()[1]!.slice(0, 40), ...lines().slice(2)].join('\n'), /not valid base64|bytes, a minisign signature is 74/],
    ['base64 garbage in the signature line', () => [lines()[0], '!!not*base64 at all~~', ...lines().slice(2)].join('\n'), /line 2 is not valid base64/],
    ['a first line that is not an untrusted comment', () => ['hello', ...lines().slice(1)].join('\n'), /line 1 should start with "untrusted comment: "/],
    ['a tampered trusted comment', () => good().replace('release 1.2.3', 'release 9.9.9'), /trusted comment .* was changed/],
    ['an empty file', () => '', /is empty/],
    ['a signature of another file', () => readFileSync(join(dir, 'other.minisig'), 'latin1'), /signature verification failed .*not what key/],
  ])('refuses %s with exit 3', async (_name, make, message) => {
    writeFileSync(join(dir, 'bad.minisig'), make(), 'latin1');
    const run = await cli('verify', 'artifact', '-x', 'bad.minisig', '-p', 'mini.pub');
    expect(run.code).toBe(3);
    expect(run.stderr).toMatch(message);
    expect(run.stdout).toBe('');
  });

  // S + L signs the same point (L is the group order): minisign (libsodium) refuses such a
  // scalar, so machineadm must too, or one signature file could be altered and still pass.
  it('refuses a trusted comment signature whose scalar S was replaced by S + L, as minisign does', async () => {
    const L = 2n ** 252n + 27742317777372353535851937790883648493n;
    const [untrusted, line, comment, global] = lines();
    const bytes = Buffer.from(global!, 'base64');
    const s = BigInt(`0x${Buffer.from(bytes.subarray(32, 64)).reverse().toString('hex')}`) + L;
    Buffer.from(s.toString(16).padStart(64, '0'), 'hex').reverse().copy(bytes, 32);
    writeFileSync(join(dir, 'malleated.minisig'), [untrusted, line, comment, bytes.toString('base64'), ''].join('\n'), 'latin1');
    expect(minisign('-V', '-p', 'mini.pub', '-m', 'artifact', '-x', 'malleated.minisig').status).toBe(1);
    const run = await cli('verify', 'artifact', '-x', 'malleated.minisig', '-p', 'mini.pub');
    expect(run.code).toBe(3);
    expect(run.stderr).toMatch(/trusted comment .* was changed/);
  });

  it('accepts CRLF line ends, as minisign itself does', async () => {
    writeFileSync(join(dir, 'crlf.minisig'), good().replace(/\n/g, '\r\n'), 'latin1');
    expect(minisign('-V', '-p', 'mini.pub', '-m', 'artifact', '-x', 'crlf.minisig').status).toBe(0);
    const run = await cli('verify', 'artifact', '-x', 'crlf.minisig', '-p', 'mini.pub');
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('trusted comment: release 1.2.3\n');
  });

  it('names both key ids when the signature was made with another key', async () => {
    const expected = parseSignature(readFileSync(join(dir, 'artifact.minisig')), 's').keyId;
    const given = parsePublicKey(readFileSync(join(dir, 'mini2.pub')), 'k').keyId;
    const run = await cli('verify', 'artifact', '-p', 'mini2.pub');
    expect(run.code).toBe(3);
    const hex = (b: Uint8Array) => Buffer.from(b).reverse().toString('hex').toUpperCase();
    expect(run.stderr).toContain(`made with key ${hex(expected)}, but the public key given is key ${hex(given)}`);
  });

  it.each([
    ['a key line one byte short', () => Buffer.from(keyLine('mini.pub'), 'base64').subarray(0, 41).toString('base64'), /41 bytes long/],
    ['a key with extra bytes', () => Buffer.concat([Buffer.from(keyLine('mini.pub'), 'base64'), Buffer.alloc(3)]).toString('base64'), /45 bytes long/],
    ['base64 garbage', () => 'RW$$$$', /not valid base64/],
  ])('refuses %s as a public key with exit 3', async (_name, make, message) => {
    const run = await cli('verify', 'artifact', '-P', make());
    expect(run.code).toBe(3);
    expect(run.stderr).toMatch(message);
  });

  it.each<[string, () => string[], RegExp, RegExp]>([
    ['a public key file name given to -P', () => ['-P', 'mini.pub'], /-P takes the key line itself .*, but was given mini\.pub, a file/, /give the file with -p mini\.pub/],
    ['a secret key file given to -p', () => ['-p', 'mini.key'], /public key .*mini\.key is a minisign secret key, not a public key/, /-p takes the public key file/],
    ['a secret key line given to -P', () => ['-P', keyLine('mini.key')], /public key given with -P is a minisign secret key, not a public key/, /-P takes the public key's line/],
  ])('says what was given when %s, and what -p and -P take (exit 3)', async (_name, args, message, hint) => {
    const run = await cli('verify', 'artifact', ...args());
    expect(run.code).toBe(3);
    expect(run.stderr).toMatch(message);
    expect(run.stderr).toMatch(hint);
    expect(run.stderr).not.toContain('download it again');
  });

  it.each<[string, string[], string]>([
    ['verify -x', ['verify', 'artifact', '-x', 'a-dir', '-p', 'mini.pub'], 'a-dir'],
    ['verify -p', ['verify', 'artifact', '-p', 'a-dir'], 'a-dir'],
    ['sign -s', ['sign', 'other', '-s', 'a-dir', '-x', 'never.minisig'], 'a-dir'],
    ['sign --password-file', ['sign', 'other', '-s', 'mini.key', '--password-file', 'a-dir', '-x', 'never.minisig'], 'a-dir'],
    ['verify -p through a file', ['verify', 'artifact', '-p', 'other/mini.pub'], 'other/mini.pub'],
  ])('says what is wrong with a path given to %s that is no file (exit 2), not that machineadm has a bug', async (_option, args, named) => {
    mkdirSync(join(dir, 'a-dir'), { recursive: true });
    const run = await cli(...args);
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toMatch(new RegExp(`^error: .*${join(dir, named)}(: no such file| is a directory, not a file)\\n`));
    expect(run.stderr).not.toMatch(/bug in machineadm|EISDIR|ENOTDIR/);
    expect(existsSync(join(dir, 'never.minisig'))).toBe(false);
  });

  it('refuses a file changed by one byte', async () => {
    const data = readFileSync(join(dir, 'artifact'));
    data[data.length >> 1]! ^= 0x01;
    writeFileSync(join(dir, 'flipped'), data);
    const run = await cli('verify', 'flipped', '-x', 'artifact.minisig', '-p', 'mini.pub');
    expect(run.code).toBe(3);
    expect(minisign('-V', '-p', 'mini.pub', '-m', 'flipped', '-x', 'artifact.minisig').status).toBe(1);
  });

  // minisign reads line 1 into 1024 bytes and line 3 into 8192, line end included: a longer
  // comment line is refused by minisign -V, so machineadm must refuse it too.
  it.each<[string, { trusted?: number; untrusted?: number; crlf?: boolean }, number]>([
    ['the longest trusted comment minisign reads', { trusted: 8173 }, 0],
    ['a trusted comment one byte longer', { trusted: 8174 }, 3],
    ['the longest trusted comment with CRLF line ends', { trusted: 8173, crlf: true }, 3],
    ['the longest untrusted comment minisign reads', { untrusted: 1003 }, 0],
    ['an untrusted comment one byte longer', { untrusted: 1004 }, 3],
    ['the longest untrusted comment with CRLF line ends', { untrusted: 1003, crlf: true }, 3],
  ])('agrees with minisign -V on %s', async (_name, { trusted = 10, untrusted = 10, crlf = false }, code) => {
    const pair = generateKeyPair();
    writeFileSync(join(dir, 'long.pub'), formatPublicKey(pair.publicKey));
    const data = readFileSync(join(dir, 'other'));
    const signature = nacl.sign.detached(createHash('blake2b512').update(data).digest(), pair.secretKey.secretKey);
    const comment = Buffer.from('t'.repeat(trusted));
    const text = formatSignature({
      algorithm: 'prehashed',
      keyId: pair.publicKey.keyId,
      signature,
      untrustedComment: 'u'.repeat(untrusted),
      trusted: { comment: comment.toString(), bytes: comment, globalSignature: nacl.sign.detached(Buffer.concat([signature, comment]), pair.secretKey.secretKey) },
    });
    writeFileSync(join(dir, 'long.minisig'), crlf ? text.replace(/\n/g, '\r\n') : text);
    expect(minisign('-V', '-p', 'long.pub', '-m', 'other', '-x', 'long.minisig').status).toBe(code === 0 ? 0 : 2);
    const run = await cli('verify', 'other', '-x', 'long.minisig', '-p', 'long.pub');
    expect(run.code, run.stderr).toBe(code);
    if (code !== 0) expect(run.stderr).toMatch(/comment \(line [13]\) is \d+ bytes long, minisign reads at most \d+/);
  });

  it.each([
    ['-t', 8174, /-t\/--trusted-comment is 8174 bytes long; minisign verifies at most 8173/],
    ['-c', 1004, /-c\/--untrusted-comment is 1004 bytes long; minisign verifies at most 1003/],
  ])('refuses to sign with a %s comment minisign could not read (exit 2), writing no signature', async (option, length, message) => {
    const run = await cli('sign', 'other', '-s', 'mini.key', '-x', `too-long${option}.minisig`, option, 'x'.repeat(length));
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(message);
    expect(existsSync(join(dir, `too-long${option}.minisig`))).toBe(false);
  });

  it('says that self-verification needs the packaged binary when run from source (exit 2)', async () => {
    const run = await cli('verify', '--self');
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('self-verification needs the packaged machineadm binary');
  });
});
