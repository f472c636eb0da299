// The kubelet service's command line on Windows. A Windows service cannot read an environment
// file the way systemd's EnvironmentFile= does, so the flags kubeadm writes to
// C:\var\lib\kubelet\kubeadm-flags.env (KUBELET_KUBEADM_ARGS="...", Go %q quoting) are put on the
// service's command line itself. Before the first join that file does not exist yet: the same
// flags are derived from the join configuration kubeadm is given (CRI endpoint, taints, node name
// and every nodeRegistration.kubeletExtraArgs: labels, node IP, the user's, and before kubeadm
// v1.25 the kubelet settings themselves), so the kubelet kubeadm starts registers the node with
// its taints and runs with the settings Windows requires.
import { loadAll } from 'js-yaml';
import type { MachineConfig } from '../config/schema/index.ts';
import type { ConfigIssue } from '../errors.ts';
import type { Facts } from '../host/index.ts';
import { kubeadmPaths } from '../kubeadm/paths.ts';
import { WINDOWS_DEFAULT_SYSTEM_RESERVED_MEMORY, WINDOWS_DEFAULT_TAINT, type RenderedKubeadm } from '../kubeadm/render.ts';
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

/**
 * nodeRegistration.kubeletExtraArgs of the join configuration as rendered (a map in v1beta3, a list
 * of { name, value } in v1beta4), in order: kubeadm puts each on the kubelet's command line.
 */
export function joinKubeletArgs(rendered: Pick<RenderedKubeadm, 'config'>): [string, string][] {
  const join = loadAll(rendered.config).find((doc) => (doc as { kind?: unknown } | null)?.kind === 'JoinConfiguration') as { nodeRegistration?: { kubeletExtraArgs?: unknown } } | undefined;
  const args = join?.nodeRegistration?.kubeletExtraArgs;
  if (Array.isArray(args)) return (args as { name: string; value: string }[]).map((a) => [a.name, String(a.value)]);
  return Object.entries((args ?? {}) as Record<string, unknown>).map(([name, value]) => [name, String(value)]);
}

/**
 * What kubeadm will write to kubeadm-flags.env for this configuration (before it has), given the
 * join's kubeletExtraArgs and the machine's hostname.
 */
export function expectedKubeadmFlags(config: MachineConfig, kubeletArgs: readonly (readonly [string, string])[], hostname: string): string[] {
  const node = config.spec.kubernetes?.node ?? {};
  const base = [`--container-runtime-endpoint=${kubeadmPaths('windows').criSocket}`];
  // kubeadm passes it only for a node name other than the lower-cased hostname (GetNodeNameAndHostname).
  if (node.name !== undefined && node.name !== hostname.trim().toLowerCase()) base.push(`--hostname-override=${node.name}`);
  const taints = node.taints ?? [WINDOWS_DEFAULT_TAINT];
  if (taints.length) base.push(`--register-with-taints=${taints.map((t) => `${t.key}${t.value ? `=${t.value}` : ''}:${t.effect}`).join(',')}`);
  // As in kubeadm, a kubeletExtraArgs entry replaces kubeadm's own flag of that name.
  const overridden = new Set(kubeletArgs.map(([name]) => `--${name}`));
  const flags = [...base.filter((f) => !overridden.has(flagName(f))), ...kubeletArgs.map(([name, value]) => `--${name}=${value}`)];
  // kubeadm writes them sorted by name, then value (ArgumentsToCommand): the same order here keeps
  // the service's command line as it is once kubeadm-flags.env exists, with no restart for it.
  const byName = flags.map((flag) => [flagName(flag), flag.slice(flagName(flag).length)] as const);
  return byName.sort(([a, av], [b, bv]) => (a === b ? compare(av, bv) : compare(a, b))).map(([name, rest]) => name + rest);
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function flagName(flag: string): string {
  return flag.split('=')[0]!;
}

/** The flags machineadm itself puts before kubeadm's on the kubelet service's command line. */
function serviceFlags(config: MachineConfig, hostname: string): string[] {
  return [
    '--windows-service',
    `--cert-dir=${KUBELET_CERT_DIR}`,
    `--config=${KUBELET_CONFIG}`,
    `--bootstrap-kubeconfig=${BOOTSTRAP_KUBECONFIG}`,
    `--kubeconfig=${KUBELET_KUBECONFIG}`,
    `--hostname-override=${config.spec.kubernetes?.node?.name ?? hostname.toLowerCase()}`,
    // Windows has no resolv.conf; every reference setup passes it empty.
    '--resolv-conf=',
  ];
}

/**
 * kubeletExtraArgs that would win over what machineadm gives the Windows kubelet: kubeadm puts
 * them after machineadm's flags and the CRI endpoint, and the kubelet takes a flag over its
 * configuration file (cgroupsPerQOS false and enforceNodeAllocatable empty, which Windows needs,
 * and the memory reserved for Windows). The Linux ones are refused with the configuration.
 */
export function overridingKubeletFlags(config: MachineConfig, hostname: string): ConfigIssue[] {
  const k = config.spec.kubernetes;
  const extra = k?.node?.kubeletExtraArgs ?? {};
  const own = new Map<string, { message: string; hint: string }>();
  const ownFlag = (flag: string) => ({ message: `would win over ${flag}, which machineadm gives the Windows kubelet`, hint: 'remove it: machineadm sets this flag itself' });
  for (const flag of [...serviceFlags(config, hostname), `--container-runtime-endpoint=${kubeadmPaths('windows').criSocket}`]) own.set(flagName(flag).slice(2), ownFlag(flag));
  const windowsOnly = { message: 'which the Windows kubelet needs: Windows has no QoS cgroups', hint: 'remove it: machineadm writes it into the kubelet configuration on Windows' };
  own.set('cgroups-per-qos', { ...windowsOnly, message: `would win over cgroupsPerQOS: false, ${windowsOnly.message}` });
  own.set('enforce-node-allocatable', { ...windowsOnly, message: `would win over enforceNodeAllocatable: [], ${windowsOnly.message}` });
  // Reserved by default unless the memory is given in kubeReserved (kubeletSettings in render.ts).
  if (k?.kubelet?.kubeReserved?.memory === undefined) own.set('system-reserved', { message: `would win over the memory machineadm reserves for Windows (kubelet.systemReserved, memory ${WINDOWS_DEFAULT_SYSTEM_RESERVED_MEMORY} unless given)`, hint: 'set kubelet.systemReserved instead' });
  return Object.keys(extra).flatMap((name) => {
    const why = own.get(name);
    return why ? [{ path: `spec.kubernetes.node.kubeletExtraArgs[${JSON.stringify(name)}]`, ...why }] : [];
  });
}

/**
 * The kubelet service's argument vector: the kubelet, machineadm's base flags, then kubeadm's
 * (which win). With `logRunner` (kube-log-runner.exe), the kubelet runs under it, which writes
 * the kubelet's output to KUBELET_LOG: klog's own --log-file is deprecated, and a service's
 * standard output goes nowhere.
 */
export function kubeletServiceArgv(config: MachineConfig, facts: Facts, kubeadmFlags: readonly string[], logRunner?: string): string[] {
  const base = serviceFlags(config, facts.hostname);
  const fromKubeadm = kubeadmFlags.filter((f) => !DROPPED_FLAGS.includes(flagName(f)));
  const overridden = new Set(fromKubeadm.map(flagName));
  const runner = logRunner ? [logRunner, `-log-file=${KUBELET_LOG}`] : [];
  return [...runner, kubeletPath(config), ...base.filter((f) => !overridden.has(flagName(f))), ...fromKubeadm];
}
