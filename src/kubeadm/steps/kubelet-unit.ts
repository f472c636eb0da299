// prepare/kubernetes/kubelet-unit: the kubelet's systemd unit and kubeadm's drop-in for the kubelet
// spec.kubernetes.install put in place, enabled as `systemctl enable` does it (a link in
// multi-user.target.wants, so it works under --root and before systemd runs). kubeadm starts the
// kubelet itself; systemd is told to read the units again when it runs.
import type { CheckResult, Step, StepContext, UndoContext } from '../../engine/step.ts';
import { inspectFiles, writeFiles, type DesiredFile } from '../../engine/managed-file.ts';
import { StepDetailsError } from '../../errors.ts';
import { KUBEADM_DROPIN, KUBELET_UNIT, KUBELET_WANTS_LINK, renderKubeadmDropIn, renderKubeletUnit } from '../kubelet-unit.ts';
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

export const kubeletUnitStep: Step = {
  id: 'kubernetes/kubelet-unit',
  summary: 'write and enable the kubelet\'s systemd unit and kubeadm\'s drop-in, as the official packages do',
  platforms: ['linux'],
  applies: (config) => config.spec.kubernetes?.install?.binaries.includes('kubelet') === true,

  async check(ctx): Promise<CheckResult> {
    const states = await inspectFiles(ctx.host.fs, await desired(ctx), ctx.facts.privileged);
    const changes = states.flatMap((s) => (s.change ? [s.change] : []));
    if (!(await linked(ctx))) changes.push({ action: 'enable', target: 'kubelet.service', detail: `link ${KUBELET_WANTS_LINK} -> ${LINK_TARGET}` });
    return { done: changes.length === 0, changes };
  },

  async apply(ctx) {
    const states = await writeFiles(ctx.host.fs, await desired(ctx), ctx.facts.privileged);
    const enabled = !(await linked(ctx));
    const wants = KUBELET_WANTS_LINK.slice(0, KUBELET_WANTS_LINK.lastIndexOf('/'));
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
      const ours = ctx.done?.data?.linked === true && (await linked(ctx));
      return { done: !ours, changes: ours ? [{ action: 'disable', target: 'kubelet.service', detail: `remove ${KUBELET_WANTS_LINK}` }] : [] };
    },
    async apply(ctx: UndoContext) {
      await ctx.host.fs.remove(KUBELET_WANTS_LINK);
      // The folder the link went into, when enabling made it (reset/files then removes its parents).
      if (ctx.done?.data?.madeWants === true) await ctx.host.fs.removeFolderIfEmpty(KUBELET_WANTS_LINK.slice(0, KUBELET_WANTS_LINK.lastIndexOf('/')));
    },
  },
};
