// prepare/storage/*: spec.storage's partition tables, filesystems and mounts, with the real tools
// (sfdisk, partx, wipefs, mkfs.*, blkid, mount), then the mounts in /etc/fstab. Each step takes its
// part of one plan (../storage/plan.ts) that looked at every device first: a disk or a filesystem
// that holds something else is refused before any change unless its entry says overwrite, and what
// is already as asked is left alone, so a rerun changes nothing. The device steps change the
// running kernel's devices: under a scratch --root they are shown and skipped, unless --devices.
import type { ApplyResult, Change, CheckResult, Step, StepContext, Undo, UndoContext } from '../../engine/step.ts';
import { ConfigError, MachineadmError, ExitCode, type ConfigIssue } from '../../errors.ts';
import type { Host, MountedFilesystem } from '../../host/index.ts';
import { partitionPath, sfdiskScript } from '../storage/layout.ts';
import { findTagged, mkfsArgv, planStorage, probeSignature, type StoragePlan } from '../storage/plan.ts';
import { FSTAB, outsideEntries, renderFstab, mountOrder } from '../storage/fstab.ts';
import { errorForField, inspectFile, inspectTarget, missingFolders, writeFiles, type DesiredFile } from '../../engine/managed-file.ts';

const TOOL_TIMEOUT_MS = 10 * 60_000;
/** How long partition nodes may take to appear after the table is written (udev, a slow controller). */
const PARTITION_WAIT_MS = 30_000;

type Part = 'disks' | 'filesystems' | 'mounts';

function deviceSkipReason(ctx: StepContext): string | undefined {
  return ctx.host.devices.access === 'skip' ? `device change skipped under --root ${ctx.host.fs.root} (--devices makes it, on this machine's devices)` : undefined;
}

function refusals(issues: readonly ConfigIssue[]): Change[] {
  return issues.map((i) => ({ action: 'refuse', target: i.path, detail: i.hint ? `${i.message} (${i.hint})` : i.message }));
}

/** The plan, refusing (exit 2) what it refuses: in the preflight, and in apply when the machine changed since. */
async function planOrRefuse(ctx: StepContext, part: Part): Promise<StoragePlan> {
  const plan = await planStorage(ctx);
  if (plan.issues[part].length) throw new ConfigError(plan.issues[part]);
  return plan;
}

function checkResult(ctx: StepContext, changes: Change[], issues: readonly ConfigIssue[]): CheckResult {
  const skip = deviceSkipReason(ctx);
  const all = [...changes, ...refusals(issues)];
  return { done: all.length === 0, changes: all, ...(skip ? { skipReason: skip } : {}) };
}

async function run(host: Host, argv: [string, ...string[]], input?: string): Promise<void> {
  await host.proc.run(argv, { timeoutMs: TOOL_TIMEOUT_MS, ...(input !== undefined ? { input } : {}) });
}

/** Waits until the kernel shows every partition node (devtmpfs makes them, udev may add links later). */
async function waitForPartitions(host: Host, disk: string, count: number): Promise<void> {
  // On the process's clock: a boot's first time sync may set the wall clock while this waits.
  const deadline = performance.now() + PARTITION_WAIT_MS;
  const nodes = Array.from({ length: count }, (_, i) => partitionPath(disk, i + 1));
  for (;;) {
    const missing: string[] = [];
    for (const node of nodes) if ((await host.devices.lookup(node)).kind !== 'block') missing.push(node);
    if (missing.length === 0) return;
    if (performance.now() > deadline) {
      throw new MachineadmError(`the partition table of ${disk} was written, but ${missing.join(', ')} did not appear within ${PARTITION_WAIT_MS / 1000} s`, ExitCode.stepFailed, {
        hint: 'the kernel did not take the new table (is the disk in use?); run partx -u on the disk or reboot, then run machineadm again',
      });
    }
    await host.sleep(100);
  }
}

/**
 * A step that changes devices: its part of the storage plan, refused before any change when the
 * plan refuses it, shown and skipped when the devices are not this run's to change.
 */
