// What spec.storage would change on this machine, found by looking at the devices (read only:
// sysfs, `sfdisk --json`, `blkid -p`, the mount table). One function decides every disk, filesystem
// and mount together, because a filesystem on a partition this run writes is new, and a mount of
// LABEL=x is of a filesystem this run may make. The steps take their part; refusals are data
// (issues), found before any step changes anything.
import type { StepContext } from '../../engine/step.ts';
import type { DiskSpec, FilesystemSpec, MountSpec } from '../../config/schema/index.ts';
import type { ConfigIssue } from '../../errors.ts';
import type { BlockDevice, Host, MountedFilesystem } from '../../host/index.ts';
import { describeLayout, parseSfdiskJson, partitionPath, planLayout, tableDifference, withArticle, type Layout } from './layout.ts';

export interface DiskPlan {
  index: number;
  spec: DiskSpec;
  /** partition: write the table; keep: it is there already; refused: see the issues. */
  action: 'partition' | 'keep' | 'refused';
  /** The disk's node, links followed (when the devices were looked at). */
  node?: string;
  layout?: Layout;
  /** Erase what the disk holds first (overwrite, and it holds something). */
  wipe: boolean;
  detail: string;
}

export interface FilesystemPlan {
  index: number;
  spec: FilesystemSpec;
  /** The device to format: the partition's node for `partition: N`. */
  node: string;
  action: 'format' | 'keep' | 'refused';
  wipe: boolean;
  detail: string;
}

export interface MountPlan {
  index: number;
  spec: MountSpec;
  /** The mount point on this machine (under --root). */
  target: string;
  action: 'mount' | 'keep' | 'fstab-only' | 'refused';
  detail: string;
}

export interface StoragePlan {
  /** The devices were looked at (the live root, or --devices). */
  live: boolean;
  disks: DiskPlan[];
  filesystems: FilesystemPlan[];
  mounts: MountPlan[];
  issues: { disks: ConfigIssue[]; filesystems: ConfigIssue[]; mounts: ConfigIssue[] };
}

/** What blkid finds on a device: TYPE (a filesystem, swap, LVM, RAID ...), PTTYPE (a partition table), LABEL, UUID. */
export type Signature = Record<string, string>;

const BLKID_NOTHING_FOUND = 2;

/** `blkid -p` (low-level probe: no cache, no udev) of one device; an empty map when it holds nothing blkid knows. */
export async function probeSignature(host: Host, node: string): Promise<Signature> {
  const result = await host.proc.run(['blkid', '-p', '-o', 'export', node], { timeoutMs: 60_000, allowFailure: true });
  if (result.exitCode === BLKID_NOTHING_FOUND) return {};
  const out: Signature = {};
  for (const line of result.stdout.split('\n')) {
    const eq = line.indexOf('=');
    if (eq > 0) out[line.slice(0, eq)] = line.slice(eq + 1);
  }
  // Any other failure (an ambivalent probe: two signatures) is data machineadm does not understand.
  if (result.exitCode !== 0 && !out.TYPE && !out.PTTYPE) out.TYPE = `unknown (blkid exited ${result.exitCode})`;
  return out;
}

/** The devices a LABEL=, UUID=, PARTUUID= or PARTLABEL= tag names, found by probing every device (no cache). */
export async function findTagged(host: Host, tag: string): Promise<string[]> {
  const result = await host.proc.run(['blkid', '-c', '/dev/null', '-o', 'device', '-t', tag], { timeoutMs: 60_000, allowFailure: true });
  return result.exitCode === 0 ? result.stdout.split('\n').filter(Boolean) : [];
}

/**
 * The node of partition N of a disk: the kernel's name when the disk's node is known (links
 * followed) or is itself a kernel name (/dev/sdb); otherwise (a /dev/disk/by-* link not looked at)
 * the words for it.
 */
function partitionNode(disk: string, number: number, realPath?: string): string {
  if (realPath) return partitionPath(realPath, number);
  return /^\/dev\/[^/]+$/.test(disk) ? partitionPath(disk, number) : `${disk} partition ${number}`;
}

