// Block devices and mounts of this machine, as the kernel shows them: device nodes (followed through
// /dev/disk/by-* links), their size and partitions from sysfs, and the mount table of machineadm's
// own mount namespace. Device paths are never under --root: /dev is the running kernel's. Whether
// a run may change devices at all is `allowed` (the live root, or --devices under a scratch root).
import * as fsp from './fs-calls.ts';

export interface BlockDevice {
  /** The node the path leads to, links followed (/dev/disk/by-id/x -> /dev/sdb). */
  realPath: string;
  major: number;
  minor: number;
  sizeBytes: number;
  /** The device is a partition of another one (sysfs has its "partition" number). */
  partitionNumber?: number;
  /** The kernel's names of its partitions (sdb1, nvme0n1p2, loop0p1), numbers ascending. */
  partitions: { name: string; number: number; major: number; minor: number }[];
}

export type DeviceLookup = { kind: 'block'; device: BlockDevice } | { kind: 'missing' } | { kind: 'not-block'; what: string };

export interface MountedFilesystem {
  /** The mount point, as the kernel shows it (octal escapes decoded). */
  target: string;
  source: string;
  fstype: string;
  /** st_dev of the filesystem: for a block device, its major and minor. */
  major: number;
  minor: number;
}

async function readSmall(path: string): Promise<string | undefined> {
  return fsp.readFile(path).then(
    (b) => b.toString('utf8'),
    () => undefined,
  );
}

// mountinfo escapes space, tab, newline and backslash as \ooo.
function unescapeOctal(field: string): string {
  return field.replace(/\\([0-7]{3})/g, (_, oct: string) => String.fromCharCode(parseInt(oct, 8)));
}

/** Parses /proc/self/mountinfo (proc(5)): mount ID, parent, major:minor, root, mount point, ..., "-", type, source. */
export function parseMountInfo(text: string): MountedFilesystem[] {
  const out: MountedFilesystem[] = [];
  for (const line of text.split('\n')) {
    const fields = line.split(' ');
    const dash = fields.indexOf('-');
    if (fields.length < 7 || dash < 6) continue;
    const [major, minor] = (fields[2] ?? '').split(':').map(Number);
    out.push({ target: unescapeOctal(fields[4]!), source: unescapeOctal(fields[dash + 2] ?? ''), fstype: fields[dash + 1] ?? '', major: major ?? -1, minor: minor ?? -1 });
  }
  return out;
}

/**
 * What a run may do with this machine's devices: look at and change them (the live root, or
 * --devices), show what it would do and skip (a scratch root), or describe them for another
 * machine's plan (--facts, --os), where this machine's devices say nothing.
 */
export type DeviceAccess = 'change' | 'skip' | 'describe';

export class BlockDevices {
  readonly access: DeviceAccess;

  constructor(access: DeviceAccess) {
    this.access = access;
  }

  /** True when this run may look at, partition, format and mount devices. */
  get allowed(): boolean {
    return this.access === 'change';
  }

  /** What the path is: a block device (with its size and partitions), missing, or something else. */
  async lookup(path: string): Promise<DeviceLookup> {
    const st = await fsp.stat(path).catch((e: NodeJS.ErrnoException) => {
      if (e.code === 'ENOENT' || e.code === 'ENOTDIR') return undefined;
      throw e;
    });
    if (!st) return { kind: 'missing' };
    if (!st.isBlockDevice()) return { kind: 'not-block', what: st.isDirectory() ? 'a directory' : st.isFile() ? 'a regular file' : st.isCharacterDevice() ? 'a character device' : 'not a block device' };
    const realPath = await fsp.realpath(path);
    // Linux's dev_t: major in bits 8-19 (and 32-43), minor in bits 0-7 (and 20-31).
    const rdev = BigInt(st.rdev);
    const major = Number(((rdev >> 8n) & 0xfffn) | ((rdev >> 32n) & ~0xfffn));
    const minor = Number((rdev & 0xffn) | ((rdev >> 12n) & ~0xffn));
    const sys = `/sys/dev/block/${major}:${minor}`;
    const sectors = Number((await readSmall(`${sys}/size`))?.trim() ?? '0');
    const partition = (await readSmall(`${sys}/partition`))?.trim();
    const kernelName = (await fsp.realpath(sys).catch(() => sys)).split('/').pop() ?? '';
    const partitions: BlockDevice['partitions'] = [];
    if (partition === undefined) {
      for (const name of await fsp.readdir(sys).catch(() => [] as string[])) {
        if (!name.startsWith(kernelName)) continue;
        const number = Number((await readSmall(`${sys}/${name}/partition`))?.trim() ?? 'NaN');
        const [pMajor, pMinor] = ((await readSmall(`${sys}/${name}/dev`))?.trim() ?? '').split(':').map(Number);
        if (Number.isInteger(number)) partitions.push({ name, number, major: pMajor ?? -1, minor: pMinor ?? -1 });
      }
      partitions.sort((a, b) => a.number - b.number);
    }
    // sysfs counts 512-byte sectors whatever the device's own sector size.
    return { kind: 'block', device: { realPath, major, minor, sizeBytes: sectors * 512, ...(partition !== undefined ? { partitionNumber: Number(partition) } : {}), partitions } };
  }

  /** The filesystems mounted in machineadm's mount namespace. */
  async mounted(): Promise<MountedFilesystem[]> {
    return parseMountInfo((await readSmall('/proc/self/mountinfo')) ?? '');
  }

  /** The swap areas in use (/proc/swaps), as device paths; swap files are left out. */
  async activeSwaps(): Promise<string[]> {
    const lines = ((await readSmall('/proc/swaps')) ?? '').split('\n').slice(1);
    return lines.map((l) => l.split(/\s+/)).filter((f) => f[1] === 'partition' && f[0]).map((f) => unescapeOctal(f[0]!));
  }

  /** The real path of a mount point (a link in its path is followed, as mount(8) does), or undefined. */
  async realPath(path: string): Promise<string | undefined> {
    return fsp.realpath(path).catch(() => undefined);
  }
}
