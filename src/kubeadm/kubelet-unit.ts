// The kubelet's systemd unit and kubeadm's drop-in, as the official packages (pkgs.k8s.io) write
// them, with the kubelet where install put it. kubeadm writes /var/lib/kubelet/config.yaml and
// kubeadm-flags.env; /etc/default/kubelet is the operator's last resort (KUBELET_EXTRA_ARGS).
// They go under /etc/systemd/system: /usr is read-only on an immutable image.

export const KUBELET_UNIT = '/etc/systemd/system/kubelet.service';
export const KUBEADM_DROPIN = '/etc/systemd/system/kubelet.service.d/10-kubeadm.conf';
/** `systemctl enable kubelet` makes this link (WantedBy=multi-user.target). */
export const KUBELET_WANTS_LINK = '/etc/systemd/system/multi-user.target.wants/kubelet.service';

export function renderKubeletUnit(kubelet: string): string {
  return [
    '[Unit]',
    'Description=kubelet: The Kubernetes Node Agent',
    'Documentation=https://kubernetes.io/docs/',
    'Wants=network-online.target',
    'After=network-online.target',
    '',
    '[Service]',
    `ExecStart=${kubelet}`,
    'Restart=always',
    'StartLimitInterval=0',
    'RestartSec=10',
    '',
    '[Install]',
    'WantedBy=multi-user.target',
    '',
  ].join('\n');
}

export function renderKubeadmDropIn(kubelet: string): string {
  return [
    '# Note: This dropin only works with kubeadm and kubelet v1.11+',
    '[Service]',
    'Environment="KUBELET_KUBECONFIG_ARGS=--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf --kubeconfig=/etc/kubernetes/kubelet.conf"',
    'Environment="KUBELET_CONFIG_ARGS=--config=/var/lib/kubelet/config.yaml"',
    '# This is a file that "kubeadm init" and "kubeadm join" generates at runtime, populating the KUBELET_KUBEADM_ARGS variable dynamically',
    'EnvironmentFile=-/var/lib/kubelet/kubeadm-flags.env',
    '# This is a file that the user can use for overrides of the kubelet args as a last resort. Preferably, the user should use',
    '# the .NodeRegistration.KubeletExtraArgs object in the configuration files instead. KUBELET_EXTRA_ARGS should be sourced from this file.',
    'EnvironmentFile=-/etc/default/kubelet',
    'ExecStart=',
    `ExecStart=${kubelet} $KUBELET_KUBECONFIG_ARGS $KUBELET_CONFIG_ARGS $KUBELET_KUBEADM_ARGS $KUBELET_EXTRA_ARGS`,
    '',
  ].join('\n');
}
