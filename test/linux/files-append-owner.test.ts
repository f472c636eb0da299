// spec.files append (added once: a rerun adds nothing) and owner (chown by name from the root's
// own /etc/passwd and /etc/group, on every path: a new file, new content, an owner changed on
// disk, an appended file, and an owner that prepare/users makes in the same run).
import { chownSync, copyFileSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { dump } from 'js-yaml';
import { describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.ts';
import { scratchDir } from '../support/tmp.ts';
import { missingRequirement } from '../support/environment.ts';
import { appended } from '../../src/linux/steps/files.ts';

const needRoot = missingRequirement({ root: true });
const needShadow = missingRequirement({ root: true, commands: ['useradd', 'groupadd', 'usermod'] });

function machine(spec: Record<string, unknown>, passwd = true) {
  const dir = scratchDir('machineadm-append-');
  const m = { root: join(dir, 'root'), state: join(dir, 'state'), config: join(dir, 'machine.yaml') };
  mkdirSync(join(m.root, 'etc'), { recursive: true });
  if (passwd) {
    writeFileSync(join(m.root, 'etc/passwd'), 'root:x:0:0:root:/root:/bin/bash\napp:x:2345:2346::/srv/app:/usr/sbin/nologin\n');
    writeFileSync(join(m.root, 'etc/group'), 'root:x:0:\napp:x:2346:\nops:x:2400:\n');
  }
  const configure = (s: Record<string, unknown>) => writeFileSync(m.config, dump({ apiVersion: 'machineadm.cluster.x-k8s.io/v1alpha1', kind: 'MachineConfig', spec: s }));
  configure(spec);
  return { ...m, configure, run: (command: string, only = 'prepare/files') => runCli([command, '-c', m.config, '--root', m.root, '--state-dir', m.state, '--only', only]) };
}

describe('spec.files append', () => {
  it.each([
    [undefined, 'added\n', 'added\n'],
    ['', 'added\n', 'added\n'],
    ['first\n', 'added\n', 'first\nadded\n'],
    ['first', 'added\n', 'first\nadded\n'],
    ['first\nadded\nlast\n', 'added\n', 'first\nadded\nlast\n'],
    // Held only from the start of a line to the end of one: within a line it is other text.
    ['#net.ipv4.ip_forward=1\n', 'net.ipv4.ip_forward=1\n', '#net.ipv4.ip_forward=1\nnet.ipv4.ip_forward=1\n'],
    ['# net.ipv4.ip_forward=1 is off\n', 'net.ipv4.ip_forward=1', '# net.ipv4.ip_forward=1 is off\nnet.ipv4.ip_forward=1'],
    ['x=10\n', 'x=1', 'x=10\nx=1'],
    ['x=10\n', 'x=1\n', 'x=10\nx=1\n'],
    ['x=1', 'x=1', 'x=1'],
    ['a\nx=1\nb', 'x=1', 'a\nx=1\nb'],
    ['added\nlast\n', 'added\n', 'added\nlast\n'],
  ])('appends %j + %j as %j', (current, content, expected) => {
    expect(appended(current === undefined ? undefined : Buffer.from(current), Buffer.from(content)).toString()).toBe(expected);
  });

  it.each([
    ['#net.ipv4.ip_forward=1\n', 'net.ipv4.ip_forward=1\n'],
    ['#net.ipv4.ip_forward=1', 'net.ipv4.ip_forward=1\n'],
    ['x=10', 'x=1'],
    ['', '\nx=1\n'],
    ['a', '\nx=1'],
  ])('adds nothing more on a rerun: %j + %j', (current, content) => {
    const once = appended(Buffer.from(current), Buffer.from(content));
    expect(appended(once, Buffer.from(content)).toString()).toBe(once.toString());
  });

  it("appends a setting to a stock sysctl.conf that holds it commented out, once", async () => {
    const m = machine({ files: [{ path: '/etc/sysctl.conf', content: 'net.ipv4.ip_forward=1\n', append: true }] });
    const stock = '# Uncomment the next line to enable packet forwarding for IPv4\n#net.ipv4.ip_forward=1\n';
    writeFileSync(join(m.root, 'etc/sysctl.conf'), stock);
    expect((await m.run('prepare')).code).toBe(0);
    expect(readFileSync(join(m.root, 'etc/sysctl.conf'), 'utf8')).toBe(`${stock}net.ipv4.ip_forward=1\n`);
    const again = await m.run('prepare');
    expect(again.code).toBe(0);
    expect(again.stdout + again.stderr).toMatch(/prepare\/files skipped .*already done/);
    expect(readFileSync(join(m.root, 'etc/sysctl.conf'), 'utf8')).toBe(`${stock}net.ipv4.ip_forward=1\n`);
  });

  it('adds the content once to an existing file, keeps what was there, and a rerun adds nothing', async () => {
    const m = machine({ files: [{ path: '/etc/hosts', content: '10.0.0.10 cp.cluster.local\n', append: true }, { path: '/etc/new.conf', content: 'x=1\n', append: true }] });
    writeFileSync(join(m.root, 'etc/hosts'), '127.0.0.1 localhost');
    const plan = await m.run('plan');
    expect(plan.code, plan.stderr).toBe(0);
    expect(plan.stdout).toContain('+10.0.0.10 cp.cluster.local');
    expect((await m.run('prepare')).code).toBe(0);
    expect(readFileSync(join(m.root, 'etc/hosts'), 'utf8')).toBe('127.0.0.1 localhost\n10.0.0.10 cp.cluster.local\n');
    expect(readFileSync(join(m.root, 'etc/new.conf'), 'utf8')).toBe('x=1\n');
    const again = await m.run('prepare');
    expect(again.code).toBe(0);
    expect(again.stdout + again.stderr).toMatch(/prepare\/files skipped .*already done/);
    expect(readFileSync(join(m.root, 'etc/hosts'), 'utf8')).toBe('127.0.0.1 localhost\n10.0.0.10 cp.cluster.local\n');
  });

  it('refuses append for a downloaded file in validation', async () => {
    const m = machine({ files: [{ path: '/opt/tool', source: { url: 'https://files.example/tool', sha256: 'a'.repeat(64) }, append: true }] });
    const out = await runCli(['config', 'validate', '-c', m.config]);
    expect(out.code).toBe(2);
    expect(out.stderr).toContain('spec.files[0].append: applies only to inline content');
  });
});

describe.skipIf(needRoot)('spec.files owner', () => {
  it("applies the owner by name from the root's /etc/passwd and /etc/group: new file, new content, an owner changed on disk, an appended file", async () => {
    const m = machine({ files: [{ path: '/srv/app/app.conf', content: 'a\n', owner: 'app:ops' }, { path: '/srv/app/log.conf', content: 'b\n', owner: 'app', append: true }] });
    const owner = (p: string) => ({ uid: statSync(join(m.root, p)).uid, gid: statSync(join(m.root, p)).gid });
    expect((await m.run('prepare')).code).toBe(0);
    expect(owner('srv/app/app.conf')).toEqual({ uid: 2345, gid: 2400 });
    expect(owner('srv/app/log.conf')).toEqual({ uid: 2345, gid: 2346 });
    chownSync(join(m.root, 'srv/app/app.conf'), 0, 0);
    const plan = await m.run('plan');
    expect(plan.stdout).toContain('chmod /srv/app/app.conf (owner 0:0 -> app:ops)');
    expect((await m.run('prepare')).code).toBe(0);
    expect(owner('srv/app/app.conf')).toEqual({ uid: 2345, gid: 2400 });
    m.configure({ files: [{ path: '/srv/app/app.conf', content: 'changed\n', owner: 'app:ops' }, { path: '/srv/app/log.conf', content: 'c\n', owner: 'app', append: true }] });
    expect((await m.run('prepare')).code).toBe(0);
    expect(owner('srv/app/app.conf')).toEqual({ uid: 2345, gid: 2400 });
    expect(readFileSync(join(m.root, 'srv/app/log.conf'), 'utf8')).toBe('b\nc\n');
    expect(owner('srv/app/log.conf')).toEqual({ uid: 2345, gid: 2346 });
  });

  it('refuses an owner the machine does not have before any change, naming the field', async () => {
    const m = machine({ files: [{ path: '/etc/a.conf', content: 'a\n' }, { path: '/etc/x.conf', content: 'x\n', owner: 'nobody-here:root' }] });
    for (const command of ['plan', 'prepare']) {
      const out = await m.run(command);
      expect(out.code).toBe(2);
      expect(out.stderr).toContain('spec.files[1].owner: owner "nobody-here:root": user "nobody-here" does not exist on this machine');
    }
    expect(existsSync(join(m.root, 'etc/a.conf'))).toBe(false);
  });

  it.skipIf(needShadow)('plans and applies an owner that prepare/users makes in the same run', async () => {
    const m = machine({ users: [{ name: 'svc', groups: ['svcgrp'] }], files: [{ path: '/etc/svc.conf', content: 'x\n', owner: 'svc:svcgrp' }] }, false);
    for (const f of ['passwd', 'group', 'shadow', 'gshadow']) copyFileSync(`/etc/${f}`, join(m.root, 'etc', f));
    writeFileSync(join(m.root, 'etc/svc.conf'), 'old\n');
    const plan = await m.run('plan', 'prepare/users,prepare/files');
    expect(plan.code, plan.stderr).toBe(0);
    expect(plan.stdout).toContain('owner 0:0 -> svc:svcgrp (made by prepare/users first)');
    const out = await m.run('prepare', 'prepare/users,prepare/files');
    expect(out.code, out.stderr).toBe(0);
    const passwd = readFileSync(join(m.root, 'etc/passwd'), 'utf8');
    const uid = Number(/^svc:x:(\d+):/m.exec(passwd)![1]);
    const gid = Number(/^svcgrp:x:(\d+):/m.exec(readFileSync(join(m.root, 'etc/group'), 'utf8'))![1]);
    expect(statSync(join(m.root, 'etc/svc.conf'))).toMatchObject({ uid, gid });
  });

  it.skipIf(needShadow).each([
    ['svc:nosuchgroup', 'group "nosuchgroup"'],
    ['nobody-here:svcgrp', 'user "nobody-here"'],
    // svc's primary group is svcgrp: no group named svc is made for it.
    ['svc', 'group "svc"'],
  ])('refuses the owner %s before any change when prepare/users makes only part of it (exit 2)', async (owner, missing) => {
    const m = machine({ users: [{ name: 'svc', primaryGroup: 'svcgrp' }], files: [{ path: '/etc/svc.conf', content: 'x\n', owner }] }, false);
    for (const f of ['passwd', 'group', 'shadow', 'gshadow']) copyFileSync(`/etc/${f}`, join(m.root, 'etc', f));
    for (const command of ['plan', 'prepare']) {
      const out = await m.run(command, 'prepare/users,prepare/files');
      expect(out.code, out.stderr).toBe(2);
      expect(out.stderr).toContain(`spec.files[0].owner: owner "${owner}": ${missing} does not exist on this machine`);
    }
    expect(readFileSync(join(m.root, 'etc/passwd'), 'utf8')).not.toMatch(/^svc:/m);
    expect(existsSync(join(m.root, 'etc/svc.conf'))).toBe(false);
  });
});
