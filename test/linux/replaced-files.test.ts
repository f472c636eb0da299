// Files that prepare replaces in folders other programs read whole (the kubelet's static pod
// manifests, sysctl.d, modules-load.d, containerd's certs.d): after a run each folder holds only
// the file machineadm manages, and the original is kept once under the state directory.
import { describe, expect, it } from 'vitest';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { dump } from 'js-yaml';
import { scratchDir } from '../support/tmp.ts';
import { runCli } from '../support/cli.ts';

const targets = [
  '/etc/kubernetes/manifests/extra.yaml',
  '/etc/sysctl.d/90-machineadm.conf',
  '/etc/modules-load.d/machineadm.conf',
  '/etc/containerd/certs.d/docker.io/hosts.toml',
];

function config(dir: string, generation: string): string {
  const path = join(dir, `config-${generation}.yaml`);
  const spec = {
    kernelModules: generation === 'first' ? ['overlay'] : ['overlay', 'br_netfilter'],
    sysctls: { 'net.ipv4.ip_forward': generation === 'first' ? '1' : '0' },
    files: [{ path: targets[0], content: `apiVersion: v1\nkind: Pod\nmetadata:\n  name: extra-${generation}\n` }],
    containerd: { registries: { 'docker.io': { mirrors: [{ url: `https://${generation}.mirror.example` }] } } },
  };
  writeFileSync(path, dump({ apiVersion: 'machineadm.cluster.x-k8s.io/v1alpha1', kind: 'MachineConfig', spec }));
  return path;
}

describe('files that prepare replaces', () => {
  it('leaves no other file in the folders it writes, and keeps each original once under the state directory', async () => {
    const dir = scratchDir('machineadm-replaced-');
    const root = join(dir, 'root');
    const state = join(dir, 'state');
    for (const target of targets) {
      mkdirSync(join(root, dirname(target)), { recursive: true });
      writeFileSync(join(root, target), `original ${target}\n`);
    }
    const only = ['prepare/kernel-modules/file', 'prepare/sysctls/file', 'prepare/files', 'prepare/containerd/registries'].join(',');
    for (const generation of ['first', 'second']) {
      const run = await runCli(['prepare', '-c', config(dir, generation), '--root', root, '--state-dir', state, '--only', only]);
      expect(run.stderr).toBe('');
      expect(run.code).toBe(0);
    }
    for (const target of targets) {
      const name = target.split('/').pop();
      expect(readFileSync(join(root, target), 'utf8'), target).not.toBe(`original ${target}\n`);
      expect(readdirSync(join(root, dirname(target))), `the folder of ${target}`).toEqual([name]);
      // The first original, not the first run's replacement.
      expect(readFileSync(join(state, 'backup', target), 'utf8')).toBe(`original ${target}\n`);
      expect(readdirSync(join(state, 'backup', dirname(target)))).toEqual([name]);
    }
  });
});
