// prepare/time-servers on scratch roots laid out as Debian's chrony (sourcedir), a chrony.conf
// without a sourcedir (Red Hat's), and systemd-timesyncd: the file each gets, reruns that change
// nothing, a changed server list replacing (never adding to) what machineadm wrote, and the
// reload shown only when the file changes.
import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { dump } from 'js-yaml';
import { describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.ts';
import { scratchDir } from '../support/tmp.ts';
import { snapshotTree } from '../support/tree.ts';

const DEBIAN_CHRONY = 'pool 2.debian.pool.ntp.org iburst\nsourcedir /run/chrony-dhcp\nsourcedir /etc/chrony/sources.d\nkeyfile /etc/chrony/chrony.keys\n';
const REDHAT_CHRONY = 'pool 2.rhel.pool.ntp.org iburst\ndriftfile /var/lib/chrony/drift\nmakestep 1.0 3\nrtcsync';

function machine(files: Record<string, string>): { root: string; state: string; config: string; configure(servers: string[]): void } {
  const dir = scratchDir('machineadm-time-');
  const root = join(dir, 'root');
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(join(root, path, '..'), { recursive: true });
    writeFileSync(join(root, path), content);
  }
  mkdirSync(join(root, 'etc'), { recursive: true });
  const config = join(dir, 'machine.yaml');
  const configure = (servers: string[]) => writeFileSync(config, dump({ apiVersion: 'machineadm.cluster.x-k8s.io/v1alpha1', kind: 'MachineConfig', spec: { timeServers: { servers } } }));
  configure(['0.pool.ntp.org', '10.0.0.1']);
  return { root, state: join(dir, 'state'), config, configure };
}

const run = (m: { root: string; state: string; config: string }, command: string) => runCli([command, '-c', m.config, '--root', m.root, '--state-dir', m.state, '--only', 'prepare/time-servers']);
const read = (root: string, path: string) => readFileSync(join(root, path), 'utf8');