function describeSignature(sig: Signature): string {
  if (sig.PTTYPE && !sig.TYPE) return withArticle(`${sig.PTTYPE === 'dos' ? 'MBR' : sig.PTTYPE.toUpperCase()} partition table`);
  return withArticle(`${sig.TYPE} ${sig.TYPE === 'swap' ? 'area' : 'filesystem'}${sig.LABEL ? ` labelled "${sig.LABEL}"` : ''}`);
}

const MKFS: Record<FilesystemSpec['format'], string> = { ext4: 'mkfs.ext4', xfs: 'mkfs.xfs', btrfs: 'mkfs.btrfs', vfat: 'mkfs.vfat', swap: 'mkswap' };

/** The command that makes a filesystem: quiet, forced past the tool's own prompts (machineadm decided already). */
export function mkfsArgv(fs: FilesystemSpec, node: string): [string, ...string[]] {
  const label = fs.label === undefined ? [] : fs.format === 'vfat' ? ['-n', fs.label] : ['-L', fs.label];
  const force = { ext4: ['-F', '-q'], xfs: ['-f', '-q'], btrfs: ['-f', '-q'], vfat: [], swap: ['-f'] }[fs.format];
  return [MKFS[fs.format], ...force, ...label, ...(fs.options ?? []), node];
}

function describeUse(m: MountedFilesystem): string {
  return m.fstype === 'swap' && m.target === '(swap in use)' ? `${m.source} is swap in use` : `${m.source} is mounted on ${m.target}`;
}

function mountedOn(mounts: readonly MountedFilesystem[], devs: readonly { major: number; minor: number }[]): MountedFilesystem | undefined {
  return mounts.find((m) => devs.some((d) => d.major === m.major && d.minor === m.minor));
}

interface Context {
  host: Host;
  /** Mounted filesystems and swap areas in use. */
  inUse: MountedFilesystem[];
  privileged: boolean;
}

async function missingTool(ctx: Context, tool: string): Promise<boolean> {
  return (await ctx.host.proc.which(tool)) === undefined;
}

const TOOL_PACKAGE: Record<string, string> = { sfdisk: 'fdisk (util-linux)', partx: 'util-linux', wipefs: 'util-linux', blkid: 'util-linux', mount: 'mount', 'mkfs.ext4': 'e2fsprogs', 'mkfs.xfs': 'xfsprogs', 'mkfs.btrfs': 'btrfs-progs', 'mkfs.vfat': 'dosfstools', mkswap: 'util-linux' };

async function toolIssues(ctx: Context, field: string, tools: readonly string[]): Promise<ConfigIssue[]> {
  const issues: ConfigIssue[] = [];
  for (const tool of tools) {
    if (await missingTool(ctx, tool)) issues.push({ path: field, message: `${tool} is not installed on this machine`, hint: `install ${TOOL_PACKAGE[tool] ?? tool}, or leave this entry out` });
  }
  return issues;
}

