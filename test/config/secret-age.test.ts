// age envelopes decrypted with the machine's identity: inline armor, files (armored or binary, made
// by the real age tool), downloads over HTTPS with a test CA; refusals of a shared identity, an
// envelope for another machine, a damaged one; the identity and the value kept out of every message.
import { chmodSync, copyFileSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createConfigHost, type ConfigHost } from '../../src/host/config-host.ts';
import { resolveSecret, SecretScrubber } from '../../src/config/secrets.ts';
import type { AgeReference } from '../../src/config/schema/secret-field.ts';
import type { MachineadmError } from '../../src/errors.ts';
import { scratchDir } from '../support/tmp.ts';
import { failure as readFailure } from './helpers/secret-reads.ts';
import { makeTestCa, startHttps, type RunningServer, type TestCa } from './helpers/servers.ts';

const FIELD = 'spec.files[0].content';
const VALUE = '-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIBb0Vbq1fQ3xKc2mGm8vUj2Qm0b6Yp6Cq4l0JvYb3f9hoAoGCCqGSM49\n-----END EC PRIVATE KEY-----\n';
const root = scratchDir();
const ID = '/etc/machineadm/age-identity.txt';
let identity: string;
let recipient: string;
let other: string;
let ca: TestCa;
let server: RunningServer;
let served: { status: number; body: Buffer };
let host: ConfigHost;

const at = (path: string) => join(root, path);
const ageEncrypt = (to: string, input: string | Buffer, armored: boolean) => execFileSync('age', ['-e', '-r', to, ...(armored ? ['-a'] : [])], { input });

beforeAll(() => {
  mkdirSync(at('etc/machineadm'), { recursive: true });
  mkdirSync(at('etc/ssl'), { recursive: true });
  execFileSync('age-keygen', ['-o', at(ID)], { stdio: 'pipe' });
  chmodSync(at(ID), 0o600);
  identity = execFileSync('grep', ['^AGE-SECRET-KEY-1', at(ID)], { encoding: 'utf8' }).trim();
  recipient = execFileSync('age-keygen', ['-y', at(ID)], { encoding: 'utf8' }).trim();
  execFileSync('age-keygen', ['-o', at('etc/machineadm/other.txt')], { stdio: 'pipe' });
  other = execFileSync('age-keygen', ['-y', at('etc/machineadm/other.txt')], { encoding: 'utf8' }).trim();
  ca = makeTestCa(scratchDir());
  writeFileSync(at('etc/ssl/test-ca.pem'), ca.caPem);
});

beforeEach(async () => {
  chmodSync(at(ID), 0o600);
  served = { status: 200, body: ageEncrypt(recipient, VALUE, false) };
  server = await startHttps(ca, (_req, res) => {
    res.writeHead(served.status, { 'content-type': 'application/octet-stream' });
    res.end(served.body);
  });
  host = { ...createConfigHost({ root, offline: false, env: {} }), sleep: async () => {} };
});
afterEach(() => server.close());

const read = (reference: AgeReference, options: { scrubber?: SecretScrubber; exact?: boolean } = {}) => resolveSecret({ valueFrom: { age: reference } }, host, FIELD, options.scrubber, { exact: options.exact ?? true });

/** The failure, whose text holds neither the identity nor a line of the value. */
async function failure(promise: Promise<unknown>): Promise<MachineadmError & { text: string }> {
  const error = await readFailure(promise);
  expect(error.text).not.toContain(identity);
  expect(error.text).not.toContain('MHcCAQEEIBb0Vbq1fQ3xKc2mGm8vUj2Qm0b6Yp6Cq4l0JvYb3f9hoAoGCCqGSM49');
  return error;
}

