// Renderer rules that golden files do not show on their own: placeholders for the plan, and the
// combinations it refuses.
import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadAll } from 'js-yaml';
import { parseWith } from '../../src/config/schema/dsl.ts';
import { kubernetesSection } from '../../src/config/schema/kubernetes.ts';
import type { KubernetesSpec } from '../../src/config/schema/index.ts';
import { placeholderSecrets, renderKubeadm } from '../../src/kubeadm/render.ts';
import { ConfigError } from '../../src/errors.ts';
import { chooseApi } from '../../src/kubeadm/version.ts';
import { runRendered } from './standin.ts';

const HASH = 'sha256:' + '0f'.repeat(32);

function spec(value: Record<string, unknown>): KubernetesSpec {
  const parsed = parseWith(kubernetesSection, value);
  if (!parsed.value) throw new Error(JSON.stringify(parsed.issues));
  return parsed.value;
}

const worker = spec({ controlPlaneEndpoint: '10.0.0.10:6443', token: { valueFrom: { file: '/t' } }, caCertHashes: [HASH, { valueFrom: { env: 'H' } }] });

// kubeadm join writes the cluster's kubelet-config (the KubeletConfiguration init uploaded) with
// the patches applied as RFC 7386 merge patches (jsonpatch.MergePatch in kubeadm's util/patches):
// a map in a patch merges into the cluster's key by key, null removes a key.
function mergePatch(target: unknown, patch: unknown): unknown {
  if (patch === null || typeof patch !== 'object' || Array.isArray(patch)) return patch;
  const out: Record<string, unknown> = target !== null && typeof target === 'object' && !Array.isArray(target) ? { ...(target as Record<string, unknown>) } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete out[key];
    else out[key] = mergePatch(out[key], value);
  }
  return out;
}
const linuxInit = spec({ role: 'control-plane', bootstrap: 'init', kubelet: { evictionHard: { 'memory.available': '100Mi', 'nodefs.inodesFree': '5%', 'imagefs.inodesFree': '5%', 'pid.available': '10%' } } });
const clusterKubeletConfig = (loadAll(renderKubeadm({ kubernetes: linuxInit, os: 'linux', api: 'v1beta4', cgroupDriver: 'systemd', secrets: placeholderSecrets(linuxInit, 'x') }).config) as any[]).find((d) => d.kind === 'KubeletConfiguration');
function joinedKubeletConfig(k: KubernetesSpec, os: 'linux' | 'windows'): Record<string, unknown> {
  const rendered = renderKubeadm({ kubernetes: k, os, api: 'v1beta4', cgroupDriver: 'systemd', secrets: placeholderSecrets(k, 'x') });
  return rendered.patches.reduce((config, patch) => mergePatch(config, loadAll(patch.content)[0]), clusterKubeletConfig as unknown) as Record<string, unknown>;
}

