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