function deviceStep(part: Part, id: string, summary: string, changes: (plan: StoragePlan) => Change[], apply: (ctx: StepContext, plan: StoragePlan) => Promise<ApplyResult | void>, atReset: Pick<Step, 'undo' | 'undoRecord'>): Step {
  return {
    ...atReset,
    id,
    summary,
    platforms: ['linux'],
    applies: (config) => (config.spec.storage?.[part]?.length ?? 0) > 0,
    async preflight(ctx) {
      await planOrRefuse(ctx, part);
    },
    async check(ctx) {
      const plan = await planStorage(ctx);
      return checkResult(ctx, changes(plan), plan.issues[part]);
    },
    async apply(ctx) {
      return apply(ctx, await planOrRefuse(ctx, part));
    },
  };
}

/**
 * reset's word on partition tables and filesystems: kept, with the data on them. A reset gives a
 * machine back for reuse; erasing a disk is a decision of its own (wipefs), never a side effect.
 */
function keptAtReset(what: string, recorded: (data: Record<string, unknown>) => Change[]): Undo {
  return {
    summary: `${what}: kept (reset never wipes a disk)`,
    async check(ctx) {
      const changes = ctx.done?.data ? recorded(ctx.done.data) : [];
      if (changes.length === 0) return { done: true, changes: [] };
      return { done: false, changes, skipReason: `not undone: ${what} machineadm made are kept with the data on them (reset never wipes a disk; wipefs --all DEVICE erases one, when that is what you want)` };
    },
    async apply() {
      // Never reached: check() skips.
    },
  };
}

export const storagePartitionsStep = deviceStep(
  'disks',
  'storage/partitions',
  'write the partition tables of spec.storage.disks',
  (plan) => plan.disks.filter((d) => d.action === 'partition').map((d) => ({ action: d.wipe ? 'repartition' : 'partition', target: d.spec.device, detail: d.detail })),
  async (ctx, plan) => {
    const record: Record<string, string> = {};
    for (const d of plan.disks) {
      if (d.action !== 'partition' || !d.layout || !d.node) continue;
      // The disk's own signatures (an old table, a filesystem on the whole disk), GPT's backup too.
      if (d.wipe) await run(ctx.host, ['wipefs', '--all', d.node]);
      // With overwrite the new partitions are wiped as well: an old filesystem at the same offset
      // would otherwise show through, and the filesystems step would take it for one to keep.
      // Without it nothing but the table is written: a disk whose table alone was lost keeps the
      // filesystems still on it (kept when they are the ones asked for, refused otherwise).
      const wipe = d.spec.overwrite ? 'always' : 'never';
      await run(ctx.host, ['sfdisk', '--quiet', '--wipe', wipe, '--wipe-partitions', wipe, d.node], sfdiskScript(d.layout));
      // sfdisk asks the kernel to re-read the table; partx tells it partition by partition, which
      // also works where the re-read is refused or ignored (a loop device, a disk with a busy part).
      await ctx.host.proc.run(['partx', '--update', d.node], { timeoutMs: TOOL_TIMEOUT_MS, allowFailure: true });
      if (await ctx.host.proc.which('udevadm')) await ctx.host.proc.run(['udevadm', 'settle', '--timeout=30'], { timeoutMs: 60_000, allowFailure: true });
      await waitForPartitions(ctx.host, d.node, d.layout.partitions.length);
      record[d.spec.device] = d.detail;
      ctx.log(`${d.spec.device}: partitioned (${d.detail})`);
    }
    return { record: { partitioned: record } };
  },
  {
    undo: keptAtReset('partition tables', (data) => Object.entries((data.partitioned ?? {}) as Record<string, string>).map(([device, detail]) => ({ action: 'keep', target: device, detail: `partitioned by machineadm: ${detail}` }))),
  },
);

