// containerd's Windows configuration from the same renderer as Linux, checked against the values
// containerd documents for Windows (defaults_windows.go, config_windows.go, docs/hosts.md), and
// every field of spec.containerd accounted for on Windows: used, refused or said to be ignored.
import { parse } from '@iarna/toml';
import { describe, expect, it } from 'vitest';
import { renderContainerdFiles } from '../../src/containerd/files.ts';
import { containerdSection } from '../../src/config/schema/containerd.ts';
import { windowsContainerdConfigStep, IGNORED_ON_WINDOWS } from '../../src/windows/steps/containerd-config.ts';
import { createHost, type Facts } from '../../src/host/index.ts';
import type { StepContext } from '../../src/engine/step.ts';
import { configFrom } from '../report/harness.ts';

const facts: Facts = { os: 'windows', arch: 'x64', hostname: 'WIN-NODE1', privileged: true, liveRoot: true, windowsBuild: '20348' };

function ctxFor(containerd: Record<string, unknown>): StepContext {
  const config = configFrom({ containerd });
  return { config, facts, host: createHost({ facts, env: {} }), options: { dryRun: true, force: false }, previous: undefined, run: { runId: 'r', command: 'plan', failed: false, phases: [] }, recordOf: () => undefined } as unknown as StepContext;
}

type Toml = Record<string, any>;

describe('containerd on Windows', () => {
  it.each([
    ['1.7.20', 2, 'io.containerd.grpc.v1.cri', 'bin_dir', 'C:\\opt\\cni\\bin'],
    ['2.0.5', 3, 'io.containerd.cri.v1.runtime', 'bin_dir', 'C:\\opt\\cni\\bin'],
    ['2.1.4', 3, 'io.containerd.cri.v1.runtime', 'bin_dirs', ['C:\\opt\\cni\\bin']],
  ])('for containerd %s writes config version %i with the runhcs runtime, the named pipe and the Windows CNI paths', (version, configVersion, runtimePlugin, binKey, binValue) => {
    const files = renderContainerdFiles({ version, sandboxImage: 'registry.k8s.io/pause:3.10' }, { os: 'windows' });
    expect(files.config.path).toBe('C:\\Program Files\\containerd\\config.toml');
    const toml = parse(files.config.content) as Toml;
    expect(toml.version).toBe(configVersion);
    expect(toml.grpc.address).toBe('\\\\.\\pipe\\containerd-containerd');
    const runtime = toml.plugins[runtimePlugin];
    expect(runtime.containerd.default_runtime_name).toBe('runhcs-wcow-process');
    expect(runtime.containerd.runtimes['runhcs-wcow-process'].runtime_type).toBe('io.containerd.runhcs.v1');
    expect(runtime.cni).toEqual({ [binKey]: binValue, conf_dir: 'C:\\etc\\cni\\net.d' });
    expect(files.config.content).not.toMatch(/runc|SystemdCgroup/);
    const images = configVersion === 2 ? toml.plugins['io.containerd.grpc.v1.cri'] : toml.plugins['io.containerd.cri.v1.images'];
    expect(images.registry.config_path).toBe('C:\\Program Files\\containerd\\certs.d');
    expect(configVersion === 2 ? images.sandbox_image : images.pinned_images.sandbox).toBe('registry.k8s.io/pause:3.10');
  });

  it('names a registry with a port host_port_ (a colon cannot be in a Windows file name) and points hosts.toml at the CA bundle', () => {
    const files = renderContainerdFiles({ registries: { 'reg.internal:5000': { mirrors: [{ url: 'https://mirror.internal' }] } }, caCertificates: [] }, { os: 'windows' });
    expect(files.hosts.map((h) => h.path)).toEqual(['C:\\Program Files\\containerd\\certs.d\\reg.internal_5000_\\hosts.toml']);
  });

  it('accounts for every field of spec.containerd: each is used, refused or said to be ignored', async () => {
    const fields = Object.keys((containerdSection.json() as { properties: Record<string, unknown> }).properties).sort();
    const handled: Record<string, string> = {
      version: 'config version', sandboxImage: 'config.toml', registries: 'certs.d', caCertificates: 'CA bundle', extraConfig: 'merged',
      proxy: 'refused', cgroupDriver: 'ignored',
    };
    expect(fields).toEqual(Object.keys(handled).sort());
    // extraConfig is merged into the Windows file, caCertificates become the bundle every hosts.toml names.
    const merged = renderContainerdFiles({ extraConfig: '[plugins."io.containerd.grpc.v1.cri"]\nmax_container_log_line_size = 32768\n' }, { os: 'windows', containerdVersion: '1.7.20' });
    expect(merged.config.content).toContain('max_container_log_line_size = 32768');
    await expect(windowsContainerdConfigStep.preflight!(ctxFor({ proxy: { httpsProxy: 'http://proxy.internal:3128' } }))).rejects.toThrow(/spec\.containerd\.proxy: is not supported on Windows/);
    const check = await windowsContainerdConfigStep.check(ctxFor({ cgroupDriver: 'systemd' }));
    expect(check.changes[0]!.detail).toContain(IGNORED_ON_WINDOWS);
  });
});
