// spec.storage without devices: the layout arithmetic and sfdisk script, the fstab block, the
// schema's rules, and the plan under a scratch --root (devices shown and skipped, fstab written
// under the root). The device work itself is in storage-devices.test.ts, on loop devices.
import { describe, expect, it } from 'vitest';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseWith, formatPath } from '../../src/config/schema/dsl.ts';
import { machineConfigSchema, type DiskSpec, type MountSpec } from '../../src/config/schema/index.ts';
import { parseSfdiskJson, partitionPath, planLayout, sfdiskScript, tableDifference, type Layout } from '../../src/linux/storage/layout.ts';
import { mountOrder, outsideEntries, renderFstab } from '../../src/linux/storage/fstab.ts';
import { mkfsArgv } from '../../src/linux/storage/plan.ts';
import { parseMountInfo } from '../../src/host/index.ts';
import { runCli } from '../support/cli.ts';
import { scratchDir } from '../support/tmp.ts';

const MiB = 1024 * 1024;
const disk = (partitions: DiskSpec['partitions'], table: DiskSpec['table'] = 'gpt'): DiskSpec => ({ device: '/dev/sdb', table, partitions, overwrite: false });
const mount = (m: Partial<MountSpec> & { device: string; path: string }): MountSpec => ({ format: 'auto', options: ['defaults'], ...m });

describe('partition layouts', () => {
  it.each([
    ['half and the rest, GPT, 64 MiB', disk([{ sizePercent: 50, type: 'linux' }, { type: 'swap' }]), 64, [[32, 32], [undefined, 30]]],
    ['half and the rest, MBR, 64 MiB (no backup table at the end)', disk([{ sizePercent: 50, type: 'linux' }, { type: 'swap' }], 'mbr'), 64, [[32, 32], [undefined, 31]]],
    ['one partition over the whole disk', disk([{ type: 'linux' }]), 1024, [[undefined, 1022]]],
    ['shares that add up to 100: the last takes the rest', disk([{ sizePercent: 25, type: 'linux' }, { sizePercent: 75, type: 'lvm' }]), 1000, [[250, 250], [undefined, 748]]],
    ['shares under 100 leave the end free', disk([{ sizePercent: 10, type: 'linux' }, { sizePercent: 10, type: 'linux' }]), 1000, [[100, 100], [100, 100]]],
  ])('%s', (_what, spec, mib, want) => {
    const layout = planLayout(spec, mib * MiB) as Layout;
    expect(layout.partitions.map((p) => [p.sizeMiB, p.bytes / MiB])).toEqual(want);
  });

  it('says when a disk is too small for the layout', () => {
    expect(planLayout(disk([{ sizePercent: 1, type: 'linux' }, { type: 'linux' }]), 50 * MiB)).toEqual({ problem: 'partition 1 (1%) would be smaller than 1 MiB on this 50 MiB disk' });
    expect(planLayout(disk([{ type: 'linux' }]), 1 * MiB)).toEqual({ problem: 'no room is left for partition 1 on this 1 MiB disk' });
  });

  it('writes the sfdisk script with sizes in MiB and sfdisk\'s type shortcuts, the rest without a size', () => {
    const layout = planLayout(disk([{ sizePercent: 50, type: 'linux' }, { sizePercent: 25, type: 'lvm' }, { type: 'swap' }]), 400 * MiB) as Layout;
    expect(sfdiskScript(layout)).toBe('label: gpt\nsize=200MiB, type=L\nsize=100MiB, type=V\ntype=S\n');
    expect(sfdiskScript(planLayout(disk([{ type: 'linux' }], 'mbr'), 400 * MiB) as Layout)).toBe('label: dos\ntype=L\n');
  });

  it.each([
    ['/dev/sdb', '/dev/sdb1'],
    ['/dev/vdc', '/dev/vdc1'],
    ['/dev/nvme0n1', '/dev/nvme0n1p1'],
    ['/dev/loop3', '/dev/loop3p1'],
    ['/dev/mmcblk0', '/dev/mmcblk0p1'],
  ])('names partition 1 of %s %s', (d, p) => expect(partitionPath(d, 1)).toBe(p));

  const existing = (label: string, parts: [number, string][]) =>
    parseSfdiskJson(JSON.stringify({ partitiontable: { label, sectorsize: 512, partitions: parts.map(([mib, type], i) => ({ node: `/dev/sdb${i + 1}`, start: 2048, size: (mib * MiB) / 512, type })) } }))!;
  const wanted = planLayout(disk([{ sizePercent: 50, type: 'linux' }, { type: 'swap' }]), 1000 * MiB) as Layout;

  it.each([
    ['the same layout', existing('gpt', [[500, '0FC63DAF-8483-4772-8E79-3D69D8477DE4'], [498, '0657fd6d-a4ab-43c4-84e5-0933c84b4f4f']]), undefined],
    ['the same layout, sizes rounded by another tool (within 1% of the disk)', existing('gpt', [[495, '0FC63DAF-8483-4772-8E79-3D69D8477DE4'], [503, '0657FD6D-A4AB-43C4-84E5-0933C84B4F4F']]), undefined],
    ['another table type', existing('dos', [[500, '83'], [498, '82']]), 'it has an MBR partition table, not GPT'],
    ['another number of partitions', existing('gpt', [[998, '0FC63DAF-8483-4772-8E79-3D69D8477DE4']]), 'it has 1 partition, not 2'],
    ['another type', existing('gpt', [[500, '0FC63DAF-8483-4772-8E79-3D69D8477DE4'], [498, 'E6D6D379-F507-44C2-A23C-238F2A3DF928']]), 'partition 2 has type E6D6D379-F507-44C2-A23C-238F2A3DF928, not swap (0657FD6D-A4AB-43C4-84E5-0933C84B4F4F)'],
    ['another size', existing('gpt', [[400, '0FC63DAF-8483-4772-8E79-3D69D8477DE4'], [598, '0657FD6D-A4AB-43C4-84E5-0933C84B4F4F']]), 'partition 1 is 400 MiB, not 500 MiB'],
  ])('compares a table that has %s', (_what, table, difference) => {
    expect(tableDifference(table, wanted, 1000 * MiB)).toBe(difference);
  });

  it('makes filesystems quietly, forced past the tools\' prompts, with the label and options before the device', () => {
    expect(mkfsArgv({ device: '/dev/sdb', partition: 1, format: 'ext4', label: 'etcd', options: ['-m', '1'], overwrite: false }, '/dev/sdb1')).toEqual(['mkfs.ext4', '-F', '-q', '-L', 'etcd', '-m', '1', '/dev/sdb1']);
    expect(mkfsArgv({ device: '/dev/sdc1', format: 'xfs', overwrite: false }, '/dev/sdc1')).toEqual(['mkfs.xfs', '-f', '-q', '/dev/sdc1']);
    expect(mkfsArgv({ device: '/dev/sdc1', format: 'vfat', label: 'EFI', overwrite: false }, '/dev/sdc1')).toEqual(['mkfs.vfat', '-n', 'EFI', '/dev/sdc1']);
    expect(mkfsArgv({ device: '/dev/sdc2', format: 'swap', overwrite: false }, '/dev/sdc2')).toEqual(['mkswap', '-f', '/dev/sdc2']);
  });
});

