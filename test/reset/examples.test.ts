// `machineadm init` then `machineadm reset` under --root, for every example configuration: the
// root is given back byte for byte, with modes and owners, as it was before init (kubeadm is the
// strict stand-in, run with --rootfs). Only /run/machineadm, where the reset reports itself, is new.
// A second reset does nothing.
import { chmodSync, chownSync, lstatSync, mkdirSync, readdirSync, readFileSync, readlinkSync, writeFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.ts';
import { scratchDir } from '../support/tmp.ts';
import { REPO, TEST_PATH } from '../kubeadm/standin.ts';

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
  return r;
}

const EXAMPLES = readdirSync(join(REPO, 'examples')).filter((n) => n.endsWith('.yaml')).sort();
const MACHINE_VALUES = ['--set', 'localHostname=ip-10-0-0-7.ec2.internal', '--set', 'instanceName=node-7', '--set', 'zone=zone-a', '--set', 'region=region-1', '--set', 'instanceType=m5.large', '--set', 'providerID=aws:///zone-a/i-0123456789abcdef0'];
export const standin = { ...process.env, PATH: TEST_PATH, KUBEADM_STANDIN_VERSION: 'v1.31.2', MACHINEADM_KUBEADM_ROOTFS: '1', MACHINEADM_BOOTSTRAP_TOKEN: 'abcdef.0123456789abcdef' };
const ownReport = (rel: string): boolean => rel === 'run/machineadm' || rel.startsWith('run/machineadm/');

describe('init then reset under --root, for every example configuration', () => {
  it.each(EXAMPLES)('%s: reset gives back the root as it was before init (bytes, modes, owners), and a second reset does nothing', async (example) => {
    const dir = scratchDir('machineadm-reset-');
    const r = preparedMachine(dir);
    const state = join(dir, 'state');
    const before = snapshot(r);
    const sets = example.startsWith('fleet-') ? MACHINE_VALUES : [];
    const init = await runCli(['init', '-c', join(REPO, 'examples', example), '--root', r, '--state-dir', state, ...sets], { env: standin });
    expect(init.code, init.stdout + init.stderr).toBe(0);
    expect(snapshot(r, ownReport)).not.toEqual(before);

    const plan = await runCli(['reset', '--dry-run', '--root', r, '--state-dir', state, '-o', 'json'], { env: standin });
    expect(plan.code, plan.stderr).toBe(0);
    const planned = JSON.parse(plan.stdout) as { phases: { steps: { id: string; status: string; changes: { action: string; target: string }[] }[] }[] };
    const files = planned.phases[0]!.steps.find((s) => s.id === 'reset/files')!;
    expect(files.changes).toContainEqual(expect.objectContaining({ action: 'restore', target: '/etc/containerd/config.toml' }));

    const reset = await runCli(['reset', '--root', r, '--state-dir', state], { env: standin });
    expect(reset.code, reset.stdout + reset.stderr).toBe(0);
    expect(snapshot(r, ownReport)).toEqual(before);
    // The state directory is archived, not deleted.
    const archived = readdirSync(dir).filter((n) => n.startsWith('state.reset-'));
    expect(archived).toHaveLength(1);
    expect(readdirSync(join(dir, archived[0]!))).toContain('state.json');

    const again = await runCli(['reset', '--root', r, '--state-dir', state], { env: standin });
    expect(again.code).toBe(0);
    expect(again.stderr).toMatch(/^nothing to reset: no state directory at /);
    expect(snapshot(r, ownReport)).toEqual(before);
    expect(readdirSync(dir).filter((n) => n.startsWith('state'))).toEqual(archived);
  }, 60_000);
});