async function planDisk(ctx: Context, spec: DiskSpec, index: number, issues: ConfigIssue[]): Promise<DiskPlan> {
  const field = `spec.storage.disks[${index}]`;
  const refused = (message: string, hint: string, at = `${field}.device`): DiskPlan => {
    issues.push({ path: at, message, hint });
    return { index, spec, action: 'refused', wipe: false, detail: message };
  };
  const found = await ctx.host.devices.lookup(spec.device);
  if (found.kind === 'missing') return refused(`${spec.device} does not exist`, 'name a disk of this machine (lsblk lists them)');
  if (found.kind === 'not-block') return refused(`${spec.device} is ${found.what}, not a block device`, 'name a disk of this machine (lsblk lists them)');
  const disk = found.device;
  if (disk.partitionNumber !== undefined) return refused(`${spec.device} is partition ${disk.partitionNumber} of a disk, not a whole disk`, 'name the disk itself, e.g. /dev/sdb; a filesystem on this partition goes in spec.storage.filesystems');
  const layout = planLayout(spec, disk.sizeBytes);
  if ('problem' in layout) return refused(`${spec.device}: ${layout.problem}`, 'give the partitions larger shares, or fewer partitions', `${field}.partitions`);
  const tools = await toolIssues(ctx, `${field}.device`, ['sfdisk', 'partx', 'blkid', ...(spec.overwrite ? ['wipefs'] : [])]);
  if (tools.length) {
    issues.push(...tools);
    return { index, spec, action: 'refused', wipe: false, detail: tools[0]!.message };
  }
  const tableRun = await ctx.host.proc.run(['sfdisk', '--json', disk.realPath], { timeoutMs: 60_000, allowFailure: true });
  const table = tableRun.exitCode === 0 ? parseSfdiskJson(tableRun.stdout) : undefined;
  const sig = await probeSignature(ctx.host, disk.realPath);
  const base = { index, spec, node: disk.realPath, layout };
  let why: string | undefined;
  if (table) {
    const difference = tableDifference(table, layout, disk.sizeBytes);
    if (difference === undefined) return { ...base, action: 'keep', wipe: false, detail: `${describeLayout(spec, layout)} (as asked)` };
    why = difference;
  } else if (sig.TYPE || sig.PTTYPE) {
    why = `it holds ${describeSignature(sig)}`;
  }
  if (why && !spec.overwrite) return refused(`${spec.device}: ${why}; machineadm never repartitions a disk that holds something without overwrite`, 'set overwrite: true to repartition it (everything on it is lost), or change the partitions to match the disk');
  const inUse = mountedOn(ctx.inUse, [disk, ...disk.partitions]);
  if (inUse) return refused(`${spec.device} is in use: ${describeUse(inUse)}`, 'unmount it (swapoff a swap area) first, or leave this disk out');
  if (!ctx.privileged) return refused(`partitioning ${spec.device} needs root`, 'run machineadm as root');
  return { ...base, action: 'partition', wipe: why !== undefined, detail: `${describeLayout(spec, layout)}${why ? ` (overwrite: ${why})` : ''}` };
}