describe('the fstab block', () => {
  const etcd = mount({ device: 'LABEL=etcd', path: '/var/lib/etcd', format: 'ext4', pass: 2 });
  const image = '# /etc/fstab: static file system information.\nUUID=1234 / ext4 errors=remount-ro 0 1\n';

  it('is added at the end of the file, and every other line is kept byte for byte', () => {
    expect(renderFstab(image, [etcd])).toBe(`${image}# BEGIN machineadm spec.storage.mounts (replaced on every run; edit the configuration instead)\nLABEL=etcd /var/lib/etcd ext4 defaults 0 2\n# END machineadm spec.storage.mounts\n`);
  });

  it('is replaced in place on the next run, and taken out when no mount is left', () => {
    const first = renderFstab(image, [etcd]) + '/dev/sdc1 /srv xfs defaults 0 0\n';
    const second = renderFstab(first, [mount({ device: '/dev/sdd1', path: '/var/lib/containerd', options: ['defaults', 'noatime'] })]);
    expect(second).toBe(`${image}# BEGIN machineadm spec.storage.mounts (replaced on every run; edit the configuration instead)\n/dev/sdd1 /var/lib/containerd auto defaults,noatime 0 0\n# END machineadm spec.storage.mounts\n/dev/sdc1 /srv xfs defaults 0 0\n`);
    expect(renderFstab(second, [mount({ device: '/dev/sdd1', path: '/var/lib/containerd', options: ['defaults', 'noatime'] })])).toBe(second);
    expect(renderFstab(second, [])).toBe(`${image}/dev/sdc1 /srv xfs defaults 0 0\n`);
    expect(renderFstab('', [])).toBe('');
  });

  it('lists a parent before what is mounted inside it', () => {
    const order = mountOrder([mount({ device: 'LABEL=b', path: '/var/lib/etcd/data' }), mount({ device: 'LABEL=a', path: '/var/lib/etcd' }), mount({ device: 'LABEL=c', path: '/srv' })], (m) => m.path);
    expect(order.map((m) => m.path)).toEqual(['/srv', '/var/lib/etcd', '/var/lib/etcd/data']);
  });

  it('finds the lines outside the block that mount the same path, with their line numbers', () => {
    const text = renderFstab(image, [etcd]) + '/dev/sdz1   /var/lib/etcd/  ext4 defaults 0 2\n# /dev/sdy1 /var/lib/etcd ext4\n';
    expect(outsideEntries(text, ['/var/lib/etcd'])).toEqual([{ line: 6, path: '/var/lib/etcd', text: '/dev/sdz1   /var/lib/etcd/  ext4 defaults 0 2' }]);
    expect(outsideEntries(renderFstab(image, [etcd]), ['/var/lib/etcd'])).toEqual([]);
  });
});

