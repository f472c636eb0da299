// Where the containerd files machineadm writes live on a Linux machine.
export const CONTAINERD_CONFIG = '/etc/containerd/config.toml';
/** config_path: one directory, because 2.1+ transfer-service pulls do not split a list of roots. */
export const CERTS_DIR = '/etc/containerd/certs.d';
/** spec.containerd.caCertificates, trusted for registry connections through every hosts.toml. */
export const CA_BUNDLE = '/etc/containerd/machineadm-ca.crt';
export const PROXY_DROPIN = '/etc/systemd/system/containerd.service.d/machineadm-proxy.conf';

export function hostsTomlPath(registry: string): string {
  return `${CERTS_DIR}/${registry}/hosts.toml`;
}

/** Where containerd's files are on each operating system (machine paths). */
export interface ContainerdPaths {
  config: string;
  certsDir: string;
  caBundle: string;
  hostsToml(registry: string): string;
}

/** %ProgramFiles%\containerd, where containerd.exe looks for config.toml by default. */
export const WINDOWS_CONTAINERD_DIR = 'C:\\Program Files\\containerd';

export function containerdPaths(os: 'linux' | 'windows'): ContainerdPaths {
  if (os === 'linux') return { config: CONTAINERD_CONFIG, certsDir: CERTS_DIR, caBundle: CA_BUNDLE, hostsToml: hostsTomlPath };
  const certsDir = `${WINDOWS_CONTAINERD_DIR}\\certs.d`;
  return {
    config: `${WINDOWS_CONTAINERD_DIR}\\config.toml`,
    certsDir,
    caBundle: `${WINDOWS_CONTAINERD_DIR}\\machineadm-ca.crt`,
    // A colon cannot be in a Windows file name; containerd looks up host:port as host_port_ first.
    hostsToml: (registry) => `${certsDir}\\${registry.replace(/:(\d+)$/, '_$1_')}\\hosts.toml`,
  };
}
