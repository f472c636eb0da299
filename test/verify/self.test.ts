// Self-verification: build the binary with a test release key, sign it, run it; a copy with one
// byte changed must refuse, and so must init with security.requireSignedBinary before it changes
// anything. From source, self-verification is refused with a clear message.
import { execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, readdirSync, readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { scratchDir } from '../support/tmp.ts';
import { inCI, missingRequirement } from '../support/environment.ts';
import { runCli } from '../support/cli.ts';
import { binaryBuilder, type BinaryBuilder } from './binary-builder.ts';
import { verifySelf } from '../../src/verify/self.ts';
import { buildInfo } from '../../src/version.ts';
import { createHost } from '../../src/host/index.ts';
import { MachineadmError, VerificationError, exitCodeOf } from '../../src/errors.ts';

const dir = scratchDir('machineadm-self-');

const CONFIG = `apiVersion: machineadm.cluster.x-k8s.io/v1alpha1
kind: MachineConfig
spec:
  security:
    requireSignedBinary: true
`;

describe('verify --self and requireSignedBinary from source', () => {
  it('refuses init with requireSignedBinary before changing anything (exit 3)', async () => {
    writeFileSync(join(dir, 'source.yaml'), CONFIG);
    const root = join(dir, 'source-root');
    const run = await runCli(['init', '-c', join(dir, 'source.yaml'), '--root', root], { cwd: dir });
    expect(run.stderr).toContain('security.requireSignedBinary is true, but self-verification needs the packaged machineadm binary');
    expect(run.code).toBe(3);
    expect(existsSync(root)).toBe(false);
  });

  it.each([
    ['verify --self', 2, undefined, /^give the key with -P/],
    ['security.requireSignedBinary', 3, (m: string, hint: string) => new VerificationError(`security.requireSignedBinary is true, but ${m}`, { hint }), /-P/],
  ] as const)('on a build without a built-in key, %s says so with exit %i and a hint to give -P', async (_name, code, cannotVerify, hint) => {
    expect(buildInfo.releasePublicKey).toBeUndefined();
    const file = join(dir, 'packaged-without-key');
    writeFileSync(file, 'a build without a release key');
    const error = await verifySelf(createHost({ env: {} }), { executable: file, packaged: true }, cannotVerify).catch((e: unknown) => e as MachineadmError);
    expect(error).toBeInstanceOf(MachineadmError);
    expect((error as MachineadmError).message).toContain('no release public key built in');
    expect(exitCodeOf(error)).toBe(code);
    expect((error as MachineadmError).hint).toMatch(hint);
  });

  it('shows in plan and config validate --on-machine what init would refuse (exit 3), after the whole plan', async () => {
    writeFileSync(join(dir, 'plan.yaml'), CONFIG);
    const root = join(dir, 'plan-root');
    const plan = await runCli(['plan', '-c', join(dir, 'plan.yaml'), '--root', root], { cwd: dir });
    expect(plan.stdout).toMatch(/to change/);
    expect(plan.stderr).toContain('security.requireSignedBinary is true, but self-verification needs the packaged machineadm binary');
    expect(plan.code).toBe(3);
    const validate = await runCli(['config', 'validate', '--on-machine', '-c', join(dir, 'plan.yaml'), '--root', root], { cwd: dir });
    expect(validate.stderr).toContain('security.requireSignedBinary is true');
    expect(validate.code).toBe(3);
    // Another machine's plan (--os) is not this binary's run: nothing to verify here.
    const other = await runCli(['plan', '-c', join(dir, 'plan.yaml'), '--os', 'linux'], { cwd: dir });
    expect(other.stderr).not.toContain('requireSignedBinary');
    expect(other.code).toBe(0);
    expect(existsSync(root)).toBe(false);
  });
});

const skipTools = missingRequirement({ commands: ['minisign'] });
let built: BinaryBuilder | string = 'not looked up yet';

describe.skipIf(skipTools)('the packaged binary verifies itself', () => {
  let binary = '';
  let tampered = '';
  let skipped: string | undefined;

  beforeAll(async () => {
    built = await binaryBuilder();
    if (typeof built === 'string') {
      if (inCI) throw new Error(`CI cannot build the binary for the self-verification test: ${built}`);
      console.warn(`skipping the packaged-binary tests: ${built}`);
      skipped = built;
      return;
    }
    execFileSync('minisign', ['-G', '-W', '-p', 'release.pub', '-s', 'release.key'], { cwd: dir, stdio: 'ignore' });
    const key = readFileSync(join(dir, 'release.pub'), 'utf8').split('\n')[1]!;
    binary = await built({ releasePublicKey: key, outDir: join(dir, 'dist') });
    execFileSync('minisign', ['-S', '-s', 'release.key', '-m', binary, '-t', 'machineadm test release'], { cwd: dir, stdio: 'ignore' });
    // The copy differs from the signed binary in exactly one byte. A byte of code would crash it
    // before it can refuse anything, so the byte is in data it does not use at startup: a time
    // zone name of the ICU data (or the section headers at the end, which the loader ignores).
    tampered = join(dir, 'tampered', 'machineadm');
    mkdirSync(join(dir, 'tampered'));
    copyFileSync(binary, tampered);
    copyFileSync(`${binary}.minisig`, `${tampered}.minisig`);
    const data = readFileSync(tampered);
    const zone = data.indexOf('Pacific/Chatham');
    data[zone >= 0 ? zone : data.length - 1]! ^= 0x01;
    writeFileSync(tampered, data, { mode: 0o755 });
    writeFileSync(join(dir, 'config.yaml'), CONFIG);
  }, 300_000);

  const exec = (file: string, ...args: string[]) => spawnSync(file, args, { cwd: dir, encoding: 'utf8', env: { PATH: process.env.PATH ?? '/usr/bin:/bin' } });

  it('passes on the signed build, with the built-in key, and prints the trusted comment', (ctx) => {
    if (skipped) return ctx.skip();
    const run = exec(binary, 'verify', '--self');
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout).toContain('built-in release key');
    expect(run.stdout).toContain('trusted comment: machineadm test release');
  });

  it('fails on a copy with one byte changed (exit 3)', (ctx) => {
    if (skipped) return ctx.skip();
    const run = exec(tampered, 'verify', '--self');
    expect(run.status).toBe(3);
    expect(run.stderr).toContain('signature verification failed');
  });

  it('fails without its .minisig, and with a key that did not sign it', (ctx) => {
    if (skipped) return ctx.skip();
    const copy = join(dir, 'unsigned');
    copyFileSync(binary, copy);
    const missing = exec(copy, 'verify', '--self');
    expect(missing.status).toBe(3);
    expect(missing.stderr).toContain('no signature at');
    execFileSync('minisign', ['-G', '-W', '-p', 'other.pub', '-s', 'other.key'], { cwd: dir, stdio: 'ignore' });
    const other = exec(binary, 'verify', '--self', '-P', readFileSync(join(dir, 'other.pub'), 'utf8').split('\n')[1]!);
    expect(other.status).toBe(3);
    expect(other.stderr).toMatch(/made with key [0-9A-F]{16}, but the public key given is key [0-9A-F]{16}/);
  });

  it('init with requireSignedBinary stops a tampered binary before it changes anything', (ctx) => {
    if (skipped) return ctx.skip();
    const root = join(dir, 'tampered-root');
    const refused = exec(tampered, 'init', '-c', 'config.yaml', '--root', root);
    expect(refused.status).toBe(3);
    expect(refused.stderr).toContain('signature verification failed');
    expect(existsSync(root) ? readdirSync(root) : []).toEqual([]);
    const signedRoot = join(dir, 'signed-root');
    const accepted = exec(binary, 'init', '-c', 'config.yaml', '--root', signedRoot);
    expect(accepted.stderr).not.toMatch(/verification failed|requireSignedBinary/);
    expect(accepted.status).not.toBe(3);
  });
});
