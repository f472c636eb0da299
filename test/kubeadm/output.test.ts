// Reading kubeadm's output: the failing phase, what is worth a retry, and scrubbing printed credentials.
import { describe, expect, it } from 'vitest';
import { isTransient, parseKubeadmFailure, scrubKubeadmOutput } from '../../src/kubeadm/output.ts';
import { chooseApi } from '../../src/kubeadm/version.ts';

const lines = (text: string) => text.split('\n');

describe('parseKubeadmFailure', () => {
  it.each([
    ['a v1.34+ error line', '[preflight] Running pre-flight checks\n[kubelet-start] Starting the kubelet\nerror: error execution phase kubelet-start: timed out waiting for the condition\nTo see the stack trace of this error execute with --v=5 or higher', 'kubelet-start', 'error'],
    ['a <= v1.33 error line', '[preflight] Running pre-flight checks\nerror execution phase preflight: [preflight] Some fatal errors occurred:\n\t[ERROR NumCPU]: the number of available CPUs 1 is less than the required 2', 'preflight', 'error'],
    ['a nested phase path', '[certs] Using certificateDir folder\nerror execution phase control-plane-prepare/certs: boom', 'control-plane-prepare/certs', 'error'],
    ['only progress lines (killed by the timeout)', '[preflight] Running pre-flight checks\n[kubelet-start] Starting the kubelet\n[kubelet-check] Waiting for a healthy kubelet', 'kubelet-check', 'progress'],
    ['a configuration error before any phase', 'error unmarshaling configuration schema.GroupVersionKind{Group:"kubeadm.k8s.io", Version:"v1beta4", Kind:"JoinConfiguration"}: strict decoding error: unknown field "foo"\nTo see the stack trace of this error execute with --v=5 or higher', undefined, undefined],
  ])('finds the phase in %s', (_, output, phase, source) => {
    const failure = parseKubeadmFailure(lines(output));
    expect(failure.phase).toBe(phase);
    expect(failure.phaseSource).toBe(source);
  });

  it('keeps the error message without the "error: " prefix', () => {
    expect(parseKubeadmFailure(['error: error execution phase preflight: x']).message).toBe('error execution phase preflight: x');
  });
});

describe('isTransient', () => {
  it.each([
    ['the kubelet did not come up', 'error execution phase kubelet-start: timed out waiting for the condition', true],
    ['the API server refused the connection', 'error execution phase preflight: couldn\'t validate the identity of the API Server: Get "https://10.0.0.10:6443/...": dial tcp 10.0.0.10:6443: connect: connection refused', true],
    ['discovery gave up after its timeout', 'error execution phase preflight: couldn\'t validate the identity of the API Server: abort connecting to API servers after timeout of 5m0s', true],
    ['a token the cluster does not know', 'error execution phase preflight: couldn\'t validate the identity of the API Server: could not find a JWS signature in the cluster-info ConfigMap for token ID "abcdef"', false],
    ['a CA hash that does not match', 'error execution phase preflight: couldn\'t validate the identity of the API Server: invalid discovery token CA certificate hash: invalid hash "sha256:ab", expected a 32 byte SHA-256 hash, found 1 bytes', false],
    ['a failed preflight check', 'error execution phase preflight: [preflight] Some fatal errors occurred:\n\t[ERROR FileAvailable--etc-kubernetes-kubelet.conf]: /etc/kubernetes/kubelet.conf already exists', false],
    ['a configuration kubeadm refuses', 'discovery.bootstrapToken.token: Invalid value: "x": the bootstrap token is invalid', false],
    ['a node name another Ready node has (kubelet-start, yet the same every time)', 'error execution phase kubelet-start: a Node with name "worker-1" and status "Ready" already exists in the cluster. You must delete the existing Node or change the name of this new joining Node', false],
  ])('%s -> %s', (_, output, expected) => {
    const out = lines(output);
    expect(isTransient(parseKubeadmFailure(out), out, false)).toBe(expected);
  });

  it('treats machineadm\'s own timeout as transient', () => {
    const out = ['[kubelet-check] Waiting for a healthy kubelet'];
    expect(isTransient(parseKubeadmFailure(out), out, true)).toBe(true);
  });
});

describe('scrubKubeadmOutput', () => {
  it.each([
    ['the join command init prints', 'kubeadm join cp:6443 --token abcdef.0123456789abcdef \\', 'kubeadm join cp:6443 --token <redacted> \\'],
    ['the CA hash', '\t--discovery-token-ca-cert-hash sha256:' + 'ab'.repeat(32), '\t--discovery-token-ca-cert-hash sha256:<redacted>'],
    ['the certificate key on a line of its own', 'cd'.repeat(32), '<redacted>'],
    ['a known secret of another shape', 'using s3cr3t-value here', 'using <redacted> here'],
    ['an ordinary line', '[kubelet-start] Starting the kubelet', '[kubelet-start] Starting the kubelet'],
  ])('removes %s', (_, line, expected) => {
    expect(scrubKubeadmOutput(line, ['s3cr3t-value'])).toBe(expected);
  });
});

describe('chooseApi', () => {
  it.each([
    ['v1.31.0', undefined, 'kubeadm.k8s.io/v1beta4', 'kubeadm v1.31.0'],
    ['v1.30.14', 'v1.31.2', 'kubeadm.k8s.io/v1beta3', 'kubeadm v1.30.14'],
    ['v1.35.1', undefined, 'kubeadm.k8s.io/v1beta4', 'kubeadm v1.35.1'],
    [undefined, 'v1.30.4', 'kubeadm.k8s.io/v1beta3', 'spec.kubernetes.version v1.30.4'],
    [undefined, '1.32', 'kubeadm.k8s.io/v1beta4', 'spec.kubernetes.version 1.32'],
    [undefined, undefined, 'kubeadm.k8s.io/v1beta4', 'default (no kubeadm installed and no spec.kubernetes.version)'],
  ])('kubeadm %s, spec version %s -> %s', (kubeadm, spec, apiVersion, basedOn) => {
    expect(chooseApi(kubeadm, spec)).toMatchObject({ apiVersion, basedOn });
  });

  it('refuses a kubeadm older than v1beta3', () => {
    expect(() => chooseApi('v1.21.3', undefined)).toThrow(/older than v1.22/);
  });
});
