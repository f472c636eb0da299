// What a join fixes for good: kubeadm hands the node name, labels, taints, provider ID and kubelet
// settings to the kubelet when it joins, and a later run that finds the machine joined does not
// join again. The join's record keeps a digest of each, so a later run can say which changed.
import { createHash } from 'node:crypto';
import type { StepContext } from '../../engine/step.ts';

function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.keys(value).sort().map((key) => [key, canonical((value as Record<string, unknown>)[key])]));
  }
  return value ?? null;
}

/** The digest of each setting a join applies, by field (the values are resolved: machine values in). */
export function registrationDigests(ctx: StepContext): Record<string, string> {
  const k = ctx.config.spec.kubernetes;
  const node = k?.node;
  const fields: Record<string, unknown> = {
    'spec.kubernetes.node.name': node?.name,
    'spec.kubernetes.node.ip': node?.ip,
    'spec.kubernetes.node.providerID': node?.providerID,
    'spec.kubernetes.node.labels': node?.labels,
    'spec.kubernetes.node.taints': node?.taints,
    'spec.kubernetes.node.kubeletExtraArgs': node?.kubeletExtraArgs,
    'spec.kubernetes.kubelet': k?.kubelet,
  };
  // The Linux kubelet's cgroup driver is containerd's, given at the join; containerd takes a new one.
  if (ctx.facts.os === 'linux') fields['spec.containerd.cgroupDriver'] = ctx.config.spec.containerd?.cgroupDriver ?? 'systemd';
  return Object.fromEntries(Object.entries(fields).map(([field, value]) => [field, createHash('sha256').update(JSON.stringify(canonical(value))).digest('hex').slice(0, 16)]));
}

/** The fields whose value differs from the one recorded at the join (none when the join recorded none). */
export function changedSinceJoin(ctx: StepContext, recorded: unknown): string[] {
  if (recorded === null || typeof recorded !== 'object') return [];
  const before = recorded as Record<string, unknown>;
  return Object.entries(registrationDigests(ctx)).filter(([field, digest]) => field in before && before[field] !== digest).map(([field]) => field);
}
