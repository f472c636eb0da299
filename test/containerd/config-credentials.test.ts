// A registry login set through extraConfig (the CRI plugin's registry.configs."<host>".auth) puts
// a credential into config.toml: the file is then a secret file, like a mirror's hosts.toml.
import { describe, expect, it } from 'vitest';
import { statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { dump } from 'js-yaml';
import { scratchDir } from '../support/tmp.ts';
import { runCli } from '../support/cli.ts';

const CONFIG = 'etc/containerd/config.toml';
const LOGIN = '[plugins."io.containerd.grpc.v1.cri".registry.configs."registry.example".auth]\n  username = "puller"\n  password = "p4ssw0rd-in-toml"\n';

describe('prepare/containerd/config', () => {
  const dir = scratchDir('machineadm-config-login-');

  it.each([
    ['a registry login', LOGIN, 0o600],
    ['no credential', '[plugins."io.containerd.grpc.v1.cri"]\n  enable_unprivileged_ports = true\n', 0o644],
  ])('writes config.toml with the mode its extraConfig calls for when it holds %s, and shows no diff of a login in the plan', async (what, extraConfig, mode) => {
    const name = what.replace(/\W+/g, '-');
    const root = join(dir, name);
    const path = join(dir, `${name}.yaml`);
    writeFileSync(path, dump({ apiVersion: 'machineadm.cluster.x-k8s.io/v1alpha1', kind: 'MachineConfig', spec: { containerd: { version: '1.7', extraConfig } } }));
    const plan = await runCli(['plan', '-c', path, '--root', root, '--only', 'prepare/containerd/config']);
    expect(plan.code, plan.stderr).toBe(0);
    expect(plan.stdout).toContain(`create /${CONFIG}`);
    expect(plan.stdout).not.toContain('puller');
    if (mode === 0o600) expect(plan.stdout).toContain('mode 0600');
    else expect(plan.stdout).toContain('enable_unprivileged_ports');
    const prepare = await runCli(['prepare', '-c', path, '--root', root, '--only', 'prepare/containerd/config']);
    expect(prepare.code, prepare.stderr).toBe(0);
    expect(prepare.stdout + prepare.stderr).not.toContain('p4ssw0rd-in-toml');
    expect(statSync(join(root, CONFIG)).mode & 0o777).toBe(mode);
  });
});
