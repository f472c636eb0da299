// spec.storage: partition tables, filesystems and mounts on Linux (what Cluster API's kubeadm
// bootstrap provider calls diskSetup and mounts). The rules here are the pure ones; what the disks
// hold is looked at by the steps (src/linux/steps/storage.ts), before any change.
import { array, boolean, enumOf, integer, object, optional, string, withDefault } from './dsl.ts';
import { filePathProblem } from './file-content.ts';

export const FILESYSTEM_FORMATS = ['ext4', 'xfs', 'btrfs', 'vfat', 'swap'] as const;
export type FilesystemFormat = (typeof FILESYSTEM_FORMATS)[number];

/** The longest label each mkfs takes (bytes): a longer one is cut or refused by the tool itself. */
export const LABEL_MAX: Record<FilesystemFormat, number> = { ext4: 16, xfs: 12, btrfs: 255, vfat: 11, swap: 16 };

// A device node: /dev/sdb, /dev/nvme1n1, /dev/disk/by-id/..., never with "..", spaces or a trailing "/".
const DEVICE_PATH = /^\/dev\/(?!.*(?:^|\/)\.\.?(?:\/|$))[A-Za-z0-9._:+@\/-]*[A-Za-z0-9._:+@-]$/;
const devicePath = (description: string, example: string) =>
  string({ pattern: DEVICE_PATH, patternHint: 'an absolute device path under /dev, e.g. /dev/sdb or /dev/disk/by-id/nvme-Example_123', description, example });

