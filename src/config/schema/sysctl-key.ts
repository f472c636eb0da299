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

// A number as the kernel reads one (strtoul with base 0): hex with 0x, octal with a leading 0.
const NUMBER = '(?:0x[0-9a-f]+|0[0-7]*|[1-9][0-9]*)';
const SIGNED_NUMBER = new RegExp(`^-?${NUMBER}$`, 'i');
const RANGE_LIST = new RegExp(`^${NUMBER}(?:-${NUMBER})?(?:,${NUMBER}(?:-${NUMBER})?)*$`, 'i');

function numberOf(text: string): bigint {
  const digits = text.replace(/^-/, '');
  const value = /^0[0-7]+$/.test(digits) ? BigInt(`0o${digits.slice(1)}`) : BigInt(digits);
  return text.startsWith('-') ? -value : value;
}

/** A range list (ip_local_reserved_ports) as the kernel prints it back: sorted, overlaps and neighbours merged. */
function canonicalRanges(word: string): string {
  const ranges = word.split(',').map((item) => {
    const [from, to = from] = item.split('-') as [string, string?];
    return [numberOf(from), numberOf(to)] as [bigint, bigint];
  });
  if (ranges.some(([from, to]) => from > to)) return word;
  ranges.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  const merged: [bigint, bigint][] = [];
  for (const [from, to] of ranges) {
    const last = merged[merged.length - 1];
    if (last && from <= last[1] + 1n) last[1] = to > last[1] ? to : last[1];
    else merged.push([from, to]);
  }
  return merged.map(([from, to]) => (from === to ? `${from}` : `${from}-${to}`)).join(',');
}

function canonicalWord(word: string): string {
  if (SIGNED_NUMBER.test(word)) return numberOf(word).toString();
  if (RANGE_LIST.test(word)) return canonicalRanges(word);
  return word;
}

/**
 * Whether two values mean the same to the kernel, which keeps a value it took in its own spelling:
 * 0x400 reads back 1024, a port list 30010,30000-30005 reads back 30000-30005,30010.
 */
export function sameSysctlValue(a: string, b: string): boolean {
  const [x, y] = [normalizeSysctlValue(a), normalizeSysctlValue(b)];
  if (x === y) return true;
  const canonical = (value: string) => value.split(' ').map(canonicalWord).join(' ');
  return canonical(x) === canonical(y);
}

export function renderSysctlFile(sysctls: Readonly<Record<string, string>>): string {
  const lines = ['# Written by machineadm from spec.sysctls; changes here are overwritten on its next run.'];
  for (const key of Object.keys(sysctls).sort()) lines.push(`${key} = ${sysctls[key]}`);
  return lines.join('\n') + '\n';
}