export const storageFilesystemsStep = deviceStep(
  'filesystems',
  'storage/filesystems',
  'make the filesystems of spec.storage.filesystems',
  (plan) => plan.filesystems.filter((f) => f.action === 'format').map((f) => ({ action: f.wipe ? 'reformat' : 'format', target: f.node, detail: f.detail })),
  async (ctx, plan) => {
    const made: Record<string, { format: string; uuid?: string }> = {};
    for (const f of plan.filesystems) {
      if (f.action !== 'format') continue;
      if (f.wipe) await run(ctx.host, ['wipefs', '--all', f.node]);
      await run(ctx.host, mkfsArgv(f.spec, f.node));
      // What the tool made, read back: a mkfs that exits 0 without a filesystem must not pass.
      const sig = await probeSignature(ctx.host, f.node);
      if (sig.TYPE !== f.spec.format) {
        throw new MachineadmError(`spec.storage.filesystems[${f.index}]: ${mkfsArgv(f.spec, f.node).join(' ')} finished, but blkid finds ${sig.TYPE ?? 'no filesystem'} on ${f.node}`, ExitCode.stepFailed);
      }
      made[f.node] = { format: sig.TYPE, ...(sig.UUID ? { uuid: sig.UUID } : {}) };
      ctx.log(`${f.node}: ${f.spec.format} made${sig.UUID ? ` (UUID ${sig.UUID})` : ''}`);
    }
    return { record: { formatted: made } };
  },
  {
    undo: keptAtReset('filesystems', (data) =>
      Object.entries((data.formatted ?? {}) as Record<string, { format: string; uuid?: string }>).map(([node, f]) => ({ action: 'keep', target: node, detail: `${f.format} made by machineadm${f.uuid ? ` (UUID ${f.uuid})` : ''}` })),
    ),
  },
);

export const storageMountsStep = deviceStep(
  'mounts',
  'storage/mounts',
  'mount the filesystems of spec.storage.mounts now',
  (plan) => mountOrder(plan.mounts.filter((m) => m.action === 'mount'), (m) => m.spec.path).map((m) => ({ action: 'mount', target: m.spec.path, detail: m.detail })),
  async (ctx, plan) => {
    for (const m of mountOrder(plan.mounts, (m) => m.spec.path)) {
      if (m.action !== 'mount') continue;
      await ctx.host.fs.mkdirp(m.spec.path);
      const type = m.spec.format === 'auto' ? [] : ['-t', m.spec.format];
      await run(ctx.host, ['mount', ...type, '-o', m.spec.options.join(','), m.spec.device, await ctx.host.fs.resolve(m.spec.path)]);
      ctx.log(`${m.spec.device}: mounted on ${m.spec.path}`);
    }
  },
  {
    // What reset unmounts: the mounts this step is about to make, and the folders it makes for them.
    async undoRecord(ctx: StepContext) {
      const plan = await planStorage(ctx);
      const mounts: Record<string, RecordedMount> = {};
      for (const m of plan.mounts) {
        if (m.action !== 'mount') continue;
        mounts[m.spec.path] = { device: m.spec.device, target: await ctx.host.fs.resolve(m.spec.path), created: await missingFolders(ctx.host.fs, m.spec.path) };
      }
      return Object.keys(mounts).length ? { mounts } : undefined;
    },
    undo: unmountAtReset(),
  },
);

interface RecordedMount {
  device: string;
  /** The mount point on this machine (under --root), as mount was given it. */
  target: string;
  /** Folders made for the mount point, outermost first. */
  created: string[];
}

interface PlannedUnmount {
  path: string;
  mount: RecordedMount;
  mounted: boolean;
  /** Another filesystem mounted there now (the operator's): left mounted. */
  other?: MountedFilesystem;
  /** Folders machineadm made for it that are there now, deepest first. */
  folders: string[];
}

