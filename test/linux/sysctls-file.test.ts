// prepare/sysctls/file on a scratch root laid out as Debian's /etc/sysctl.d: systemd-sysctl applies
// the files of every sysctl.d directory sorted by name, so one read after machineadm's wins at boot.
import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { dump } from 'js-yaml';
import { describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.ts';
import { scratchDir } from '../support/tmp.ts';

function machine(sysctls: Record<string, string>, files: Record<string, string>): { root: string; state: string; config: string } {
  const dir = scratchDir('machineadm-sysctl-file-');
  const root = join(dir, 'root');
  mkdirSync(join(root, 'etc/sysctl.d'), { recursive: true });
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(join(root, path, '..'), { recursive: true });
    writeFileSync(join(root, path), content);
  }
  const config = join(dir, 'machine.yaml');
  writeFileSync(config, dump({ apiVersion: 'machineadm.cluster.x-k8s.io/v1alpha1', kind: 'MachineConfig', spec: { sysctls } }));
  return { root, state: join(dir, 'state'), config };
}

const run = (m: { root: string; state: string; config: string }, command: string, ...more: string[]) => runCli([command, '-c', m.config, '--root', m.root, '--state-dir', m.state, '--only', 'prepare/sysctls', ...more]);

describe('prepare/sysctls/file', () => {
  it('warns, naming the field and the file, when a sysctl.d file read after its own sets a configured key to another value', async () => {
    const m = machine(
      { 'net.core.somaxconn': '1234', 'net.ipv4.ip_forward': '1', 'net.ipv4.conf.eth0/100.forwarding': '1' },
      { '/etc/sysctl.conf': 'net.core.somaxconn = 4096\nnet.ipv4.ip_forward=1\n', '/etc/sysctl.d/10-early.conf': 'net.ipv4.ip_forward = 0\n', '/usr/lib/sysctl.d/k8s.conf': 'net/ipv4/conf/eth0.100/forwarding = 0\n' },
    );
    symlinkSync('../sysctl.conf', join(m.root, 'etc/sysctl.d/99-sysctl.conf'));
    const plan = await run(m, 'plan', '-o', 'json');
    expect(plan.stdout).toContain('overridden at boot by /etc/sysctl.d/99-sysctl.conf, /usr/lib/sysctl.d/k8s.conf for net.core.somaxconn, net.ipv4.conf.eth0/100.forwarding');
    const init = await run(m, 'init');
    expect(init.code).toBe(0);
    expect(readFileSync(join(m.root, 'etc/sysctl.d/90-machineadm.conf'), 'utf8')).toContain('net.core.somaxconn = 1234\n');
    const said = `${init.stdout}${init.stderr}`;
    expect(said).toContain('spec.sysctls["net.core.somaxconn"]: /etc/sysctl.d/99-sysctl.conf is read after /etc/sysctl.d/90-machineadm.conf and sets "4096"');
    expect(said).toContain('spec.sysctls["net.ipv4.conf.eth0/100.forwarding"]: /usr/lib/sysctl.d/k8s.conf is read after');
    // Read before machineadm's file, or the same value: not an override.
    expect(said).not.toContain('spec.sysctls["net.ipv4.ip_forward"]');
  });

  // The file already in place made the step "already done", and the later file went unmentioned on
  // every run after the one that wrote it.
  it('still says so on a later run, its file already in place, when a sysctl.d file read after its own now sets a configured key to another value', async () => {
    const m = machine({ 'net.core.somaxconn': '1234', 'net.ipv4.ip_forward': '1' }, {});
    expect((await run(m, 'init')).code).toBe(0);
    writeFileSync(join(m.root, 'etc/sysctl.d/99-k8s.conf'), 'net.core.somaxconn = 4096\nnet.ipv4.ip_forward = 1\n');
    const plan = await run(m, 'plan', '-o', 'json');
    const planned = (JSON.parse(plan.stdout) as { phases: { steps: { id: string; status: string; reason?: string }[] }[] }).phases.flatMap((p) => p.steps).find((s) => s.id === 'prepare/sysctls/file');
    expect(planned).toMatchObject({ status: 'up-to-date' });
    expect(planned?.reason).toContain('spec.sysctls["net.core.somaxconn"]: /etc/sysctl.d/99-k8s.conf is read after /etc/sysctl.d/90-machineadm.conf and sets "4096"');
    const again = await run(m, 'init');
    expect(again.code).toBe(0);
    const said = `${again.stdout}${again.stderr}`;
    expect(said).toContain('spec.sysctls["net.core.somaxconn"]: /etc/sysctl.d/99-k8s.conf is read after');
    expect(said).not.toContain('spec.sysctls["net.ipv4.ip_forward"]');
    expect(readFileSync(join(m.root, 'etc/sysctl.d/99-k8s.conf'), 'utf8')).toBe('net.core.somaxconn = 4096\nnet.ipv4.ip_forward = 1\n');
  });

  it('writes the file without a warning when no later file sets a configured key', async () => {
    const m = machine({ 'net.core.somaxconn': '1234' }, { '/etc/sysctl.conf': '#net.core.somaxconn = 4096\n', '/usr/lib/sysctl.d/99-protect-links.conf': 'fs.protected_fifos = 1\n' });
    symlinkSync('../sysctl.conf', join(m.root, 'etc/sysctl.d/99-sysctl.conf'));
    const init = await run(m, 'init');
    expect(init.code).toBe(0);
    expect(`${init.stdout}${init.stderr}`).not.toContain('is read after');
    expect(init.stdout).toMatch(/prepare\/sysctls\/file success/);
  });

  // With fewer keys the file was rewritten, but with none the step did not run: the file kept every
  // value, and systemd-sysctl (systemd-modules-load) set them again at the next boot.
  it('removes its file, and the modules-load.d file, once spec.sysctls and spec.kernelModules leave the configuration', async () => {
    const m = machine({ 'net.core.somaxconn': '1234' }, { '/etc/sysctl.d/10-image.conf': 'vm.swappiness = 10\n' });
    const prepare = (spec: Record<string, unknown>) => {
      writeFileSync(m.config, dump({ apiVersion: 'machineadm.cluster.x-k8s.io/v1alpha1', kind: 'MachineConfig', spec }));
      return runCli(['prepare', '-c', m.config, '--root', m.root, '--state-dir', m.state]);
    };
    expect((await prepare({ sysctls: { 'net.core.somaxconn': '1234' }, kernelModules: ['overlay'] })).code).toBe(0);
    expect(existsSync(join(m.root, 'etc/sysctl.d/90-machineadm.conf'))).toBe(true);
    expect(existsSync(join(m.root, 'etc/modules-load.d/machineadm.conf'))).toBe(true);

    const removed = await prepare({});
    expect(removed.code, removed.stderr).toBe(0);
    expect(removed.stdout).toMatch(/prepare\/sysctls\/file success .*delete \/etc\/sysctl.d\/90-machineadm.conf/);
    expect(existsSync(join(m.root, 'etc/sysctl.d/90-machineadm.conf'))).toBe(false);
    expect(existsSync(join(m.root, 'etc/modules-load.d/machineadm.conf'))).toBe(false);
    expect(readFileSync(join(m.root, 'etc/sysctl.d/10-image.conf'), 'utf8')).toBe('vm.swappiness = 10\n');
    const again = await prepare({});
    expect(again.code).toBe(0);
    expect(again.stdout).not.toMatch(/prepare\/(sysctls|kernel-modules)\//);
  });
});
