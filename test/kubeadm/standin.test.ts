// The kubeadm stand-in must refuse what kubeadm refuses (and what kubeadm only warns about), with
// kubeadm's wording, or the renderer's tests prove nothing.
import { describe, expect, it } from 'vitest';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runStandin } from './standin.ts';
import { scratchDir } from '../support/tmp.ts';

const HASH = 'sha256:' + '0f'.repeat(32);
const join4 = (extra = '', nodeRegistration = '') => `apiVersion: kubeadm.k8s.io/v1beta4
kind: JoinConfiguration
discovery:
  bootstrapToken:
    apiServerEndpoint: 10.0.0.10:6443
    token: abcdef.0123456789abcdef
    caCertHashes: ["${HASH}"]
nodeRegistration:
  criSocket: unix:///var/run/containerd/containerd.sock
${nodeRegistration}${extra}`;

function withConfig(config: string, args: string[] = [], env: Record<string, string> = {}) {
  const root = scratchDir('machineadm-standin-');
  mkdirSync(join(root, 'run'), { recursive: true });
  writeFileSync(join(root, 'run/k.yaml'), config);
  const command = /kind: (Init|Cluster)Configuration/.test(config) ? 'init' : 'join';
  return runStandin([command, '--config', '/run/k.yaml', '--rootfs', root, ...args], { KUBEADM_STANDIN_VERSION: 'v1.31.2', ...env });
}

