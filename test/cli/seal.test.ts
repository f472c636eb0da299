// machineadm seal: envelopes the real age tool opens, for recipients given on the command line or
// in a file; refusals of what is not a recipient, an identity in place of one, and no input.
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { load } from 'js-yaml';
import { beforeAll, describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.ts';
import type { Io } from '../../src/cli/io.ts';
import { scratchDir } from '../support/tmp.ts';

const dir = scratchDir();
const ids = ['a', 'b'].map((name) => join(dir, `${name}.txt`));
let recipients: string[];

beforeAll(() => {
  for (const id of ids) execFileSync('age-keygen', ['-o', id], { stdio: 'pipe' });
  recipients = ids.map((id) => execFileSync('age-keygen', ['-y', id], { encoding: 'utf8' }).trim());
});

async function seal(args: string[], stdin = ''): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const io: Io = { stdout: (t) => void (stdout += t), stderr: (t) => void (stderr += t), readStdin: async () => Buffer.from(stdin), env: {}, cwd: dir, interactive: false };
  const code = await main(['seal', ...args], io);
  return { code, stdout, stderr };
}

const ageDecrypt = (identity: string, envelope: string) => execFileSync('age', ['-d', '-i', identity], { input: envelope, encoding: 'utf8', stdio: 'pipe' });

describe('machineadm seal', () => {
  it('prints an armored envelope the real age opens, keeping the final newline', async () => {
    const out = await seal(['-r', recipients[0]!], 'abcdef.0123456789abcdef\n');
    expect(out.code).toBe(0);
    expect(out.stdout).toMatch(/^-----BEGIN AGE ENCRYPTED FILE-----\n[\s\S]+\n-----END AGE ENCRYPTED FILE-----\n$/);
    expect(ageDecrypt(ids[0]!, out.stdout)).toBe('abcdef.0123456789abcdef\n');
    expect(() => ageDecrypt(ids[1]!, out.stdout)).toThrow();
  });

  it('seals to every recipient of -r and -R, reading a file of them with comments', async () => {
    writeFileSync(join(dir, 'fleet.recipients'), `# the fleet\n${recipients[1]}\n\n`);
    writeFileSync(join(dir, 'ca.key'), 'key-bytes\x00\xff');
    const out = await seal(['-r', recipients[0]!, '-R', 'fleet.recipients', '--in', 'ca.key']);
    expect(out.code).toBe(0);
    for (const id of ids) expect(ageDecrypt(id, out.stdout)).toBe('key-bytes\x00\xff');
  });

  it('--yaml prints a block that is a valid secret field', async () => {
    const out = await seal(['-r', recipients[0]!, '--yaml'], 'token-value');
    expect(out.code).toBe(0);
    const field = load(out.stdout) as { valueFrom: { age: { armor: string } } };
    expect(ageDecrypt(ids[0]!, field.valueFrom.age.armor)).toBe('token-value');
    writeFileSync(join(dir, 'sealed.yaml'), `apiVersion: machineadm.cluster.x-k8s.io/v1alpha1\nkind: MachineConfig\nspec:\n  files:\n    - path: /etc/token\n      content:\n${out.stdout.replace(/^(?=.)/gm, '        ')}`);
    const validate = await main(['config', 'validate', '-c', join(dir, 'sealed.yaml')], { stdout: () => {}, stderr: () => {}, readStdin: async () => Buffer.alloc(0), env: {}, cwd: dir, interactive: false });
    expect(validate).toBe(0);
  });

  it.each([
    ['no recipient', [], 'at least one recipient'],
    ['a recipient that is not one', ['-r', 'age1notarecipient'], 'is not an age recipient'],
    ['an identity given as a recipient', ['-r', 'AGE-SECRET-KEY-1QQQ'], 'an identity (a secret key)'],
    ['a missing recipients file', ['-R', 'none.txt'], 'does not exist'],
  ])('refuses %s (exit 2) and prints no envelope', async (_, args, message) => {
    const out = await seal(args, 'secret');
    expect(out.code).toBe(2);
    expect(out.stdout).toBe('');
    expect(out.stderr).toContain(message);
    expect(out.stderr).not.toContain('AGE-SECRET-KEY-1QQQ');
  });

  it('refuses a file given with -R that holds no recipients (exit 2), naming its line but not its content', async () => {
    writeFileSync(join(dir, 'token.txt'), 'db-password-hunter2\n');
    const out = await seal(['-r', recipients[0]!, '-R', 'token.txt'], 'secret');
    expect(out.code).toBe(2);
    expect(out.stdout).toBe('');
    expect(out.stderr).toContain(`${join(dir, 'token.txt')}:1: not an age recipient`);
    expect(out.stderr).not.toContain('hunter2');
  });

  it('refuses a secret that is not UTF-8 text (exit 2), which no machine could open, saying to seal it base64-encoded', async () => {
    writeFileSync(join(dir, 'binary.key'), Buffer.from([0x30, 0x82, 0x01, 0x0a, 0x02, 0x82, 0xff, 0xfe]));
    const out = await seal(['-r', recipients[0]!, '--in', 'binary.key']);
    expect(out.code).toBe(2);
    expect(out.stdout).toBe('');
    expect(out.stderr).toContain(`${join(dir, 'binary.key')}: the secret is not UTF-8 text`);
    expect(out.stderr).toContain('encoding: base64');
  });

  it('refuses an empty secret (exit 2)', async () => {
    const out = await seal(['-r', recipients[0]!], '');
    expect(out.code).toBe(2);
    expect(out.stderr).toContain('the secret is empty');
  });
});