describe('the mount table', () => {
  it('reads /proc/self/mountinfo, octal escapes decoded', () => {
    const text = '26 1 254:0 / / rw,relatime - ext4 /dev/vda rw\n88 26 259:1 / /mnt/my\\040disk rw shared:5 - ext4 /dev/loop0p1 rw\n';
    expect(parseMountInfo(text)).toEqual([
      { target: '/', source: '/dev/vda', fstype: 'ext4', major: 254, minor: 0 },
      { target: '/mnt/my disk', source: '/dev/loop0p1', fstype: 'ext4', major: 259, minor: 1 },
    ]);
  });
});

describe('spec.storage in the schema', () => {
  const issuesOf = (storage: unknown) => {
    const { issues } = parseWith(machineConfigSchema, { apiVersion: 'machineadm.cluster.x-k8s.io/v1alpha1', kind: 'MachineConfig', spec: { storage } });
    return issues.map((i) => `${formatPath(i.path)}: ${i.message}`);
  };

  it('takes the fields with their defaults', () => {
    const { value } = parseWith(machineConfigSchema, {
      apiVersion: 'machineadm.cluster.x-k8s.io/v1alpha1',
      kind: 'MachineConfig',
      spec: { storage: { disks: [{ device: '/dev/sdb' }], filesystems: [{ device: '/dev/sdb', partition: 1, format: 'ext4' }], mounts: [{ device: '/dev/sdb1', path: '/var/lib/etcd' }] } },
    });
    expect(value?.spec.storage).toEqual({
      disks: [{ device: '/dev/sdb', table: 'gpt', partitions: [{ type: 'linux' }], overwrite: false }],
      filesystems: [{ device: '/dev/sdb', partition: 1, format: 'ext4', overwrite: false }],
      mounts: [{ device: '/dev/sdb1', path: '/var/lib/etcd', format: 'auto', options: ['defaults'] }],
    });
  });

  it.each([
    ['a device outside /dev', { disks: [{ device: 'sdb' }] }, 'spec.storage.disks[0].device: "sdb" is not valid'],
    ['a size on every partition but the last missing', { disks: [{ device: '/dev/sdb', partitions: [{ type: 'swap' }, { sizePercent: 50 }] }] }, 'spec.storage.disks[0].partitions[0].sizePercent: is required on every partition but the last'],
    ['shares over 100%', { disks: [{ device: '/dev/sdb', partitions: [{ sizePercent: 60 }, { sizePercent: 50 }] }] }, "spec.storage.disks[0].partitions: the partitions' sizePercent add up to 110"],
    ['no room left for the rest', { disks: [{ device: '/dev/sdb', partitions: [{ sizePercent: 100 }, {}] }] }, 'spec.storage.disks[0].partitions: the last partition takes the rest, but the others take the whole disk'],
    ['five MBR partitions', { disks: [{ device: '/dev/sdb', table: 'mbr', partitions: [{ sizePercent: 10 }, { sizePercent: 10 }, { sizePercent: 10 }, { sizePercent: 10 }, {}] }] }, 'spec.storage.disks[0].partitions: an MBR table holds at most 4 partitions, not 5'],
    ['one disk twice', { disks: [{ device: '/dev/sdb' }, { device: '/dev/sdb' }] }, 'spec.storage.disks[1].device: "/dev/sdb" is also spec.storage.disks[0].device'],
    ['a label too long for vfat', { filesystems: [{ device: '/dev/sdb1', format: 'vfat', label: 'TWELVE-CHARS' }] }, 'spec.storage.filesystems[0].label: "TWELVE-CHARS" is longer than the 11 bytes a vfat label holds'],
    ['a filesystem over a disk that is partitioned', { disks: [{ device: '/dev/sdb' }], filesystems: [{ device: '/dev/sdb', format: 'ext4' }] }, 'spec.storage.filesystems[0].partition: /dev/sdb is partitioned by spec.storage.disks: a filesystem on the whole disk would destroy its partition table'],
    ['a partition the layout does not have', { disks: [{ device: '/dev/sdb' }], filesystems: [{ device: '/dev/sdb', partition: 2, format: 'ext4' }] }, 'spec.storage.filesystems[0].partition: /dev/sdb gets 1 partition (spec.storage.disks), not 2'],
    ['two filesystems on one device', { filesystems: [{ device: '/dev/sdb', partition: 1, format: 'ext4' }, { device: '/dev/sdb', partition: 1, format: 'xfs' }] }, 'spec.storage.filesystems[1].device: /dev/sdb partition 1 is also spec.storage.filesystems[0]'],
    ['two mounts on one path', { mounts: [{ device: 'LABEL=a', path: '/data' }, { device: 'LABEL=b', path: '/data' }] }, 'spec.storage.mounts[1].path: "/data" is also spec.storage.mounts[0].path: two mounts on one path hide each other'],
    ['a mount on /', { mounts: [{ device: 'LABEL=a', path: '/' }] }, 'spec.storage.mounts[0].path: the root file system cannot be mounted here'],
    ['a relative mount path', { mounts: [{ device: 'LABEL=a', path: 'data' }] }, 'spec.storage.mounts[0].path: "data" is not absolute'],
    ['a mount source that is neither a device nor a tag', { mounts: [{ device: 'etcd', path: '/data' }] }, 'spec.storage.mounts[0].device: "etcd" is not valid'],
    ['a swap area as a mount', { mounts: [{ device: 'LABEL=swap', path: '/swap', format: 'swap' }] }, 'spec.storage.mounts[0].format: a swap area is not mounted: machineadm makes it (spec.storage.filesystems) but does not turn it on'],
    ['a mount option with a comma', { mounts: [{ device: 'LABEL=a', path: '/data', options: ['defaults,noatime'] }] }, 'spec.storage.mounts[0].options[0]: "defaults,noatime" is not valid'],
  ])('refuses %s, naming the field', (_what, storage, issue) => {
    expect(issuesOf(storage)).toContain(issue);
  });
});

