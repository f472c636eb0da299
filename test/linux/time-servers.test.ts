// prepare/time-servers on scratch roots laid out as Debian's chrony (sourcedir), a chrony.conf
// without a sourcedir (Red Hat's), and systemd-timesyncd: the file each gets, reruns that change
// nothing, a changed server list replacing (never adding to) what machineadm wrote, and the
// reload shown only when the file changes.
import { chmodSync, existsSync, mkdirSync, readFileSync, readdirSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
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
    // No servers of its own: chrony.conf is left as it is, and chrony reads its sourcedirs again.
    ["Debian's chrony without a pool (a sourcedir under /etc)", { '/etc/chrony/chrony.conf': DEBIAN_CHRONY.replace(/^pool .*\n/m, '') }, '/etc/chrony/sources.d/machineadm.sources', '# Written by machineadm from spec.timeServers.\nserver 0.pool.ntp.org iburst\nserver 10.0.0.1 iburst\n', 'chronyc reload sources'],
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
    const image = `#machineadm spec.timeServers: ${REDHAT_CHRONY}`;
    expect(read(m.root, '/etc/chrony.conf')).toBe(`${image}\n${block}`);
    expect((await run(m, 'prepare')).code).toBe(0);
    expect(read(m.root, '/etc/chrony.conf')).toBe(`${image}\n${block}`);
    m.configure(['ntp.corp.example']);
    const changed = await run(m, 'plan');
    expect(changed.stdout).toContain('-server 0.pool.ntp.org iburst');
    expect((await run(m, 'prepare')).code).toBe(0);
    expect(read(m.root, '/etc/chrony.conf')).toBe(`${image}\n# BEGIN machineadm spec.timeServers\nserver ntp.corp.example iburst\n# END machineadm spec.timeServers\n`);
  });

  // chrony.conf(5): a line starting with #, %, ; or ! is a comment; directives are read case-insensitively.
  function chronySources(root: string, conf: string): { servers: string[]; sourceDirs: string[] } {
    const servers: string[] = [];
    const sourceDirs: string[] = [];
    const directives = (text: string) => text.split('\n').map((l) => l.trim().split(/\s+/)).filter(([d]) => d && !/^[#%;!]/.test(d));
    for (const [directive, value] of directives(read(root, conf))) {
      if (/^(server|pool|peer)$/i.test(directive!)) servers.push(value!);
      if (/^sourcedir$/i.test(directive!)) sourceDirs.push(value!);
    }
    for (const dir of sourceDirs) {
      if (!existsSync(join(root, dir))) continue;
      for (const file of readdirSync(join(root, dir)).filter((f) => f.endsWith('.sources'))) {
        for (const [directive, value] of directives(read(root, `${dir}/${file}`))) if (/^(server|pool|peer)$/i.test(directive!)) servers.push(value!);
      }
    }
    return { servers, sourceDirs };
  }

  it.each([
    ["Debian's chrony (a sourcedir under /etc)", '/etc/chrony/chrony.conf', `${DEBIAN_CHRONY}  Server ntp.image.example iburst\npeer peer.image.example\nsourcedir /etc/chrony/image.d\n`, 'chrony'],
    ["Red Hat's chrony (no sourcedir under /etc)", '/etc/chrony.conf', `${REDHAT_CHRONY}\nsourcedir /run/chrony-dhcp\n`, 'chronyd'],
  ])('gives %s only these servers, keeps the servers DHCP gives, restarts it, and reset gives chrony.conf back byte for byte', async (_layout, conf, content, unit) => {
    const m = machine({ [conf]: content, '/etc/chrony/image.d/vendor.sources': 'pool vendor.example iburst\n' });
    chmodSync(join(m.root, conf), 0o640);
    const plan = await run(m, 'plan');
    expect(plan.code, plan.stderr).toBe(0);
    expect(plan.stdout).toContain(`run systemctl restart ${unit} (`);
    expect((await run(m, 'prepare')).code).toBe(0);
    expect(chronySources(m.root, conf)).toEqual({ servers: ['0.pool.ntp.org', '10.0.0.1'], sourceDirs: expect.arrayContaining(['/run/chrony-dhcp']) });
    // Only source lines change: every other line is where it was.
    const kept = (text: string) => text.split('\n').filter((l) => !/^\s*(#|$)|^\s*(server|pool|peer|sourcedir)\s/i.test(l));
    expect(kept(read(m.root, conf))).toEqual(kept(content));
    const tree = snapshotTree(join(m.root, 'etc'));
    expect((await run(m, 'prepare')).code).toBe(0);
    expect(snapshotTree(join(m.root, 'etc'))).toEqual(tree);
    m.configure(['ntp.corp.example']);
    expect((await run(m, 'prepare')).code).toBe(0);
    expect(chronySources(m.root, conf).servers).toEqual(['ntp.corp.example']);
    const reset = await runCli(['reset', '--root', m.root, '--state-dir', m.state]);
    expect(reset.code, reset.stderr).toBe(0);
    expect(readFileSync(join(m.root, conf))).toEqual(Buffer.from(content));
    expect(statSync(join(m.root, conf)).mode & 0o7777).toBe(0o640);
    expect(existsSync(join(m.root, 'etc/chrony/sources.d/machineadm.sources'))).toBe(false);
  });

  // Ubuntu from 25.04 ships its pools as /etc/chrony/sources.d/ubuntu-ntp-pools.sources, in the
  // sourcedir machineadm writes its own file into; chrony.conf then lists no server of its own.
  it("gives Ubuntu's chrony (its pools in a .sources file beside machineadm's) only these servers, reloads its sources, and reset gives that file back byte for byte", async () => {
    const conf = 'confdir /etc/chrony/conf.d\nsourcedir /run/chrony-dhcp\nsourcedir /etc/chrony/sources.d\nkeyfile /etc/chrony/chrony.keys\n';
    const pools = '# Use servers from the NTP Pool Project.\npool ntp.ubuntu.com        iburst maxsources 4\npool 0.ubuntu.pool.ntp.org iburst maxsources 1\n';
    const m = machine({ '/etc/chrony/chrony.conf': conf, '/etc/chrony/sources.d/ubuntu-ntp-pools.sources': pools });
    const plan = await run(m, 'plan');
    expect(plan.code, plan.stderr).toBe(0);
    expect(plan.stdout).toContain('run chronyc reload sources (');
    expect((await run(m, 'prepare')).code).toBe(0);
    expect(chronySources(m.root, '/etc/chrony/chrony.conf').servers).toEqual(['0.pool.ntp.org', '10.0.0.1']);
    expect(read(m.root, '/etc/chrony/chrony.conf')).toBe(conf);
    const tree = snapshotTree(join(m.root, 'etc'));
    expect((await run(m, 'prepare')).code).toBe(0);
    expect(snapshotTree(join(m.root, 'etc'))).toEqual(tree);
    const reset = await runCli(['reset', '--root', m.root, '--state-dir', m.state]);
    expect(reset.code, reset.stderr).toBe(0);
    expect(read(m.root, '/etc/chrony/sources.d/ubuntu-ntp-pools.sources')).toBe(pools);
    expect(existsSync(join(m.root, 'etc/chrony/sources.d/machineadm.sources'))).toBe(false);
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

  // Ubuntu's layout from 25.04 on: its pools in a .sources file of the sourcedir machineadm writes into.
  const UBUNTU_CHRONY = 'confdir /etc/chrony/conf.d\nsourcedir /run/chrony-dhcp\nsourcedir /etc/chrony/sources.d\nkeyfile /etc/chrony/chrony.keys\n';
  const UBUNTU_POOLS = '# Use servers from the NTP Pool Project.\npool ntp.ubuntu.com        iburst maxsources 4\npool 0.ubuntu.pool.ntp.org iburst maxsources 1\n';
  it.each([
    ["Debian's chrony (a sourcedir under /etc)", { '/etc/chrony/chrony.conf': DEBIAN_CHRONY }, '/etc/chrony/sources.d/machineadm.sources', 'systemctl restart chrony'],
    ["Red Hat's chrony (a block in chrony.conf)", { '/etc/chrony.conf': REDHAT_CHRONY }, undefined, 'systemctl restart chronyd'],
    ["Ubuntu's chrony (its pools in a .sources file beside machineadm's)", { '/etc/chrony/chrony.conf': UBUNTU_CHRONY, '/etc/chrony/sources.d/ubuntu-ntp-pools.sources': UBUNTU_POOLS }, '/etc/chrony/sources.d/machineadm.sources', 'chronyc reload sources'],
    ['systemd-timesyncd', { '/etc/systemd/timesyncd.conf': '[Time]\nNTP=ntp.ubuntu.com\n' }, '/etc/systemd/timesyncd.conf.d/machineadm.conf', 'systemctl restart systemd-timesyncd'],
  ])('gives %s back what it had once spec.timeServers leaves the configuration, then leaves it out; reset leaves the machine as before', async (_layout, files, own, reload) => {
    const m = machine(files);
    const before = snapshotTree(join(m.root, 'etc'));
    expect((await run(m, 'prepare')).code).toBe(0);
    expect(snapshotTree(join(m.root, 'etc'))).not.toEqual(before);
    writeFileSync(m.config, dump({ apiVersion: 'machineadm.cluster.x-k8s.io/v1alpha1', kind: 'MachineConfig', spec: {} }));
    const plan = await run(m, 'plan');
    expect(plan.code, plan.stderr).toBe(0);
    if (own) expect(plan.stdout).toContain(`delete ${own}`);
    expect(plan.stdout).toContain(`run ${reload} (`);
    const out = await run(m, 'prepare');
    expect(out.code, out.stderr).toBe(0);
    for (const [path, content] of Object.entries(files)) expect(read(m.root, path)).toBe(content);
    if (own) expect(existsSync(join(m.root, own))).toBe(false);
    // Nothing is left: the file step is left out from now on, and the machine stays as it is.
    const tree = snapshotTree(join(m.root, 'etc'));
    const again = await run(m, 'plan');
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toMatch(/prepare\/time-servers\/file: .*\[not applicable: not asked for by the configuration\]/);
    expect((await run(m, 'prepare')).code).toBe(0);
    expect(snapshotTree(join(m.root, 'etc'))).toEqual(tree);
    const reset = await runCli(['reset', '--root', m.root, '--state-dir', m.state]);
    expect(reset.code, reset.stderr).toBe(0);
    expect(snapshotTree(join(m.root, 'etc'))).toEqual(before);
  });

  it("gives back only the lines it turned off once spec.timeServers leaves the configuration: the operator's own edits stay", async () => {
    const m = machine({ '/etc/chrony/chrony.conf': DEBIAN_CHRONY });
    expect((await run(m, 'prepare')).code).toBe(0);
    const edit = '#server ntp.old.example iburst\nmakestep 1.0 3\n';
    writeFileSync(join(m.root, 'etc/chrony/chrony.conf'), read(m.root, '/etc/chrony/chrony.conf') + edit);
    writeFileSync(m.config, dump({ apiVersion: 'machineadm.cluster.x-k8s.io/v1alpha1', kind: 'MachineConfig', spec: {} }));
    expect((await run(m, 'prepare')).code).toBe(0);
    expect(read(m.root, '/etc/chrony/chrony.conf')).toBe(DEBIAN_CHRONY + edit);
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