async function plannedUnmounts(ctx: UndoContext): Promise<PlannedUnmount[]> {
  const recorded = (ctx.undoRecord?.mounts ?? {}) as Record<string, RecordedMount>;
  const inUse = ctx.host.devices.allowed ? await ctx.host.devices.mounted() : [];
  const out: PlannedUnmount[] = [];
  const paths = Object.keys(recorded);
  const clean = (p: string) => p.replace(/\/+/g, '/');
  // Inner mounts first: a parent cannot be unmounted under a child.
  for (const path of mountOrder(paths, (p) => p).reverse()) {
    const mount = recorded[path]!;
    const here = inUse.filter((m) => m.target === mount.target).at(-1);
    const other = here && !(await isDevice(ctx.host, mount.device, here)) ? here : undefined;
    const folders: string[] = [];
    // A folder made for an inner mount that is an outer mount's point (or above it) can only go
    // once that outer mount is unmounted: it is the outer one's to remove.
    const outer = paths.map(clean).filter((p) => clean(path).startsWith(`${p}/`));
    for (const d of [...mount.created].reverse()) {
      if (outer.some((p) => p === clean(d) || p.startsWith(`${clean(d)}/`))) continue;
      if ((await ctx.host.fs.stat(d))?.kind === 'directory') folders.push(d);
    }
    if (here || folders.length) out.push({ path, mount, mounted: here !== undefined && !other, ...(other ? { other } : {}), folders });
  }
  return out;
}

/** Whether a mounted filesystem is on the device the configuration named (a path, LABEL= or UUID=). */
async function isDevice(host: Host, device: string, mounted: MountedFilesystem): Promise<boolean> {
  for (const node of device.startsWith('/dev/') ? [device] : await findTagged(host, device)) {
    const found = await host.devices.lookup(node);
    if (found.kind === 'block' && found.device.major === mounted.major && found.device.minor === mounted.minor) return true;
  }
  return false;
}

function leftMounted(p: PlannedUnmount): string {
  return `${p.path} has ${p.other!.source} (${p.other!.fstype}) mounted on it, not ${p.mount.device}: left mounted`;
}

/**
 * reset: the mounts machineadm made are unmounted (after reset/files: fstab and the files
 * machineadm wrote inside them are given back first), and the mount points it made removed when
 * empty. A busy mount fails the step (exit 1, the state directory stays): what holds it is the
 * operator's to stop; --force detaches it lazily (umount --lazy).
 */
function unmountAtReset(): Undo {
  return {
    summary: 'unmount what machineadm mounted, and remove the mount points it made',
    when: 'after-files',
    async check(ctx) {
      const planned = await plannedUnmounts(ctx);
      if (planned.length === 0) return { done: true, changes: [] };
      const changes: Change[] = [];
      for (const p of planned) {
        if (p.other) changes.push({ action: 'keep', target: p.path, detail: leftMounted(p) });
        else if (p.mounted || !ctx.host.devices.allowed) changes.push({ action: 'unmount', target: p.path, detail: `${p.mount.device}, mounted by machineadm${ctx.options.force ? '; lazily when busy (--force)' : ''}` });
        for (const d of p.folders) changes.push({ action: 'delete', target: `${d}/`, detail: 'mount point made by machineadm, when empty' });
      }
      const skip = deviceSkipReason(ctx);
      return { done: false, changes, ...(skip ? { skipReason: skip } : {}) };
    },
    async apply(ctx) {
      const kept: string[] = [];
      const warnings: string[] = [];
      for (const p of await plannedUnmounts(ctx)) {
        if (p.other) warnings.push(leftMounted(p));
        if (p.mounted) {
          const result = await ctx.host.proc.run(['umount', p.mount.target], { timeoutMs: TOOL_TIMEOUT_MS, allowFailure: true });
          if (result.exitCode !== 0) {
            const said = result.stderr.trim().split('\n')[0] ?? '';
            const busy = /busy/i.test(said);
            if (!(busy && ctx.options.force)) {
              throw new MachineadmError(`${p.path}: umount exited with code ${result.exitCode}${said ? `: ${said}` : ''}`, ExitCode.stepFailed, {
                hint: busy
                  ? `something still uses ${p.path} (fuser -vm ${p.path} or lsof +f -- ${p.path} lists it): stop it and run reset again, or run reset --force to detach it lazily (umount --lazy: it goes once the last user is done)`
                  : 'fix what umount says and run reset again',
              });
            }
            await run(ctx.host, ['umount', '--lazy', p.mount.target]);
            ctx.log(`${p.path}: busy, detached lazily (--force)`, 'warning');
          } else ctx.log(`${p.path}: unmounted`);
        }
        for (const d of p.folders) if (!(await ctx.host.fs.removeFolderIfEmpty(d))) kept.push(d);
      }
      // A parent shared by sibling mounts is not empty until the last of them is gone, and is then
      // removed with it: only what is still there after every removal stays, each named once.
      const stayed: string[] = [];
      for (const d of new Set(kept)) if ((await ctx.host.fs.stat(d))?.kind === 'directory') stayed.push(d);
      if (stayed.length) warnings.push(`mount points left in place, something else is in them now: ${stayed.join(', ')}`);
      return warnings.length ? { warning: warnings.join('; ') } : {};
    },
  };
}