describe('renderKubeadm', () => {
  it('renders the plan with a placeholder for every secret, whatever its source', () => {
    const rendered = renderKubeadm({ kubernetes: worker, os: 'linux', api: 'v1beta4', cgroupDriver: 'systemd', secrets: placeholderSecrets(worker, '<redacted>') });
    const [join] = loadAll(rendered.config) as any[];
    expect(join.discovery.bootstrapToken.token).toBe('<redacted>');
    expect(join.discovery.bootstrapToken.caCertHashes).toEqual(['<redacted>', '<redacted>']);
    expect(rendered.config).not.toContain(HASH);
  });

  it('gives the same bytes for the same input', () => {
    const input = { kubernetes: worker, os: 'linux' as const, api: 'v1beta3' as const, cgroupDriver: 'systemd' as const, secrets: { token: 'abcdef.0123456789abcdef', caCertHashes: [HASH, HASH] } };
    expect(renderKubeadm(input)).toEqual(renderKubeadm(structuredClone(input)));
  });

  it('keeps the taints the user gives on Windows instead of the default one', () => {
    const k = spec({ ...worker, node: { taints: [] } });
    const [join] = loadAll(renderKubeadm({ kubernetes: k, os: 'windows', api: 'v1beta4', cgroupDriver: 'systemd', secrets: placeholderSecrets(k, 'x') }).config) as any[];
    expect(join.nodeRegistration.taints).toEqual([]);
  });

  it('keeps a memory reservation the user gives on Windows', () => {
    const k = spec({ ...worker, kubelet: { kubeReserved: { memory: '1Gi' } } });
    const rendered = renderKubeadm({ kubernetes: k, os: 'windows', api: 'v1beta4', cgroupDriver: 'systemd', secrets: placeholderSecrets(k, 'x') });
    expect(rendered.patches[0]!.content).not.toContain('systemReserved');
  });

  describe('eviction thresholds of a Windows worker joining a cluster made by a Linux init', () => {
    const joined = (k: KubernetesSpec) => joinedKubeletConfig(k, 'windows');

    it('leaves the Linux thresholds of the cluster out, so the kubelet takes its Windows defaults', () => {
      expect(clusterKubeletConfig.evictionHard).toHaveProperty(['nodefs.inodesFree']);
      expect(joined(worker).evictionHard).toBeUndefined();
    });

    it('are the ones the Windows worker gives, as a whole', () => {
      const k = spec({ ...worker, kubelet: { evictionHard: { 'memory.available': '500Mi', 'nodefs.available': '10%' } } });
      expect(joined(k).evictionHard).toEqual({ 'memory.available': '500Mi', 'nodefs.available': '10%' });
    });
  });

  describe('eviction thresholds of a Linux worker joining a cluster made by a Linux init', () => {
    it('are the ones the Linux worker gives, as a whole', () => {
      const k = spec({ ...worker, kubelet: { evictionHard: { 'memory.available': '500Mi' } } });
      expect(joinedKubeletConfig(k, 'linux').evictionHard).toEqual({ 'memory.available': '500Mi' });
    });

    it('are the cluster\'s when the Linux worker gives none', () => {
      expect(joinedKubeletConfig(worker, 'linux').evictionHard).toEqual(clusterKubeletConfig.evictionHard);
    });

    it('are the ones the Linux worker gives, as a whole, in the kubelet configuration the kubeadm stand-in writes on join', () => {
      const initRun = runRendered(renderKubeadm({ kubernetes: linuxInit, os: 'linux', api: 'v1beta4', cgroupDriver: 'systemd', secrets: placeholderSecrets(linuxInit, 'abcdef.0123456789abcdef') }), 'v1.31.2');
      expect(initRun.status, initRun.stderr).toBe(0);
      const k = spec({ ...worker, kubelet: { evictionHard: { 'memory.available': '500Mi' } } });
      const secrets = { token: 'abcdef.0123456789abcdef', caCertHashes: [HASH, HASH] };
      const joinRun = runRendered(renderKubeadm({ kubernetes: k, os: 'linux', api: 'v1beta4', cgroupDriver: 'systemd', secrets }), 'v1.31.2', { KUBEADM_STANDIN_CLUSTER_KUBELET_CONFIG: join(initRun.root, 'var/lib/kubelet/config.yaml') });
      expect(joinRun.status, joinRun.stderr).toBe(0);
      expect(JSON.parse(readFileSync(join(joinRun.root, 'var/lib/kubelet/config.yaml'), 'utf8')).evictionHard).toEqual({ 'memory.available': '500Mi' });
    });

    it('are none at all when the Linux worker gives an empty map', () => {
      expect(joinedKubeletConfig(spec({ ...worker, kubelet: { evictionHard: {} } }), 'linux').evictionHard).toEqual({});
    });
  });

  it('writes the thresholds an init gives into its KubeletConfiguration as they are, without null', () => {
    expect(clusterKubeletConfig.evictionHard).toEqual({ 'imagefs.inodesFree': '5%', 'memory.available': '100Mi', 'nodefs.inodesFree': '5%', 'pid.available': '10%' });
  });

  it.each([
    ['a Windows control plane', spec({ ...worker, role: 'control-plane', certificateKey: 'ab'.repeat(32) }), 'Windows machines can only be workers'],
    ['inode eviction signals on Windows', spec({ ...worker, kubelet: { evictionHard: { 'nodefs.inodesFree': '5%' } } }), 'Windows has no inode eviction signals'],
  ])('refuses %s', (_, k, message) => {
    expect(() => renderKubeadm({ kubernetes: k, os: 'windows', api: 'v1beta4', cgroupDriver: 'systemd', secrets: placeholderSecrets(k, 'x') })).toThrow(ConfigError);
    try {
      renderKubeadm({ kubernetes: k, os: 'windows', api: 'v1beta4', cgroupDriver: 'systemd', secrets: placeholderSecrets(k, 'x') });
    } catch (error) {
      expect((error as ConfigError).issues[0]!.message).toBe(message);
    }
  });

  it('refuses the control plane\'s health-check wait on a join for kubeadm before v1.31, whose JoinConfiguration has no place for it, naming the field', () => {
    const k = spec({ ...worker, role: 'control-plane', certificateKey: 'ab'.repeat(32), kubeadmTimeouts: { controlPlaneComponentHealthCheckSeconds: 1200, discoverySeconds: 300 } });
    const render = (api: 'v1beta3' | 'v1beta4') => renderKubeadm({ kubernetes: k, os: 'linux', api, cgroupDriver: 'systemd', secrets: placeholderSecrets(k, 'x') });
    expect((loadAll(render('v1beta4').config) as any[])[0].timeouts).toEqual({ controlPlaneComponentHealthCheck: '0h20m0s', discovery: '0h5m0s' });
    expect(() => render('v1beta3')).toThrow(ConfigError);
    try {
      render('v1beta3');
    } catch (error) {
      expect((error as ConfigError).issues).toEqual([expect.objectContaining({ path: 'spec.kubernetes.kubeadmTimeouts.controlPlaneComponentHealthCheckSeconds', message: expect.stringContaining('v1beta3') })]);
    }
  });

  describe('encryptionAlgorithm ECDSA-P384', () => {
    const init = spec({ role: 'control-plane', bootstrap: 'init', version: 'v1.34.1', controlPlane: { encryptionAlgorithm: 'ECDSA-P384' } });
    const renderFor = (kubeadm: string) => {
      const choice = chooseApi(kubeadm, init.version);
      return renderKubeadm({ kubernetes: init, os: 'linux', api: choice.api, kubeletPatches: choice.kubeletPatches, ...(choice.minor !== undefined ? { kubeadmMinor: choice.minor } : {}), cgroupDriver: 'systemd', secrets: placeholderSecrets(init, 'x') });
    };

    it('is refused for kubeadm v1.31 to v1.33, naming the field', () => {
      expect(() => renderFor('v1.33.2')).toThrow(ConfigError);
      try {
        renderFor('v1.33.2');
      } catch (error) {
        expect((error as ConfigError).issues).toEqual([expect.objectContaining({ path: 'spec.kubernetes.controlPlane.encryptionAlgorithm', message: expect.stringContaining('needs kubeadm v1.34 or newer') })]);
      }
    });

    it('is written for kubeadm v1.34, which takes it', () => {
      const rendered = renderFor('v1.34.1');
      expect(rendered.config).toContain('encryptionAlgorithm: ECDSA-P384');
      expect(runRendered(rendered, 'v1.34.1')).toMatchObject({ status: 0 });
    });
  });
});

describe('spec.kubernetes.verbosity', () => {
  it('is refused above 6, where kubeadm prints API request headers and bodies that carry the bootstrap token', () => {
    const base = { controlPlaneEndpoint: '10.0.0.10:6443', token: { valueFrom: { file: '/t' } }, caCertHashes: [HASH] };
    expect(parseWith(kubernetesSection, { ...base, verbosity: 6 }).value?.verbosity).toBe(6);
    const refused = parseWith(kubernetesSection, { ...base, verbosity: 8 });
    expect(refused.value).toBeUndefined();
    expect(refused.issues.map((i) => `${i.path.join('.')}: ${i.message}`)).toEqual(['verbosity: must be at most 6']);
  });
});
