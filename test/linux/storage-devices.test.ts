// spec.storage on real block devices: loop devices over sparse files, partitioned with sfdisk,
// formatted with mkfs, probed with blkid and mounted, by `machineadm prepare --root DIR --devices`
// (mount points and /etc/fstab under DIR). Runs that mount are made inside a private mount
// namespace (`unshare -m`), so nothing is left mounted on the host. Needs root and loop devices:
// skipped with the reason on a developer's machine without them, failed in CI.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFileSync, spawnSync } from 'node:child_process';
import { closeSync, mkdirSync, openSync, readFileSync, readSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { inCI, missingRequirement } from '../support/environment.ts';
import { scratchDir } from '../support/tmp.ts';

const REPO = join(import.meta.dirname, '..', '..');
const NODE = join(REPO, 'node_modules', '.bin', 'node');
const MACHINEADM = join(REPO, 'bin', 'machineadm.js');

function loopDevicesWork(): string | undefined {
  const missing = missingRequirement({ root: true, commands: ['losetup', 'sfdisk', 'partx', 'blkid', 'wipefs', 'mkfs.ext4', 'mkswap', 'unshare', 'findmnt'] });
  if (missing) return missing;
  const probe = spawnSync('losetup', ['-f'], { encoding: 'utf8' });
  if (probe.status === 0) return undefined;
  const reason = `no free loop device (losetup -f: ${probe.stderr.trim()})`;
  if (inCI) throw new Error(`CI is missing a test dependency: ${reason}`);
  console.warn(`skipping: ${reason}`);
  return reason;
}

const skip = loopDevicesWork();
// Labels of this run only: a label another device of the machine has would make LABEL= ambiguous.
const tag = (name: string) => `${name}-${process.pid.toString(36)}`;

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

// Each test runs machineadm several times (a few seconds each on a loaded two-core machine).
describe.skipIf(skip)('spec.storage on loop devices', { timeout: 240_000 }, () => {
  const dir = skip ? '' : scratchDir('machineadm-storage-');
  const attached: string[] = [];
  let n = 0;

  afterAll(() => {
    for (const device of attached) spawnSync('losetup', ['-d', device]);
  });

  /** A new loop device over a sparse file of this many MiB, with partition scanning. */
  function disk(mib: number): string {
    const file = join(dir, `disk-${++n}.img`);
    writeFileSync(file, '');
    execFileSync('truncate', ['-s', `${mib}M`, file]);
    const device = execFileSync('losetup', ['-f', '--show', '-P', file], { encoding: 'utf8' }).trim();
    attached.push(device);
    return device;
  }

  /** A scratch machine: its root, state directory and configuration file. */
  function machine(storage: Record<string, unknown>): { root: string; state: string; config: string } {
    const base = join(dir, `machine-${++n}`);
    const m = { root: join(base, 'root'), state: join(base, 'state'), config: join(base, 'machine.json') };
    mkdirSync(join(m.root, 'etc'), { recursive: true });
    writeFileSync(m.config, JSON.stringify({ apiVersion: 'machineadm.cluster.x-k8s.io/v1alpha1', kind: 'MachineConfig', spec: { storage } }));
    return m;
  }

  const machineadm = (m: { root: string; state: string; config: string }, command = 'prepare', extra: string[] = []): string[] => [NODE, MACHINEADM, command, '-c', m.config, '--root', m.root, '--state-dir', m.state, '--devices', ...extra];

  function run(argv: string[]): Run {
    const r = spawnSync(argv[0]!, argv.slice(1), { encoding: 'utf8', timeout: 120_000, env: { ...process.env, NODE_OPTIONS: '' } });
    return { code: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
  }

  /** Runs the commands one after the other inside one new private mount namespace. */
  function inMountNamespace(commands: string[][]): Run[] {
    const out = join(dir, `ns-${++n}`);
    mkdirSync(out);
    const quote = (a: string) => `'${a.replace(/'/g, `'\\''`)}'`;
    const script = commands.map((argv, i) => `${argv.map(quote).join(' ')} >${out}/${i}.out 2>${out}/${i}.err; echo $? >${out}/${i}.code`).join('\n');
    execFileSync('unshare', ['-m', '--propagation', 'private', 'sh', '-c', script], { timeout: 300_000, env: { ...process.env, NODE_OPTIONS: '' } });
    return commands.map((_, i) => ({ code: Number(readFileSync(`${out}/${i}.code`, 'utf8')), stdout: readFileSync(`${out}/${i}.out`, 'utf8'), stderr: readFileSync(`${out}/${i}.err`, 'utf8') }));
  }

  const blkid = (device: string, tag: string) => spawnSync('blkid', ['-p', '-s', tag, '-o', 'value', device], { encoding: 'utf8' }).stdout.trim();
  const table = (device: string) => spawnSync('sfdisk', ['--dump', device], { encoding: 'utf8' }).stdout;
  function firstMiB(device: string): Buffer {
    const fd = openSync(device, 'r');
    try {
      const bytes = Buffer.alloc(1024 * 1024);
      readSync(fd, bytes, 0, bytes.length, 0);
      return bytes;
    } finally {
      closeSync(fd);
    }
  }
  /** The disk as it is: its first MiB (tables, boot sector) and its table as sfdisk dumps it. */
  const snapshot = (device: string) => ({ head: firstMiB(device).toString('base64'), table: table(device) });

  beforeAll(() => {
    // The runs start the pinned Node from the checkout.
    expect(readFileSync(NODE).length).toBeGreaterThan(0);
  });

  it('partitions, formats and mounts a disk, writes fstab; a rerun changes nothing (same fstab bytes, same UUIDs, still mounted once)', () => {
    const device = disk(256);
    const m = machine({
      disks: [{ device, partitions: [{ sizePercent: 50 }, { type: 'swap' }] }],
      filesystems: [
        { device, partition: 1, format: 'ext4', label: tag('etcd') },
        { device, partition: 2, format: 'swap' },
      ],
      mounts: [{ device: `LABEL=${tag('etcd')}`, path: '/var/lib/etcd', format: 'ext4', options: ['defaults', 'noatime'], pass: 2 }],
    });
    const target = join(m.root, 'var/lib/etcd');
    const fstab = join(m.root, 'etc/fstab');
    // What an image left at the mount point is hidden by the mount: the plan says so.
    mkdirSync(target, { recursive: true });
    writeFileSync(join(target, 'left-by-the-image'), 'x\n');
    const [plan, first, afterFirst, fstabFirst, second, afterSecond, fstabSecond] = inMountNamespace([
      machineadm(m, 'plan'),
      machineadm(m),
      ['findmnt', '-J', '-o', 'SOURCE,FSTYPE,OPTIONS', '--mountpoint', target],
      ['cat', fstab],
      machineadm(m, 'prepare', ['-o', 'json']),
      ['findmnt', '-J', '-o', 'SOURCE,FSTYPE', '--mountpoint', target],
      ['cat', fstab],
    ]);
    expect(plan!.code, plan!.stderr).toBe(0);
    expect(plan!.stdout).toContain(`mount /var/lib/etcd (LABEL=${tag('etcd')} (ext4, defaults,noatime); hides the 1 entry now in /var/lib/etcd)`);
    expect(first!.code, first!.stderr + first!.stdout).toBe(0);
    const mounted = JSON.parse(afterFirst!.stdout) as { filesystems: { source: string; fstype: string; options: string }[] };
    expect(mounted.filesystems).toHaveLength(1);
    expect(mounted.filesystems[0]).toMatchObject({ source: `${device}p1`, fstype: 'ext4' });
    expect(mounted.filesystems[0]!.options).toContain('noatime');
    expect(fstabFirst!.stdout).toBe(
      `# BEGIN machineadm spec.storage.mounts (replaced on every run; edit the configuration instead)\nLABEL=${tag('etcd')} /var/lib/etcd ext4 defaults,noatime 0 2\n# END machineadm spec.storage.mounts\n`,
    );
    // The layout sfdisk wrote: GPT, half the disk (128 MiB = 262144 sectors) of Linux, the rest swap.
    const dump = table(device);
    expect(dump).toMatch(/label: gpt/);
    expect(dump).toMatch(new RegExp(`${device}p1 : start=\\s*2048, size=\\s*262144, type=0FC63DAF-8483-4772-8E79-3D69D8477DE4`));
    expect(dump).toMatch(new RegExp(`${device}p2 : .*type=0657FD6D-A4AB-43C4-84E5-0933C84B4F4F`));
    expect(blkid(`${device}p1`, 'TYPE')).toBe('ext4');
    expect(blkid(`${device}p1`, 'LABEL')).toBe(tag('etcd'));
    expect(blkid(`${device}p2`, 'TYPE')).toBe('swap');
    const uuids = [blkid(`${device}p1`, 'UUID'), blkid(`${device}p2`, 'UUID')];

    // The rerun, in the same namespace: every storage step finds the machine as asked.
    expect(second!.code, second!.stderr).toBe(0);
    const steps = second!.stdout.trim().split('\n').map((l) => JSON.parse(l) as { type: string; step?: string; result?: string; upToDate?: boolean }).filter((e) => e.type === 'step.finished');
    expect(steps.map((s) => [s.step, s.result])).toEqual([
      ['prepare/storage/partitions', 'skipped'],
      ['prepare/storage/filesystems', 'skipped'],
      ['prepare/storage/mounts', 'skipped'],
      ['prepare/storage/fstab', 'skipped'],
    ]);
    expect((JSON.parse(afterSecond!.stdout) as { filesystems: unknown[] }).filesystems).toHaveLength(1);
    expect(fstabSecond!.stdout).toBe(fstabFirst!.stdout);
    expect([blkid(`${device}p1`, 'UUID'), blkid(`${device}p2`, 'UUID')]).toEqual(uuids);
    // Nothing was mounted outside the namespace.
    expect(spawnSync('findmnt', ['--mountpoint', target]).status).toBe(1);
  });

  it('refuses two filesystems on one partition named two ways (the disk with partition: 1, and the partition), before formatting anything', () => {
    const device = disk(64);
    const first = machine({ disks: [{ device }], filesystems: [{ device, partition: 1, format: 'ext4', label: tag('one'), overwrite: true }] });
    expect(run(machineadm(first)).code).toBe(0);
    const before = snapshot(`${device}p1`);
    const both = machine({
      disks: [{ device }],
      filesystems: [
        { device, partition: 1, format: 'ext4', label: tag('one'), overwrite: true },
        { device: `${device}p1`, format: 'ext4', label: tag('two'), overwrite: true },
      ],
    });
    for (const command of ['prepare', 'plan', 'prepare']) {
      const out = run(machineadm(both, command));
      expect(out.code, `${command}: ${out.stderr}`).toBe(2);
      expect(out.stderr).toContain(`spec.storage.filesystems[1].device: ${device}p1 is also the device of spec.storage.filesystems[0]: each would format it over the other at every run`);
      expect(snapshot(`${device}p1`)).toEqual(before);
    }
    expect(blkid(`${device}p1`, 'LABEL')).toBe(tag('one'));
  });

  it('keeps an existing filesystem without overwrite (refused when it is not the one asked for), and reformats it with overwrite', () => {
    const device = disk(64);
    execFileSync('mkfs.ext4', ['-q', '-L', 'old', device]);
    const uuid = blkid(device, 'UUID');
    const before = snapshot(device);

    // Asked for what it holds: kept, also with overwrite (overwrite never reformats a match).
    for (const overwrite of [false, true]) {
      const same = machine({ filesystems: [{ device, format: 'ext4', label: 'old', overwrite }] });
      const out = run(machineadm(same));
      expect(out.code, out.stderr).toBe(0);
      expect(out.stdout).toMatch(/prepare\/storage\/filesystems skipped .*already done/);
      expect(blkid(device, 'UUID')).toBe(uuid);
    }

    // Asked for another label or format: refused, the device untouched.
    const other = machine({ filesystems: [{ device, format: 'ext4', label: 'data' }] });
    for (const command of ['prepare', 'plan']) {
      const out = run(machineadm(other, command));
      expect(out.code, `${command}: ${out.stderr}`).toBe(2);
      expect(out.stderr).toContain(`spec.storage.filesystems[0].device: ${device} holds an ext4 filesystem labelled "old", not the ext4 labelled "data" asked for; machineadm never reformats without overwrite`);
      expect(snapshot(device)).toEqual(before);
    }

    const overwrite = machine({ filesystems: [{ device, format: 'ext4', label: 'data', overwrite: true }] });
    const plan = run(machineadm(overwrite, 'plan'));
    expect(plan.stdout).toContain(`reformat ${device} (ext4 labelled "data", replacing an ext4 filesystem labelled "old" (overwrite))`);
    const out = run(machineadm(overwrite));
    expect(out.code, out.stderr).toBe(0);
    expect(blkid(device, 'LABEL')).toBe('data');
    expect(blkid(device, 'UUID')).not.toBe(uuid);
    // And converges: the rerun keeps the filesystem it made.
    const newUuid = blkid(device, 'UUID');
    expect(run(machineadm(overwrite)).code).toBe(0);
    expect(blkid(device, 'UUID')).toBe(newUuid);
  });

  it.each([
    ['a partition table of another layout', (d: string) => execFileSync('sfdisk', ['-q', d], { input: 'label: gpt\nsize=10MiB, type=L\n' }), /spec\.storage\.disks\[0\]\.device: .*: it has 1 partition, not 2; machineadm never repartitions a disk that holds something without overwrite/],
    ['an MBR table where GPT is asked', (d: string) => execFileSync('sfdisk', ['-q', d], { input: 'label: dos\nsize=32MiB, type=83\ntype=82\n' }), /it has an MBR partition table, not GPT/],
    ['a filesystem on the whole disk', (d: string) => execFileSync('mkfs.ext4', ['-q', '-L', 'whole', d]), /it holds an ext4 filesystem labelled "whole"/],
  ])('refuses a disk that holds %s without overwrite: init and plan exit 2, the disk byte for byte as it was', (_what, prepare, message) => {
    const device = disk(64);
    prepare(device);
    spawnSync('partx', ['-u', device]);
    const before = snapshot(device);
    const m = machine({ disks: [{ device, partitions: [{ sizePercent: 50 }, { type: 'swap' }] }], filesystems: [{ device, partition: 1, format: 'ext4' }] });
    for (const command of ['init', 'plan']) {
      const out = run(machineadm(m, command));
      expect(out.code, `${command}: ${out.stderr}`).toBe(2);
      expect(out.stderr).toMatch(message);
      expect(out.stderr).toContain('hint: set overwrite: true to repartition it');
      expect(snapshot(device)).toEqual(before);
    }
  });

  it('repartitions a disk of another layout with overwrite, and the old filesystem does not show through', () => {
    const device = disk(64);
    execFileSync('sfdisk', ['-q', device], { input: 'label: gpt\nsize=32MiB, type=L\ntype=L\n' });
    spawnSync('partx', ['-u', device]);
    execFileSync('mkfs.ext4', ['-q', '-L', 'old', `${device}p1`]);
    const m = machine({ disks: [{ device, partitions: [{ sizePercent: 50 }, { type: 'swap' }], overwrite: true }], filesystems: [{ device, partition: 1, format: 'ext4', label: 'new' }] });
    const plan = run(machineadm(m, 'plan'));
    expect(plan.stdout).toContain(`repartition ${device} (GPT, 1: 50% linux (32 MiB), 2: rest swap (30 MiB) (overwrite: partition 2 has type 0FC63DAF-8483-4772-8E79-3D69D8477DE4, not swap (0657FD6D-A4AB-43C4-84E5-0933C84B4F4F)))`);
    const out = run(machineadm(m));
    expect(out.code, out.stderr).toBe(0);
    expect(table(device)).toMatch(/type=0657FD6D-A4AB-43C4-84E5-0933C84B4F4F/);
    expect(blkid(`${device}p1`, 'LABEL')).toBe('new');
  });

  it('refuses a mount path that has another filesystem mounted on it, and mounts nothing', () => {
    const device = disk(64);
    execFileSync('mkfs.ext4', ['-q', '-L', 'mine', device]);
    const m = machine({ mounts: [{ device, path: '/data' }] });
    const target = join(m.root, 'data');
    mkdirSync(target, { recursive: true });
    const [mountTmpfs, refused, after] = inMountNamespace([
      ['mount', '-t', 'tmpfs', 'other', target],
      machineadm(m, 'init'),
      ['findmnt', '-n', '-o', 'SOURCE', '--mountpoint', target],
    ]);
    expect(mountTmpfs!.code).toBe(0);
    expect(refused!.code).toBe(2);
    expect(refused!.stderr).toContain('spec.storage.mounts[0].path: /data has other (tmpfs) mounted on it already');
    expect(after!.stdout.trim()).toBe('other');
  });

  it('refuses to mount by a label that two filesystems would carry, before formatting anything', () => {
    const taken = disk(64);
    execFileSync('mkfs.ext4', ['-q', '-L', tag('twice'), taken]);
    const device = disk(64);
    const before = snapshot(device);
    const m = machine({ filesystems: [{ device, format: 'ext4', label: tag('twice') }], mounts: [{ device: `LABEL=${tag('twice')}`, path: '/data' }] });
    const out = run(machineadm(m, 'init'));
    expect(out.code, out.stderr).toBe(2);
    expect(out.stderr).toContain(`spec.storage.mounts[0].device: LABEL=${tag('twice')} would name 2 filesystems on this machine (${[taken, device].sort().join(', ')}): the mount would take either`);
    expect(snapshot(device)).toEqual(before);
  });

  it('refuses to repartition a disk whose partition is mounted, even with overwrite', () => {
    const device = disk(64);
    execFileSync('sfdisk', ['-q', device], { input: 'label: gpt\nsize=32MiB, type=L\ntype=L\n' });
    spawnSync('partx', ['-u', device]);
    execFileSync('mkfs.ext4', ['-q', `${device}p1`]);
    const before = snapshot(device);
    const m = machine({ disks: [{ device, overwrite: true }] });
    const elsewhere = join(dir, `mounted-${++n}`);
    mkdirSync(elsewhere);
    const [mounted, refused] = inMountNamespace([['mount', `${device}p1`, elsewhere], machineadm(m, 'init')]);
    expect(mounted!.code).toBe(0);
    expect(refused!.code, refused!.stderr).toBe(2);
    expect(refused!.stderr).toContain(`spec.storage.disks[0].device: ${device} is in use: ${device}p1 is mounted on ${elsewhere}`);
    expect(snapshot(device)).toEqual(before);
  });

  it('refuses to format a whole disk one of whose partitions is mounted, even with overwrite: plan and init exit 2, nothing changed', () => {
    const device = disk(64);
    execFileSync('sfdisk', ['-q', device], { input: 'label: gpt\nsize=32MiB, type=L\ntype=L\n' });
    spawnSync('partx', ['-u', device]);
    execFileSync('mkfs.ext4', ['-q', `${device}p1`]);
    // Formatted first, to show that the refusal comes before any change of the run.
    const other = disk(64);
    const before = { device: snapshot(device), other: snapshot(other) };
    const m = machine({
      filesystems: [
        { device: other, format: 'ext4', label: tag('first') },
        { device, format: 'ext4', label: tag('whole'), overwrite: true },
      ],
    });
    const elsewhere = join(dir, `mounted-${++n}`);
    mkdirSync(elsewhere);
    const [mounted, plan, init] = inMountNamespace([['mount', `${device}p1`, elsewhere], machineadm(m, 'plan'), machineadm(m, 'init')]);
    expect(mounted!.code).toBe(0);
    for (const [command, out] of [['plan', plan!], ['init', init!]] as const) {
      expect(out.code, `${command}: ${out.stdout}${out.stderr}`).toBe(2);
      expect(out.stdout + out.stderr).toContain(`spec.storage.filesystems[1].device: ${device} is in use: ${device}p1 is mounted on ${elsewhere}`);
    }
    expect({ device: snapshot(device), other: snapshot(other) }).toEqual(before);
  });

  it('knows a disk by any of its names: a partition of the disk the run partitions is formatted on the new table, and a filesystem on the whole of it is refused before any change', () => {
    const named = disk(64);
    const whole = disk(64);
    const before = snapshot(whole);
    // Another name for each disk, as /dev/disk/by-id gives one: links in a tmpfs of the namespace.
    const link = (device: string) => `/dev/shm/${tag(device.split('/').pop()!)}`;
    const partitioned = machine({ disks: [{ device: link(named) }], filesystems: [{ device: named, partition: 1, format: 'ext4', label: tag('named') }] });
    // Without the second name, the configuration's own rules refuse this (a filesystem on a disk the run partitions).
    const wiped = machine({ disks: [{ device: whole, overwrite: true }], filesystems: [{ device: link(whole), format: 'ext4', overwrite: true }] });
    const [links, first, second, plan, init] = inMountNamespace([
      ['sh', '-c', `mount -t tmpfs links /dev/shm && ln -s '${named}' '${link(named)}' && ln -s '${whole}' '${link(whole)}'`],
      machineadm(partitioned),
      machineadm(partitioned),
      machineadm(wiped, 'plan'),
      machineadm(wiped, 'init'),
    ]);
    expect(links!.code, links!.stderr).toBe(0);
    expect(first!.code, first!.stderr).toBe(0);
    expect(blkid(`${named}p1`, 'LABEL')).toBe(tag('named'));
    expect(second!.code, second!.stderr).toBe(0);
    expect(second!.stdout).toMatch(/prepare\/storage\/filesystems skipped .*already done/);
    for (const [command, out] of [['plan', plan!], ['init', init!]] as const) {
      expect(out.code, `${command}: ${out.stdout}${out.stderr}`).toBe(2);
      expect(out.stdout + out.stderr).toContain(`spec.storage.filesystems[0].partition: ${link(whole)} (${whole}) is the disk spec.storage.disks[0] partitions: a filesystem on the whole disk would destroy its partition table`);
    }
    expect(snapshot(whole)).toEqual(before);
  });

  it('gives a disk whose table alone was lost its table back, and keeps the filesystem still on it (nothing is wiped without overwrite)', () => {
    const device = disk(64);
    execFileSync('sfdisk', ['-q', device], { input: 'label: gpt\nsize=32MiB, type=L\ntype=L\n' });
    spawnSync('partx', ['-u', device]);
    execFileSync('mkfs.ext4', ['-q', '-L', tag('kept'), `${device}p1`]);
    const uuid = blkid(`${device}p1`, 'UUID');
    execFileSync('wipefs', ['--all', '--quiet', device]);
    spawnSync('partx', ['-d', device]);
    expect(spawnSync('blkid', ['-p', device]).status).toBe(2);
    const m = machine({ disks: [{ device, partitions: [{ sizePercent: 50 }, { type: 'linux' }] }], filesystems: [{ device, partition: 1, format: 'ext4', label: tag('kept') }] });
    const plan = run(machineadm(m, 'plan'));
    expect(plan.stdout).toContain(`format ${device}p1 (ext4 labelled "${tag('kept')}", on a new partition, unless a filesystem left there is the one asked for)`);
    const out = run(machineadm(m));
    expect(out.code, out.stderr).toBe(0);
    expect(out.stdout).toMatch(/prepare\/storage\/partitions success/);
    expect(out.stdout).toMatch(/prepare\/storage\/filesystems skipped .*already done/);
    expect(blkid(`${device}p1`, 'UUID')).toBe(uuid);
  });

  it('reset leaves mounted another filesystem that was mounted where machineadm had mounted its own', () => {
    const device = disk(64);
    const m = machine({
      filesystems: [{ device, format: 'ext4', label: tag('swapped') }],
      mounts: [{ device: `LABEL=${tag('swapped')}`, path: '/srv/swapped', format: 'ext4' }],
    });
    const target = join(m.root, 'srv/swapped');
    const [init, unmounted, other, plan, reset, after] = inMountNamespace([
      machineadm(m),
      ['umount', target],
      ['mount', '-t', 'tmpfs', '-o', 'size=1m', 'operator-tmpfs', target],
      [NODE, MACHINEADM, 'reset', '--root', m.root, '--state-dir', m.state, '--devices', '--dry-run'],
      [NODE, MACHINEADM, 'reset', '--root', m.root, '--state-dir', m.state, '--devices'],
      ['findmnt', '-n', '-o', 'SOURCE', '--mountpoint', target],
    ]);
    expect(init!.code, init!.stderr + init!.stdout).toBe(0);
    expect(unmounted!.code).toBe(0);
    expect(other!.code, other!.stderr).toBe(0);
    expect(plan!.stdout).not.toContain('unmount /srv/swapped');
    expect(plan!.stdout).toContain(`keep /srv/swapped (/srv/swapped has operator-tmpfs (tmpfs) mounted on it, not LABEL=${tag('swapped')}: left mounted)`);
    expect(reset!.code, reset!.stdout + reset!.stderr).toBe(0);
    expect(reset!.stdout + reset!.stderr).toContain(`/srv/swapped has operator-tmpfs (tmpfs) mounted on it, not LABEL=${tag('swapped')}: left mounted`);
    expect(after!.stdout.trim()).toBe('operator-tmpfs');
  });

  it('reset unmounts a mount made inside another one and then the outer one, and removes each mount point once, without a warning', () => {
    const outer = disk(64);
    const inner = disk(64);
    const m = machine({
      filesystems: [
        { device: outer, format: 'ext4', label: tag('outer') },
        { device: inner, format: 'ext4', label: tag('inner') },
      ],
      mounts: [
        { device: `LABEL=${tag('inner')}`, path: '/srv/nested/etcd', format: 'ext4' },
        { device: `LABEL=${tag('outer')}`, path: '/srv/nested', format: 'ext4' },
      ],
    });
    const reset = (extra: string[] = []) => [NODE, MACHINEADM, 'reset', '--root', m.root, '--state-dir', m.state, '--devices', ...extra];
    const [init, plan, done, left] = inMountNamespace([machineadm(m), reset(['--dry-run']), reset(), ['findmnt', '-n', '-o', 'TARGET', '--list']]);
    expect(init!.code, init!.stderr + init!.stdout).toBe(0);
    expect(plan!.code, plan!.stderr).toBe(0);
    for (const folder of ['/srv/nested/etcd/', '/srv/nested/', '/srv/']) expect(plan!.stdout.split(`delete ${folder} (mount point made by machineadm, when empty)`)).toHaveLength(2);
    expect(done!.code, done!.stdout + done!.stderr).toBe(0);
    expect(done!.stdout + done!.stderr).not.toContain('left in place');
    expect(done!.stdout).toMatch(/machineadm reset: success/);
    expect(left!.stdout).not.toContain(join(m.root, 'srv'));
    expect(spawnSync('ls', ['-A', m.root], { encoding: 'utf8' }).stdout).not.toMatch(/^srv$/m);
  });

  it('reset unmounts two mounts side by side under a parent machineadm made, and removes the parent after both, without a warning', () => {
    const a = disk(64);
    const b = disk(64);
    const m = machine({
      filesystems: [
        { device: a, format: 'ext4', label: tag('side-a') },
        { device: b, format: 'ext4', label: tag('side-b') },
      ],
      mounts: [
        { device: `LABEL=${tag('side-a')}`, path: '/srv/a', format: 'ext4' },
        { device: `LABEL=${tag('side-b')}`, path: '/srv/b', format: 'ext4' },
      ],
    });
    const [init, done, left] = inMountNamespace([machineadm(m), [NODE, MACHINEADM, 'reset', '--root', m.root, '--state-dir', m.state, '--devices'], ['findmnt', '-n', '-o', 'TARGET', '--list']]);
    expect(init!.code, init!.stderr + init!.stdout).toBe(0);
    expect(done!.code, done!.stdout + done!.stderr).toBe(0);
    expect(done!.stdout + done!.stderr).not.toContain('left in place');
    expect(done!.stdout).toMatch(/machineadm reset: success/);
    expect(left!.stdout).not.toContain(join(m.root, 'srv'));
    expect(spawnSync('ls', ['-A', m.root], { encoding: 'utf8' }).stdout).not.toMatch(/^srv$/m);
  });

  it('reset keeps a mount point machineadm made when something else is in it after reset, and names it in a warning', () => {
    const device = disk(64);
    const m = machine({
      filesystems: [{ device, format: 'ext4', label: tag('kept-mp') }],
      mounts: [{ device: `LABEL=${tag('kept-mp')}`, path: '/srv/kept/data', format: 'ext4' }],
    });
    const [init, put, done] = inMountNamespace([
      machineadm(m),
      ['touch', join(m.root, 'srv/kept/operator-file')],
      [NODE, MACHINEADM, 'reset', '--root', m.root, '--state-dir', m.state, '--devices'],
    ]);
    expect(init!.code, init!.stderr + init!.stdout).toBe(0);
    expect(put!.code, put!.stderr).toBe(0);
    expect(done!.code, done!.stdout + done!.stderr).toBe(0);
    // Its parent stays too, since it is not empty: both named, the emptied data folder not.
    expect(done!.stdout + done!.stderr).toContain('mount points left in place, something else is in them now: /srv/kept, /srv\n');
    expect(spawnSync('ls', ['-A', join(m.root, 'srv/kept')], { encoding: 'utf8' }).stdout).toBe('operator-file\n');
    expect(spawnSync('ls', ['-A', join(m.root, 'srv')], { encoding: 'utf8' }).stdout).toBe('kept\n');
  });

  it('reset unmounts what machineadm mounted, gives fstab back and removes the mount point it made; the partitions and filesystems stay; a busy mount fails reset (exit 1) until --force detaches it', () => {
    const device = disk(64);
    const m = machine({
      disks: [{ device, partitions: [{ type: 'linux' }] }],
      filesystems: [{ device, partition: 1, format: 'ext4', label: tag('reset') }],
      mounts: [{ device: `LABEL=${tag('reset')}`, path: '/srv/data/etcd', format: 'ext4' }],
    });
    // The image's fstab: given back byte for byte.
    mkdirSync(join(m.root, 'srv'));
    writeFileSync(join(m.root, 'etc/fstab'), 'proc /proc proc defaults 0 0\n');
    const target = join(m.root, 'srv/data/etcd');
    const reset = (extra: string[] = []) => [NODE, MACHINEADM, 'reset', '--root', m.root, '--state-dir', m.state, '--devices', ...extra];
    const [init, plan, holder, busy, stillMounted, forced, afterReset, fstab, again] = inMountNamespace([
      machineadm(m),
      reset(['--dry-run']),
      // A process whose working directory is in the mount keeps it busy.
      ['sh', '-c', `cd '${target}' && (sleep 20 </dev/null >/dev/null 2>&1 &)`],
      reset(),
      ['findmnt', '-n', '-o', 'SOURCE', '--mountpoint', target],
      reset(['--force']),
      ['findmnt', '-n', '-o', 'SOURCE', '--mountpoint', target],
      ['cat', join(m.root, 'etc/fstab')],
      reset(),
    ]);
    expect(init!.code, init!.stderr + init!.stdout).toBe(0);
    expect(plan!.code, plan!.stderr).toBe(0);
    expect(plan!.stdout).toContain(`unmount /srv/data/etcd (LABEL=${tag('reset')}, mounted by machineadm)`);
    expect(plan!.stdout).toContain('delete /srv/data/etcd/ (mount point made by machineadm, when empty)');
    expect(plan!.stdout).toContain('delete /srv/data/ (mount point made by machineadm, when empty)');
    expect(plan!.stdout).toContain('restore /etc/fstab');
    expect(plan!.stdout).toMatch(/reset\/storage\/partitions: .*\[skipped: not undone: partition tables machineadm made are kept with the data on them/);
    expect(plan!.stdout).toContain(`keep ${device} (partitioned by machineadm: `);
    expect(plan!.stdout).toContain(`keep ${device}p1 (ext4 made by machineadm (UUID ${blkid(`${device}p1`, 'UUID')}))`);
    expect(holder!.code).toBe(0);
    expect(busy!.code, busy!.stdout + busy!.stderr).toBe(1);
    expect(busy!.stdout + busy!.stderr).toContain('/srv/data/etcd: umount exited with code 32');
    expect(busy!.stderr).toContain('run reset --force to detach it lazily');
    expect(stillMounted!.stdout.trim()).toBe(`${device}p1`);
    expect(forced!.code, forced!.stdout + forced!.stderr).toBe(0);
    expect(forced!.stdout).toContain('/srv/data/etcd: busy, detached lazily (--force)');
    expect(afterReset!.code).toBe(1);
    expect(fstab!.stdout).toBe('proc /proc proc defaults 0 0\n');
    expect(again!.stderr).toMatch(/^nothing to reset: no state directory at /);
    // The mount points machineadm made are gone, the image's /srv stays; the disk keeps its filesystem.
    expect(spawnSync('ls', ['-A', join(m.root, 'srv')], { encoding: 'utf8' }).stdout).toBe('');
    expect(blkid(`${device}p1`, 'TYPE')).toBe('ext4');
  });
});
