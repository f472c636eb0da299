// prepare/users with the real shadow tools (useradd, usermod, groupadd with --prefix, chpasswd
// with --root) on a scratch root that holds a copy of this machine's /etc/passwd, /etc/group,
// /etc/shadow and /etc/gshadow; sudo rules checked by the real visudo.
import { execFileSync } from 'node:child_process';
import { chownSync, copyFileSync, rmSync, lstatSync, mkdirSync, readdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { dump } from 'js-yaml';
import { describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.ts';
import { scratchDir } from '../support/tmp.ts';
import { missingRequirement } from '../support/environment.ts';
import { snapshotTree } from '../support/tree.ts';
import { parseAccounts } from '../../src/linux/accounts.ts';

const skip = missingRequirement({ root: true, commands: ['useradd', 'usermod', 'groupadd', 'chpasswd', 'visudo'] });
const KEY = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIB5wKzJ1b3Yc9YgE2k0s1lq8lFz2cOa0lJbq8r0yN2xX ops@example';
const HASH = '$6$rounds=5000$saltsalt$' + 'Q'.repeat(86);

interface Machine {
  dir: string;
  root: string;
  state: string;
  config: string;
}

function machine(): Machine {
  const dir = scratchDir('machineadm-users-');
  const m = { dir, root: join(dir, 'root'), state: join(dir, 'state'), config: join(dir, 'machine.yaml') };
  mkdirSync(join(m.root, 'etc'), { recursive: true });
  for (const f of ['passwd', 'group', 'shadow', 'gshadow']) copyFileSync(`/etc/${f}`, join(m.root, 'etc', f));
  return m;
}

function configure(m: Machine, users: unknown[], extra: Record<string, unknown> = {}): void {
  writeFileSync(m.config, dump({ apiVersion: 'machineadm.cluster.x-k8s.io/v1alpha1', kind: 'MachineConfig', spec: { users, ...extra } }));
}

const prepare = (m: Machine, command = 'prepare', extra: string[] = []) => runCli([command, '-c', m.config, '--root', m.root, '--state-dir', m.state, '--only', 'prepare/users', ...extra]);
const accounts = (m: Machine) => parseAccounts(...(['passwd', 'group', 'shadow'].map((f) => readFileSync(join(m.root, 'etc', f), 'utf8')) as [string, string, string]));

describe.skipIf(skip)('prepare/users', () => {
  it('creates a user with its groups, sudo rule, SSH keys and a locked password; a second run changes nothing', async () => {
    const m = machine();
    configure(m, [{ name: 'ops', gecos: 'Operations', shell: '/bin/bash', groups: ['docker', 'adm'], sudo: 'ALL=(ALL) NOPASSWD:ALL', sshAuthorizedKeys: [KEY] }]);
    const plan = await prepare(m, 'plan');
    expect(plan.code, plan.stderr).toBe(0);
    expect(plan.stdout).toContain('create group docker');
    expect(plan.stdout).toContain('create user ops (home /home/ops, shell /bin/bash, primary group ops, groups docker, adm)');
    expect(plan.stdout).toContain('+ops ALL=(ALL) NOPASSWD:ALL');
    const first = await prepare(m);
    expect(first.code, first.stderr).toBe(0);
    const a = accounts(m);
    const ops = a.users.get('ops')!;
    expect(ops).toMatchObject({ gecos: 'Operations', home: '/home/ops', shell: '/bin/bash', gid: a.groups.get('ops')!.gid });
    expect(a.groups.get('docker')!.members).toEqual(['ops']);
    expect(a.groups.get('adm')!.members).toContain('ops');
    expect(a.passwords.get('ops')).toMatch(/^!/);
    const sudoers = join(m.root, 'etc/sudoers.d/machineadm-ops');
    expect(readFileSync(sudoers, 'utf8')).toBe('ops ALL=(ALL) NOPASSWD:ALL\n');
    expect(statSync(sudoers).mode & 0o7777).toBe(0o440);
    execFileSync('visudo', ['-c', '-f', sudoers]);
    const ssh = join(m.root, 'home/ops/.ssh');
    expect(statSync(ssh)).toMatchObject({ uid: ops.uid, gid: ops.gid });
    expect(statSync(ssh).mode & 0o7777).toBe(0o700);
    const keys = join(ssh, 'authorized_keys');
    expect(readFileSync(keys, 'utf8')).toBe(`${KEY}\n`);
    expect(statSync(keys)).toMatchObject({ uid: ops.uid, gid: ops.gid });
    expect(statSync(keys).mode & 0o7777).toBe(0o600);

    const before = snapshotTree(join(m.root, 'etc'));
    const again = await prepare(m);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout + again.stderr).toMatch(/prepare\/users skipped .*already done/);
    expect(snapshotTree(join(m.root, 'etc'))).toEqual(before);
  });

  it('updates an existing user in place (same uid), adds groups without removing any, and locks its password', async () => {
    const m = machine();
    execFileSync('groupadd', ['--prefix', m.root, 'legacy']);
    execFileSync('useradd', ['--prefix', m.root, '--create-home', '--shell', '/bin/sh', '--groups', 'legacy', 'ops']);
    execFileSync('chpasswd', ['--encrypted', '--root', m.root], { input: `ops:${HASH}\n` });
    const uid = accounts(m).users.get('ops')!.uid;
    configure(m, [{ name: 'ops', shell: '/bin/bash', gecos: 'Ops', groups: ['adm'] }]);
    const plan = await prepare(m, 'plan');
    expect(plan.stdout).toContain('update user ops (gecos "" -> "Ops"; shell /bin/sh -> /bin/bash; groups + adm)');
    expect(plan.stdout).toContain('lock password of ops');
    const out = await prepare(m);
    expect(out.code, out.stderr).toBe(0);
    const a = accounts(m);
    expect(a.users.get('ops')).toMatchObject({ uid, shell: '/bin/bash', gecos: 'Ops' });
    expect(a.groups.get('legacy')!.members).toContain('ops');
    expect(a.groups.get('adm')!.members).toContain('ops');
    expect(a.passwords.get('ops')).toBe(`!${HASH}`);
    expect((await prepare(m, 'plan')).stdout).toMatch(/prepare\/users: .*\[up to date\]/);
  });

  it('creates a missing primary group, and uses an existing group named after the user rather than failing on it', async () => {
    const m = machine();
    execFileSync('groupadd', ['--prefix', m.root, 'web']);
    // The root's own skeleton, not this machine's /etc/skel.
    mkdirSync(join(m.root, 'etc/skel'));
    writeFileSync(join(m.root, 'etc/skel/.root-skel'), 'x\n');
    configure(m, [{ name: 'app', primaryGroup: 'apps', homeDir: '/srv/app' }, { name: 'web' }]);
    const out = await prepare(m);
    expect(out.code, out.stderr).toBe(0);
    const a = accounts(m);
    expect(a.users.get('app')).toMatchObject({ gid: a.groups.get('apps')!.gid, home: '/srv/app' });
    expect(a.users.get('web')!.gid).toBe(a.groups.get('web')!.gid);
    expect(statSync(join(m.root, 'srv/app')).uid).toBe(a.users.get('app')!.uid);
    expect(readdirSync(join(m.root, 'srv/app'))).toEqual(['.root-skel']);
  });

  it('gives the sudo rule file back to root when another owner took it (sudo ignores a rule file root does not own)', async () => {
    const m = machine();
    configure(m, [{ name: 'ops', sudo: 'ALL=(ALL) NOPASSWD:ALL' }]);
    expect((await prepare(m)).code).toBe(0);
    const sudoers = join(m.root, 'etc/sudoers.d/machineadm-ops');
    const ops = accounts(m).users.get('ops')!;
    chownSync(sudoers, ops.uid, ops.gid);
    expect((await prepare(m, 'plan')).stdout).toContain(`chmod /etc/sudoers.d/machineadm-ops (owner ${ops.uid}:${ops.gid} -> 0:0)`);
    const out = await prepare(m);
    expect(out.code, out.stderr).toBe(0);
    expect(statSync(sudoers)).toMatchObject({ uid: 0, gid: 0 });
    expect(statSync(sudoers).mode & 0o7777).toBe(0o440);
  });

  it.each([
    ['an existing user whose home was never made', [], '/home/ops', ['home']],
    ['an existing user given a new homeDir', ['--create-home'], '/srv/homes/ops', ['srv', 'srv/homes']],
  ])('gives %s its home, its own, and leaves the folders above it open, when it writes its SSH keys', async (_what, useradd, home, parents) => {
    const m = machine();
    execFileSync('useradd', ['--prefix', m.root, ...useradd, 'ops']);
    configure(m, [{ name: 'ops', homeDir: home, sshAuthorizedKeys: [KEY] }]);
    expect((await prepare(m, 'plan')).stdout).toContain(`create ${home} (home directory, mode 0700, owned by the user)`);
    const out = await prepare(m);
    expect(out.code, out.stderr).toBe(0);
    const ops = accounts(m).users.get('ops')!;
    expect(ops.home).toBe(home);
    expect(statSync(join(m.root, home))).toMatchObject({ uid: ops.uid, gid: ops.gid });
    expect(statSync(join(m.root, home)).mode & 0o7777).toBe(0o700);
    for (const parent of parents) expect(statSync(join(m.root, parent)).mode & 0o7777, parent).toBe(0o755);
    expect(readFileSync(join(m.root, home, '.ssh/authorized_keys'), 'utf8')).toBe(`${KEY}\n`);
    expect((await prepare(m, 'plan')).stdout).toMatch(/prepare\/users: .*\[up to date\]/);
  });

  it('sets a password hash read from a file through chpasswd (never in an argument or the output), once', async () => {
    const m = machine();
    mkdirSync(join(m.root, 'etc/machineadm'));
    writeFileSync(join(m.root, 'etc/machineadm/deploy-hash'), `${HASH}\n`);
    configure(m, [{ name: 'deploy', passwordHash: { valueFrom: { file: '/etc/machineadm/deploy-hash' } } }]);
    const out = await prepare(m, 'prepare', ['-o', 'json']);
    expect(out.code, out.stderr).toBe(0);
    expect(accounts(m).passwords.get('deploy')).toBe(HASH);
    expect(out.stdout + out.stderr + readFileSync(join(m.root, 'run/machineadm/result.json'), 'utf8')).not.toContain(HASH.slice(20));
    expect((await prepare(m, 'plan')).stdout).toMatch(/prepare\/users: .*\[up to date\]/);
  });

  it.each([
    ['a sudo rule visudo rejects', (_m: Machine) => [{ name: 'ops', sudo: 'ALL=(ALL NOPASSWD:ALL' }], /spec\.users\[0\]\.sudo: visudo rejects the rule "ops ALL=\(ALL NOPASSWD:ALL": line 1:\d+: syntax error/],
    ['a password hash file holding a password', (m: Machine) => (mkdirSync(join(m.root, 'etc/machineadm')), writeFileSync(join(m.root, 'etc/machineadm/h'), 'hunter2\n'), [{ name: 'ops', passwordHash: { valueFrom: { file: '/etc/machineadm/h' } } }]), /spec\.users\[0\]\.passwordHash: the value read is not a crypt\(3\) hash/],
    ['a password hash on a machine without /etc/shadow', (m: Machine) => (rmSync(join(m.root, 'etc/shadow')), mkdirSync(join(m.root, 'etc/machineadm')), writeFileSync(join(m.root, 'etc/machineadm/h'), `${HASH}\n`), [{ name: 'ops', passwordHash: { valueFrom: { file: '/etc/machineadm/h' } } }]), /spec\.users\[0\]\.passwordHash: this machine has no \/etc\/shadow: the hash would be written into \/etc\/passwd, which every user can read/],
    ['a ~/.ssh that is a symbolic link', (m: Machine) => (mkdirSync(join(m.root, 'home/ops'), { recursive: true }), symlinkSync('/root/.ssh', join(m.root, 'home/ops/.ssh')), [{ name: 'ops', homeDir: '/home/ops', sshAuthorizedKeys: [KEY] }]), /spec\.users\[0\]\.sshAuthorizedKeys: \/home\/ops\/\.ssh is a symbolic link/],
  ])('refuses %s before any change (exit 2)', async (_what, users, message) => {
    const m = machine();
    configure(m, users(m));
    const before = snapshotTree(m.root);
    for (const command of ['plan', 'prepare']) {
      const out = await prepare(m, command);
      expect(out.code, out.stderr).toBe(2);
      expect(out.stderr).toMatch(message);
      expect(snapshotTree(m.root)).toEqual(before);
    }
    expect(lstatSync(join(m.root, 'etc/passwd')).isFile()).toBe(true);
  });

  it('refuses a user named twice, a bad name and a passwordHash literal that is not a hash in validation, without quoting it; config view redacts the hash', async () => {
    const m = machine();
    configure(m, [{ name: 'ops' }, { name: 'ops' }]);
    const twice = await runCli(['config', 'validate', '-c', m.config]);
    expect(twice.code).toBe(2);
    expect(twice.stderr).toContain('spec.users[1].name: "ops" is also spec.users[0].name');
    configure(m, [{ name: 'Bad Name' }, { name: 'x', passwordHash: 'plain-password' }]);
    const out = await runCli(['config', 'validate', '-c', m.config]);
    expect(out.code).toBe(2);
    expect(out.stderr).toContain('spec.users[0].name: "Bad Name" is not valid');
    expect(out.stderr).toContain('spec.users[1].passwordHash: "<redacted>" is not valid');
    expect(out.stderr).not.toContain('plain-password');
    configure(m, [{ name: 'ops', passwordHash: HASH }]);
    const view = await runCli(['config', 'view', '-c', m.config]);
    expect(view.code, view.stderr).toBe(0);
    expect(view.stdout).toContain('passwordHash: <redacted>');
    expect(view.stdout).not.toContain(HASH.slice(3));
  });

  it('is refused on Windows with a clear message', async () => {
    const m = machine();
    configure(m, [{ name: 'ops' }], { timeServers: { servers: ['10.0.0.1'] } });
    const out = await runCli(['plan', '-c', m.config, '--os', 'windows']);
    expect(out.stdout + out.stderr).toContain('refuse spec.users (local users are managed on Linux only)');
    expect(out.stdout + out.stderr).toContain('refuse spec.timeServers (time servers are set on Linux only)');
    // A plan for another machine refuses what that machine would, with plan's exit code for it.
    expect(out.code).toBe(2);
    expect(out.stderr).toMatch(/refused before any change \(2 problems\):\n {2}spec\.users: local users are managed on Linux only\n {2}spec\.timeServers: time servers are set on Linux only/);
  });

  it('refuses spec.containerd.proxy in a plan for Windows (exit 2), as the Windows machine itself would', async () => {
    const m = machine();
    configure(m, [], { containerd: { proxy: { httpsProxy: 'http://proxy.example:3128' } } });
    const out = await runCli(['plan', '-c', m.config, '--os', 'windows']);
    expect(out.code).toBe(2);
    expect(out.stdout).toContain('refuse spec.containerd.proxy (is not supported on Windows');
    expect(out.stderr).toContain('spec.containerd.proxy: is not supported on Windows');
  });
});