async function planFilesystem(ctx: Context, spec: FilesystemSpec, index: number, disks: readonly DiskPlan[], issues: ConfigIssue[]): Promise<FilesystemPlan> {
  const field = `spec.storage.filesystems[${index}]`;
  // The disk is the same one whichever name each entry gives it (/dev/sdb, a /dev/disk/by-id link).
  const realDevice = await ctx.host.devices.realPath(spec.device);
  const partitioned = disks.find((d) => d.spec.device === spec.device || (realDevice !== undefined && d.node === realDevice));
  const disk = spec.partition === undefined ? undefined : partitioned;
  let node = spec.device;
  if (spec.partition !== undefined) {
    const found = await ctx.host.devices.lookup(spec.device);
    node = partitionNode(spec.device, spec.partition, found.kind === 'block' ? found.device.realPath : undefined);
  }
  const refused = (message: string, hint: string, at = `${field}.device`): FilesystemPlan => {
    issues.push({ path: at, message, hint });
    return { index, spec, node, action: 'refused', wipe: false, detail: message };
  };
  // The configuration's own rules refuse this when both entries name the disk alike; with two names,
  // mkfs would wipe the table the run writes and the next run would repartition: data lost on every run.
  if (partitioned && spec.partition === undefined) {
    const name = realDevice === undefined || realDevice === spec.device ? spec.device : `${spec.device} (${realDevice})`;
    return refused(`${name} is the disk spec.storage.disks[${partitioned.index}] partitions: a filesystem on the whole disk would destroy its partition table`, 'name the partition, e.g. partition: 1', `${field}.partition`);
  }
  const tools = await toolIssues(ctx, `${field}.format`, [MKFS[spec.format], 'blkid', ...(spec.overwrite ? ['wipefs'] : [])]);
  if (tools.length) {
    issues.push(...tools);
    return { index, spec, node, action: 'refused', wipe: false, detail: tools[0]!.message };
  }
  // The disk is refused (its own issue says why) or gets a new table: its partitions hold nothing yet.
  if (disk?.action === 'refused') return { index, spec, node, action: 'refused', wipe: false, detail: `${spec.device} is refused` };
  if (disk?.action === 'partition') {
    const note = disk.spec.overwrite ? 'on a new partition' : 'on a new partition, unless a filesystem left there is the one asked for';
    return { index, spec, node, action: 'format', wipe: false, detail: describeFormat(spec, note) };
  }
  const found = await ctx.host.devices.lookup(node);
  const what = spec.partition === undefined ? node : `partition ${spec.partition} of ${spec.device} (${node})`;
  if (found.kind === 'missing') return refused(`${what} does not exist`, spec.partition === undefined ? 'name a device of this machine (lsblk lists them)' : 'partition the disk first (spec.storage.disks), or name an existing partition', spec.partition === undefined ? `${field}.device` : `${field}.partition`);
  if (found.kind === 'not-block') return refused(`${what} is ${found.what}, not a block device`, 'name a partition or a disk of this machine (lsblk lists them)');
  const sig = await probeSignature(ctx.host, found.device.realPath);
  const asked = spec.format;
  if (sig.TYPE === asked && (spec.label === undefined || sig.LABEL === spec.label)) {
    return { index, spec, node, action: 'keep', wipe: false, detail: `${what} holds ${describeSignature(sig)}${sig.UUID ? ` (UUID ${sig.UUID})` : ''}, as asked` };
  }
  const holds = sig.TYPE || sig.PTTYPE ? describeSignature(sig) : undefined;
  if (holds && !spec.overwrite) return refused(`${what} holds ${holds}, not the ${asked}${spec.label ? ` labelled "${spec.label}"` : ''} asked for; machineadm never reformats without overwrite`, 'set overwrite: true to reformat it (its data is lost), or change format and label to what it holds');
  // A whole disk is in use when one of its partitions is: mkfs over it would destroy that partition.
  const inUse = mountedOn(ctx.inUse, [found.device, ...found.device.partitions]);
  if (inUse) return refused(`${what} is in use: ${describeUse(inUse)}`, 'unmount it (swapoff a swap area) first, or leave this filesystem out');
  if (!ctx.privileged) return refused(`formatting ${what} needs root`, 'run machineadm as root');
  return { index, spec, node, action: 'format', wipe: holds !== undefined, detail: describeFormat(spec, holds ? `replacing ${holds} (overwrite)` : undefined) };
}

function describeFormat(spec: FilesystemSpec, note?: string): string {
  return `${spec.format}${spec.label ? ` labelled "${spec.label}"` : ''}${spec.options?.length ? ` (mkfs options ${spec.options.join(' ')})` : ''}${note ? `, ${note}` : ''}`;
}

/** Whether a filesystem this run makes (or a partition it writes) is what the mount names, or one it refuses. */
function madeByThisRun(source: string, filesystems: readonly FilesystemPlan[], disks: readonly DiskPlan[], action: 'format' | 'refused'): boolean {
  const made = filesystems.filter((f) => f.action === action);
  if (source.startsWith('LABEL=')) return made.some((f) => f.spec.label === source.slice('LABEL='.length));
  if (source.startsWith('/dev/')) {
    const diskAction = action === 'format' ? 'partition' : 'refused';
    return made.some((f) => f.node === source || (f.spec.partition === undefined && f.spec.device === source)) || disks.some((d) => d.action === diskAction && d.layout?.partitions.some((p) => partitionPath(d.node ?? d.spec.device, p.number) === source));
  }
  return false;
}

