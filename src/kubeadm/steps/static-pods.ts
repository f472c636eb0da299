// kubernetes.staticPods: extra manifests for the kubelet on a control plane, written after a
// successful init or control-plane join (the runner stops before this step when that failed).
// machineadm itself never depends on them.
import type { Step, Change } from '../../engine/step.ts';
import type { MachineConfig } from '../../config/schema/index.ts';
import { kubeadmPaths } from '../paths.ts';

function podsOf(config: MachineConfig) {
  const k = config.spec.kubernetes;
  return k?.role === 'control-plane' ? (k.staticPods ?? []) : [];
}

function content(manifest: string): string {
  return manifest.endsWith('\n') ? manifest : manifest + '\n';
}

export const staticPodsStep: Step = {
  id: 'kubeadm/static-pods',
  summary: 'extra static pod manifests on a control plane',
  platforms: ['linux'],
  applies: (config) => podsOf(config).length > 0,

  async check(ctx) {
    const dir = kubeadmPaths(ctx.facts.os).manifestsDir;
    const changes: Change[] = [];
    for (const pod of podsOf(ctx.config)) {
      const path = `${dir}/${pod.name}.yaml`;
      const current = ctx.host.fs.platform === ctx.facts.os ? await ctx.host.fs.readText(path) : undefined;
      if (current === content(pod.manifest)) continue;
      changes.push({ action: current === undefined ? 'create' : 'update', target: path, detail: 'static pod manifest, mode 0600' });
    }
    return { done: changes.length === 0, changes };
  },

  async apply(ctx, check) {
    const pods = new Map(podsOf(ctx.config).map((p) => [`${kubeadmPaths(ctx.facts.os).manifestsDir}/${p.name}.yaml`, p]));
    for (const change of check.changes) {
      const pod = pods.get(change.target);
      // kubeadm writes its own manifests 0600: they can carry credentials in arguments.
      if (pod) await ctx.host.fs.writeFile(change.target, content(pod.manifest), { mode: 0o600 });
    }
  },
};
