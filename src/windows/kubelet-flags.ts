// The kubelet service's command line on Windows. A Windows service cannot read an environment
// file the way systemd's EnvironmentFile= does, so the flags kubeadm writes to
// C:\var\lib\kubelet\kubeadm-flags.env (KUBELET_KUBEADM_ARGS="...", Go %q quoting) are put on the
// service's command line itself. Before the first join that file does not exist yet: the same
// flags are derived from the configuration kubeadm is given (CRI endpoint, taints, labels,
// kubeletExtraArgs, node name), so the kubelet kubeadm starts registers the node with its taints.
import type { MachineConfig } from '../config/schema/index.ts';
import type { Facts } from '../host/index.ts';
import { kubeadmPaths } from '../kubeadm/paths.ts';
import { WINDOWS_DEFAULT_TAINT } from '../kubeadm/render.ts';
import { BOOTSTRAP_KUBECONFIG, KUBELET_CERT_DIR, KUBELET_CONFIG, KUBELET_KUBECONFIG, KUBELET_LOG, kubeletPath } from './paths.ts';

/**
 * Flags newer kubelets refuse: --pod-infra-container-image was removed in v1.35 (the kubelet then
 * does not start); since containerd's sandbox image comes from its own configuration the flag
 * only kept the pause image from garbage collection, so it is dropped for every version.
 */
export const DROPPED_FLAGS = ['--pod-infra-container-image'];

/** The flags of KUBELET_KUBEADM_ARGS="..." in kubeadm-flags.env, or undefined when the file has none. */
export function parseKubeadmFlags(text: string): string[] | undefined {
  const match = /^KUBELET_KUBEADM_ARGS=(".*")\s*$/m.exec(text);
  if (!match) return undefined;
  let value: string;
  try {
    value = JSON.parse(match[1]!) as string;
  } catch {
    value = match[1]!.slice(1, -1);
  }
  return value.split(/\s+/).filter(Boolean);
}

/** What kubeadm will write to kubeadm-flags.env for this configuration (before it has). */
export function expectedKubeadmFlags(config: MachineConfig): string[] {
  const node = config.spec.kubernetes?.node ?? {};
  const flags = [`--container-runtime-endpoint=${kubeadmPaths('windows').criSocket}`];
  if (node.name !== undefined) flags.push(`--hostname-override=${node.name}`);
  const labels = Object.entries(node.labels ?? {}).sort(([a], [b]) => (a < b ? -1 : 1));
  if (labels.length) flags.push(`--node-labels=${labels.map(([k, v]) => `${k}=${v}`).join(',')}`);
  const taints = node.taints ?? [WINDOWS_DEFAULT_TAINT];
  if (taints.length) flags.push(`--register-with-taints=${taints.map((t) => `${t.key}${t.value ? `=${t.value}` : ''}:${t.effect}`).join(',')}`);
  for (const [name, value] of Object.entries(node.kubeletExtraArgs ?? {}).sort(([a], [b]) => (a < b ? -1 : 1))) flags.push(`--${name}=${value}`);
  return flags;
}

function flagName(flag: string): string {
  return flag.split('=')[0]!;
}

/**
 * The kubelet service's argument vector: the kubelet, machineadm's base flags, then kubeadm's
 * (which win). With `logRunner` (kube-log-runner.exe), the kubelet runs under it, which writes
 * the kubelet's output to KUBELET_LOG: klog's own --log-file is deprecated, and a service's
 * standard output goes nowhere.
 */
export function kubeletServiceArgv(config: MachineConfig, facts: Facts, kubeadmFlags: readonly string[], logRunner?: string): string[] {
  const base = [
    '--windows-service',
    `--cert-dir=${KUBELET_CERT_DIR}`,
    `--config=${KUBELET_CONFIG}`,
    `--bootstrap-kubeconfig=${BOOTSTRAP_KUBECONFIG}`,
    `--kubeconfig=${KUBELET_KUBECONFIG}`,
    `--hostname-override=${config.spec.kubernetes?.node?.name ?? facts.hostname.toLowerCase()}`,
    // Windows has no resolv.conf; every reference setup passes it empty.
    '--resolv-conf=',
  ];
  const fromKubeadm = kubeadmFlags.filter((f) => !DROPPED_FLAGS.includes(flagName(f)));
  const overridden = new Set(fromKubeadm.map(flagName));
  const runner = logRunner ? [logRunner, `-log-file=${KUBELET_LOG}`] : [];
  return [...runner, kubeletPath(config), ...base.filter((f) => !overridden.has(flagName(f))), ...fromKubeadm];
}
