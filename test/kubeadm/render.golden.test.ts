// Golden cases for the kubeadm renderer: test/golden/kubeadm/<case>/{input.yaml, facts.json} ->
// expected kubeadm.yaml (and patches/*). UPDATE_GOLDEN=1 rewrites the expectations. Every output
// is also parsed and its key fields checked against the input, and fed to the strict kubeadm
// stand-in of the matching version, so a golden update cannot hide a wrong or unknown field.
import { describe, expect, it } from 'vitest';
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { load, loadAll } from 'js-yaml';
import { parseWith } from '../../src/config/schema/dsl.ts';
import { machineConfigSchema, type MachineConfig } from '../../src/config/schema/index.ts';
import type { Facts } from '../../src/host/index.ts';
import { chooseApi } from '../../src/kubeadm/version.ts';
import { renderKubeadm, WINDOWS_DEFAULT_SYSTEM_RESERVED_MEMORY, type KubeadmSecrets, type RenderedKubeadm } from '../../src/kubeadm/render.ts';
import { REPO, runRendered } from './standin.ts';

const GOLDEN = join(REPO, 'test/golden/kubeadm');
const update = process.env.UPDATE_GOLDEN === '1';
const cases = readdirSync(GOLDEN).filter((name) => existsSync(join(GOLDEN, name, 'input.yaml'))).sort();

type Doc = Record<string, any>;
// Every eviction signal spec.kubernetes.kubelet.evictionHard takes (the kubelet's, pkg/kubelet/eviction/api/types.go).
const KUBELET_EVICTION_SIGNALS = ['memory.available', 'nodefs.available', 'nodefs.inodesFree', 'imagefs.available', 'imagefs.inodesFree', 'containerfs.available', 'containerfs.inodesFree', 'pid.available'];

function loadCase(name: string): { config: MachineConfig; facts: Facts; rendered: RenderedKubeadm } {
  const dir = join(GOLDEN, name);
  const parsed = parseWith(machineConfigSchema, load(readFileSync(join(dir, 'input.yaml'), 'utf8')));
  if (!parsed.value) throw new Error(`${name}/input.yaml is invalid: ${JSON.stringify(parsed.issues)}`);
  const config = parsed.value;
  const facts = JSON.parse(readFileSync(join(dir, 'facts.json'), 'utf8')) as Facts;
  const k = config.spec.kubernetes!;
  const choice = chooseApi(facts.kubeadmVersion, k.version);
  // Literal secrets only in golden inputs.
  const secrets: KubeadmSecrets = {
    ...(typeof k.token === 'string' ? { token: k.token } : {}),
    caCertHashes: (k.caCertHashes ?? []).map(String),
    ...(typeof k.certificateKey === 'string' ? { certificateKey: k.certificateKey } : {}),
  };
  const rendered = renderKubeadm({
    kubernetes: k,
    os: facts.os,
    api: choice.api,
    kubeletPatches: choice.kubeletPatches,
    cgroupDriver: config.spec.containerd?.cgroupDriver ?? 'systemd',
    ...(facts.kubeadmVersion ? { fallbackKubernetesVersion: facts.kubeadmVersion } : {}),
    secrets,
  });
  return { config, facts, rendered };
}

function expectFile(path: string, actual: string): void {
  if (update) {
    mkdirSync(join(path, '..'), { recursive: true });
    writeFileSync(path, actual);
    return;
  }
  expect(existsSync(path), `${path} is missing (run with UPDATE_GOLDEN=1 and review the diff)`).toBe(true);
  expect(actual).toBe(readFileSync(path, 'utf8'));
}

function byKind(config: string): Record<string, Doc> {
  return Object.fromEntries((loadAll(config) as Doc[]).map((d) => [d.kind, d]));
}

function argMap(api: string, value: unknown): Record<string, string> {
  if (api.endsWith('v1beta3')) {
    expect(Array.isArray(value)).toBe(false);
    return (value ?? {}) as Record<string, string>;
  }
  expect(Array.isArray(value ?? [])).toBe(true);
  return Object.fromEntries(((value ?? []) as { name: string; value: string }[]).map((a) => [a.name, a.value]));
}

