// kubernetes.staticPods: extra manifests for the kubelet on a control plane, written after a
// successful init or control-plane join (the runner stops before this step when that failed).
// machineadm itself never depends on them.
import type { Step, StepContext } from '../../engine/step.ts';
import type { MachineConfig } from '../../config/schema/index.ts';
import { inspectFiles, writeFiles, type DesiredFile } from '../../engine/managed-file.ts';
import { kubeadmPaths } from '../paths.ts';

function podsOf(config: MachineConfig) {
  const k = config.spec.kubernetes;
  return k?.role === 'control-plane' ? (k.staticPods ?? []) : [];
}

function content(manifest: string): string {
  return manifest.endsWith('\n') ? manifest : manifest + '\n';
}

// kubeadm writes its own manifests 0600: they can carry credentials in arguments, so the mode is
// part of the match and the content is never shown in a diff.
function desired(ctx: StepContext): DesiredFile[] {
  const dir = kubeadmPaths(ctx.facts.os).manifestsDir;
  return podsOf(ctx.config).map((pod, i) => ({ path: `${dir}/${pod.name}.yaml`, content: Buffer.from(content(pod.manifest)), mode: 0o600, field: `spec.kubernetes.staticPods[${i}]`, sensitive: true }));
}

export const staticPodsStep: Step = {
  id: 'kubeadm/static-pods',
  summary: 'extra static pod manifests on a control plane',
  platforms: ['linux'],
  applies: (config) => podsOf(config).length > 0,

  async check(ctx) {
    // A plan for another system than this one's cannot read that system's files.
    if (ctx.host.fs.platform !== ctx.facts.os) {
      const changes = desired(ctx).map((f) => ({ action: 'create', target: f.path, detail: 'static pod manifest, mode 0600' }));
      return { done: false, changes };
    }
    const changes = (await inspectFiles(ctx.host.fs, desired(ctx), ctx.facts.privileged)).flatMap((s) => (s.change ? [s.change] : []));
    return { done: changes.length === 0, changes };
  },

  async apply(ctx) {
    await writeFiles(ctx.host.fs, desired(ctx), ctx.facts.privileged);
  },
};
