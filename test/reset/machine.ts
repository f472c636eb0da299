// A scratch machine for reset's tests: what an operator or an image put there before machineadm,
// and a snapshot of every entry (kind, mode, owner, a hash of the bytes) to compare roots by.
import { chmodSync, chownSync, lstatSync, mkdirSync, readdirSync, readFileSync, readlinkSync, writeFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { TEST_PATH } from '../kubeadm/standin.ts';

const root = process.getuid?.() === 0;

/** Every entry under the root: kind, mode, owner and a hash of the bytes (or the link's target). */
export function snapshot(dir: string, skip: (rel: string) => boolean = () => false): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (rel: string): void => {
    for (const name of readdirSync(join(dir, rel)).sort()) {
      const path = rel ? `${rel}/${name}` : name;
      if (skip(path)) continue;
      const st = lstatSync(join(dir, path));
      const what = st.isSymbolicLink() ? `link ${readlinkSync(join(dir, path))}` : st.isDirectory() ? 'dir' : `file ${createHash('sha256').update(readFileSync(join(dir, path))).digest('hex').slice(0, 16)}`;
      out[path] = `${what} ${(st.mode & 0o7777).toString(8)} ${st.uid}:${st.gid}`;
      if (st.isDirectory()) walk(path);
    }
  };
  walk('');
  return out;
}

/** What an operator or an image put on the machine before machineadm: secrets, and files machineadm replaces. */
export function preparedMachine(dir: string): string {
  const r = join(dir, 'root');
  for (const d of ['etc/machineadm', 'etc/containerd', 'etc/sysctl.d', 'run']) mkdirSync(join(r, d), { recursive: true });
  writeFileSync(join(r, 'etc/machineadm/bootstrap-token'), 'abcdef.0123456789abcdef\n', { mode: 0o600 });
  writeFileSync(join(r, 'etc/machineadm/token'), 'abcdef.0123456789abcdef\n', { mode: 0o600 });
  writeFileSync(join(r, 'etc/machineadm/certificate-key'), 'a'.repeat(64) + '\n', { mode: 0o600 });
  // Replaced by machineadm: given back with these bytes, this mode and (as root) this owner.
  writeFileSync(join(r, 'etc/containerd/config.toml'), 'version = 2\n# the image\'s own\n');
  chmodSync(join(r, 'etc/containerd/config.toml'), 0o640);
  if (root) chownSync(join(r, 'etc/containerd/config.toml'), 1234, 5678);
  writeFileSync(join(r, 'etc/sysctl.d/10-image.conf'), 'vm.swappiness = 10\n');
  accountFiles(r);
  return r;
}

/**
 * The image's accounts, as every Linux machine has them (the shadow tools' backups too), and an
 * /etc/skel that useradd copies into a new home: spec.users changes them, reset gives them back.
 */
function accountFiles(r: string): void {
  mkdirSync(join(r, 'etc/skel'), { recursive: true });
  writeFileSync(join(r, 'etc/skel/.profile'), '# the image\'s profile\n');
  const files: Record<string, [string, number]> = {
    passwd: ['root:x:0:0:root:/root:/bin/bash\ndaemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n', 0o644],
    group: ['root:x:0:\ndaemon:x:1:\nadm:x:4:\nshadow:x:42:\nnogroup:x:65534:\n', 0o644],
    shadow: ['root:*:20000:0:99999:7:::\ndaemon:*:20000:0:99999:7:::\nnobody:*:20000:0:99999:7:::\n', 0o640],
    gshadow: ['root:*::\ndaemon:*::\nadm:*::\nshadow:*::\nnogroup:*::\n', 0o640],
  };
  for (const [name, [content, mode]] of Object.entries(files)) {
    for (const file of [name, `${name}-`]) {
      writeFileSync(join(r, 'etc', file), content, { mode });
      chmodSync(join(r, 'etc', file), mode);
      if (root && mode === 0o640) chownSync(join(r, 'etc', file), 0, 42);
    }
  }
}

export const MACHINE_VALUES = ['--set', 'localHostname=ip-10-0-0-7.ec2.internal', '--set', 'instanceName=node-7', '--set', 'zone=zone-a', '--set', 'region=region-1', '--set', 'instanceType=m5.large', '--set', 'providerID=aws:///zone-a/i-0123456789abcdef0'];
export const standin = { ...process.env, PATH: TEST_PATH, KUBEADM_STANDIN_VERSION: 'v1.31.2', MACHINEADM_KUBEADM_ROOTFS: '1', MACHINEADM_BOOTSTRAP_TOKEN: 'abcdef.0123456789abcdef' };
export const ownReport = (rel: string): boolean => rel === 'run/machineadm' || rel.startsWith('run/machineadm/');