describe('prepare/time-servers', () => {
  it.each([
    ["Debian's chrony (a sourcedir under /etc)", { '/etc/chrony/chrony.conf': DEBIAN_CHRONY }, '/etc/chrony/sources.d/machineadm.sources', '# Written by machineadm from spec.timeServers.\nserver 0.pool.ntp.org iburst\nserver 10.0.0.1 iburst\n', 'chronyc reload sources'],
    ['systemd-timesyncd', { '/etc/systemd/timesyncd.conf': '[Time]\n#NTP=\n' }, '/etc/systemd/timesyncd.conf.d/machineadm.conf', '# Written by machineadm from spec.timeServers.\n[Time]\nNTP=\nNTP=0.pool.ntp.org 10.0.0.1\n', 'systemctl restart systemd-timesyncd'],
    ['a root with neither (timesyncd assumed)', {}, '/etc/systemd/timesyncd.conf.d/machineadm.conf', '# Written by machineadm from spec.timeServers.\n[Time]\nNTP=\nNTP=0.pool.ntp.org 10.0.0.1\n', 'systemctl restart systemd-timesyncd'],
  ])('writes its own file for %s; a rerun changes nothing', async (_layout, files, path, content, reload) => {
    const m = machine(files);
    const plan = await run(m, 'plan');
    expect(plan.code, plan.stderr).toBe(0);
    expect(plan.stdout).toContain(`create ${path}`);
    expect(plan.stdout).toContain(`run ${reload} (${path} changed)`);
    const out = await run(m, 'prepare');
    expect(out.code, out.stderr).toBe(0);
    expect(read(m.root, path)).toBe(content);
    for (const [other, before] of Object.entries(files)) expect(read(m.root, other)).toBe(before);
    const again = await run(m, 'plan');
    expect(again.stdout).toMatch(/prepare\/time-servers\/file: .*\[up to date\]/);
    // The reload never ran under --root: where it runs, the next run would still do it.
    expect(again.stdout).toMatch(/prepare\/time-servers\/restart: .*\[skipped: live change skipped under --root/);
    const tree = snapshotTree(join(m.root, 'etc'));
    expect((await run(m, 'prepare')).code).toBe(0);
    expect(snapshotTree(join(m.root, 'etc'))).toEqual(tree);
  });

  it('keeps a marked block in a chrony.conf without a sourcedir, replaced (not added twice) when the servers change', async () => {
    const m = machine({ '/etc/chrony.conf': REDHAT_CHRONY });
    const plan = await run(m, 'plan');
    expect(plan.stdout).toContain('run systemctl restart chronyd (/etc/chrony.conf changed)');
    expect((await run(m, 'prepare')).code).toBe(0);
    const block = '# BEGIN machineadm spec.timeServers\nserver 0.pool.ntp.org iburst\nserver 10.0.0.1 iburst\n# END machineadm spec.timeServers\n';
    expect(read(m.root, '/etc/chrony.conf')).toBe(`${REDHAT_CHRONY}\n${block}`);
    expect((await run(m, 'prepare')).code).toBe(0);
    expect(read(m.root, '/etc/chrony.conf')).toBe(`${REDHAT_CHRONY}\n${block}`);
    m.configure(['ntp.corp.example']);
    const changed = await run(m, 'plan');
    expect(changed.stdout).toContain('-server 0.pool.ntp.org iburst');
    expect((await run(m, 'prepare')).code).toBe(0);
    expect(read(m.root, '/etc/chrony.conf')).toBe(`${REDHAT_CHRONY}\n# BEGIN machineadm spec.timeServers\nserver ntp.corp.example iburst\n# END machineadm spec.timeServers\n`);
  });

  it('gives systemd-timesyncd only these servers, even when timesyncd.conf names others', async () => {
    const m = machine({ '/etc/systemd/timesyncd.conf': '[Time]\nNTP=ntp.ubuntu.com\n' });
    expect((await run(m, 'prepare')).code).toBe(0);
    // timesyncd.conf(5): each NTP= adds to the list the files read before it; an empty one resets it.
    const servers: string[] = [];
    for (const path of ['/etc/systemd/timesyncd.conf', '/etc/systemd/timesyncd.conf.d/machineadm.conf']) {
      for (const [, value] of read(m.root, path).matchAll(/^NTP=(.*)$/gm)) {
        if (value!.trim() === '') servers.length = 0;
        else servers.push(...value!.trim().split(/\s+/));
      }
    }
    expect(servers).toEqual(['0.pool.ntp.org', '10.0.0.1']);
    expect(read(m.root, '/etc/systemd/timesyncd.conf')).toBe('[Time]\nNTP=ntp.ubuntu.com\n');
  });

  it('refuses a server that is not a host name or IP address in validation', async () => {
    const m = machine({});
    m.configure(['ntp.example', 'bad host;rm -rf /']);
    const out = await runCli(['config', 'validate', '-c', m.config]);
    expect(out.code).toBe(2);
    expect(out.stderr).toContain('spec.timeServers.servers[1]: "bad host;rm -rf /" is not a host name or IP address');
  });

  it('refuses, before any change, a drop-in path that is a symbolic link', async () => {
    const m = machine({ '/etc/systemd/timesyncd.conf': '[Time]\n' });
    mkdirSync(join(m.root, 'etc/systemd/timesyncd.conf.d'));
    symlinkSync('../timesyncd.conf', join(m.root, 'etc/systemd/timesyncd.conf.d/machineadm.conf'));
    const before = snapshotTree(m.root);
    const out = await run(m, 'prepare');
    expect(out.code).toBe(2);
    expect(out.stderr).toContain('spec.timeServers.servers: /etc/systemd/timesyncd.conf.d/machineadm.conf is a symbolic link');
    expect(snapshotTree(m.root)).toEqual(before);
  });
});