describe('plan with spec.storage under a scratch --root', () => {
  const dir = scratchDir('machineadm-storage-plan-');
  const config = join(dir, 'machine.yaml');
  writeFileSync(
    config,
    JSON.stringify({
      apiVersion: 'machineadm.cluster.x-k8s.io/v1alpha1',
      kind: 'MachineConfig',
      spec: {
        storage: {
          disks: [{ device: '/dev/disk/by-id/machineadm-etcd', partitions: [{ sizePercent: 25 }, { type: 'swap' }] }],
          filesystems: [{ device: '/dev/disk/by-id/machineadm-etcd', partition: 1, format: 'ext4', label: 'etcd' }],
          mounts: [{ device: 'LABEL=etcd', path: '/var/lib/etcd', format: 'ext4', pass: 2 }],
        },
      },
    }),
  );

  it('shows each partition table, filesystem and mount as skipped (the devices are not this run\'s), and the fstab it writes under the root', async () => {
    const root = join(dir, 'root');
    mkdirSync(join(root, 'etc'), { recursive: true });
    writeFileSync(join(root, 'etc/fstab'), 'UUID=1234 / ext4 defaults 0 1\n');
    // The image's etcd data, which the mount would hide.
    mkdirSync(join(root, 'var/lib/etcd/member'), { recursive: true });
    writeFileSync(join(root, 'var/lib/etcd/README'), 'x\n');
    const out = await runCli(['plan', '-c', config, '--root', root, '--state-dir', join(dir, 'state'), '-o', 'json']);
    expect(out.code, out.stderr).toBe(0);
    const plan = JSON.parse(out.stdout) as { phases: { steps: { id: string; status: string; reason?: string; changes: { action: string; target: string; detail?: string; diff?: string }[] }[] }[] };
    const steps = plan.phases[0]!.steps.filter((s) => s.id.startsWith('prepare/storage/'));
    const skipped = `device change skipped under --root ${root} (--devices makes it, on this machine's devices)`;
    expect(steps.map((s) => ({ id: s.id, status: s.status, reason: s.reason, changes: s.changes.map(({ diff: _diff, ...c }) => c) }))).toEqual([
      { id: 'prepare/storage/partitions', status: 'skipped', reason: skipped, changes: [{ action: 'partition', target: '/dev/disk/by-id/machineadm-etcd', detail: 'GPT, 1: 25% linux, 2: rest swap' }] },
      { id: 'prepare/storage/filesystems', status: 'skipped', reason: skipped, changes: [{ action: 'format', target: '/dev/disk/by-id/machineadm-etcd partition 1', detail: 'ext4 labelled "etcd", unless it holds that already' }] },
      { id: 'prepare/storage/mounts', status: 'skipped', reason: skipped, changes: [{ action: 'mount', target: '/var/lib/etcd', detail: 'LABEL=etcd (ext4, defaults); hides the 2 entries now in /var/lib/etcd' }] },
      { id: 'prepare/storage/fstab', status: 'change', reason: undefined, changes: [{ action: 'update', target: '/etc/fstab', detail: '30 -> 205 bytes' }] },
    ]);
    expect(steps[3]!.changes[0]!.diff).toContain('+LABEL=etcd /var/lib/etcd ext4 defaults 0 2');
    // The plan touched nothing.
    expect(readFileSync(join(root, 'etc/fstab'), 'utf8')).toBe('UUID=1234 / ext4 defaults 0 1\n');
  });

  it('writes fstab under the root with init, and a rerun leaves it byte for byte', async () => {
    const root = join(dir, 'root-init');
    mkdirSync(root);
    const args = ['prepare', '-c', config, '--root', root, '--state-dir', join(dir, 'state-init')];
    expect((await runCli(args)).code).toBe(0);
    const first = readFileSync(join(root, 'etc/fstab'), 'utf8');
    expect(first).toContain('\nLABEL=etcd /var/lib/etcd ext4 defaults 0 2\n');
    const again = await runCli(args);
    expect(again.code).toBe(0);
    expect(again.stdout + again.stderr).toMatch(/prepare\/storage\/fstab skipped .*already done/);
    expect(readFileSync(join(root, 'etc/fstab'), 'utf8')).toBe(first);
  });
  // Without spec.storage the step did not run at all: the block stayed, and the next boot mounted
  // what the configuration no longer has.
  it('takes its block out of fstab when spec.storage leaves the configuration as a whole, and then stops running', async () => {
    const root = join(dir, 'root-removed');
    mkdirSync(join(root, 'etc'), { recursive: true });
    writeFileSync(join(root, 'etc/fstab'), 'UUID=1234 / ext4 defaults 0 1\n');
    const state = join(dir, 'state-removed');
    expect((await runCli(['prepare', '-c', config, '--root', root, '--state-dir', state])).code).toBe(0);
    expect(readFileSync(join(root, 'etc/fstab'), 'utf8')).toContain('LABEL=etcd /var/lib/etcd');
    const without = join(dir, 'without-storage.yaml');
    writeFileSync(without, JSON.stringify({ apiVersion: 'machineadm.cluster.x-k8s.io/v1alpha1', kind: 'MachineConfig', spec: {} }));
    const removed = await runCli(['prepare', '-c', without, '--root', root, '--state-dir', state]);
    expect(removed.code, removed.stderr).toBe(0);
    expect(removed.stdout).toMatch(/prepare\/storage\/fstab success .*update \/etc\/fstab/);
    expect(readFileSync(join(root, 'etc/fstab'), 'utf8')).toBe('UUID=1234 / ext4 defaults 0 1\n');
    const again = await runCli(['prepare', '-c', without, '--root', root, '--state-dir', state]);
    expect(again.code).toBe(0);
    expect(again.stdout).not.toContain('prepare/storage/');
  });
});