interface FstabState {
  /** The file as it should be, or undefined when it is already so (or absent and nothing to add). */
  desired?: DesiredFile;
  issues: ConfigIssue[];
}

async function fstabState(ctx: StepContext): Promise<FstabState> {
  const mounts = ctx.config.spec.storage?.mounts ?? [];
  const info = await inspectTarget(ctx.host.fs, FSTAB).catch((error: unknown) => {
    throw errorForField('spec.storage.mounts', error);
  });
  const before = (info && (await ctx.host.fs.readText(FSTAB))) ?? '';
  const issues = outsideEntries(before, mounts.map((m) => m.path)).map((e) => {
    const index = mounts.findIndex((m) => m.path.replace(/\/+$/, '') === e.path);
    return { path: `spec.storage.mounts[${index < 0 ? 0 : index}].path`, message: `${FSTAB} line ${e.line} mounts ${e.path} already ("${e.text.trim()}"), outside machineadm's block`, hint: `remove that line from ${FSTAB}, or this mount from the configuration` };
  });
  const after = renderFstab(before, mounts);
  if (after === before) return { issues };
  // The file keeps its mode (the image's); a new one gets fstab's usual 0644.
  return { issues, desired: { path: FSTAB, content: Buffer.from(after), mode: info?.mode ?? 0o644, field: 'spec.storage.mounts' } };
}

const blockRecord = (ctx: StepContext) => ({ block: (ctx.config.spec.storage?.mounts?.length ?? 0) > 0 });

export const storageFstabStep: Step = {
  id: 'storage/fstab',
  summary: 'write the mounts of spec.storage.mounts to /etc/fstab',
  platforms: ['linux'],
  // Also with no mounts left: the block written for earlier ones is taken out.
  applies: (config) => config.spec.storage !== undefined,
  // And without spec.storage, unless the last run left no block (a record without `block` is an
  // older machineadm's, which may have written one).
  leftBehind: (earlier) => earlier?.block !== false,
  writes: (config) => ((config.spec.storage?.mounts?.length ?? 0) > 0 ? [FSTAB] : []),
  // The mounts' records are the file itself; the record only says whether a block is there.
  recordCanWait: true,
  async preflight(ctx) {
    const { issues } = await fstabState(ctx);
    if (issues.length) throw new ConfigError(issues);
  },
  async check(ctx) {
    const { desired, issues } = await fstabState(ctx);
    if (issues.length) return { done: false, changes: refusals(issues) };
    const change = desired && (await inspectFile(ctx.host.fs, desired, ctx.facts.privileged)).change;
    return { done: change === undefined, changes: change ? [change] : [], record: blockRecord(ctx) };
  },
  async apply(ctx) {
    const { desired, issues } = await fstabState(ctx);
    if (issues.length) throw new ConfigError(issues);
    if (desired) await writeFiles(ctx.host.fs, [desired], ctx.facts.privileged);
    return { record: blockRecord(ctx) };
  },
};
