// reset's undo of prepare/users with the real shadow tools (useradd/usermod/groupadd at init,
// userdel/usermod/groupdel at reset, all with --prefix) on a scratch root holding a copy of this
// machine's account files: a user that was there is never deleted, only given back what machineadm
// changed; a user machineadm created goes, its home only when nothing of anyone else is in it.
import { chmodSync, copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { dump } from 'js-yaml';
import { describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.ts';
import { scratchDir } from '../support/tmp.ts';
import { missingRequirement } from '../support/environment.ts';
import { snapshotTree } from '../support/tree.ts';
import { parseAccounts } from '../../src/linux/accounts.ts';

const skip = missingRequirement({ root: true, commands: ['useradd', 'usermod', 'groupadd', 'userdel', 'groupdel', 'chpasswd'] });
const KEY = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIB5wKzJ1b3Yc9YgE2k0s1lq8lFz2cOa0lJbq8r0yN2xX ops@example';
const HASH = '$6$rounds=5000$saltsalt$' + 'Q'.repeat(86);

function machine() {
  const dir = scratchDir('machineadm-reset-users-');
  const root = join(dir, 'root');
  mkdirSync(join(root, 'etc'), { recursive: true });
  for (const f of ['passwd', 'group', 'shadow', 'gshadow']) for (const name of [f, `${f}-`]) if (existsSync(`/etc/${f}`)) copyFileSync(`/etc/${f}`, join(root, 'etc', name));
  return { dir, root, state: join(dir, 'state'), config: join(dir, 'machine.yaml') };
}

const accounts = (root: string) => parseAccounts(...(['passwd', 'group', 'shadow'].map((f) => readFileSync(join(root, 'etc', f), 'utf8')) as [string, string, string]));

describe.skipIf(skip)('reset of spec.users', () => {
  it('deletes the users and groups machineadm created, gives a user that was there its shell, comment, groups and password back, and keeps a home holding files of someone else', async () => {
    const m = machine();
    // Before machineadm: ops exists (shell /bin/sh, in legacy, a password).
    execFileSync('groupadd', ['--prefix', m.root, 'legacy']);
    execFileSync('useradd', ['--prefix', m.root, '--create-home', '--shell', '/bin/sh', '--groups', 'legacy', 'ops']);
    execFileSync('chpasswd', ['--encrypted', '--root', m.root], { input: `ops:${HASH}\n` });
    const before = snapshotTree(join(m.root, 'etc'));
    const homeBefore = snapshotTree(join(m.root, 'home'));
    const uid = accounts(m.root).users.get('ops')!.uid;
    writeFileSync(
      m.config,
      dump({
        apiVersion: 'machineadm.cluster.x-k8s.io/v1alpha1',
        kind: 'MachineConfig',
        spec: { users: [{ name: 'ops', shell: '/bin/bash', gecos: 'Ops', groups: ['adm', 'docker'], sudo: 'ALL=(ALL) NOPASSWD:ALL', sshAuthorizedKeys: [KEY] }, { name: 'app', groups: ['docker'], sshAuthorizedKeys: [KEY] }] },
      }),
    );
    const init = await runCli(['prepare', '-c', m.config, '--root', m.root, '--state-dir', m.state, '--only', 'prepare/users']);
    expect(init.code, init.stderr).toBe(0);
    expect(accounts(m.root).users.get('ops')).toMatchObject({ uid, shell: '/bin/bash', gecos: 'Ops' });
    expect(accounts(m.root).passwords.get('ops')).toBe(`!${HASH}`);
    // Someone's data in the home machineadm's useradd made: the home stays.
    writeFileSync(join(m.root, 'home/app/notes.txt'), 'mine\n');

    const plan = await runCli(['reset', '--dry-run', '--root', m.root, '--state-dir', m.state]);
    expect(plan.code, plan.stderr).toBe(0);
    expect(plan.stdout).toContain('restore user ops (as before machineadm\'s first run (it was there before: kept): gecos "Ops" -> ""; shell /bin/bash -> /bin/sh; groups - adm, docker; password unlocked (machineadm locked it))');
    expect(plan.stdout).toContain(`delete user app (created by machineadm (userdel); home /home/app kept: it holds what neither /etc/skel nor machineadm put there (/home/app/notes.txt))`);
    expect(plan.stdout).toContain('delete group docker (created by machineadm (groupdel))');
    expect(plan.stdout).toContain('delete group app (created by machineadm (groupdel))');

    const reset = await runCli(['reset', '--root', m.root, '--state-dir', m.state]);
    expect(reset.code, reset.stdout + reset.stderr).toBe(0);
    expect(reset.stdout).toContain('user app: home /home/app kept');
    const after = accounts(m.root);
    expect(after.users.get('ops')).toMatchObject({ uid, shell: '/bin/sh', gecos: '' });
    expect(after.users.has('app')).toBe(false);
    expect(after.groups.has('docker')).toBe(false);
    // /etc as it was, byte for byte: the account files, their backups, no sudoers.d.
    expect(snapshotTree(join(m.root, 'etc'))).toEqual(before);
    // ops' home as it was (its .ssh gone); app's home kept with the file of someone else, its .ssh gone.
    const home = snapshotTree(join(m.root, 'home'));
    expect(Object.fromEntries(Object.entries(home).filter(([k]) => !k.startsWith('app')))).toEqual(homeBefore);
    expect(readdirSync(join(m.root, 'home/app'))).toContain('notes.txt');
    expect(existsSync(join(m.root, 'home/app/.ssh'))).toBe(false);
  });

  it('goes on after a reset killed right after userdel: the home, its parents and the account files\' backups as userdel left them are given back', async () => {
    const m = machine();
    const before = snapshotTree(m.root);
    writeFileSync(m.config, dump({ apiVersion: 'machineadm.cluster.x-k8s.io/v1alpha1', kind: 'MachineConfig', spec: { users: [{ name: 'app', groups: ['adm'], sshAuthorizedKeys: [KEY] }] } }));
    const init = await runCli(['prepare', '-c', m.config, '--root', m.root, '--state-dir', m.state, '--only', 'prepare/users']);
    expect(init.code, init.stderr).toBe(0);
    expect(existsSync(join(m.root, 'home/app/.ssh/authorized_keys'))).toBe(true);
    // What a reset killed after its userdel leaves: the account gone, the backups rewritten by a
    // tool machineadm had not yet noted, the home still there.
    execFileSync('userdel', ['--prefix', m.root, 'app']);
    const reset = await runCli(['reset', '--root', m.root, '--state-dir', m.state]);
    expect(reset.code, reset.stdout + reset.stderr).toBe(0);
    expect(reset.stdout).toContain('user app: removed its home /home/app');
    expect(snapshotTree(m.root)).toEqual({ ...before, ...Object.fromEntries(Object.entries(snapshotTree(m.root)).filter(([k]) => k === 'run' || k.startsWith('run/'))) });
  });

  it('gives a ~/.ssh that was there before the mode and owner it had, with its authorized_keys', async () => {
    const m = machine();
    execFileSync('useradd', ['--prefix', m.root, '--create-home', '--skel', join(m.dir, 'no-skel'), 'web']);
    const ssh = join(m.root, 'home/web/.ssh');
    mkdirSync(ssh, { mode: 0o755 });
    chmodSync(ssh, 0o755);
    writeFileSync(join(ssh, 'authorized_keys'), 'ssh-rsa AAAAold old@example\n', { mode: 0o644 });
    const before = snapshotTree(m.root);
    writeFileSync(m.config, dump({ apiVersion: 'machineadm.cluster.x-k8s.io/v1alpha1', kind: 'MachineConfig', spec: { users: [{ name: 'web', sshAuthorizedKeys: [KEY] }] } }));
    const init = await runCli(['prepare', '-c', m.config, '--root', m.root, '--state-dir', m.state, '--only', 'prepare/users']);
    expect(init.code, init.stderr).toBe(0);
    const { uid, gid } = accounts(m.root).users.get('web')!;
    expect(statSync(ssh)).toMatchObject({ mode: 0o40700, uid, gid });
    const plan = await runCli(['reset', '--dry-run', '--root', m.root, '--state-dir', m.state]);
    expect(plan.stdout).toContain('chmod /home/web/.ssh (mode 0700 -> 0755, owner 0:0)');
    const reset = await runCli(['reset', '--root', m.root, '--state-dir', m.state]);
    expect(reset.code, reset.stdout + reset.stderr).toBe(0);
    expect(statSync(ssh)).toMatchObject({ mode: 0o40755, uid: 0, gid: 0 });
    expect(snapshotTree(m.root)).toEqual({ ...before, ...Object.fromEntries(Object.entries(snapshotTree(m.root)).filter(([k]) => k === 'run' || k.startsWith('run/'))) });
  });

  // usermod --prefix looks a --gid up in this machine's group database, not the root's (shadow
  // 4.13): the groups here are ones both have.
  it('gives a user that was there its primary group back', async () => {
    const m = machine();
    execFileSync('useradd', ['--prefix', m.root, '--no-create-home', '--gid', 'users', 'web']);
    const before = snapshotTree(join(m.root, 'etc'));
    writeFileSync(m.config, dump({ apiVersion: 'machineadm.cluster.x-k8s.io/v1alpha1', kind: 'MachineConfig', spec: { users: [{ name: 'web', primaryGroup: 'adm' }] } }));
    const init = await runCli(['prepare', '-c', m.config, '--root', m.root, '--state-dir', m.state, '--only', 'prepare/users']);
    expect(init.code, init.stderr).toBe(0);
    const a = accounts(m.root);
    expect(a.users.get('web')!.gid).toBe(a.groups.get('adm')!.gid);
    const plan = await runCli(['reset', '--dry-run', '--root', m.root, '--state-dir', m.state]);
    expect(plan.stdout).toContain(`restore user web (as before machineadm's first run (it was there before: kept): primary group ${a.groups.get('adm')!.gid} -> ${a.groups.get('users')!.gid})`);
    const reset = await runCli(['reset', '--root', m.root, '--state-dir', m.state]);
    expect(reset.code, reset.stdout + reset.stderr).toBe(0);
    expect(snapshotTree(join(m.root, 'etc'))).toEqual(before);
  });

  it('leaves locked, and says so, a password that was empty before machineadm locked it', async () => {
    const m = machine();
    execFileSync('useradd', ['--prefix', m.root, '--no-create-home', 'kiosk']);
    execFileSync('usermod', ['--prefix', m.root, '--password', '', 'kiosk']);
    expect(accounts(m.root).passwords.get('kiosk')).toBe('');
    writeFileSync(m.config, dump({ apiVersion: 'machineadm.cluster.x-k8s.io/v1alpha1', kind: 'MachineConfig', spec: { users: [{ name: 'kiosk' }] } }));
    const init = await runCli(['prepare', '-c', m.config, '--root', m.root, '--state-dir', m.state, '--only', 'prepare/users']);
    expect(init.code, init.stderr).toBe(0);
    expect(accounts(m.root).passwords.get('kiosk')).toBe('!');
    const plan = await runCli(['reset', '--dry-run', '--root', m.root, '--state-dir', m.state]);
    expect(plan.stdout).not.toContain('password unlocked');
    expect(plan.stdout).toContain('keep password of user kiosk (left locked: it was empty before machineadm locked it, and unlocking it would let anyone log in without one (set one with passwd))');
    const reset = await runCli(['reset', '--root', m.root, '--state-dir', m.state]);
    expect(reset.code, reset.stdout + reset.stderr).toBe(0);
    expect(reset.stdout + reset.stderr).toContain('password of user kiosk: left locked');
    expect(accounts(m.root).passwords.get('kiosk')).toBe('!');
  });
});

// Debian's and Ubuntu's login.defs: userdel deletes the group named after the user with it.
describe.skipIf(skip)('reset of spec.users where userdel deletes the user\'s own group (USERGROUPS_ENAB yes)', () => {
  function machineWithUserGroups() {
    const m = machine();
    writeFileSync(join(m.root, 'etc/login.defs'), 'USERGROUPS_ENAB yes\n');
    return m;
  }

  it('deletes a user machineadm created with its own group, and a second reset does nothing', async () => {
    const m = machineWithUserGroups();
    const before = snapshotTree(join(m.root, 'etc'));
    writeFileSync(m.config, dump({ apiVersion: 'machineadm.cluster.x-k8s.io/v1alpha1', kind: 'MachineConfig', spec: { users: [{ name: 'app', sshAuthorizedKeys: [KEY] }] } }));
    const init = await runCli(['prepare', '-c', m.config, '--root', m.root, '--state-dir', m.state, '--only', 'prepare/users']);
    expect(init.code, init.stderr).toBe(0);
    expect(accounts(m.root).groups.has('app')).toBe(true);
    const reset = await runCli(['reset', '--root', m.root, '--state-dir', m.state]);
    expect(reset.code, reset.stdout + reset.stderr).toBe(0);
    expect(accounts(m.root).users.has('app')).toBe(false);
    expect(accounts(m.root).groups.has('app')).toBe(false);
    expect(snapshotTree(join(m.root, 'etc'))).toEqual(before);
    const again = await runCli(['reset', '--root', m.root, '--state-dir', m.state]);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stderr).toContain('nothing to reset');
  });

  it('keeps a group named after the user that was there before machineadm created the user, with its gid', async () => {
    const m = machineWithUserGroups();
    execFileSync('groupadd', ['--prefix', m.root, 'ops']);
    const gid = accounts(m.root).groups.get('ops')!.gid;
    const before = snapshotTree(join(m.root, 'etc'));
    writeFileSync(m.config, dump({ apiVersion: 'machineadm.cluster.x-k8s.io/v1alpha1', kind: 'MachineConfig', spec: { users: [{ name: 'ops' }] } }));
    const init = await runCli(['prepare', '-c', m.config, '--root', m.root, '--state-dir', m.state, '--only', 'prepare/users']);
    expect(init.code, init.stderr).toBe(0);
    expect(accounts(m.root).users.get('ops')!.gid).toBe(gid);
    const reset = await runCli(['reset', '--root', m.root, '--state-dir', m.state]);
    expect(reset.code, reset.stdout + reset.stderr).toBe(0);
    expect(accounts(m.root).users.has('ops')).toBe(false);
    expect(accounts(m.root).groups.get('ops')?.gid).toBe(gid);
    expect(snapshotTree(join(m.root, 'etc'))).toEqual(before);
  });

  it('makes the group that was there before again after a reset killed right after userdel', async () => {
    const m = machineWithUserGroups();
    execFileSync('groupadd', ['--prefix', m.root, 'ops']);
    const gid = accounts(m.root).groups.get('ops')!.gid;
    writeFileSync(m.config, dump({ apiVersion: 'machineadm.cluster.x-k8s.io/v1alpha1', kind: 'MachineConfig', spec: { users: [{ name: 'ops' }] } }));
    const init = await runCli(['prepare', '-c', m.config, '--root', m.root, '--state-dir', m.state, '--only', 'prepare/users']);
    expect(init.code, init.stderr).toBe(0);
    execFileSync('userdel', ['--prefix', m.root, 'ops']);
    expect(accounts(m.root).groups.has('ops')).toBe(false);
    const plan = await runCli(['reset', '--dry-run', '--root', m.root, '--state-dir', m.state]);
    expect(plan.stdout).toContain(`create group ops (gid ${gid}: it was there before machineadm created the user ops, and userdel deleted it with the user)`);
    const reset = await runCli(['reset', '--root', m.root, '--state-dir', m.state]);
    expect(reset.code, reset.stdout + reset.stderr).toBe(0);
    expect(accounts(m.root).groups.get('ops')?.gid).toBe(gid);
  });
});