describe('examples/etcd-disk.yaml', () => {
  it('plans under a scratch root: every partition table, filesystem and mount shown, the fstab block written there', async () => {
    const dir = scratchDir('machineadm-etcd-disk-');
    const root = join(dir, 'root');
    mkdirSync(root);
    const example = join(import.meta.dirname, '..', '..', 'examples', 'etcd-disk.yaml');
    const plan = await runCli(['plan', '-c', example, '--root', root, '--state-dir', join(dir, 'state')]);
    expect(plan.code, plan.stderr).toBe(0);
    for (const line of [
      'partition /dev/disk/by-id/virtio-etcd (GPT, 1: 40% linux, 2: rest linux)',
      'partition /dev/vdc (GPT, 1: rest swap)',
      'format /dev/disk/by-id/virtio-etcd partition 1 (ext4 labelled "etcd" (mkfs options -m 0), unless it holds that already)',
      'format /dev/disk/by-id/virtio-etcd partition 2 (xfs labelled "containerd", unless it holds that already)',
      'format /dev/vdc1 (swap labelled "swap", unless it holds that already)',
      'mount /var/lib/etcd (LABEL=etcd (ext4, defaults,noatime))',
      '+LABEL=containerd /var/lib/containerd xfs defaults 0 2',
    ]) {
      expect(plan.stdout).toContain(line);
    }
    const run = await runCli(['prepare', '-c', example, '--root', root, '--state-dir', join(dir, 'state')]);
    expect(run.code, run.stderr).toBe(0);
    expect(readFileSync(join(root, 'etc/fstab'), 'utf8')).toContain('LABEL=etcd /var/lib/etcd ext4 defaults,noatime 0 2\nLABEL=containerd /var/lib/containerd xfs defaults 0 2\n');
  });
});

