// spec.windows: defaults, and each bad value named by its field with what to do.
import { describe, expect, it } from 'vitest';
import { formatPath, parseWith } from '../../src/config/schema/dsl.ts';
import { machineConfigJsonSchema, machineConfigSchema } from '../../src/config/schema/index.ts';
import { allFields } from '../../src/config/schema/fields.ts';
import { unsupportedBuild } from '../../src/windows/build.ts';

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
    // What reaches a command line or a script must not break it.
    ['a line break in a path', { kubeletPath: 'C:\\k\r\n\\kubelet.exe' }, /kubeletPath: "C:\\\\k\\r\\n\\\\kubelet\.exe" contains a control character/],
    ['a NUL in an install path', { hostAgents: [{ ...agent, installPath: 'C:\\k\\csi\0proxy.exe' }] }, /hostAgents\[0\]\.installPath: .* contains a control character \(a line break, a tab or NUL\)/],
    ['a NUL in an agent\'s argument', { hostAgents: [{ ...agent, args: ['-v=2', 'a\0b'] }] }, /hostAgents\[0\]\.args\[1\]: "a\\u0000b" holds a line break or NUL/],
    ['a line break in an agent\'s argument', { hostAgents: [{ ...agent, args: ['-v=2\n-x'] }] }, /hostAgents\[0\]\.args\[0\]: .* holds a line break or NUL/],
    ['a line break in an agent\'s display name', { hostAgents: [{ ...agent, displayName: 'CSI\r\nProxy' }] }, /hostAgents\[0\]\.displayName: .* holds a control character/],
    ['a NUL in an agent\'s name', { hostAgents: [{ ...agent, name: 'csi\0proxy' }] }, /hostAgents\[0\]\.name: .* is not valid/],
    // A binary SYSTEM runs, where another user could replace it: nowhere machineadm cannot lock.
    ['an agent in a drive root', { hostAgents: [{ ...agent, installPath: 'C:\\csi-proxy.exe' }] }, /hostAgents\[0\]\.installPath: "C:\\\\csi-proxy\.exe" is in C:\\, a folder of Windows' own that other users may write into/],
    ['an agent in C:\\Windows\\Temp', { hostAgents: [{ ...agent, installPath: 'C:\\Windows\\Temp\\csi-proxy.exe' }] }, /hostAgents\[0\]\.installPath: .* is in C:\\Windows\\Temp, a folder of Windows' own/],
    ['an agent in C:\\Users\\Public', { hostAgents: [{ ...agent, installPath: 'c:\\users\\public\\csi-proxy.exe' }] }, /hostAgents\[0\]\.installPath: .* is in c:\\users\\public, a folder of Windows' own/],
    ['an agent in C:\\ProgramData', { hostAgents: [{ ...agent, installPath: 'C:\\ProgramData\\csi-proxy.exe' }] }, /is in C:\\ProgramData, a folder of Windows' own/],
    ['the kubelet in a drive root', { kubeletPath: 'D:\\kubelet.exe' }, /kubeletPath: .* is in D:\\, a folder of Windows' own/],
    // Names Windows reads as another folder than they show, so the folder machineadm locks (and
    // resets with icacls /T) would be the drive root or one of Windows' own.
    ['a "." segment (C:\\. is the drive root)', { kubeletPath: 'C:\\.\\kubelet.exe' }, /kubeletPath: "C:\\\\\.\\\\kubelet\.exe" has a "\." segment/],
    ['a folder name ending in a dot (C:\\Windows. is C:\\Windows)', { hostAgents: [{ ...agent, installPath: 'C:\\Windows.\\csi-proxy.exe' }] }, /hostAgents\[0\]\.installPath: .* has a segment ending in a dot or a space \("Windows\."\)/],
    ['a folder name ending in a space', { kubeletPath: 'C:\\Program Files \\kubelet.exe' }, /kubeletPath: .* has a segment ending in a dot or a space \("Program Files "\)/],
    ['an empty segment (C:\\\\Windows is C:\\Windows)', { containerdPath: 'C:\\\\Windows\\containerd.exe' }, /containerdPath: .* has an empty segment/],
    ['a forward slash (C:\\Windows/Temp is C:\\Windows\\Temp)', { kubeletPath: 'C:\\Windows/Temp\\kubelet.exe' }, /kubeletPath: .* has a "\/", which Windows reads as a "\\"/],
    ['an 8.3 short name (PROGRA~1 is Program Files)', { containerdPath: 'C:\\PROGRA~1\\containerd.exe' }, /containerdPath: .* has a short \(8\.3\) name \("PROGRA~1"\)/],
  ])('refuses %s', (_what, windows, message) => {
    expect(issues(windows).join('\n')).toMatch(message);
  });

  it('takes a binary in a folder of its own, also below Program Files', () => {
    expect(issues({ kubeletPath: 'C:\\Program Files\\kubernetes\\kubelet.exe', hostAgents: [{ ...agent, installPath: 'D:\\agents\\csi\\csi-proxy.exe' }] })).toEqual([]);
  });
});

describe('spec.windows.supportedBuilds as explain and the API reference describe it', () => {
  it('names the builds of the container images, which a host of a later build also runs, not the builds of the machines', () => {
    const field = allFields(machineConfigJsonSchema()).find((f) => f.path === 'spec.windows.supportedBuilds')!;
    // A build 26100 machine is accepted for [20348] (test/windows/windows-run.test.ts), so the
    // field cannot promise that a machine of another build stops.
    expect(unsupportedBuild('26100', [20348])).toBeUndefined();
    expect(field.description).toMatch(/container images/);
    expect(field.description).not.toMatch(/a machine of another build stops/);
  });
});

describe('spec.domainJoin.windows.offlineBlob.file', () => {
  it.each([
    ['a quote', 'C:\\machineadm\\odj".txt', /contains a character Windows does not allow in a path/],
    ['a line break', 'C:\\machineadm\\odj\r\n.txt', /contains a control character/],
    ['a Linux path', '/etc/odj.txt', /is not an absolute Windows path/],
  ])('refuses %s', (_what, file, message) => {
    const { issues } = parseWith(machineConfigSchema, { apiVersion: 'machineadm.cluster.x-k8s.io/v1alpha1', kind: 'MachineConfig', spec: { domainJoin: { domain: 'corp.example', windows: { offlineBlob: { file } } } } });
    expect(issues.map((i) => `${formatPath(i.path)}: ${i.message}`).join('\n')).toMatch(new RegExp(`domainJoin\\.windows\\.offlineBlob\\.file: .*${message.source}`));
  });
});
