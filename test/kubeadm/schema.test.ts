// spec.kubernetes validation: input kubeadm or Kubernetes would refuse fails at validation time,
// before anything runs, with the field path; secrets are never echoed.
import { describe, expect, it } from 'vitest';
import { parseWith, formatPath } from '../../src/config/schema/dsl.ts';
import { kubernetesSection } from '../../src/config/schema/kubernetes.ts';

const TOKEN = 'abcdef.0123456789abcdef';
const HASH = 'sha256:' + '0f'.repeat(32);
const KEY = 'ab'.repeat(32);
const worker = { controlPlaneEndpoint: '10.0.0.10:6443', token: TOKEN, caCertHashes: [HASH] };

function issues(value: Record<string, unknown>): string[] {
  return parseWith(kubernetesSection, value).issues.map((i) => `${formatPath(i.path)}: ${i.message}${i.hint ? ` (${i.hint})` : ""}`);
}

describe('spec.kubernetes.version', () => {
  it.each(['v1.31.2', '1.31', 'v1.22.0', 'v1.37.0-rc.1', 'v1.37.0-alpha.3', 'v1.37.0-beta.0'])('accepts %s for a join', (version) => {
    expect(issues({ ...worker, version })).toEqual([]);
  });

  it.each(['v1.31.2', 'v1.37.0-rc.1', 'v1.37.0-alpha.1'])('accepts %s for an init, which deploys it exactly', (version) => {
    expect(issues({ role: 'control-plane', bootstrap: 'init', version })).toEqual([]);
  });

  it.each([
    ['ci/latest', 'version: "ci/latest" is a CI build, not a Kubernetes release: give a release such as v1.31.2 (or a pre-release such as v1.37.0-rc.1)'],
    ['ci-cross/latest-1.37', 'version: "ci-cross/latest-1.37" is a CI build, not a Kubernetes release: give a release such as v1.31.2 (or a pre-release such as v1.37.0-rc.1)'],
    ['v1.20.0', 'version: v1.20.0 is older than v1.22, the oldest kubeadm machineadm can configure'],
    ['v2.0.0', 'version: v2.0.0 is older than v1.22, the oldest kubeadm machineadm can configure'],
    ['v1.37.0-rc', 'version: "v1.37.0-rc" is not a Kubernetes version: give one such as v1.31.2 (pre-releases such as v1.37.0-rc.1 too)'],
    ['v1.37.0-gamma.1', 'version: "v1.37.0-gamma.1" is not a Kubernetes version: give one such as v1.31.2 (pre-releases such as v1.37.0-rc.1 too)'],
    ['latest', 'version: "latest" is not a Kubernetes version: give one such as v1.31.2 (pre-releases such as v1.37.0-rc.1 too)'],
  ])('refuses %s, saying why', (version, message) => {
    expect(issues({ ...worker, version })).toEqual([message]);
  });

  it('wants an exact version for an init', () => {
    expect(issues({ role: 'control-plane', bootstrap: 'init', version: 'v1.37' })).toEqual(['version: init deploys an exact version: give major.minor.patch, e.g. v1.31.2 (or a pre-release such as v1.37.0-rc.1)']);
  });
});

