// prepare/kubernetes/kubelet-unit: the kubelet's systemd unit and kubeadm's drop-in for the kubelet
// spec.kubernetes.install put in place, enabled as `systemctl enable` does it (a link in
// multi-user.target.wants, so it works under --root and before systemd runs). kubeadm starts the
// kubelet itself; systemd is told to read the units again when it runs.
import type { CheckResult, Step, StepContext, UndoContext } from '../../engine/step.ts';
import { inspectFileOrRefuse, inspectFiles, writeFiles, type DesiredFile } from '../../engine/managed-file.ts';
import { ConfigError, StepDetailsError, type ConfigIssue } from '../../errors.ts';
import { KUBEADM_DROPIN, KUBELET_DROPIN_DIRS, KUBELET_UNIT, KUBELET_WANTS_LINK, laterExecStarts, renderKubeadmDropIn, renderKubeletUnit } from '../kubelet-unit.ts';
import { installDirectory } from './install.ts';

const LINK_TARGET = '../kubelet.service';

async function desired(ctx: StepContext): Promise<DesiredFile[]> {
  const kubelet = `${await installDirectory(ctx)}/kubelet`;
  const field = 'spec.kubernetes.install';
  return [
    { path: KUBELET_UNIT, content: Buffer.from(renderKubeletUnit(kubelet)), mode: 0o644, field },
    { path: KUBEADM_DROPIN, content: Buffer.from(renderKubeadmDropIn(kubelet)), mode: 0o644, field },
  ];
}

async function linked(ctx: StepContext): Promise<boolean> {
  return (await ctx.host.fs.stat(KUBELET_WANTS_LINK))?.kind === 'symlink';
}

/**
 * The kubelet's drop-ins on the machine, the folders systemd reads first first, without machineadm's
 * own and those spec.files writes (the operator's word on that name, wherever it is).
 */
async function otherDropIns(ctx: StepContext): Promise<Array<{ path: string; text: string }>> {
  const written = new Set((ctx.config.spec.files ?? []).filter((f) => KUBELET_DROPIN_DIRS.some((dir) => f.path.startsWith(`${dir}/`))).map((f) => f.path.slice(f.path.lastIndexOf('/') + 1)));
  const found: Array<{ path: string; text: string }> = [];
  for (const dir of KUBELET_DROPIN_DIRS) {
    // A folder that leaves a scratch root through a link (/lib -> /usr/lib) is read as the other one.
    const names = await ctx.host.fs.list(dir).catch(() => [] as string[]);
    for (const name of names) {
      const path = `${dir}/${name}`;
      if (path === KUBEADM_DROPIN || written.has(name)) continue;
      const text = await ctx.host.fs.readText(path).catch(() => undefined);
      if (text !== undefined) found.push({ path, text });
    }
  }
  return found;
}

/** `systemctl mask` links a unit to this: systemd then never starts it. */
const MASKED = '/dev/null';

/**
 * Links where the step writes (the unit and the drop-in), or a link where it needs a folder that
 * leads to none: refused before the run's first change, not when the step comes after the binaries
 * were put in place. A link to a real folder is written into, as systemd reads it.
 */
async function linksInTheWay(ctx: StepContext): Promise<ConfigIssue[]> {
  const issues: ConfigIssue[] = [];
  const refuse = (path: string, to: string, what: string, hint: string) => issues.push({ path: 'spec.kubernetes.install', message: `${path} is ${to === MASKED ? `masked (a link to ${MASKED})` : `a link to ${to}`}${what}`, hint, refused: true });
  const folders = [dirname(KUBEADM_DROPIN), dirname(KUBELET_WANTS_LINK)];
  const refusedFolders = new Set<string>();
  for (const folder of folders) {
    const to = await ctx.host.fs.readLink(folder).catch(() => undefined);
    // A folder that leaves a scratch root through the link is refused by check, as any such path.
    if (to === undefined || (await ctx.host.fs.isFolderFollowingLinks(folder).catch(() => true))) continue;
    refusedFolders.add(folder);
    refuse(folder, to, ', not a folder', `remove the link (rm ${folder}); machineadm makes the folder`);
  }
  for (const path of [KUBELET_UNIT, KUBEADM_DROPIN].filter((p) => !refusedFolders.has(dirname(p)))) {
    const to = await ctx.host.fs.readLink(path).catch(() => undefined);
    if (to === undefined) continue;
    const what = `, where machineadm writes the ${path === KUBELET_UNIT ? "kubelet's unit" : "kubelet's drop-in for kubeadm"}`;
    if (path === KUBELET_UNIT && to === MASKED) refuse(path, to, `${what}: systemd would never start the kubelet`, 'run "systemctl unmask kubelet" (it removes the link), then run machineadm again');
    else refuse(path, to, what, `remove the link (rm ${path}${path === KUBELET_UNIT ? '; "systemctl disable kubelet" first if it is enabled' : ''}), then run machineadm again`);
  }
  return issues;
}

/** Whether the undo record says `path` was not there before the step's first change. */
function madeBefore(ctx: UndoContext, path: string): boolean {
  return (ctx.undoRecord?.before as Record<string, string> | undefined)?.[path] === 'absent';
}

function dirname(path: string): string {
  return path.slice(0, path.lastIndexOf('/'));
}

