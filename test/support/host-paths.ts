// Folders and files on the host that containerd, CNI, skopeo and a domain join make by default when a test forgets to point
// them at a scratch directory. The suite must leave the host as it found it.
import { existsSync } from 'node:fs';

export const HOST_DEFAULT_PATHS = [
  '/etc/cni/net.d', // containerd's CRI plugin makes its CNI config folder at start
  '/opt/cni', // the CNI plugin folder
  '/opt/containerd', // containerd's opt plugin
  '/var/lib/containerd', // containerd's default root
  '/run/containerd', // containerd's default state and sockets
  '/var/lib/containers', // skopeo's blob cache when run as root
  '/var/lib/machineadm', // machineadm's own default state (and backups) on a live root
  '/etc/krb5.conf', // a domain join writes it where none exists
  '/etc/krb5.keytab', // adcli's default keytab
];

/** The default paths that do not exist now: the ones a test run must not create. */
export function absentHostPaths(): string[] {
  return HOST_DEFAULT_PATHS.filter((p) => !existsSync(p));
}
