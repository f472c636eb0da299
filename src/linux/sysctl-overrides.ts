// The sysctl.d files read after machineadm's own: systemd-sysctl (and `sysctl --system`) sorts the
// files of every directory by name and applies them in that order, so a later file that sets a
// configured key to another value wins at boot (Debian's 99-sysctl.conf, a link to /etc/sysctl.conf,
// or a k8s.conf: letters sort after digits). Reading only; works the same under a scratch --root.
import type { RootedFileSystem } from '../host/index.ts';
import { SYSCTL_FILE, procPath, sameSysctlValue } from '../config/schema/sysctl-key.ts';

/** Highest precedence first: a name in an earlier directory hides the same name in a later one. */
const SYSCTL_DIRS = ['/etc/sysctl.d', '/run/sysctl.d', '/usr/local/lib/sysctl.d', '/usr/lib/sysctl.d', '/lib/sysctl.d'];
const OWN_NAME = SYSCTL_FILE.slice(SYSCTL_FILE.lastIndexOf('/') + 1);

export interface SysctlOverride {
  key: string;
  file: string;
  value: string;
}

/** The file a key names; a key whose first separator is "/" keeps its dots (sysctl.d(5)). */
function fileOf(key: string): string {
  const first = key.search(/[./]/);
  return first >= 0 && key[first] === '/' ? `/proc/sys/${key}` : procPath(key);
}

/** Each configured key that a file read after machineadm's leaves with another value, with that file and value. */
export async function laterOverrides(fs: RootedFileSystem, sysctls: Readonly<Record<string, string>>): Promise<SysctlOverride[]> {
  const wanted = new Map(Object.keys(sysctls).map((key) => [procPath(key), key]));
  const files = new Map<string, string>();
  for (const dir of SYSCTL_DIRS) {
    for (const name of await fs.list(dir).catch(() => [] as string[])) {
      if (name.endsWith('.conf') && name > OWN_NAME && !files.has(name)) files.set(name, `${dir}/${name}`);
    }
  }
  const last = new Map<string, { file: string; value: string }>();
  for (const name of [...files.keys()].sort()) {
    const path = files.get(name)!;
    const text = await fs.readText(path).catch(() => undefined);
    for (const raw of text?.split('\n') ?? []) {
      const line = raw.trim();
      const eq = line.indexOf('=');
      if (line === '' || line.startsWith('#') || line.startsWith(';') || eq < 0) continue;
      const key = wanted.get(fileOf(line.slice(0, eq).trim().replace(/^-/, '')));
      if (key) last.set(key, { file: path, value: line.slice(eq + 1).trim() });
    }
  }
  return [...last]
    .filter(([key, { value }]) => !sameSysctlValue(value, sysctls[key]!))
    .map(([key, { file, value }]) => ({ key, file, value }))
    .sort((a, b) => (a.key < b.key ? -1 : 1));
}
