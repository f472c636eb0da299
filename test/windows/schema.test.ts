// spec.windows: defaults, and each bad value named by its field with what to do.
import { describe, expect, it } from 'vitest';
import { formatPath, parseWith } from '../../src/config/schema/dsl.ts';
import { machineConfigSchema } from '../../src/config/schema/index.ts';

const agent = { name: 'csiproxy', source: { url: 'https://a.internal/csi-proxy.exe', sha256: 'a'.repeat(64) }, installPath: 'C:\\k\\csi-proxy.exe' };

function issues(windows: unknown) {
  const { issues } = parseWith(machineConfigSchema, { apiVersion: 'machineadm.cluster.x-k8s.io/v1alpha1', kind: 'MachineConfig', spec: { windows } });
  return issues.map((i) => `${formatPath(i.path)}: ${i.message}`);
}

describe('spec.windows', () => {
  it('defaults the binary paths and an agent\'s arguments', () => {
    const { value } = parseWith(machineConfigSchema, { apiVersion: 'machineadm.cluster.x-k8s.io/v1alpha1', kind: 'MachineConfig', spec: { windows: { hostAgents: [agent] } } });
    expect(value!.spec.windows).toMatchObject({ kubeletPath: 'C:\\k\\kubelet.exe', containerdPath: 'C:\\Program Files\\containerd\\containerd.exe', hostAgents: [{ args: [], kubeletDependsOn: false }] });
  });

  it.each([
    ['a relative install path', { hostAgents: [{ ...agent, installPath: 'csi-proxy.exe' }] }, /hostAgents\[0\]\.installPath: "csi-proxy.exe" is not an absolute Windows path/],
    ['a path with ..', { kubeletPath: 'C:\\k\\..\\kubelet.exe' }, /kubeletPath: .* contains "\.\."/],
    ['a source without sha256 or signature', { hostAgents: [{ ...agent, source: { url: 'https://a.internal/x.exe' } }] }, /hostAgents\[0\]\.source: give sha256, signature, or both/],
    ['an agent named like machineadm\'s own service', { hostAgents: [{ ...agent, name: 'Kubelet' }] }, /hostAgents\[0\]\.name: "Kubelet" is the name of a service machineadm registers itself/],
    ['two agents differing only in case', { hostAgents: [agent, { ...agent, name: 'CSIProxy' }] }, /hostAgents\[1\]\.name: the same service name as hostAgents\[0\]/],
    ['a service name with a wildcard', { hostAgents: [{ ...agent, name: 'csi*' }] }, /hostAgents\[0\]\.name: .* is not valid/],
    ['a build that is not a number', { supportedBuilds: ['ltsc2022'] }, /supportedBuilds\[0\]/],
  ])('refuses %s', (_what, windows, message) => {
    expect(issues(windows).join('\n')).toMatch(message);
  });
});