describe('age envelopes', () => {
  it('opens inline armor made by the real age, byte for byte for a file', async () => {
    expect(await read({ armor: ageEncrypt(recipient, VALUE, true).toString() })).toBe(VALUE);
  });

  it('drops one final newline for a field (not a file)', async () => {
    expect(await read({ armor: ageEncrypt(recipient, 'abcdef.0123456789abcdef\n', true).toString() }, { exact: false })).toBe('abcdef.0123456789abcdef');
  });

  it.each([
    ['binary', false],
    ['armored', true],
  ])('opens a %s envelope file', async (_, armored) => {
    writeFileSync(at('etc/machineadm/key.age'), ageEncrypt(recipient, VALUE, armored));
    expect(await read({ file: '/etc/machineadm/key.age' })).toBe(VALUE);
  });

  it('downloads an envelope over HTTPS with the caFile, and retries a 503', async () => {
    let first = true;
    await server.close();
    server = await startHttps(ca, (_req, res) => {
      res.writeHead(first ? 503 : 200);
      res.end(first ? '' : served.body);
      first = false;
    });
    expect(await read({ url: `${server.url}/key.age`, caFile: '/etc/ssl/test-ca.pem' })).toBe(VALUE);
    expect(server.requests).toHaveLength(2);
  });

  it('refuses (exit 2) an envelope URL that is not there, without retrying', async () => {
    served.status = 404;
    const error = await failure(read({ url: `${server.url}/gone.age`, caFile: '/etc/ssl/test-ca.pem' }));
    expect(error.exitCode).toBe(2);
    expect(error.text).toContain('HTTP 404');
    expect(server.requests).toHaveLength(1);
  });

  it('refuses (exit 2) an envelope URL with --offline, asking nothing', async () => {
    host = { ...createConfigHost({ root, offline: true, env: {} }), sleep: async () => {} };
    const error = await failure(read({ url: `${server.url}/key.age`, caFile: '/etc/ssl/test-ca.pem' }));
    expect(error.exitCode).toBe(2);
    expect(error.text).toContain('--offline');
    expect(server.requests).toHaveLength(0);
  });

  it('refuses (exit 2) an envelope sealed for another machine, naming the recipient of this one', async () => {
    const error = await failure(read({ armor: ageEncrypt(other, VALUE, true).toString() }));
    expect(error.exitCode).toBe(2);
    expect(error.text).toContain(FIELD);
    expect(error.text).toContain(`recipient ${recipient}`);
    expect(error.text).toContain(`machineadm seal -r ${recipient}`);
  });

  it('refuses (exit 2) an identity others can read, before decrypting', async () => {
    chmodSync(at(ID), 0o644);
    const error = await failure(read({ armor: ageEncrypt(recipient, VALUE, true).toString() }));
    expect(error.exitCode).toBe(2);
    expect(error.text).toContain('mode 0644');
    expect(error.text).toContain(`chmod 0600 ${ID}`);
  });

  it('refuses (exit 2) an identity reached through a link to a file others can read', async () => {
    copyFileSync(at(ID), at('etc/machineadm/shared-identity.txt'));
    chmodSync(at('etc/machineadm/shared-identity.txt'), 0o644);
    rmSync(at('etc/machineadm/linked.txt'), { force: true });
    symlinkSync('shared-identity.txt', at('etc/machineadm/linked.txt'));
    const error = await failure(read({ armor: ageEncrypt(recipient, VALUE, true).toString(), identity: '/etc/machineadm/linked.txt' }));
    expect(error.exitCode).toBe(2);
    expect(error.text).toContain('mode 0644');
  });

  it('opens an envelope with an identity reached through a link to a file of mode 0600', async () => {
    rmSync(at('etc/machineadm/mounted.txt'), { force: true });
    symlinkSync('age-identity.txt', at('etc/machineadm/mounted.txt'));
    expect(await read({ armor: ageEncrypt(recipient, VALUE, true).toString(), identity: '/etc/machineadm/mounted.txt' })).toBe(VALUE);
  });

  it('refuses (exit 2) a missing identity, naming the default path', async () => {
    const error = await failure(read({ armor: ageEncrypt(recipient, VALUE, true).toString(), identity: '/etc/machineadm/none.txt' }));
    expect(error.exitCode).toBe(2);
    expect(error.text).toContain('/etc/machineadm/none.txt does not exist');
  });

  it('refuses (exit 2) an identity file with a line that is not a key, naming that line as the file numbers it', async () => {
    const keygenFile = readFileSync(at(ID), 'utf8');
    writeFileSync(at('etc/machineadm/plugin-identity.txt'), `${keygenFile}AGE-PLUGIN-YUBIKEY-1QQQQQQ\n`, { mode: 0o600 });
    const error = await failure(read({ armor: ageEncrypt(recipient, VALUE, true).toString(), identity: '/etc/machineadm/plugin-identity.txt' }));
    expect(error.exitCode).toBe(2);
    expect(error.text).toContain(`/etc/machineadm/plugin-identity.txt line ${keygenFile.split('\n').length} is not an age secret key`);
  });

  it('refuses (exit 2) an identity whose key was mistyped, naming its line but not the key', async () => {
    const last = identity.at(-1) === 'Q' ? 'P' : 'Q';
    const mistyped = `${identity.slice(0, -1)}${last}`;
    writeFileSync(at('etc/machineadm/mistyped-identity.txt'), `# created: by hand\n${mistyped}\n`, { mode: 0o600 });
    const error = await failure(read({ armor: ageEncrypt(recipient, VALUE, true).toString(), identity: '/etc/machineadm/mistyped-identity.txt' }));
    expect(error.exitCode).toBe(2);
    expect(error.text).toContain(FIELD);
    expect(error.text).toContain('/etc/machineadm/mistyped-identity.txt line 2 is not an age secret key');
    expect(error.text).not.toContain(mistyped.slice(15, 40));
  });

  it('refuses (exit 2) a damaged envelope', async () => {
    const armored = ageEncrypt(recipient, VALUE, true).toString();
    const lines = armored.split('\n');
    lines[2] = lines[2]!.replace(/^./, (c) => (c === 'A' ? 'B' : 'A'));
    const error = await failure(read({ armor: lines.join('\n') }));
    expect(error.exitCode).toBe(2);
    expect(error.text).toContain('cannot be opened');
  });

  it('refuses (exit 2) an envelope whose plaintext is not UTF-8 text, rather than pass on other bytes', async () => {
    const error = await failure(read({ armor: ageEncrypt(recipient, Buffer.from([0x05, 0x02, 0x00, 0x47, 0x80, 0xff, 0xfe, 0x10]), true).toString() }));
    expect(error.exitCode).toBe(2);
    expect(error.text).toContain(FIELD);
    expect(error.text).toContain('not UTF-8 text');
    expect(error.text).toContain('encoding: base64');
  });

  it('registers the identity and the value with the scrubber', async () => {
    const scrubber = new SecretScrubber();
    await read({ armor: ageEncrypt(recipient, VALUE, true).toString() }, { scrubber });
    const scrubbed = scrubber.scrub(`id ${identity} line MHcCAQEEIBb0Vbq1fQ3xKc2mGm8vUj2Qm0b6Yp6Cq4l0JvYb3f9hoAoGCCqGSM49`);
    expect(scrubbed).not.toContain(identity);
    expect(scrubbed).not.toContain('MHcCAQEE');
  });
});
