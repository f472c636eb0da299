// The pure parts of the Linux steps: sysctl key rules and file, modules-load file, built-in module
// lists, content decoding, file path rules and plan diffs.
import { describe, expect, it } from 'vitest';
import { gzipSync } from 'node:zlib';
import { normalizeSysctlValue, procPath, renderSysctlFile, sameSysctlValue, sysctlKeyProblem } from '../../src/config/schema/sysctl-key.ts';
import { builtinModules, moduleEvidence, renderModulesFile } from '../../src/linux/modules.ts';
import { decodeContent, filePathProblem } from '../../src/config/schema/file-content.ts';
import { redactSecrets, unifiedDiff } from '../../src/engine/diff.ts';

describe('sysctl keys', () => {
  it.each([
    ['net.ipv4.ip_forward', undefined],
    ['net.bridge.bridge-nf-call-iptables', undefined],
    ['net/ipv4/ip_forward', 'has "/" before its first "."'],
    ['net.ipv4.conf.eth0/100.forwarding', undefined],
    ['net.ipv4.conf./eth0.forwarding', 'has an empty part'],
    ['net.ipv4.conf.eth0/.forwarding', 'has an empty part'],
    ['net.ipv4..ip_forward', 'contains ".."'],
    ['net.ipv4.ip_forward.', 'has an empty part'],
    ['net.ipv4 .x', 'contains a space'],
    ['kernel', 'has only one part'],
    ['', 'the key is empty'],
  ])('%j -> %s', (key, problem) => {
    expect(sysctlKeyProblem(key)).toBe(problem);
  });

  it('maps a key to its /proc/sys file and compares multi-value settings by words', () => {
    expect(procPath('net.ipv4.conf.all.rp_filter')).toBe('/proc/sys/net/ipv4/conf/all/rp_filter');
    // As sysctl(8) and sysctl.d(5) read it: "/" stands for a dot inside a name (the VLAN eth0.100).
    expect(procPath('net.ipv4.conf.eth0/100.forwarding')).toBe('/proc/sys/net/ipv4/conf/eth0.100/forwarding');
    expect(normalizeSysctlValue('32768\t60999\n')).toBe(normalizeSysctlValue('32768 60999'));
  });

  it.each([
    ['0x400', '1024', true],
    ['010', '8', true],
    ['-1', '-1', true],
    ['0100000 60999', '32768\t60999', true],
    ['30010,30000-30005,30006', '30000-30006,30010', true],
    ['1-3,2-5', '1-5', true],
    ['1024', '1025', false],
    ['08', '8', false],
    ['30000-30005', '30000-30006', false],
    ['30000,30002', '30000-30002', false],
    ['cubic', 'reno', false],
  ])('configured %j, read back from the kernel as %j, is the same value: %s', (want, kernel, same) => {
    expect(sameSysctlValue(want, kernel)).toBe(same);
  });

  it('writes keys sorted, one per line', () => {
    expect(renderSysctlFile({ 'net.ipv4.ip_forward': '1', 'kernel.pid_max': '4194304' }).split('\n').slice(1)).toEqual(['kernel.pid_max = 4194304', 'net.ipv4.ip_forward = 1', '']);
  });
});

describe('kernel modules', () => {
  it('lists the modules one per line after a header', () => {
    expect(renderModulesFile(['overlay', 'br_netfilter'])).toMatch(/^# .*\noverlay\nbr_netfilter\n$/);
  });
  it('reads modules.builtin and knows the files built-in modules without parameters create', () => {
    expect([...builtinModules('kernel/net/bridge/br_netfilter.ko\nkernel/fs/overlayfs/overlay.ko.xz\n')]).toEqual(['br_netfilter', 'overlay']);
    expect(moduleEvidence('br_netfilter')).toContain('/proc/sys/net/bridge/bridge-nf-call-iptables');
    expect(moduleEvidence('nf-conntrack')[0]).toBe('/sys/module/nf_conntrack');
  });
});

describe('file content and paths', () => {
  it.each([
    ['plain', 'héllo\n', Buffer.from('héllo\n')],
    ['base64', Buffer.from([0, 255, 1]).toString('base64'), Buffer.from([0, 255, 1])],
    ['gzip+base64', gzipSync('zipped').toString('base64'), Buffer.from('zipped')],
  ] as const)('decodes %s content', (encoding, content, bytes) => {
    const decoded = decodeContent(content, encoding);
    expect('bytes' in decoded && decoded.bytes.equals(bytes)).toBe(true);
  });

  it.each([
    ['/etc/motd', undefined],
    ['etc/motd', 'not absolute'],
    ['/etc/../root/.ssh/authorized_keys', 'contains ".."'],
    ['/etc/./motd', 'contains "."'],
    ['/etc/', 'ends with "/"'],
    ['/etc/a\0b', 'NUL'],
  ])('path %j -> %s', (path, problem) => {
    const found = filePathProblem(path);
    if (problem === undefined) expect(found).toBeUndefined();
    else expect(found).toContain(problem);
  });
});

describe('plan diffs', () => {
  it('shows a short unified diff with context', () => {
    const before = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'].join('\n') + '\n';
    const after = ['a', 'b', 'c', 'd', 'E', 'f', 'g', 'h'].join('\n') + '\n';
    expect(unifiedDiff(before, after, { label: '/etc/x' })).toBe(['--- /etc/x', '+++ /etc/x', '@@ -2,7 +2,7 @@', ' b', ' c', ' d', '-e', '+E', ' f', ' g', ' h', ''].join('\n'));
  });

  it('is empty for equal texts and a creation for a new file', () => {
    expect(unifiedDiff('x\n', 'x\n')).toBe('');
    expect(unifiedDiff('', 'x\n', { label: '/new' })).toBe('--- /dev/null\n+++ /new\n@@ -0,0 +1,1 @@\n+x\n');
  });

  it('cuts long diffs and says how much it left out', () => {
    const after = Array.from({ length: 100 }, (_, i) => `line ${i}`).join('\n') + '\n';
    const diff = unifiedDiff('', after, { maxLines: 10 });
    expect(diff.split('\n')).toHaveLength(12);
    expect(diff).toContain('... 93 more diff lines');
  });

  it.each([
    ['password = hunter2', 'password = <redacted>'],
    ['  bearerToken: abc.def', '  bearerToken: <redacted>'],
    ['Environment="HTTPS_PROXY=http://user:s3cret@proxy:3128"', 'Environment="HTTPS_PROXY=http://user:<redacted>@proxy:3128"'],
    ['sandbox_image = "registry.k8s.io/pause:3.10"', 'sandbox_image = "registry.k8s.io/pause:3.10"'],
    ['  auth = "dXNlcjpodW50ZXIy"', '  auth = <redacted>'],
    ['authorization: {mode: Webhook}', 'authorization: {mode: Webhook}'],
    ['Environment="HTTPS_PROXY=http://ghp_tokenAsUser@proxy:3128"', 'Environment="HTTPS_PROXY=http://<redacted>@proxy:3128"'],
    ['url: https://user:p@ss@proxy.example/x@y', 'url: https://user:<redacted>@proxy.example/x@y'],
  ])('redacts %j', (line, shown) => {
    expect(redactSecrets(line)).toBe(shown);
  });
});