describe('kubeadm stand-in', () => {
  it('answers version -o short with the version the test sets', () => {
    const ran = runStandin(['version', '-o', 'short'], { KUBEADM_STANDIN_VERSION: 'v1.32.4' });
    expect(ran).toMatchObject({ status: 0, stdout: 'v1.32.4\n' });
  });

  it('accepts a correct v1beta4 worker join and prints kubeadm phase lines', () => {
    const ran = withConfig(join4());
    expect(ran.status, ran.stderr).toBe(0);
    expect(ran.stdout).toContain('[preflight] Running pre-flight checks');
    expect(ran.stdout).toContain('[kubelet-start] Starting the kubelet');
  });

  it.each([
    ['an unknown field', join4('', '  foo: bar\n'), 'strict decoding error: unknown field "nodeRegistration.foo"'],
    ['a field with the wrong case', join4('CaCertPath: /etc/kubernetes/pki/ca.crt\n'), 'unknown field "CaCertPath"'],
    ['a v1beta4-only field in a v1beta3 document', join4('timeouts:\n  discovery: 5m0s\n').replace('v1beta4', 'v1beta3'), 'Kind:"JoinConfiguration"}: strict decoding error: unknown field "timeouts"'],
    ['a v1beta3 field in a v1beta4 document', join4().replace('caCertHashes', 'timeout: 5m0s\n    caCertHashes'), 'unknown field "discovery.bootstrapToken.timeout"'],
    ['kubelet flags as a map in v1beta4', join4('', '  kubeletExtraArgs:\n    v: "2"\n'), 'cannot unmarshal object into Go struct field JoinConfiguration.nodeRegistration.kubeletExtraArgs of type []v1beta4.Arg'],
    ['kubelet flags as a list in v1beta3', join4('', '  kubeletExtraArgs:\n    - {name: v, value: "2"}\n').replace('v1beta4', 'v1beta3'), 'cannot unmarshal array into Go struct field JoinConfiguration.nodeRegistration.kubeletExtraArgs of type map[string]string'],
    ['an old API version', join4().replace('v1beta4', 'v1beta2'), 'your configuration file uses an old API spec: "kubeadm.k8s.io/v1beta2"'],
    ['a document without kind', 'apiVersion: kubeadm.k8s.io/v1beta4\n', 'kind and apiVersion is mandatory information that must be specified'],
    ['an apiVersion without group', join4().replace('kubeadm.k8s.io/v1beta4', 'v1'), 'kind and apiVersion is mandatory information'],
    ['a join file without JoinConfiguration', 'apiVersion: kubeadm.k8s.io/v1beta4\nkind: ResetConfiguration\n', 'no JoinConfiguration found in the supplied config'],
    ['a KubeletConfiguration in a join file', join4() + '---\napiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nmaxPods: 10\n', 'skipped by kubeadm join'],
    ['the same kind twice', join4() + '---\n' + join4(), 'kind "JoinConfiguration" is specified twice in YAML file'],
    ['a malformed discovery token', join4().replace('abcdef.0123456789abcdef', 'abcdef0123456789abcdef'), 'discovery.bootstrapToken.token: Invalid value: "abcdef0123456789abcdef": the bootstrap token is invalid'],
    ['token discovery without CA hashes', join4().replace(`    caCertHashes: ["${HASH}"]\n`, ''), 'using token-based discovery without caCertHashes can be unsafe'],
    ['an endpoint without port', join4().replace('10.0.0.10:6443', '10.0.0.10'), 'address 10.0.0.10: missing port in address'],
    ['a certificate key of the wrong size', join4('controlPlane:\n  certificateKey: abcd\n'), 'invalid certificate key size 2, the key must be an AES key of size 32'],
    ['a Windows CRI socket on Linux', join4().replace('unix:///var/run/containerd/containerd.sock', 'npipe:////./pipe/containerd-containerd'), 'only URL scheme "unix" is supported, got "npipe"'],
    ['a CA hash in the wrong format', join4().replace(HASH, 'sha256:abcd'), 'error execution phase preflight: couldn\'t validate the identity of the API Server: invalid discovery token CA certificate hash'],
    ['an unknown KubeletConfiguration field at init', 'apiVersion: kubeadm.k8s.io/v1beta4\nkind: InitConfiguration\n---\napiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nmaxPod: 10\n', 'strict decoding error: unknown field "maxPod"'],
    ['an init for a control plane older than kubeadm supports', 'apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\nkubernetesVersion: v1.28.0\n', 'this version of kubeadm only supports deploying clusters with the control plane version >= 1.30.0'],
    ['a service subnet of more than 2^20 addresses', 'apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\nnetworking:\n  serviceSubnet: 10.0.0.0/8\n', 'networking.serviceSubnet: Invalid value: "10.0.0.0/8": specified service subnet is too large; for 32-bit addresses, the mask must be >= 12'],
    ['an init phase among the phases a join skips', join4('skipPhases: [addon/kube-proxy]\n'), 'invalid phase name: addon/kube-proxy'],
    ['a join phase among the phases an init skips', 'apiVersion: kubeadm.k8s.io/v1beta4\nkind: InitConfiguration\nskipPhases: [control-plane-prepare/download-certs]\n', 'invalid phase name: control-plane-prepare/download-certs'],
    ['a pod subnet smaller than a node range', 'apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\nnetworking:\n  podSubnet: 10.244.0.0/25\n', 'the size of pod subnet with mask 25 is smaller than the size of node subnet with mask 24'],
  ])('rejects %s', (_, config, message) => {
    const ran = withConfig(config);
    expect(ran.status).toBe(1);
    expect(ran.stderr).toContain(message);
    expect(ran.stderr).toContain('To see the stack trace of this error execute with --v=5 or higher');
  });

  it('refuses a control-plane join with neither a certificate key nor the cluster certificates on disk, as kubeadm does', () => {
    const ran = withConfig(join4('controlPlane: {}\n'));
    expect(ran.status).toBe(1);
    expect(ran.stderr).toContain('one or more conditions for hosting a new control plane instance is not satisfied');
    expect(ran.stderr).toContain('/etc/kubernetes/pki/ca.crt: no such file or directory');
  });

  it('rejects v1beta4 on a kubeadm that predates it', () => {
    const ran = withConfig(join4(), [], { KUBEADM_STANDIN_VERSION: 'v1.30.2' });
    expect(ran.status).toBe(1);
    expect(ran.stderr).toContain('no kind "JoinConfiguration" is registered for version "kubeadm.k8s.io/v1beta4"');
  });

  it('warns about v1beta3 from v1.31 on, and goes on', () => {
    const ran = withConfig(join4().replace('v1beta4', 'v1beta3'));
    expect(ran.status, ran.stderr).toBe(0);
    expect(ran.stderr).toContain('your configuration file uses a deprecated API spec: "kubeadm.k8s.io/v1beta3"');
  });

  it.each([
    ['an unknown flag', ['--bogus'], 'unknown flag: --bogus'],
    ['a flag that cannot go with --config', ['--token', 'abcdef.0123456789abcdef'], "can not mix '--config' with arguments [token]"],
    ['an unknown shorthand', ['-x'], "unknown shorthand flag: 'x' in -x"],
  ])('rejects %s as cobra and kubeadm do', (_, args, message) => {
    const ran = withConfig(join4(), args);
    expect(ran.status).toBe(1);
    expect(ran.stderr).toContain(message);
  });

  it.each([
    ['v1.33.1', 'error execution phase kubelet-start: timed out waiting for the condition'],
    ['v1.34.1', 'error: error execution phase kubelet-start: timed out waiting for the condition'],
  ])('fails at a named phase in the error format of %s', (version, line) => {
    const ran = withConfig(join4(), [], { KUBEADM_STANDIN_VERSION: version, KUBEADM_STANDIN_FAIL_PHASE: 'kubelet-start' });
    expect(ran.status).toBe(1);
    expect(ran.stderr.split('\n')[0]).toBe(line);
    expect(ran.stdout).toContain('[kubelet-start] Starting the kubelet');
  });

  it.each([
    ['cgroupsPerQOS false with the default enforceNodeAllocatable', 'cgroupsPerQOS: false\n', 'enforceNodeAllocatable (--enforce-node-allocatable) is not supported unless cgroupsPerQOS'],
    ['a percentage as a reservation', 'systemReserved:\n  memory: 10%\n', 'failed to parse systemReserved'],
    ['an eviction threshold above 100%', 'evictionHard:\n  nodefs.available: 110%\n', 'eviction percentage threshold nodefs.available must be >= 0% and <= 100%'],
  ])('fails kubelet-start when the patched kubelet configuration has %s, as the kubelet would', (_, patch, message) => {
    const root = scratchDir('machineadm-standin-');
    mkdirSync(join(root, 'run/patches'), { recursive: true });
    writeFileSync(join(root, 'run/k.yaml'), join4('patches:\n  directory: /run/patches\n'));
    writeFileSync(join(root, 'run/patches/kubeletconfiguration+merge.yaml'), patch);
    const ran = runStandin(['join', '--config', '/run/k.yaml', '--rootfs', root], { KUBEADM_STANDIN_VERSION: 'v1.31.2' });
    expect(ran.status).toBe(1);
    expect(ran.stderr).toContain('error execution phase kubelet-start: the kubelet refused /var/lib/kubelet/config.yaml: ');
    expect(ran.stderr).toContain(message);
  });

  it('writes the cluster\'s kubelet-config with the kubeletconfiguration patch applied as a merge patch, where null removes a threshold', () => {
    const root = scratchDir('machineadm-standin-');
    mkdirSync(join(root, 'run/patches'), { recursive: true });
    writeFileSync(join(root, 'run/k.yaml'), join4('patches:\n  directory: /run/patches\n'));
    writeFileSync(join(root, 'run/patches/kubeletconfiguration+merge.yaml'), 'evictionHard:\n  memory.available: 500Mi\n  nodefs.inodesFree: null\n');
    const cluster = join(root, 'cluster-kubelet-config.yaml');
    writeFileSync(cluster, 'apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\ncgroupDriver: systemd\nevictionHard:\n  memory.available: 100Mi\n  nodefs.inodesFree: 5%\n  pid.available: 10%\n');
    const ran = runStandin(['join', '--config', '/run/k.yaml', '--rootfs', root], { KUBEADM_STANDIN_VERSION: 'v1.31.2', KUBEADM_STANDIN_CLUSTER_KUBELET_CONFIG: cluster });
    expect(ran.status, ran.stderr).toBe(0);
    const written = JSON.parse(readFileSync(join(root, 'var/lib/kubelet/config.yaml'), 'utf8'));
    expect(written.evictionHard).toEqual({ 'memory.available': '500Mi', 'pid.available': '10%' });
  });

  it('empties the manifests directory on reset -f, also of manifests kubeadm did not write', () => {
    const root = scratchDir('machineadm-standin-');
    mkdirSync(join(root, 'etc/kubernetes/manifests'), { recursive: true });
    writeFileSync(join(root, 'etc/kubernetes/manifests/extra.yaml'), 'apiVersion: v1\nkind: Pod\n');
    expect(runStandin(['reset', '-f', '--rootfs', root], { KUBEADM_STANDIN_VERSION: 'v1.31.2' }).status).toBe(0);
    expect(existsSync(join(root, 'etc/kubernetes/manifests/extra.yaml'))).toBe(false);
  });

  it('refuses to join twice, and joins again after reset -f', () => {
    const root = scratchDir('machineadm-standin-');
    mkdirSync(join(root, 'run'), { recursive: true });
    writeFileSync(join(root, 'run/k.yaml'), join4());
    const env = { KUBEADM_STANDIN_VERSION: 'v1.31.2' };
    const args = ['join', '--config', '/run/k.yaml', '--rootfs', root];
    expect(runStandin(args, env).status).toBe(0);
    const again = runStandin(args, env);
    expect(again.status).toBe(1);
    expect(again.stderr).toContain('[ERROR FileAvailable--etc-kubernetes-kubelet.conf]: /etc/kubernetes/kubelet.conf already exists');
    expect(runStandin(['reset', '-f', '--rootfs', root], env).status).toBe(0);
    expect(runStandin(args, env).status).toBe(0);
  });

  it.each([
    ['v1.33.2', 1],
    ['v1.34.1', 0],
  ])('takes encryptionAlgorithm ECDSA-P384 only from v1.34 (kubeadm %s exits %i)', (version, status) => {
    const config = 'apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\nencryptionAlgorithm: ECDSA-P384\n';
    const ran = withConfig(config, [], { KUBEADM_STANDIN_VERSION: version });
    expect(ran.status).toBe(status);
    if (status !== 0) expect(ran.stderr).toContain('Invalid encryption algorithm "ECDSA-P384". Must be one of [RSA-2048 RSA-3072 RSA-4096 ECDSA-P256]');
  });
});