// What mount(8) and fstab accept as the first field, besides a device path.
const MOUNT_SOURCE = /^(\/dev\/[^\s\0]+|(LABEL|UUID|PARTUUID|PARTLABEL)=[^\s\0]+)$/;
// One mount option: no comma (the separator), no white space (the fstab field separator).
const MOUNT_OPTION = /^[^\s,\0#]+$/;

const partitionSpec = object({
  sizePercent: optional(integer({ min: 1, max: 100, description: 'the share of the disk this partition takes, in percent, e.g. 50; the last partition without it takes the rest', example: 50 })),
  type: withDefault(enumOf(['linux', 'swap', 'lvm'] as const, { description: 'the partition type, e.g. linux (GPT: Linux filesystem; MBR: 83)', example: 'linux' }), 'linux'),
});

export const diskSpec = object(
  {
    device: devicePath('the whole disk to partition, e.g. /dev/sdb', '/dev/sdb'),
    table: withDefault(enumOf(['gpt', 'mbr'] as const, { description: 'the partition table type, e.g. gpt', example: 'gpt' }), 'gpt'),
    partitions: withDefault(array(partitionSpec, { minItems: 1, maxItems: 128, description: 'the partitions, in order: e.g. [{ sizePercent: 50 }, { type: swap }]', example: [{ sizePercent: 50 }, { type: 'swap' }] }), [{ type: 'linux' }]),
    overwrite: withDefault(boolean({ description: 'repartition a disk that holds a partition table or a filesystem of another layout (its data is lost); without it such a disk is refused', example: false }), false),
  },
  {
    description: 'a disk to give a partition table, e.g. { device: /dev/sdb, partitions: [{ sizePercent: 100 }] }', example: { device: '/dev/sdb', partitions: [{ sizePercent: 100 }] },
    check: (disk, report) => {
      const parts = disk.partitions;
      parts.forEach((p, i) => {
        if (p.sizePercent === undefined && i < parts.length - 1) report(['partitions', i, 'sizePercent'], 'is required on every partition but the last', 'only the last partition takes the rest of the disk');
      });
      const total = parts.reduce((sum, p) => sum + (p.sizePercent ?? 0), 0);
      if (total > 100) report('partitions', `the partitions' sizePercent add up to ${total}`, 'make them add up to 100 or less');
      if (parts.at(-1)?.sizePercent === undefined && total >= 100) report('partitions', 'the last partition takes the rest, but the others take the whole disk', 'make the others add up to less than 100');
      if (disk.table === 'mbr' && parts.length > 4) report('partitions', `an MBR table holds at most 4 partitions, not ${parts.length}`, 'use table: gpt');
    },
  },
);

export const filesystemSpec = object(
  {
    device: devicePath('the device to format: a partition, e.g. /dev/sdb1, or a disk together with partition', '/dev/sdb1'),
    partition: optional(integer({ min: 1, max: 128, description: 'the number of a partition of device, e.g. 1 (device is then the disk)', example: 1 })),
    format: enumOf(FILESYSTEM_FORMATS, { description: 'the filesystem to make, e.g. ext4', example: 'ext4' }),
    label: optional(string({ pattern: /^[^\s\0\/"'\\]+$/, patternHint: 'letters, digits and punctuation without spaces, quotes or "/", e.g. etcd', description: 'the filesystem label, e.g. etcd (mount it with device: LABEL=etcd)', example: 'etcd' })),
    options: optional(array(string({ pattern: /^[^\0\n]+$/, patternHint: 'one argument for mkfs, e.g. -m1' }), { description: "extra arguments for mkfs.<format>, before the device, e.g. ['-E', 'lazy_itable_init=1']", example: ['-E', 'lazy_itable_init=1'] })),
    overwrite: withDefault(boolean({ description: 'reformat a device that holds another filesystem or data (lost); a filesystem of the asked format and label is always kept', example: false }), false),
  },
  {
    description: 'a filesystem to make, e.g. { device: /dev/sdb, partition: 1, format: ext4, label: etcd }', example: { device: '/dev/sdb', partition: 1, format: 'ext4', label: 'etcd' },
    check: (fs, report) => {
      if (fs.label !== undefined && Buffer.byteLength(fs.label) > LABEL_MAX[fs.format]) {
        report('label', `"${fs.label}" is longer than the ${LABEL_MAX[fs.format]} bytes a ${fs.format} label holds`, 'use a shorter label');
      }
    },
  },
);

export const mountSpec = object(
  {
    device: string({ pattern: MOUNT_SOURCE, patternHint: 'a device path, LABEL=..., UUID=..., PARTUUID=... or PARTLABEL=..., without spaces, e.g. LABEL=etcd', description: 'what to mount, e.g. LABEL=etcd or /dev/sdb1', example: 'LABEL=etcd' }),
    path: string({
      minLength: 1,
      description: 'where to mount it, e.g. /var/lib/etcd (created when missing)', example: '/var/lib/etcd',
      check: (p) => (p === '/' ? 'the root file system cannot be mounted here|mount a directory below /, e.g. /var/lib/etcd' : (filePathProblem(p) ?? (/\s/.test(p) ? `"${p}" contains white space|choose a path without spaces` : undefined))),
    }),
    format: withDefault(string({ pattern: /^[a-z0-9._-]+$/, patternHint: 'a filesystem type as fstab names it, e.g. ext4, or auto', description: 'the filesystem type, e.g. ext4', example: 'ext4' }), 'auto'),
    options: withDefault(array(string({ pattern: MOUNT_OPTION, patternHint: 'one mount option without commas or spaces, e.g. noatime' }), { minItems: 1, description: 'mount options, e.g. [defaults, noatime]', example: ['defaults', 'noatime'] }), ['defaults']),
    dump: optional(integer({ min: 0, max: 9, description: 'fstab field 5 (dump), e.g. 0', example: 0 })),
    pass: optional(integer({ min: 0, max: 9, description: 'fstab field 6 (fsck order), e.g. 2', example: 2 })),
  },
  {
    description: 'a mount, now and at every boot (/etc/fstab), e.g. { device: LABEL=etcd, path: /var/lib/etcd }', example: { device: 'LABEL=etcd', path: '/var/lib/etcd' },
    check: (m, report) => {
      if (m.format === 'swap') report('format', 'a swap area is not mounted: machineadm makes it (spec.storage.filesystems) but does not turn it on', 'leave this mount out; the kubelet expects swap off unless it is configured for swap');
    },
  },
);

/** The disk path and partition number a filesystem entry names, as one device key. */
export function filesystemTarget(fs: { device: string; partition?: number | undefined }): string {
  return fs.partition === undefined ? fs.device : `${fs.device} partition ${fs.partition}`;
}

export const storageSection = object(
  {
    disks: optional(array(diskSpec, { description: 'partition tables to write', example: [{ device: '/dev/sdb' }] })),
    filesystems: optional(array(filesystemSpec, { description: 'filesystems to make', example: [{ device: '/dev/sdb', partition: 1, format: 'ext4', label: 'etcd' }] })),
    mounts: optional(array(mountSpec, { description: 'filesystems to mount now and at every boot', example: [{ device: 'LABEL=etcd', path: '/var/lib/etcd' }] })),
  },
  {
    description: 'disks, filesystems and mounts (Linux), made before files and containerd so that e.g. /var/lib/etcd is a mount first', example: { disks: [{ device: '/dev/sdb' }], filesystems: [{ device: '/dev/sdb', partition: 1, format: 'ext4', label: 'etcd' }], mounts: [{ device: 'LABEL=etcd', path: '/var/lib/etcd' }] },
    check: (storage, report) => {
      const disks = storage.disks ?? [];
      const seenDisk = new Map<string, number>();
      disks.forEach((d, i) => {
        const earlier = seenDisk.get(d.device);
        if (earlier !== undefined) report(['disks', i, 'device'], `"${d.device}" is also spec.storage.disks[${earlier}].device`, 'give each disk once');
        else seenDisk.set(d.device, i);
      });
      const seenFs = new Map<string, number>();
      (storage.filesystems ?? []).forEach((f, i) => {
        const key = filesystemTarget(f);
        const earlier = seenFs.get(key);
        if (earlier !== undefined) report(['filesystems', i, 'device'], `${key} is also spec.storage.filesystems[${earlier}]`, 'make one filesystem per device');
        else seenFs.set(key, i);
        const disk = disks.find((d) => d.device === f.device);
        if (disk && f.partition === undefined) report(['filesystems', i, 'partition'], `${f.device} is partitioned by spec.storage.disks: a filesystem on the whole disk would destroy its partition table`, 'name the partition, e.g. partition: 1');
        if (disk && f.partition !== undefined && f.partition > disk.partitions.length) report(['filesystems', i, 'partition'], `${f.device} gets ${disk.partitions.length} partition${disk.partitions.length === 1 ? '' : 's'} (spec.storage.disks), not ${f.partition}`, `use a number from 1 to ${disk.partitions.length}`);
      });
      const seenPath = new Map<string, number>();
      (storage.mounts ?? []).forEach((m, i) => {
        const path = m.path.replace(/\/+/g, '/');
        const earlier = seenPath.get(path);
        if (earlier !== undefined) report(['mounts', i, 'path'], `"${m.path}" is also spec.storage.mounts[${earlier}].path: two mounts on one path hide each other`, 'mount each path once');
        else seenPath.set(path, i);
      });
    },
  },
);
