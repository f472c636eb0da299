// Sysctls as machineadm handles them: key rules, the persistent file, and the /proc/sys path of a
// key. Pure.

export const SYSCTL_FILE = '/etc/sysctl.d/90-machineadm.conf';

/** Why a key is not a sysctl name, or undefined when it is one. */
export function sysctlKeyProblem(key: string): string | undefined {
  if (key === '') return 'the key is empty';
  // "/" stands for a dot inside a name (the VLAN interface eth0.100), as `sysctl -a` prints it;
  // a key that starts with "/" separators would be read with its dots kept, so it is refused.
  if (/^[^.]*\//.test(key)) return 'has "/" before its first "."';
  if (/\s/.test(key)) return 'contains a space';
  if (key.includes('..')) return 'contains ".."';
  if (key.split(/[./]/).some((part) => part === '')) return 'has an empty part';
  if (!key.includes('.')) return 'has only one part';
  if (!/^[A-Za-z0-9_:@.+\/-]+$/.test(key)) return 'contains a character sysctl names do not use';
  return undefined;
}

/**
 * The file under /proc/sys that holds the key: dots become slashes and a "/" a dot, as sysctl(8)
 * and sysctl.d(5) read a key whose first separator is a dot.
 */
export function procPath(key: string): string {
  return `/proc/sys/${key.replace(/[./]/g, (c) => (c === '.' ? '/' : '.'))}`;
}

/** The kernel prints multi-value sysctls separated by tabs; compare them by words. */
export function normalizeSysctlValue(value: string): string {
  return value.trim().split(/\s+/).join(' ');
}

export function renderSysctlFile(sysctls: Readonly<Record<string, string>>): string {
  const lines = ['# Written by machineadm from spec.sysctls; changes here are overwritten on its next run.'];
  for (const key of Object.keys(sysctls).sort()) lines.push(`${key} = ${sysctls[key]}`);
  return lines.join('\n') + '\n';
}