describe('kubeadm golden cases', () => {
  it('has a case for each role and API version', () => {
    for (const name of ['worker-join-v1beta3', 'worker-join-v1beta4', 'control-plane-join-v1beta3', 'control-plane-join-v1beta4', 'init-v1beta3', 'init-v1beta4']) {
      expect(cases).toContain(name);
    }
  });

  it.each(cases)('%s renders exactly the expected files', (name) => {
    const { rendered } = loadCase(name);
    expectFile(join(GOLDEN, name, 'kubeadm.yaml'), rendered.config);
    const patchDir = join(GOLDEN, name, 'patches');
    if (update) rmSync(patchDir, { recursive: true, force: true });
    for (const patch of rendered.patches) expectFile(join(patchDir, patch.name), patch.content);
    const expectedPatches = existsSync(patchDir) ? readdirSync(patchDir).sort() : [];
    expect(rendered.patches.map((p) => p.name).sort()).toEqual(expectedPatches);
  });

  it.each(cases)('%s means what the input says', (name) => {
    const { config, facts, rendered } = loadCase(name);
    const k = config.spec.kubernetes!;
    const docs = byKind(rendered.config);
    const api = rendered.apiVersion;
    const minor = Number(/^v1\.(\d+)/.exec(facts.kubeadmVersion ?? k.version ?? '')?.[1]);
    expect(api).toBe(minor >= 31 ? 'kubeadm.k8s.io/v1beta4' : 'kubeadm.k8s.io/v1beta3');
    let kubelet: Doc = rendered.command === 'init' ? docs.KubeletConfiguration! : (load(rendered.patches[0]?.content ?? '{}') as Doc);
    let nodeRegistration: Doc;
    if (k.bootstrap === 'join') {
      expect(Object.keys(docs)).toEqual(['JoinConfiguration']);
      const join = docs.JoinConfiguration!;
      expect(join.apiVersion).toBe(api);
      expect(join.discovery.bootstrapToken).toEqual({ apiServerEndpoint: k.controlPlaneEndpoint, token: k.token, caCertHashes: k.caCertHashes });
      expect(join.controlPlane?.certificateKey).toBe(k.role === 'control-plane' ? k.certificateKey : undefined);
      if (rendered.patches.length) expect(join.patches).toEqual({ directory: rendered.patchesDir });
      nodeRegistration = join.nodeRegistration;
    } else {
      expect(Object.keys(docs).sort()).toEqual(['ClusterConfiguration', 'InitConfiguration', 'KubeletConfiguration']);
      const init = docs.InitConfiguration!;
      const cluster = docs.ClusterConfiguration!;
      expect(init.bootstrapTokens[0].token).toBe(k.token);
      expect(init.certificateKey).toBe(k.certificateKey);
      expect(cluster.kubernetesVersion).toBe(k.version);
      expect(cluster.controlPlaneEndpoint).toBe(k.controlPlaneEndpoint);
      expect(cluster.networking).toEqual({ podSubnet: k.podSubnet, serviceSubnet: k.serviceSubnet });
      expect(cluster.apiServer.certSANs).toEqual(k.controlPlane?.apiServer?.certSANs);
      expect(argMap(api, cluster.apiServer.extraArgs)).toEqual(k.controlPlane?.apiServer?.extraArgs);
      expect(docs.KubeletConfiguration!.apiVersion).toBe('kubelet.config.k8s.io/v1beta1');
      nodeRegistration = init.nodeRegistration;
    }
    const extra = argMap(api, nodeRegistration.kubeletExtraArgs);
    if (k.bootstrap === 'join' && minor < 25) {
      // kubeadm before v1.25 cannot patch the kubelet configuration: the settings are kubelet flags.
      expect(rendered.patches).toEqual([]);
      const pairs = (flag: string | undefined, sep: string) => (flag === undefined ? undefined : Object.fromEntries(flag.split(',').map((p) => p.split(sep))));
      kubelet = {
        cgroupDriver: extra['cgroup-driver'],
        maxPods: extra['max-pods'] === undefined ? undefined : Number(extra['max-pods']),
        systemReserved: pairs(extra['system-reserved'], '='),
        kubeReserved: pairs(extra['kube-reserved'], '='),
        evictionHard: pairs(extra['eviction-hard'], '<'),
        providerID: extra['provider-id'],
      };
    }
    for (const [key, value] of Object.entries(k.node?.labels ?? {})) expect(extra['node-labels']?.split(',')).toContain(`${key}=${value}`);
    for (const [key, value] of Object.entries(k.node?.kubeletExtraArgs ?? {})) expect(extra[key]).toBe(value);
    expect(nodeRegistration.name).toBe(k.node?.name);
    // The provider ID is this node's alone: never in init's KubeletConfiguration, which becomes every node's.
    if (k.bootstrap === 'init') {
      expect(extra['provider-id']).toBe(k.node?.providerID);
      expect(kubelet.providerID).toBeUndefined();
    } else {
      expect(kubelet.providerID).toBe(k.node?.providerID);
    }
    if (facts.os === 'windows') {
      expect(nodeRegistration.criSocket).toBe('npipe:////./pipe/containerd-containerd');
      expect(nodeRegistration.taints).toEqual(k.node?.taints ?? [{ key: 'os', value: 'windows', effect: 'NoSchedule' }]);
      expect(kubelet.cgroupsPerQOS).toBe(false);
      expect(kubelet.enforceNodeAllocatable).toEqual([]);
      expect(kubelet.cgroupDriver).toBeUndefined();
      if (!k.kubelet?.systemReserved?.memory && !k.kubelet?.kubeReserved?.memory) expect(kubelet.systemReserved.memory).toBe(WINDOWS_DEFAULT_SYSTEM_RESERVED_MEMORY);
    } else {
      expect(nodeRegistration.criSocket).toBe('unix:///var/run/containerd/containerd.sock');
      // Absent taints leave kubeadm's default; [] means none.
      expect(nodeRegistration.taints).toEqual(k.node?.taints?.map((t) => ({ key: t.key, ...(t.value ? { value: t.value } : {}), effect: t.effect })));
      expect(kubelet.cgroupDriver).toBe(config.spec.containerd?.cgroupDriver ?? 'systemd');
    }
    expect(kubelet.maxPods).toBe(k.kubelet?.maxPods);
    if (k.kubelet?.kubeReserved) expect(kubelet.kubeReserved).toEqual(k.kubelet.kubeReserved);
    if (k.kubelet?.evictionHard && rendered.command === 'join' && rendered.patches.length > 0) {
      // A join's patch is merged into the cluster's thresholds: every signal not given is removed.
      const thresholds = Object.entries(kubelet.evictionHard as Record<string, string | null>);
      expect(Object.fromEntries(thresholds.filter(([, v]) => v !== null))).toEqual(k.kubelet.evictionHard);
      expect(thresholds.filter(([, v]) => v === null).map(([s]) => s).sort()).toEqual(KUBELET_EVICTION_SIGNALS.filter((s) => k.kubelet!.evictionHard![s] === undefined).sort());
    } else if (k.kubelet?.evictionHard) {
      expect(kubelet.evictionHard).toEqual(k.kubelet.evictionHard);
    }
  });

  // Windows output names an npipe socket, which the Linux build of kubeadm rejects; the stand-in is Linux kubeadm.
  it.each(cases.filter((name) => !name.startsWith('windows')))('%s is accepted by the strict kubeadm stand-in of that version', (name) => {
    const { facts, config, rendered } = loadCase(name);
    const version = facts.kubeadmVersion ?? `${config.spec.kubernetes!.version}`;
    const ran = runRendered(rendered, version);
    const { root } = ran;
    expect(ran.stderr).not.toMatch(/error|unknown field/i);
    expect(ran.status).toBe(0);
    const kubeletConfig = JSON.parse(readFileSync(join(root, 'var/lib/kubelet/config.yaml'), 'utf8')) as Doc;
    const k = config.spec.kubernetes!;
    const flags = readFileSync(join(root, 'var/lib/kubelet/kubeadm-flags.env'), 'utf8');
    if (rendered.command === 'init' || rendered.patches.length > 0) {
      if (k.kubelet?.maxPods) expect(kubeletConfig.maxPods).toBe(k.kubelet.maxPods);
      expect(kubeletConfig.cgroupDriver).toBe(config.spec.containerd?.cgroupDriver ?? 'systemd');
    } else {
      if (k.kubelet?.maxPods) expect(flags).toContain(`--max-pods=${k.kubelet.maxPods}`);
      expect(flags).toContain(`--cgroup-driver=${config.spec.containerd?.cgroupDriver ?? 'systemd'}`);
    }
    for (const [key, value] of Object.entries(k.node?.labels ?? {})) expect(flags).toContain(`${key}=${value}`);
    for (const t of k.node?.taints ?? []) expect(flags).toContain(`${t.key}${t.value ? `=${t.value}` : ''}:${t.effect}`);
  });
});