describe('spec.kubernetes validation', () => {
  it.each([
    ['a worker join', worker],
    ['a control-plane join with a certificate key', { ...worker, role: 'control-plane', certificateKey: KEY }],
    ['an init with subnets and SANs', { role: 'control-plane', bootstrap: 'init', version: 'v1.31.2', podSubnet: '10.244.0.0/16,fd00:10:244::/56', controlPlane: { apiServer: { certSANs: ['cp.example.com', '*.cp.example.com', '10.0.0.10'] } } }],
    ['a control-plane join that brings the certificates as files (no certificate key)', { ...worker, role: 'control-plane' }],
    ['the largest and smallest subnets kubeadm takes', { role: 'control-plane', bootstrap: 'init', podSubnet: '10.0.0.0/8,fd00:10:244::/64', serviceSubnet: '10.96.0.0/12,fd00:10:96::/108' }],
    ['quantities with every kind of suffix and eviction percentages', { ...worker, kubelet: { systemReserved: { cpu: '500m', memory: '1.5Gi', 'ephemeral-storage': '1G', pid: '1000' }, kubeReserved: { memory: '512k' }, evictionHard: { 'memory.available': '100Mi', 'nodefs.available': '10%', 'imagefs.available': '100%' } } }],
    ['secrets from files and environment variables', { ...worker, token: { valueFrom: { file: '/etc/machineadm/token' } }, caCertHashes: [{ valueFrom: { env: 'CA_HASH' } }] }],
    ['an IPv6 endpoint and a DNS endpoint', { ...worker, controlPlaneEndpoint: '[fd00::10]:6443' }],
    ['a CA hash and a certificate key in upper-case hex, which kubeadm decodes too', { ...worker, role: 'control-plane', caCertHashes: ['sha256:' + '0F'.repeat(32)], certificateKey: 'AB'.repeat(32) }],
    ['labels the kubelet may set and taints with and without values', { ...worker, node: { name: 'worker-1.example', labels: { 'node.kubernetes.io/pool': 'a', 'example.com/team': '', 'topology.kubernetes.io/zone': 'z1' }, taints: [{ key: 'dedicated', value: 'gpu', effect: 'NoSchedule' }, { key: 'example.com/x', effect: 'NoExecute' }] } }],
    ['a node name, labels and a provider ID from the machine', { ...worker, node: { name: { fromMachine: 'localHostname' }, providerID: 'auto', labels: { 'topology.kubernetes.io/zone': { fromMachine: 'zone' }, 'example.com/ip': { fromMachine: 'privateIP' } } } }],
    ['one node IP, IPv6', { ...worker, node: { ip: ['fd00::21'] } }],
    ['a dual-stack pair of node IPs', { ...worker, node: { ip: ['10.0.0.21', 'fd00::21'] } }],
    ['skipped phases and preflight checks as warnings', { ...worker, skipPhases: ['preflight', 'control-plane-join/etcd'], ignorePreflightChecks: ['NumCPU', 'FileAvailable--etc-kubernetes-kubelet.conf'] }],
    ['a provider ID written out', { ...worker, node: { providerID: 'azure:///subscriptions/s/resourceGroups/rg/providers/Microsoft.Compute/virtualMachines/vm-1' } }],
  ])('accepts %s', (_, value) => {
    expect(issues(value)).toEqual([]);
  });

  it.each([
    ['a malformed token', { ...worker, token: 'abcdef0123456789abcdef' }, 'token: is not valid'],
    ['a token with upper-case letters', { ...worker, token: 'ABCDEF.0123456789abcdef' }, 'token: is not valid'],
    ['a CA hash without the sha256: prefix', { ...worker, caCertHashes: ['0f'.repeat(32)] }, 'caCertHashes[0]: is not valid'],
    ['a CA hash of the wrong length', { ...worker, caCertHashes: ['sha256:abcd'] }, 'caCertHashes[0]: is not valid'],
    ['an endpoint without a port', { ...worker, controlPlaneEndpoint: '10.0.0.10' }, 'controlPlaneEndpoint: is not host:port'],
    ['an endpoint with a port out of range', { ...worker, controlPlaneEndpoint: 'cp.example.com:70000' }, 'controlPlaneEndpoint: port 70000 is outside 1-65535'],
    ['an endpoint host that is no DNS name', { ...worker, controlPlaneEndpoint: 'cp_1.example.com:6443' }, 'controlPlaneEndpoint: host "cp_1.example.com" is not an IP address or a DNS name'],
    ['init on a worker', { role: 'worker', bootstrap: 'init' }, 'bootstrap: init is only for the first control-plane machine'],
    ['a reference to a value machineadm does not know', { ...worker, node: { name: { fromMachine: 'tags.Name' } } }, 'node.name: takes a literal, { fromMachine: NAME } where NAME is one of instanceId, instanceName, localHostname, privateIP, zone, region, instanceType, cloud, or { fromInstanceData: KEY }'],
    ['a reference with more than the name', { ...worker, node: { labels: { 'example.com/z': { fromMachine: 'zone', default: 'a' } } } }, 'node.labels["example.com/z"]: takes a literal, { fromMachine: NAME }'],
    ['a provider ID that is no provider ID', { ...worker, node: { providerID: 'i-0123456789abcdef0' } }, 'node.providerID: is not a provider ID such as aws:///us-east-1a/i-0123456789abcdef0'],
    ['a provider ID given as a kubelet flag', { ...worker, node: { kubeletExtraArgs: { 'provider-id': 'aws:///z/i' } } }, 'node.kubeletExtraArgs["provider-id"]: is set by machineadm (use node.providerID)'],
    ['a node IP that is no address', { ...worker, node: { ip: ['node-1.example'] } }, 'node.ip[0]: "node-1.example" is not an IP address'],
    ['two node IPs of one family', { ...worker, node: { ip: ['10.0.0.21', '10.0.0.22'] } }, 'node.ip: two addresses must be one IPv4 and one IPv6 (dual stack)'],
    ['three node IPs', { ...worker, node: { ip: ['10.0.0.21', 'fd00::21', '10.0.0.22'] } }, 'node.ip: takes at most 2 items'],
    ['a node IP given as a kubelet flag', { ...worker, node: { kubeletExtraArgs: { 'node-ip': '10.0.0.21' } } }, 'node.kubeletExtraArgs["node-ip"]: is set by machineadm (use node.ip)'],
    ['all together with single preflight checks', { ...worker, ignorePreflightChecks: ['all', 'NumCPU'] }, 'ignorePreflightChecks: all already ignores every check'],
    ['a phase name with a flag in it', { ...worker, skipPhases: ['--skip-phases=preflight'] }, 'skipPhases[0]:'],
    ['a join without token', { controlPlaneEndpoint: '10.0.0.10:6443', caCertHashes: [HASH] }, 'token: is required to join'],
    ['a join without CA hashes', { controlPlaneEndpoint: '10.0.0.10:6443', token: TOKEN }, 'caCertHashes: is required to join'],
    ['a certificate key on a worker', { ...worker, certificateKey: KEY }, 'certificateKey: only a control-plane machine uses a certificate key'],
    ['a certificate key that is not 64 hex digits', { ...worker, role: 'control-plane', certificateKey: 'xyz' }, 'certificateKey: is not valid'],
    ['a label key with two slashes', { ...worker, node: { labels: { 'a/b/c': 'x' } } }, 'node.labels["a/b/c"]: has more than one "/"'],
    ['a label name longer than 63 characters', { ...worker, node: { labels: { ['x'.repeat(64)]: 'v' } } }, 'name part must be at most 63 characters'],
    ['a label value longer than 63 characters', { ...worker, node: { labels: { app: 'v'.repeat(64) } } }, 'node.labels.app: must be at most 63 characters'],
    ['a label value with a space', { ...worker, node: { labels: { app: 'a b' } } }, 'node.labels.app: must be letters, digits'],
    ['a node-role label the kubelet refuses to set', { ...worker, node: { labels: { 'node-role.kubernetes.io/worker': '' } } }, 'the kubelet refuses to set labels in the kubernetes.io and k8s.io namespaces'],
    ['a label prefix with upper-case letters', { ...worker, node: { labels: { 'Example.com/x': 'y' } } }, 'prefix must be lower-case'],
    ['a taint with a bad effect', { ...worker, node: { taints: [{ key: 'a', effect: 'NoRun' }] } }, 'node.taints[0].effect: "NoRun" is not one of'],
    ['a taint key with a space', { ...worker, node: { taints: [{ key: 'a b', effect: 'NoSchedule' }] } }, 'node.taints[0].key: name part must be'],
    ['a taint value that is too long', { ...worker, node: { taints: [{ key: 'a', value: 'v'.repeat(64), effect: 'NoSchedule' }] } }, 'node.taints[0].value: must be at most 63 characters'],
    ['two taints with the same key and effect', { ...worker, node: { taints: [{ key: 'a', effect: 'NoSchedule' }, { key: 'a', value: 'x', effect: 'NoSchedule' }] } }, 'node.taints[1]: duplicate taint a:NoSchedule'],
    ['a node name with upper-case letters', { ...worker, node: { name: 'Worker1' } }, 'node.name: must be lower-case'],
    ['node-labels given as a kubelet flag', { ...worker, node: { kubeletExtraArgs: { 'node-labels': 'a=b' } } }, 'node.kubeletExtraArgs["node-labels"]: is set by machineadm'],
    ['a kubelet flag written with dashes', { ...worker, node: { kubeletExtraArgs: { '--v': '2' } } }, 'a flag name without the leading dashes'],
    ['a pod subnet that is no CIDR', { role: 'control-plane', bootstrap: 'init', podSubnet: '10.244.0.0' }, 'podSubnet: "10.244.0.0" is not a CIDR'],
    ['init settings on a join', { ...worker, podSubnet: '10.244.0.0/16' }, 'podSubnet: only applies to bootstrap: init'],
    ['a reservation for an unknown resource', { ...worker, kubelet: { systemReserved: { gpu: '1' } } }, 'cpu, memory, ephemeral-storage or pid'],
    ['an unknown eviction signal', { ...worker, kubelet: { evictionHard: { 'disk.available': '10%' } } }, 'an eviction signal such as memory.available'],
    ['a static pod that is not a Pod', { role: 'control-plane', bootstrap: 'init', staticPods: [{ name: 'x', manifest: 'apiVersion: apps/v1\nkind: Deployment\n' }] }, 'must be apiVersion v1, kind Pod'],
    ['a static pod manifest that is not YAML', { role: 'control-plane', bootstrap: 'init', staticPods: [{ name: 'x', manifest: 'a: [' }] }, 'is not valid YAML'],
    ['a static pod named like kubeadm’s own', { role: 'control-plane', bootstrap: 'init', staticPods: [{ name: 'kube-apiserver', manifest: 'apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec: {containers: [{name: c, image: i}]}\n' }] }, "is kubeadm's own static pod"],
    ['static pods on a worker', { ...worker, staticPods: [{ name: 'x', manifest: 'apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec: {containers: [{name: c, image: i}]}\n' }] }, 'static pods are only written on control-plane machines'],
    ['a timeout below 30 seconds', { ...worker, timeoutSeconds: 5 }, 'timeoutSeconds: must be at least 30'],
    // The kubelet parses reservations as quantities: no percentages, and no upper-case K suffix.
    ['a percentage as a reservation', { ...worker, kubelet: { systemReserved: { memory: '10%' } } }, 'kubelet.systemReserved.memory: "10%" is not valid'],
    ['a K suffix (Kubernetes only knows k and Ki)', { ...worker, kubelet: { kubeReserved: { memory: '500K' } } }, 'kubelet.kubeReserved.memory: "500K" is not valid'],
    ['an eviction threshold above 100%', { ...worker, kubelet: { evictionHard: { 'nodefs.available': '110%' } } }, 'evictionHard["nodefs.available"]: "110%" is not valid (a quantity such as 100Mi, or a percentage from 0% to 100%'],
    // kubeadm's networking validation, with the controller manager's default node ranges.
    ['a service subnet larger than 2^20 addresses', { role: 'control-plane', bootstrap: 'init', serviceSubnet: '10.0.0.0/8' }, 'serviceSubnet: "10.0.0.0/8" is too large (kubeadm and the API server take at most 2^20 addresses: use /12 or smaller'],
    ['a service subnet with fewer than 10 addresses', { role: 'control-plane', bootstrap: 'init', serviceSubnet: '10.96.0.0/29' }, 'serviceSubnet: "10.96.0.0/29" is too small'],
    ['an IPv6 service subnet larger than /108', { role: 'control-plane', bootstrap: 'init', serviceSubnet: 'fd00:10:96::/64' }, 'use /108 or smaller'],
    ['a pod subnet smaller than one node range', { role: 'control-plane', bootstrap: 'init', podSubnet: '10.244.0.0/25' }, "podSubnet: \"10.244.0.0/25\" is smaller than one node's pod range (/24)"],
    ['a pod subnet more than 16 bits larger than a node range', { role: 'control-plane', bootstrap: 'init', podSubnet: '10.0.0.0/7' }, 'podSubnet: "10.0.0.0/7" is too large for /24 node ranges'],
    ['an IPv6 pod subnet of a dual-stack pair smaller than /64', { role: 'control-plane', bootstrap: 'init', podSubnet: '10.244.0.0/16,fd00:10:244::/96' }, "is smaller than one node's pod range (/64)"],
  ])('rejects %s', (_, value, expected) => {
    const found = issues(value as Record<string, unknown>);
    expect(found.join('\n')).toContain(expected);
  });

  it.each([
    ['an init phase on a join', { ...worker, skipPhases: ['preflight', 'addon/kube-proxy'] }, 'skipPhases[1]: "addon/kube-proxy" is a phase of kubeadm init, not of kubeadm join, which refuses it as an invalid phase name (remove it from joining machines; skip it on the machine that runs init)'],
    ['a join phase on an init', { role: 'control-plane', bootstrap: 'init', skipPhases: ['control-plane-join'] }, 'skipPhases[0]: "control-plane-join" is a phase of kubeadm join, not of kubeadm init, which refuses it as an invalid phase name (remove it from the machine that runs init; skip it on joining machines)'],
  ])('refuses in skipPhases %s, which kubeadm would refuse only after prepare changed the machine', (_, value, message) => {
    expect(issues(value)).toEqual([message]);
  });

  // The kubelet takes a flag over its configuration file: a flag next to a setting machineadm
  // writes would win over it without a word.
  it.each([
    ['cgroup-driver', { 'cgroup-driver': 'cgroupfs' }, {}, 'node.kubeletExtraArgs["cgroup-driver"]: would win over the cgroup driver machineadm gives the kubelet from spec.containerd.cgroupDriver, so the kubelet and containerd would disagree (set spec.containerd.cgroupDriver instead)'],
    ['max-pods', { 'max-pods': '50' }, { maxPods: 110 }, 'node.kubeletExtraArgs["max-pods"]: would win over kubelet.maxPods (the kubelet takes a flag over its configuration) (give it once: remove the flag, or kubelet.maxPods)'],
    ['system-reserved', { 'system-reserved': 'cpu=1' }, { systemReserved: { memory: '1Gi' } }, 'node.kubeletExtraArgs["system-reserved"]: would win over kubelet.systemReserved (the kubelet takes a flag over its configuration) (give it once: remove the flag, or kubelet.systemReserved)'],
    ['kube-reserved', { 'kube-reserved': 'cpu=1' }, { kubeReserved: { memory: '1Gi' } }, 'node.kubeletExtraArgs["kube-reserved"]: would win over kubelet.kubeReserved (the kubelet takes a flag over its configuration) (give it once: remove the flag, or kubelet.kubeReserved)'],
    ['eviction-hard', { 'eviction-hard': 'memory.available<1Gi' }, { evictionHard: { 'memory.available': '100Mi' } }, 'node.kubeletExtraArgs["eviction-hard"]: would win over kubelet.evictionHard (the kubelet takes a flag over its configuration) (give it once: remove the flag, or kubelet.evictionHard)'],
  ])('refuses the kubelet flag %s, which would silently win over what machineadm writes into the kubelet configuration', (_, kubeletExtraArgs, kubelet, message) => {
    expect(issues({ ...worker, node: { kubeletExtraArgs }, kubelet })).toEqual([message]);
  });

  // kubeadm puts kubeletExtraArgs in kubeadm-flags.env in place of its own flag of the same name,
  // and the kubelet unit passes $KUBELET_KUBEADM_ARGS after its own flags: the later flag wins.
  it.each([
    ['config', '/etc/kubernetes/kubelet/config.yaml', 'node.kubeletExtraArgs.config: would win over the kubelet configuration file machineadm gives the kubelet, so the one kubeadm writes with machineadm\'s settings (cgroup driver, kubelet section) would go unread (remove it: set spec.kubernetes.kubelet, or a kubeletconfiguration patch in patchesDirectory)'],
    ['kubeconfig', '/etc/kubernetes/other.conf', 'node.kubeletExtraArgs.kubeconfig: would win over the kubeconfig machineadm gives the kubelet, so the kubelet would not use the credentials kubeadm join writes for it (remove it: kubeadm writes the kubelet\'s kubeconfig)'],
    ['bootstrap-kubeconfig', '/etc/kubernetes/other-bootstrap.conf', 'node.kubeletExtraArgs["bootstrap-kubeconfig"]: would win over the bootstrap kubeconfig machineadm gives the kubelet, so the kubelet would not use the bootstrap token kubeadm join writes for it (remove it: kubeadm writes the kubelet\'s bootstrap kubeconfig)'],
    ['container-runtime-endpoint', 'unix:///run/other.sock', 'node.kubeletExtraArgs["container-runtime-endpoint"]: would win over the containerd socket kubeadm gives the kubelet, so the kubelet would not run its pods on the containerd machineadm configures (remove it: machineadm runs the kubelet on containerd)'],
  ])('refuses the kubelet flag %s, which would silently win over the one machineadm or kubeadm passes the kubelet', (flag, value, message) => {
    expect(issues({ ...worker, node: { kubeletExtraArgs: { [flag]: value } } })).toEqual([message]);
  });

  it('accepts a kubelet flag for a setting the kubelet section leaves out', () => {
    expect(issues({ ...worker, node: { kubeletExtraArgs: { 'max-pods': '50' } }, kubelet: { systemReserved: { memory: '1Gi' } } })).toEqual([]);
  });

  // The kubelet validates a static pod as the API server validates a Pod, and skips one it
  // refuses with only a line in its log: the run would succeed and the pod never run.
  it.each([
    ['a container without an image', '{containers: [{name: lb}]}', 'staticPods[0].manifest: spec.containers[0] needs an image (add image: to it, e.g. image: haproxy:3.0)'],
    ['a container without a name', '{containers: [{image: "haproxy:3.0"}]}', 'staticPods[0].manifest: spec.containers[0] needs a name, a lower-case DNS label'],
    ['a container named with upper case', '{containers: [{name: LB, image: "haproxy:3.0"}]}', 'staticPods[0].manifest: spec.containers[0] needs a name, a lower-case DNS label'],
    ['two containers of one name', '{containers: [{name: lb, image: "haproxy:3.0"}, {name: lb, image: "haproxy:3.0"}]}', 'staticPods[0].manifest: spec.containers[1] has the name "lb" of another container (give each container its own name)'],
    ['an init container without an image', '{initContainers: [{name: init}], containers: [{name: lb, image: "haproxy:3.0"}]}', 'staticPods[0].manifest: spec.initContainers[0] needs an image (add image: to it, e.g. image: haproxy:3.0)'],
  ])('refuses a static pod the kubelet would skip with only a line in its log: %s', (_, podSpec, message) => {
    const manifest = `apiVersion: v1\nkind: Pod\nmetadata: {name: lb}\nspec: ${podSpec}\n`;
    expect(issues({ role: 'control-plane', bootstrap: 'init', staticPods: [{ name: 'lb', manifest }] })).toEqual([message]);
  });

  // The kubelet labels its node kubernetes.io/hostname=<node name>, and the API server refuses a
  // label value over 63 characters: the node would never register.
  it('refuses a node name longer than 63 characters, which the kubelet could not register', () => {
    const name = 'pool-a-x7k2.us-central1-a.c.fleet-project-with-a-long-name.internal';
    expect(issues({ ...worker, node: { name } })).toEqual([`node.name: "${name}" is longer than 63 characters: the kubelet labels its node kubernetes.io/hostname with the node name, and a label value is at most 63 characters (use the host name without its domain, e.g. pool-a-x7k2)`]);
    expect(issues({ ...worker, node: { name: 'a'.repeat(63) } })).toEqual([]);
  });

  // The kubelet runs one static pod per namespace and name, ignoring any other with only an event.
  it.each([
    ['two manifests of the same pod', [['lb-a', 'lb', undefined], ['lb-b', 'lb', undefined]], 'staticPods[1].manifest: is the pod default/lb, as staticPods[0] is (give each static pod its own metadata.name)'],
    ['a manifest of one of kubeadm’s own pods', [['my-apiserver', 'kube-apiserver', 'kube-system']], "staticPods[0].manifest: is the pod kube-system/kube-apiserver, which kubeadm writes itself (choose another metadata.name)"],
  ])('refuses %s, of which the kubelet would run only one', (_, pods, message) => {
    const staticPods = (pods as [string, string, string | undefined][]).map(([name, podName, namespace]) => ({ name, manifest: `apiVersion: v1\nkind: Pod\nmetadata: {name: ${podName}${namespace ? `, namespace: ${namespace}` : ''}}\nspec: {containers: [{name: c, image: "haproxy:3.0"}]}\n` }));
    expect(issues({ role: 'control-plane', bootstrap: 'init', staticPods })).toEqual([message]);
  });

  it('accepts static pods of one name in different namespaces', () => {
    const manifest = (namespace: string) => `apiVersion: v1\nkind: Pod\nmetadata: {name: lb, namespace: ${namespace}}\nspec: {containers: [{name: c, image: "haproxy:3.0"}]}\n`;
    expect(issues({ role: 'control-plane', bootstrap: 'init', staticPods: [{ name: 'lb-a', manifest: manifest('a') }, { name: 'lb-b', manifest: manifest('b') }] })).toEqual([]);
  });

  it('never echoes a malformed secret in the message', () => {
    const found = parseWith(kubernetesSection, { ...worker, token: 'secret-but-malformed' }).issues;
    expect(JSON.stringify(found)).not.toContain('secret-but-malformed');
  });
});

describe('spec.kubernetes.install.directory', () => {
  // systemd refuses a program whose name holds a quote or a backslash: the kubelet's unit could not start.
  it.each(['/opt/k8s"bin', "/opt/k8s'bin", '/opt/k8s\\bin'])("refuses %s, which the kubelet's unit could not name", (directory) => {
    expect(issues({ ...worker, version: 'v1.31.2', install: { directory } })).toEqual([expect.stringMatching(/^install\.directory: .*without quotes or backslashes/)]);
  });

  it.each(['/opt/bin', '/opt/k8s%bin', 'C:\\k'])('accepts %s', (directory) => {
    expect(issues({ ...worker, version: 'v1.31.2', install: { directory } })).toEqual([]);
  });
});