async function planMount(ctx: Context, spec: MountSpec, index: number, filesystems: readonly FilesystemPlan[], disks: readonly DiskPlan[], issues: ConfigIssue[]): Promise<MountPlan> {
  const field = `spec.storage.mounts[${index}]`;
  const target = ctx.host.fs.mapPath(spec.path);
  const refused = (message: string, hint: string, at = `${field}.device`): MountPlan => {
    issues.push({ path: at, message, hint });
    return { index, spec, target, action: 'refused', detail: message };
  };
  if (await missingTool(ctx, 'mount')) return refused('mount is not installed on this machine', 'install mount (util-linux)');
  try {
    const info = await ctx.host.fs.stat(spec.path);
    if (info && info.kind !== 'directory') return refused(`${spec.path} is ${info.kind === 'file' ? 'a regular file' : `a ${info.kind}`}, not a directory to mount on`, 'choose another path, or remove what is there', `${field}.path`);
  } catch (error) {
    return refused(error instanceof Error ? error.message : String(error), 'choose a path that stays under --root', `${field}.path`);
  }
  const source = spec.device;
  let device: BlockDevice | undefined;
  if (source.startsWith('/dev/')) {
    const found = await ctx.host.devices.lookup(source);
    if (found.kind === 'block') device = found.device;
    else if (found.kind === 'not-block') return refused(`${source} is ${found.what}, not a block device`, 'name the device of a filesystem, or LABEL=... / UUID=...');
  } else {
    // Every device with the tag, and the one this run labels so: mount(8) takes whichever it finds first.
    const nodes = new Set<string>();
    for (const node of await findTagged(ctx.host, source)) {
      const found = await ctx.host.devices.lookup(node);
      if (found.kind === 'block') {
        device = found.device;
        nodes.add(found.device.realPath);
      }
    }
    const labelled = source.startsWith('LABEL=') ? filesystems.filter((f) => f.action === 'format' && f.spec.label === source.slice('LABEL='.length)) : [];
    for (const f of labelled) nodes.add((await ctx.host.devices.realPath(f.node)) ?? f.node);
    if (nodes.size > 1) return refused(`${source} would name ${nodes.size} filesystems on this machine (${[...nodes].sort().join(', ')}): the mount would take either`, 'give each filesystem its own label, or mount by device path or UUID');
  }
  // What a refused filesystem or disk would have made: that refusal says why already.
  if (madeByThisRun(source, filesystems, disks, 'refused')) return { index, spec, target, action: 'refused', detail: `${source} is refused` };
  const fresh = madeByThisRun(source, filesystems, disks, 'format');
  if (!device && !fresh) return refused(source.startsWith('/dev/') ? `${source} does not exist` : `no filesystem on this machine has ${source}`, 'make it in spec.storage.filesystems (with that label), or name an existing one (blkid lists them)');
  const real = (await ctx.host.devices.realPath(target)) ?? target;
  const here = ctx.inUse.filter((m) => m.target === real).at(-1);
  if (here) {
    if (device && !fresh && here.major === device.major && here.minor === device.minor) return { index, spec, target, action: 'keep', detail: `${source} is mounted on ${spec.path}` };
    return refused(`${spec.path} has ${here.source} (${here.fstype}) mounted on it already`, 'unmount it first, or choose another path', `${field}.path`);
  }
  if (spec.options.includes('noauto')) return { index, spec, target, action: 'fstab-only', detail: `noauto: ${source} is not mounted now` };
  if (!ctx.privileged) return refused(`mounting ${source} needs root`, 'run machineadm as root');
  return { index, spec, target, action: 'mount', detail: await describeMount(ctx.host, spec) };
}

/**
 * What a mount does, in a plan. What it hides is said, not refused: an image may have put files
 * there (pre-pulled images under /var/lib/containerd) that the mount hides until it is undone.
 */
async function describeMount(host: Host, spec: MountSpec): Promise<string> {
  const hidden = (await host.fs.list(spec.path).catch(() => [])).length;
  const hides = hidden ? `; hides the ${hidden} entr${hidden === 1 ? 'y' : 'ies'} now in ${spec.path}` : '';
  return `${spec.device} (${spec.format}, ${spec.options.join(',')})${hides}`;
}

