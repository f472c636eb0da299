// The kubelet's systemd unit and kubeadm's drop-in, as the official packages (pkgs.k8s.io) write
// them, with the kubelet where install put it. kubeadm writes /var/lib/kubelet/config.yaml and
// kubeadm-flags.env; /etc/default/kubelet is the operator's last resort (KUBELET_EXTRA_ARGS).
// They go under /etc/systemd/system: /usr is read-only on an immutable image.

export const KUBELET_UNIT = '/etc/systemd/system/kubelet.service';
export const KUBEADM_DROPIN = '/etc/systemd/system/kubelet.service.d/10-kubeadm.conf';
/** `systemctl enable kubelet` makes this link (WantedBy=multi-user.target). */
export const KUBELET_WANTS_LINK = '/etc/systemd/system/multi-user.target.wants/kubelet.service';

/**
 * The kubelet's path as an ExecStart= word: systemd reads % as a specifier (%n, the unit's name)
 * in the program's path too. A quote or backslash it refuses there: the schema refuses them.
 */
function execWord(path: string): string {
  return path.replaceAll('%', '%%');
}

export function renderKubeletUnit(kubelet: string): string {
  return [
    '[Unit]',
    'Description=kubelet: The Kubernetes Node Agent',
    'Documentation=https://kubernetes.io/docs/',
    'Wants=network-online.target',
    'After=network-online.target',
    '',
    '[Service]',
    `ExecStart=${execWord(kubelet)}`,
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
    `ExecStart=${execWord(kubelet)} $KUBELET_KUBECONFIG_ARGS $KUBELET_CONFIG_ARGS $KUBELET_KUBEADM_ARGS $KUBELET_EXTRA_ARGS`,
    '',
  ].join('\n');
}

/** Where systemd looks for the kubelet's unit and drop-ins, the ones read first first (systemd.unit(5)). */
export const KUBELET_DROPIN_DIRS = ['/lib/systemd/system', '/usr/lib/systemd/system', '/usr/local/lib/systemd/system', '/run/systemd/system', '/etc/systemd/system'].map((dir) => `${dir}/kubelet.service.d`);

/** The programs of the ExecStart= lines of a unit file's [Service] section, in order; '' for a line that empties the list. */
export function execStartPrograms(text: string): string[] {
  const programs: string[] = [];
  let section = '';
  // A line ending in a backslash goes on on the next one.
  for (const line of text.replace(/\\\r?\n/g, ' ').split(/\r?\n/)) {
    const trimmed = line.trim();
    if (trimmed.startsWith('[')) section = trimmed;
    const match = section === '[Service]' ? /^ExecStart\s*=\s*(.*)$/.exec(trimmed) : null;
    if (!match) continue;
    // The prefixes systemd allows before the program (@, -, :, +, !, !!), then the program, quoted or not.
    const command = match[1]!.replace(/^[@\-:+!]+/, '').trim();
    programs.push(/^"([^"]*)"|^'([^']*)'|^(\S*)/.exec(command)!.slice(1).find((g) => g !== undefined) ?? '');
  }
  return programs;
}

/**
 * The drop-ins systemd reads after machineadm's 10-kubeadm.conf that change what the unit runs,
 * when the kubelet would then not be `kubelet` alone: systemd reads the drop-ins of every folder
 * in the order of their names (one in /etc hiding one of the same name elsewhere), so a later one
 * with an ExecStart= (Fedora's kubeadm.conf runs /usr/bin/kubelet) decides what runs.
 */
export function laterExecStarts(dropIns: ReadonlyArray<{ path: string; text: string }>, kubelet: string): { paths: string[]; runs: string[] } | undefined {
  const ours = KUBEADM_DROPIN.slice(KUBEADM_DROPIN.lastIndexOf('/') + 1);
  const byName = new Map<string, { path: string; text: string }>();
  for (const dropIn of dropIns) byName.set(dropIn.path.slice(dropIn.path.lastIndexOf('/') + 1), dropIn);
  let runs = [kubelet];
  const paths: string[] = [];
  for (const name of [...byName.keys()].filter((n) => n.endsWith('.conf') && n > ours).sort()) {
    const { path, text } = byName.get(name)!;
    const programs = execStartPrograms(text);
    if (programs.length) paths.push(path);
    for (const program of programs) runs = program === '' ? [] : [...runs, program];
  }
  return runs.length === 1 && runs[0] === kubelet ? undefined : { paths, runs };
}
