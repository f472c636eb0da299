// Where machineadm puts and finds things on a Windows node (machine paths).
import type { MachineConfig } from '../config/schema/index.ts';

export const DEFAULT_KUBELET_PATH = 'C:\\k\\kubelet.exe';
export const DEFAULT_CONTAINERD_PATH = 'C:\\Program Files\\containerd\\containerd.exe';
/** containerd.exe --register-service discards the service's output unless it is given a log file. */
export const CONTAINERD_LOG = 'C:\\ProgramData\\containerd\\containerd.log';
/** What kubeadm writes for the kubelet: KUBELET_KUBEADM_ARGS="..." (drive-less /var/lib/kubelet on the system drive). */
export const KUBEADM_FLAGS_ENV = 'C:\\var\\lib\\kubelet\\kubeadm-flags.env';
export const KUBELET_CONFIG = 'C:\\var\\lib\\kubelet\\config.yaml';
export const KUBELET_CERT_DIR = 'C:\\var\\lib\\kubelet\\pki';
export const KUBELET_KUBECONFIG = 'C:\\etc\\kubernetes\\kubelet.conf';
export const BOOTSTRAP_KUBECONFIG = 'C:\\etc\\kubernetes\\bootstrap-kubelet.conf';
/** Where kube-log-runner writes the kubelet's output: a service has no console, so without it the output is lost. */
export const KUBELET_LOG_DIR = 'C:\\var\\log\\kubelet';
export const KUBELET_LOG = `${KUBELET_LOG_DIR}\\kubelet.log`;
export const KUBELET_PORT = 10250;
/** Looked up by this name on every run (display names are localized; unnamed rules get random names). */
export const KUBELET_FIREWALL_RULE = 'machineadm-kubelet';
export const CONTAINERS_FEATURE = 'Containers';

export function kubeletPath(config: MachineConfig): string {
  return config.spec.windows?.kubeletPath ?? DEFAULT_KUBELET_PATH;
}

/** kube-log-runner.exe, looked for beside kubelet.exe, where the Kubernetes node archive puts it. */
export function kubeLogRunnerPath(config: MachineConfig): string {
  const kubelet = kubeletPath(config);
  return `${kubelet.slice(0, kubelet.lastIndexOf('\\') + 1)}kube-log-runner.exe`;
}

export function containerdPath(config: MachineConfig): string {
  return config.spec.windows?.containerdPath ?? DEFAULT_CONTAINERD_PATH;
}

/**
 * containerd is written and registered when the configuration sets it up or when the node runs a
 * kubelet (which depends on service "containerd" and talks to its named pipe): a Windows worker
 * without spec.containerd still needs it, with containerd's Windows defaults.
 */
export function containerdNeeded(config: MachineConfig): boolean {
  return config.spec.containerd !== undefined || config.spec.kubernetes !== undefined;
}

/** Whether this Windows machine becomes a node: only then does it get the kubelet, its port and its folders. */
export function kubernetesNeeded(config: MachineConfig): boolean {
  return config.spec.kubernetes !== undefined;
}

/** The folder a Windows path is in (C:\\k for C:\\k\\kubelet.exe). */
export function parentOf(path: string): string {
  const at = path.lastIndexOf('\\');
  return at <= 2 ? path.slice(0, 3) : path.slice(0, at);
}

/** Where kube-log-runner writes a host agent's output. */
export function agentLogDir(name: string): string {
  return `C:\\var\\log\\${name}`;
}

export function agentLogFile(name: string): string {
  return `${agentLogDir(name)}\\${name}.log`;
}
