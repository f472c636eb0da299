// prepare/storage/*: spec.storage's partition tables, filesystems and mounts, with the real tools
// (sfdisk, partx, wipefs, mkfs.*, blkid, mount), then the mounts in /etc/fstab. Each step takes its
// part of one plan (../storage/plan.ts) that looked at every device first: a disk or a filesystem
// that holds something else is refused before any change unless its entry says overwrite, and what
// is already as asked is left alone, so a rerun changes nothing. The device steps change the
// running kernel's devices: under a scratch --root they are shown and skipped, unless --devices.
import type { ApplyResult, Change, CheckResult, Step, StepContext } from '../../phases/step.ts';
import { ConfigError, MachineadmError, ExitCode, type ConfigIssue } from '../../errors.ts';
import type { Host } from '../../host/index.ts';
import { partitionPath, sfdiskScript } from '../storage/layout.ts';
import { mkfsArgv, planStorage, probeSignature, type StoragePlan } from '../storage/plan.ts';
import { FSTAB, outsideEntries, renderFstab, mountOrder } from '../storage/fstab.ts';
import { errorForField, inspectFile, inspectTarget, writeFiles, type DesiredFile } from '../managed-file.ts';

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
  const deadline = host.now().getTime() + PARTITION_WAIT_MS;
  const nodes = Array.from({ length: count }, (_, i) => partitionPath(disk, i + 1));
  for (;;) {
    const missing: string[] = [];
    for (const node of nodes) if ((await host.devices.lookup(node)).kind !== 'block') missing.push(node);
    if (missing.length === 0) return;
    if (host.now().getTime() > deadline) {
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
function deviceStep(part: Part, id: string, summary: string, changes: (plan: StoragePlan) => Change[], apply: (ctx: StepContext, plan: StoragePlan) => Promise<ApplyResult | void>): Step {
  return {
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
);

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

export const storageFstabStep: Step = {
  id: 'storage/fstab',
  summary: 'write the mounts of spec.storage.mounts to /etc/fstab',
  platforms: ['linux'],
  // Also with no mounts left: the block written for earlier ones is taken out.
  applies: (config) => config.spec.storage !== undefined,
  // The mounts' records are the file itself; no run reads the step's record.
  recordCanWait: true,
  async preflight(ctx) {
    const { issues } = await fstabState(ctx);
    if (issues.length) throw new ConfigError(issues);
  },
  async check(ctx) {
    const { desired, issues } = await fstabState(ctx);
    if (issues.length) return { done: false, changes: refusals(issues) };
    const change = desired && (await inspectFile(ctx.host.fs, desired, ctx.facts.privileged)).change;
    return { done: change === undefined, changes: change ? [change] : [] };
  },
  async apply(ctx) {
    const { desired, issues } = await fstabState(ctx);
    if (issues.length) throw new ConfigError(issues);
    if (desired) await writeFiles(ctx.host.fs, [desired], ctx.facts.privileged);
  },
};
