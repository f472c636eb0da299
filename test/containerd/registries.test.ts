// Files machineadm wrote for containerd and no longer needs are removed; files it did not write are
// left alone.
import { describe, expect, it } from 'vitest';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { dump } from 'js-yaml';
import { scratchDir } from '../support/tmp.ts';
import { runCli } from '../support/cli.ts';

describe('prepare/containerd/registries and proxy over several runs', () => {
  const dir = scratchDir('machineadm-registries-');

  it('removes the hosts.toml and proxy drop-in it wrote once they leave the configuration, and nothing else', async () => {
    const root = join(dir, 'root');
    const write = (containerd: Record<string, unknown>) => {
      const path = join(dir, 'config.yaml');
      writeFileSync(path, dump({ apiVersion: 'machineadm.cluster.x-k8s.io/v1alpha1', kind: 'MachineConfig', spec: { containerd } }));
      return runCli(['prepare', '-c', path, '--root', root, '--only', 'prepare/containerd']);
    };
    const mirror = { mirrors: [{ url: 'https://mirror.example' }] };
    expect((await write({ registries: { 'docker.io': mirror, 'ghcr.io': mirror }, proxy: { httpsProxy: 'http://proxy.example:3128' } })).code).toBe(0);
    const certs = join(root, 'etc/containerd/certs.d');
    mkdirSync(join(certs, 'quay.io'));
    writeFileSync(join(certs, 'quay.io/hosts.toml'), 'server = "https://quay.io"\n');
    const dropIn = join(root, 'etc/systemd/system/containerd.service.d/machineadm-proxy.conf');
    expect(existsSync(join(certs, 'ghcr.io/hosts.toml'))).toBe(true);
    expect(existsSync(dropIn)).toBe(true);

    const second = await write({ registries: { 'docker.io': mirror } });
    expect(second.code).toBe(0);
    expect(existsSync(join(certs, 'docker.io/hosts.toml'))).toBe(true);
    expect(existsSync(join(certs, 'ghcr.io/hosts.toml'))).toBe(false);
    // An empty certs.d/ghcr.io/ would still shadow _default/ in containerd's lookup.
    expect(existsSync(join(certs, 'ghcr.io'))).toBe(false);
    expect(existsSync(join(certs, 'quay.io/hosts.toml'))).toBe(true);
    expect(existsSync(dropIn)).toBe(false);
  });

  // Taking out the whole section (not just one registry, or the proxy) left every hosts.toml and
  // the drop-in in place: the steps did not run at all without spec.containerd.
  it('removes the hosts.toml files and proxy drop-in it wrote when spec.containerd leaves the configuration as a whole', async () => {
    const root = join(dir, 'section-removed');
    const run = (spec: Record<string, unknown>) => {
      const path = join(dir, 'section-removed.yaml');
      writeFileSync(path, dump({ apiVersion: 'machineadm.cluster.x-k8s.io/v1alpha1', kind: 'MachineConfig', spec }));
      return runCli(['prepare', '-c', path, '--root', root]);
    };
    const mirror = { mirrors: [{ url: 'https://mirror.example' }] };
    expect((await run({ containerd: { registries: { 'docker.io': mirror }, proxy: { httpsProxy: 'http://proxy.example:3128' } } })).code).toBe(0);
    const certs = join(root, 'etc/containerd/certs.d');
    const dropIn = join(root, 'etc/systemd/system/containerd.service.d/machineadm-proxy.conf');
    expect(existsSync(join(certs, 'docker.io/hosts.toml'))).toBe(true);
    expect(existsSync(dropIn)).toBe(true);

    const removed = await run({ sysctls: {} });
    expect(removed.code, removed.stderr).toBe(0);
    expect(removed.stdout).toMatch(/prepare\/containerd\/registries success .*delete \/etc\/containerd\/certs.d\/docker.io\/hosts.toml/);
    expect(existsSync(join(certs, 'docker.io'))).toBe(false);
    expect(existsSync(dropIn)).toBe(false);
    // Nothing is left to take away: a run after that is a no-op, and does not list the steps again.
    const again = await run({ sysctls: {} });
    expect(again.code).toBe(0);
    expect(again.stdout).not.toContain('prepare/containerd/');
  });

  it('removes a hosts.toml it wrote even when the record of it was lost (a run killed before its state was written)', async () => {
    const root = join(dir, 'lost-record');
    const run = (registries: Record<string, unknown>) => {
      const path = join(dir, 'lost-record.yaml');
      writeFileSync(path, dump({ apiVersion: 'machineadm.cluster.x-k8s.io/v1alpha1', kind: 'MachineConfig', spec: { containerd: { registries } } }));
      return runCli(['prepare', '-c', path, '--root', root, '--only', 'prepare/containerd']);
    };
    const mirror = { mirrors: [{ url: 'https://mirror.example' }] };
    expect((await run({ 'docker.io': mirror, 'ghcr.io': mirror })).code).toBe(0);
    const certs = join(root, 'etc/containerd/certs.d');
    mkdirSync(join(certs, 'quay.io'));
    writeFileSync(join(certs, 'quay.io/hosts.toml'), 'server = "https://quay.io"\n');
    rmSync(join(root, 'var/lib/machineadm/state.json'));

    expect((await run({ 'docker.io': mirror })).code).toBe(0);
    expect(existsSync(join(certs, 'ghcr.io'))).toBe(false);
    expect(existsSync(join(certs, 'docker.io/hosts.toml'))).toBe(true);
    expect(existsSync(join(certs, 'quay.io/hosts.toml'))).toBe(true);
  });

  // Both steps rewrote _default/hosts.toml on every run (2 changed at each rerun).
  it('refuses, before any change (exit 2), a spec.files entry for the _default hosts.toml it adds to carry spec.containerd.caCertificates', async () => {
    const root = join(dir, 'default-shared');
    const ca = readFileSync(join(import.meta.dirname, '../../examples/linux-worker.yaml'), 'utf8').match(/-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/)![0].replace(/^ +/gm, '');
    const path = join(dir, 'default-shared.yaml');
    writeFileSync(path, dump({ apiVersion: 'machineadm.cluster.x-k8s.io/v1alpha1', kind: 'MachineConfig', spec: {
      files: [{ path: '/etc/containerd/certs.d/_default/hosts.toml', content: 'server = "https://example.org"\n' }],
      containerd: { caCertificates: [ca + '\n'] },
    } }));
    const run = await runCli(['prepare', '-c', path, '--root', root]);
    expect(run.stdout + run.stderr).toContain('/etc/containerd/certs.d/_default/hosts.toml is written by both prepare/files and prepare/containerd/registries');
    expect(run.code).toBe(2);
    expect(existsSync(join(root, 'etc'))).toBe(false);
  });
});