describe('plan for another machine (--facts)', () => {
  it("describes spec.storage from the configuration alone: this machine's devices say nothing about that one's", async () => {
    const dir = scratchDir('machineadm-storage-facts-');
    const config = join(dir, 'machine.json');
    writeFileSync(config, JSON.stringify({ apiVersion: 'machineadm.cluster.x-k8s.io/v1alpha1', kind: 'MachineConfig', spec: { storage: { disks: [{ device: '/dev/machineadm-other-machines-disk' }], filesystems: [{ device: '/dev/machineadm-other-machines-disk', partition: 1, format: 'xfs' }] } } }));
    const facts = join(dir, 'facts.json');
    writeFileSync(facts, JSON.stringify({ os: 'linux', arch: 'x64', hostname: 'other', privileged: true, liveRoot: true }));
    const out = await runCli(['plan', '-c', config, '--facts', facts, '--state-dir', join(dir, 'state'), '-o', 'json']);
    expect(out.code, out.stderr).toBe(0);
    const plan = JSON.parse(out.stdout) as { phases: { steps: { id: string; status: string; changes: { action: string; target: string; detail?: string }[] }[] }[] };
    const steps = plan.phases[0]!.steps.filter((s) => s.id === 'prepare/storage/partitions' || s.id === 'prepare/storage/filesystems');
    expect(steps.map((s) => [s.id, s.status, s.changes])).toEqual([
      ['prepare/storage/partitions', 'change', [{ action: 'partition', target: '/dev/machineadm-other-machines-disk', detail: 'GPT, 1: rest linux' }]],
      ['prepare/storage/filesystems', 'change', [{ action: 'format', target: '/dev/machineadm-other-machines-disk1', detail: 'xfs, unless it holds that already' }]],
    ]);
  });
});

describe('the storage steps in prepare', () => {
  it('come after the kernel modules and before files and containerd, so that their mount points are mounts first', async () => {
    const { preparePhase } = await import('../../src/phases/registry.ts');
    const ids = preparePhase.steps.map((s) => s.id);
    const at = (id: string) => ids.indexOf(id);
    expect(ids.filter((id) => id.startsWith('storage/'))).toEqual(['storage/partitions', 'storage/filesystems', 'storage/mounts', 'storage/fstab']);
    expect(at('kernel-modules/load')).toBeLessThan(at('storage/partitions'));
    expect(at('storage/fstab')).toBeLessThan(at('files'));
    expect(at('storage/fstab')).toBeLessThan(at('containerd/config'));
  });
});
