// examples/host-setup.yaml plans with exit 0 on an empty scratch root and shows every command,
// user, sudo rule, key file, time server file and owned or appended file it would make.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.ts';
import { scratchDir } from '../support/tmp.ts';

const EXAMPLE = join(import.meta.dirname, '..', '..', 'examples', 'host-setup.yaml');

describe('examples/host-setup.yaml', () => {
  it('plans under a scratch root: commands, users, time servers and files shown, text and JSON', async () => {
    const dir = scratchDir('machineadm-host-example-');
    const root = join(dir, 'root');
    mkdirSync(root);
    const args = ['plan', '-c', EXAMPLE, '--root', root, '--state-dir', join(dir, 'state')];
    const plan = await runCli(args);
    expect(plan.code, plan.stderr).toBe(0);
    for (const line of [
      'run spec.commands.boot[0] (swap off) (/sbin/swapoff -a, timeout 300s)',
      'run spec.commands.beforeKubeadm[0] (hosts entry for the API server)',
      'run spec.commands.afterKubeadm[0] (mark joined)',
      'create user ops (home /home/ops, shell /bin/bash, primary group ops, groups adm)',
      '+ops ALL=(ALL) NOPASSWD:ALL',
      'create /home/ops/.ssh/authorized_keys (93 bytes, mode 0600)',
      'create /etc/systemd/timesyncd.conf.d/machineadm.conf',
      '+NTP=0.pool.ntp.org 10.0.0.1',
      'create /home/ops/README (28 bytes, mode 0640, owner ops:ops)',
      '+Kubernetes worker: changes are made by machineadm.',
    ]) {
      expect(plan.stdout).toContain(line);
    }
    const json = JSON.parse((await runCli([...args, '-o', 'json'])).stdout) as { phases: { steps: { id: string; changes: { target: string }[] }[] }[] };
    const targets = (id: string) => json.phases.flatMap((p) => p.steps).find((s) => s.id === id)!.changes.map((c) => c.target);
    expect(targets('provision/commands/before-kubeadm')).toEqual(['spec.commands.beforeKubeadm[0] (hosts entry for the API server)']);
    expect(targets('prepare/users')).toContain('user ops');
  });
});