export const kubeletUnitStep: Step = {
  id: 'kubernetes/kubelet-unit',
  summary: 'write and enable the kubelet\'s systemd unit and kubeadm\'s drop-in, as the official packages do',
  platforms: ['linux'],
  applies: (config) => config.spec.kubernetes?.install?.binaries.includes('kubelet') === true,

  async preflight(ctx) {
    const links = await linksInTheWay(ctx);
    if (links.length) throw new ConfigError(links);
    // A folder at a file's path, or a file at a folder's, likewise.
    for (const file of await desired(ctx)) await inspectFileOrRefuse(ctx.host.fs, file, ctx.facts.privileged);
    // The unit written and enabled, systemd would still run what a later drop-in says.
    const kubelet = `${await installDirectory(ctx)}/kubelet`;
    const later = laterExecStarts(await otherDropIns(ctx), kubelet);
    if (!later) return;
    const runs = later.runs.length === 0 ? 'no program (ExecStart= left empty)' : later.runs.length > 1 ? `${later.runs.length} programs (${later.runs.join(', ')}), which systemd refuses for a service` : later.runs[0]!;
    throw new ConfigError([
      {
        path: 'spec.kubernetes.install',
        message: `${later.paths.join(', ')} (read after ${KUBEADM_DROPIN}) make${later.paths.length === 1 ? 's' : ''} the kubelet's unit run ${runs}, not the kubelet spec.kubernetes.install puts at ${kubelet}`,
        hint: `remove ${later.paths.length === 1 ? 'it' : 'them'}, or hide ${later.paths.length === 1 ? 'it' : 'each'} with an empty file of the same name in /etc/systemd/system/kubelet.service.d written by spec.files`,
        refused: true,
      },
    ]);
  },

  async check(ctx): Promise<CheckResult> {
    // What the preflight refuses shows in the plan as a refusal, with the plan of the other steps.
    const links = await linksInTheWay(ctx);
    if (links.length) return { done: false, changes: links.map((i) => ({ action: 'refuse', target: 'spec.kubernetes.install', detail: `${i.message} (${i.hint})` })) };
    const states = await inspectFiles(ctx.host.fs, await desired(ctx), ctx.facts.privileged);
    const changes = states.flatMap((s) => (s.change ? [s.change] : []));
    if (!(await linked(ctx))) changes.push({ action: 'enable', target: 'kubelet.service', detail: `link ${KUBELET_WANTS_LINK} -> ${LINK_TARGET}` });
    return { done: changes.length === 0, changes };
  },

  // Before the link is made: a run killed after making it, before the step's record, still tells
  // reset the link and its folder are machineadm's (the next run finds the step done).
  async undoRecord(ctx) {
    const wants = dirname(KUBELET_WANTS_LINK);
    return { before: { [KUBELET_WANTS_LINK]: (await linked(ctx)) ? 'present' : 'absent', [wants]: (await ctx.host.fs.exists(wants)) ? 'present' : 'absent' } };
  },

  async apply(ctx) {
    const states = await writeFiles(ctx.host.fs, await desired(ctx), ctx.facts.privileged);
    const enabled = !(await linked(ctx));
    const wants = dirname(KUBELET_WANTS_LINK);
    const madeWants = enabled && !(await ctx.host.fs.exists(wants));
    if (enabled) {
      await ctx.host.fs.mkdirp(wants);
      await ctx.host.fs.symlink(LINK_TARGET, KUBELET_WANTS_LINK);
    }
    const written = states.some((s) => s.change);
    // A running systemd reads unit files only when told; kubeadm then starts the kubelet.
    if (written && (await ctx.host.fs.exists('/run/systemd/system')) && ctx.host.fs.isLiveRoot) {
      const reload = await ctx.host.proc.run(['systemctl', 'daemon-reload'], { timeoutMs: 60_000, allowFailure: true });
      if (reload.exitCode !== 0) throw new StepDetailsError(`systemctl daemon-reload exited with code ${reload.exitCode}: ${reload.stderr.trim().split('\n')[0] ?? ''}`, { command: 'systemctl daemon-reload' });
    }
    return { record: { linked: enabled || Boolean(ctx.previous?.data?.linked), madeWants: madeWants || Boolean(ctx.previous?.data?.madeWants) } };
  },

  undo: {
    summary: 'disable the kubelet unit machineadm enabled (its files go back with reset/files)',
    async check(ctx: UndoContext): Promise<CheckResult> {
      const ours = (ctx.done?.data?.linked === true || madeBefore(ctx, KUBELET_WANTS_LINK)) && (await linked(ctx));
      return { done: !ours, changes: ours ? [{ action: 'disable', target: 'kubelet.service', detail: `remove ${KUBELET_WANTS_LINK}` }] : [] };
    },
    async apply(ctx: UndoContext) {
      await ctx.host.fs.remove(KUBELET_WANTS_LINK);
      // The folder the link went into, when enabling made it (reset/files then removes its parents).
      if (ctx.done?.data?.madeWants === true || madeBefore(ctx, dirname(KUBELET_WANTS_LINK))) await ctx.host.fs.removeFolderIfEmpty(KUBELET_WANTS_LINK.slice(0, KUBELET_WANTS_LINK.lastIndexOf('/')));
    },
  },
};