/**
 * One filesystem per device, however each entry names it (/dev/sdb1, /dev/sdb with partition: 1, a
 * /dev/disk/by-* link): two entries on one device would each format it over the other at every run.
 */
async function refuseSharedDevices(host: Host, filesystems: FilesystemPlan[], issues: ConfigIssue[]): Promise<void> {
  const seen = new Map<string, FilesystemPlan>();
  for (const [i, f] of filesystems.entries()) {
    if (f.action === 'refused') continue;
    const key = (await host.devices.realPath(f.node)) ?? f.node;
    const earlier = seen.get(key);
    if (earlier === undefined) {
      seen.set(key, f);
      continue;
    }
    const name = `${f.spec.device}${f.spec.partition === undefined ? '' : ` partition ${f.spec.partition}`}`;
    const message = `${name}${name === key ? '' : ` (${key})`} is also the device of spec.storage.filesystems[${earlier.index}]: each would format it over the other at every run`;
    issues.push({ path: `spec.storage.filesystems[${f.index}].device`, message, hint: 'make one filesystem per device: leave one of the two entries out' });
    filesystems[i] = { ...f, action: 'refused', wipe: false, detail: message };
  }
}

/** The plan when the devices are not this run's to change (a scratch --root without --devices): what the configuration asks, unprobed. */
async function unprobed(ctx: StepContext): Promise<StoragePlan> {
  const storage = ctx.config.spec.storage ?? {};
  const disks: DiskPlan[] = (storage.disks ?? []).map((spec, index) => ({ index, spec, action: 'partition', wipe: false, detail: describeLayout(spec) }));
  const filesystems: FilesystemPlan[] = (storage.filesystems ?? []).map((spec, index) => ({
    index,
    spec,
    node: spec.partition === undefined ? spec.device : partitionNode(spec.device, spec.partition),
    action: 'format',
    wipe: false,
    detail: describeFormat(spec, spec.overwrite ? 'unless it holds that already (overwrite: anything else is replaced)' : 'unless it holds that already'),
  }));
  const mounts: MountPlan[] = [];
  for (const [index, spec] of (storage.mounts ?? []).entries()) mounts.push({ index, spec, target: ctx.host.fs.mapPath(spec.path), action: 'mount', detail: await describeMount(ctx.host, spec) });
  return { live: false, disks, filesystems, mounts, issues: { disks: [], filesystems: [], mounts: [] } };
}

/** What holds a device: its mounts, and the swap areas in use (as if mounted on "swap"). */
async function devicesInUse(host: Host): Promise<MountedFilesystem[]> {
  const inUse = await host.devices.mounted();
  for (const path of await host.devices.activeSwaps()) {
    const found = await host.devices.lookup(path);
    if (found.kind === 'block') inUse.push({ target: '(swap in use)', source: path, fstype: 'swap', major: found.device.major, minor: found.device.minor });
  }
  return inUse;
}

export async function planStorage(ctx: StepContext): Promise<StoragePlan> {
  if (!ctx.host.devices.allowed) return unprobed(ctx);
  const storage = ctx.config.spec.storage ?? {};
  const c: Context = { host: ctx.host, inUse: await devicesInUse(ctx.host), privileged: ctx.facts.privileged };
  const issues: StoragePlan['issues'] = { disks: [], filesystems: [], mounts: [] };
  const disks: DiskPlan[] = [];
  for (const [i, spec] of (storage.disks ?? []).entries()) disks.push(await planDisk(c, spec, i, issues.disks));
  const filesystems: FilesystemPlan[] = [];
  for (const [i, spec] of (storage.filesystems ?? []).entries()) filesystems.push(await planFilesystem(c, spec, i, disks, issues.filesystems));
  await refuseSharedDevices(ctx.host, filesystems, issues.filesystems);
  const mounts: MountPlan[] = [];
  for (const [i, spec] of (storage.mounts ?? []).entries()) mounts.push(await planMount(c, spec, i, filesystems, disks, issues.mounts));
  return { live: true, disks, filesystems, mounts, issues };
}
