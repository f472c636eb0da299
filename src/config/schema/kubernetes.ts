// spec.kubernetes: how this machine becomes a node, in machineadm's own terms (never kubeadm's).
// Names, labels and taints are checked the way Kubernetes checks them (apimachinery's
// validation), so a value the API server or the kubelet would refuse fails here, before anything
// runs, instead of halfway through a join.
import { ipFamily } from './ip.ts';
import { load as loadYaml } from 'js-yaml';
import {
  array,
  boolean,
  either,
  enumOf,
  integer,
  isPlainObject,
  object,
  optional,
  record,
  scalarString,
  string,
  withDefault,
  type Infer,
  type Schema,
  type StringOptions,
} from './dsl.ts';
import { envString, machineString } from './machine.ts';
import { controlPlaneSection } from './control-plane.ts';
import { isExactKubernetesVersion, KUBERNETES_VERSION_SHAPE, kubernetesVersionProblem } from './kubernetes-version.ts';
import { secret, type SecretSource } from './secret-field.ts';
import { installSection } from './install.ts';

/** The highest kubeadm --v that prints no request headers or bodies (see verbosity below). */
export const KUBEADM_MAX_VERBOSITY = 6;

const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const QUALIFIED_NAME_PART = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;

export const TOKEN_PATTERN = /^[a-z0-9]{6}\.[a-z0-9]{16}$/;
// kubeadm decodes the hex of both in either case (it prints lower case).
export const CA_HASH_PATTERN = /^sha256:[a-fA-F0-9]{64}$/;
export const CERTIFICATE_KEY_PATTERN = /^[a-fA-F0-9]{64}$/;

/** A lower-case RFC 1123 subdomain (node names, label prefixes), as apimachinery's IsDNS1123Subdomain. */
export function dns1123SubdomainProblem(value: string): string | undefined {
  if (value.length > 253) return 'must be at most 253 characters';
  if (!value.split('.').every((part) => DNS1123_LABEL.test(part))) {
    return 'must be lower-case letters, digits, "-" and ".", starting and ending with a letter or digit (RFC 1123)';
  }
  return undefined;
}

/**
 * A node name the kubelet can register: a DNS subdomain, and at most 63 characters, since the
 * kubelet labels its node kubernetes.io/hostname with the name and a label value is at most 63.
 */
export function nodeNameProblem(value: string): string | undefined {
  const subdomain = dns1123SubdomainProblem(value);
  if (subdomain) return subdomain;
  if (value.length > 63) return `"${value}" is longer than 63 characters: the kubelet labels its node kubernetes.io/hostname with the node name, and a label value is at most 63 characters|use the host name without its domain, e.g. ${value.split('.')[0]!.slice(0, 63)}`;
  return undefined;
}

/** apimachinery IsQualifiedName: an optional DNS subdomain prefix, "/", then a name of at most 63 characters. */
export function qualifiedNameProblem(value: string): string | undefined {
  const parts = value.split('/');
  if (parts.length > 2) return 'has more than one "/"';
  const name = parts.length === 2 ? parts[1]! : parts[0]!;
  if (parts.length === 2) {
    if (parts[0] === '') return 'has an empty prefix before "/"';
    const prefix = dns1123SubdomainProblem(parts[0]!);
    if (prefix) return `prefix ${prefix}`;
  }
  if (name === '') return 'has an empty name';
  if (name.length > 63) return 'name part must be at most 63 characters';
  if (!QUALIFIED_NAME_PART.test(name)) return 'name part must be letters, digits, "-", "_" and ".", starting and ending with a letter or digit';
  return undefined;
}

/** apimachinery IsValidLabelValue: empty, or at most 63 characters of the qualified-name alphabet. */
export function labelValueProblem(value: string): string | undefined {
  if (value === '') return undefined;
  if (value.length > 63) return 'must be at most 63 characters';
  if (!QUALIFIED_NAME_PART.test(value)) return 'must be letters, digits, "-", "_" and ".", starting and ending with a letter or digit';
  return undefined;
}

// The kubelet refuses to start when --node-labels holds a kubernetes.io or k8s.io label outside
// this list (the NodeRestriction rules in kubelet's options.go); node-role.kubernetes.io/* is the
// usual mistake.
const KUBELET_ALLOWED_LABEL_KEYS = new Set([
  'kubernetes.io/hostname',
  'kubernetes.io/arch',
  'kubernetes.io/os',
  'beta.kubernetes.io/arch',
  'beta.kubernetes.io/os',
  'beta.kubernetes.io/instance-type',
  'failure-domain.beta.kubernetes.io/region',
  'failure-domain.beta.kubernetes.io/zone',
  'topology.kubernetes.io/region',
  'topology.kubernetes.io/zone',
  'node.kubernetes.io/instance-type',
]);
const KUBELET_ALLOWED_LABEL_NAMESPACES = ['kubelet.kubernetes.io', 'node.kubernetes.io'];

export function kubeletLabelProblem(key: string): string | undefined {
  const prefix = key.includes('/') ? key.split('/')[0]! : '';
  const restricted = ['kubernetes.io', 'k8s.io'].some((ns) => prefix === ns || prefix.endsWith('.' + ns));
  if (!restricted || KUBELET_ALLOWED_LABEL_KEYS.has(key)) return undefined;
  if (KUBELET_ALLOWED_LABEL_NAMESPACES.some((ns) => prefix === ns || prefix.endsWith('.' + ns))) return undefined;
  return 'the kubelet refuses to set labels in the kubernetes.io and k8s.io namespaces except kubelet.kubernetes.io/*, node.kubernetes.io/* and a few well-known ones|set it from the control plane (kubectl label) or use your own prefix, e.g. example.com/role';
}

/** Why a value is no node IP (kubelet --node-ip takes an address without a zone). */
export function nodeIpProblem(value: string): string | undefined {
  return ipFamily(value) === 0 || value.includes('%') ? 'is not an IP address' : undefined;
}

/** `auto`, or a provider ID as a cloud controller manager writes it: <cloud>://<id>, one word. */
export function providerIdProblem(value: string): string | undefined {
  if (value === 'auto') return undefined;
  if (!/^[a-z][a-z0-9]*:\/\/[\x21-\x7e]*$/.test(value) || value.length > 1024) return 'is not a provider ID such as aws:///us-east-1a/i-0123456789abcdef0|write auto to take it from instance metadata';
  return undefined;
}

/** Why a value cannot be one part of a provider ID (a "/" in it would name another machine). */
export function providerIdPartProblem(value: string): string | undefined {
  return /^[A-Za-z0-9][A-Za-z0-9._()-]{0,127}$/.test(value) ? undefined : 'cannot be part of a provider ID (letters, digits, ".", "_", "-", "(", ")"; at most 128; starting with a letter or digit)';
}

const TEMPLATE_NAME = /\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g;

// A provider ID made of the machine's values where no cloud's format is composed by `auto`
// (oci://<instance OCID>, microvm://<host>/<id>): each value one part, the whole checked as one.
const providerIdTemplate = object(
  {
    template: string({ minLength: 1, description: 'the provider ID with ${NAME} where each value goes', example: 'oci://${INSTANCE_ID}' }),
    values: record(machineString(string({ check: providerIdPartProblem })), {
      key: { pattern: /^[A-Za-z_][A-Za-z0-9_]*$/, patternHint: 'a name: letters, digits and _, not starting with a digit, e.g. INSTANCE_ID' },
      description: 'the values, each a literal, { fromMachine: NAME } or { fromInstanceData: KEY }',
      example: { INSTANCE_ID: { fromInstanceData: 'ds["id"]' } },
    }),
  },
  {
    description: 'a provider ID made of this machine\'s values: ${NAME} in template is each value of values',
    example: { template: 'oci://${INSTANCE_ID}', values: { INSTANCE_ID: { fromInstanceData: 'ds["id"]' } } },
    check: (t, report) => {
      const used = new Set([...t.template.matchAll(TEMPLATE_NAME)].map((m) => m[1]!));
      for (const name of used) if (!Object.hasOwn(t.values, name)) report('template', `says \${${name}}, which values does not give`, `add ${name} to values, or remove \${${name}}`);
      for (const name of Object.keys(t.values)) if (!used.has(name)) report(['values', name], `is not used: the template never says \${${name}}`, `write \${${name}} where the value goes, or remove ${name}`);
      if (used.size === 0 || Object.values(t.values).every((v) => typeof v === 'string')) report('template', 'takes no value from the machine: it is a literal', 'write providerID: <the ID> instead');
      const shape = t.template.replace(TEMPLATE_NAME, 'x');
      if (shape === 'auto' || providerIdProblem(shape)) report('template', 'is not a provider ID such as oci://${INSTANCE_ID} once its values are in', 'start it with the scheme: <cloud>://');
    },
  },
);

export type ProviderIdTemplate = Infer<typeof providerIdTemplate>;

/** host:port where host is an IP address, [IPv6] or a DNS name, and port 1-65535. */
export function endpointProblem(value: string): string | undefined {
  const match = /^(\[[^\]]+\]|[^:[\]]+):(\d{1,5})$/.exec(value);
  if (!match) return 'is not host:port|give the port too, e.g. 10.0.0.10:6443 or cp.example.com:6443';
  const host = match[1]!.replace(/^\[|\]$/g, '');
  const port = Number(match[2]);
  if (port < 1 || port > 65535) return `port ${port} is outside 1-65535`;
  if (match[1]!.startsWith('[') ? ipFamily(host) !== 6 : ipFamily(host) === 0 && dns1123SubdomainProblem(host.toLowerCase()) !== undefined) {
    return `host "${host}" is not an IP address or a DNS name`;
  }
  return undefined;
}

// The shapes endpointProblem and cidrProblem accept, for the JSON Schema (the CLI checks more:
// port range, address families, subnet sizes).
const ENDPOINT_SHAPE = /^(\[[^\]]+\]|[^:[\]]+):\d{1,5}$/;
const CIDR_SHAPE = String.raw`\s*[0-9A-Fa-f:.]+(?:%[^/,]*)?\/\d+\s*`;
const CIDRS_SHAPE = new RegExp(`^${CIDR_SHAPE}(?:,${CIDR_SHAPE})?$`);

/** The size rule kubeadm's networking validation applies to one CIDR of the subnet. */
type SubnetSizeRule = (part: string, family: 4 | 6, prefix: number) => string | undefined;

function cidrProblem(value: string, sizeRule: SubnetSizeRule): string | undefined {
  const parts = value.split(',').map((p) => p.trim());
  if (parts.length > 2) return 'takes one CIDR, or two (one IPv4 and one IPv6) for dual-stack';
  const families = new Set<number>();
  for (const part of parts) {
    const [ip = '', bits, extra] = part.split('/');
    const family = ipFamily(ip);
    const max = family === 4 ? 32 : 128;
    if (family === 0 || extra !== undefined || bits === undefined || !/^\d+$/.test(bits) || Number(bits) > max) return `"${part}" is not a CIDR such as 10.244.0.0/16`;
    const size = sizeRule(part, family as 4 | 6, Number(bits));
    if (size) return size;
    families.add(family);
  }
  if (parts.length === 2 && families.size !== 2) return 'a dual-stack pair needs one IPv4 and one IPv6 CIDR';
  return undefined;
}

// kubeadm init refuses a service subnet of more than 2^20 addresses (the API server stores the
// allocation bitmap in etcd) or fewer than 10 (the DNS service takes the tenth address).
const serviceSubnetSize: SubnetSizeRule = (part, family, prefix) => {
  const max = family === 4 ? 32 : 128;
  if (max - prefix > 20) return `"${part}" is too large|kubeadm and the API server take at most 2^20 addresses: use /${max - 20} or smaller, e.g. 10.96.0.0/12`;
  if (max - prefix < 4) return `"${part}" is too small|the service subnet needs at least 10 addresses: use /${max - 4} or larger`;
  return undefined;
};

// The controller manager gives each node a /24 (IPv4) or /64 (IPv6) of the pod subnet; kubeadm
// init refuses a pod subnet smaller than one node's share or more than 16 bits larger.
const podSubnetSize: SubnetSizeRule = (part, family, prefix) => {
  const nodeMask = family === 4 ? 24 : 64;
  if (prefix > nodeMask) return `"${part}" is smaller than one node's pod range (/${nodeMask})|use /${nodeMask} or larger, e.g. 10.244.0.0/16`;
  if (nodeMask - prefix > 16) return `"${part}" is too large for /${nodeMask} node ranges|use /${nodeMask - 16} or smaller, e.g. 10.244.0.0/16`;
  return undefined;
};

/** A secret whose literal form is checked here; a value read through valueFrom is checked when it is read. */
function checkedSecret(options: StringOptions): Schema<SecretSource> {
  const inner = secret({ ...(options.description ? { description: options.description } : {}), ...(options.example !== undefined ? { example: options.example } : {}) });
  const literal = string(options);
  return {
    ...inner,
    parse(value, path, ctx) {
      const parsed = inner.parse(value, path, ctx);
      if (typeof parsed !== 'string') return parsed;
      // Report without echoing the value: it is a secret.
      const before = ctx.issues.length;
      literal.parse(parsed, path, ctx);
      for (const found of ctx.issues.slice(before)) found.message = found.message.replace(/^".*" is not valid$/, 'is not valid');
      return ctx.issues.length === before ? parsed : undefined;
    },
  };
}

export const tokenSecret = checkedSecret({ pattern: TOKEN_PATTERN, patternHint: 'a bootstrap token has the form [a-z0-9]{6}.[a-z0-9]{16}, e.g. abcdef.0123456789abcdef (kubeadm token create prints one)', description: 'bootstrap token [a-z0-9]{6}.[a-z0-9]{16}', example: { valueFrom: { file: '/etc/machineadm/token' } } });
export const caHashSecret = checkedSecret({ pattern: CA_HASH_PATTERN, patternHint: 'sha256: followed by 64 hex digits (kubeadm init prints it as --discovery-token-ca-cert-hash)', description: 'CA public key pin sha256:<64 hex>', example: `sha256:${'0'.repeat(64)}` });
export const certificateKeySecret = checkedSecret({ pattern: CERTIFICATE_KEY_PATTERN, patternHint: '64 hex digits (kubeadm certs certificate-key prints one)', description: 'key that decrypts the uploaded control-plane certificates', example: { valueFrom: { file: '/etc/machineadm/certificate-key' } } });

// kubeadm writes kubelet flags into kubeadm-flags.env as one space-separated line that systemd
// (or StartKubelet.ps1 on Windows) splits into arguments: white space in a value starts another flag.
function kubeletArgumentProblem(value: string): string | undefined {
  return /[\s\x00-\x1f\x7f]/.test(value) ? 'must not contain white space, line breaks or control characters: kubeadm passes kubelet flags on one space-separated line, where they would start another flag|give one word; separate list items with commas' : undefined;
}

const labelKey: StringOptions = { check: (k) => qualifiedNameProblem(k) ?? kubeletLabelProblem(k) };
const flagName: StringOptions = { pattern: /^[a-z0-9][a-z0-9-]*$/, patternHint: 'a flag name without the leading dashes, e.g. max-pods' };
// The kubelet parses reservations as Kubernetes quantities (suffixes Ki..Ei, m, k in lower case
// only, M..E, or an exponent); eviction thresholds also take a percentage from 0% to 100%.
const quantity = scalarString({ pattern: /^\d+(\.\d+)?(Ki|Mi|Gi|Ti|Pi|Ei|[mkMGTPE]|e\d+)?$/, patternHint: 'a quantity such as 500m or 1Gi (percentages are only for evictionHard)' });
const quantityOrPercent = scalarString({
  pattern: /^(\d+(\.\d+)?(Ki|Mi|Gi|Ti|Pi|Ei|[mkMGTPE]|e\d+)?|(100(\.0+)?|\d{1,2}(\.\d+)?)%)$/,
  patternHint: 'a quantity such as 100Mi, or a percentage from 0% to 100% such as 10%',
});

export const taint = object(
  {
    key: string({ minLength: 1, check: qualifiedNameProblem, description: 'the taint key, a qualified name', example: 'dedicated' }),
    value: optional(scalarString({ check: labelValueProblem, description: 'the taint value (may be left out)', example: 'gpu' })),
    effect: enumOf(['NoSchedule', 'PreferNoSchedule', 'NoExecute'] as const, { description: 'what the taint does to pods that do not tolerate it', example: 'NoSchedule' }),
  },
  { description: 'a node taint; on Windows the default is os=windows:NoSchedule', example: { key: 'dedicated', value: 'gpu', effect: 'NoSchedule' } },
);

// kubeadm writes its own static pods under these names; a manifest with the same name would replace them.
const KUBEADM_STATIC_PODS = ['etcd', 'kube-apiserver', 'kube-controller-manager', 'kube-scheduler'];

function manifestProblem(text: string): string | undefined {
  let doc: unknown;
  try {
    doc = loadYaml(text);
  } catch (cause) {
    return `is not valid YAML: ${(cause as Error).message.split('\n')[0]}`;
  }
  if (!isPlainObject(doc)) return 'must be one YAML document describing a Pod';
  if (doc.apiVersion !== 'v1' || doc.kind !== 'Pod') return `must be apiVersion v1, kind Pod (found ${String(doc.apiVersion)}, ${String(doc.kind)})`;
  const meta = doc.metadata;
  if (!isPlainObject(meta) || typeof meta.name !== 'string' || dns1123SubdomainProblem(meta.name)) return 'needs metadata.name, a lower-case DNS name';
  if (!isPlainObject(doc.spec) || !Array.isArray(doc.spec.containers) || doc.spec.containers.length === 0) return 'needs spec.containers with at least one container';
  return containersProblem(doc.spec);
}

// The kubelet validates a static pod as the API server validates a Pod and skips one it refuses,
// saying so only in its log; these are the checks a hand-written manifest most often misses.
function containersProblem(spec: Record<string, unknown>): string | undefined {
  const names = new Set<string>();
  for (const list of ['initContainers', 'containers'] as const) {
    const containers = spec[list] ?? [];
    if (!Array.isArray(containers)) return `spec.${list} must be a list of containers`;
    for (const [i, c] of containers.entries()) {
      const at = `spec.${list}[${i}]`;
      if (!isPlainObject(c) || typeof c.name !== 'string' || c.name.length > 63 || !DNS1123_LABEL.test(c.name)) return `${at} needs a name, a lower-case DNS label`;
      if (names.has(c.name)) return `${at} has the name "${c.name}" of another container|give each container its own name`;
      names.add(c.name);
      if (typeof c.image !== 'string' || c.image.trim() === '') return `${at} needs an image|add image: to it, e.g. image: haproxy:3.0`;
    }
  }
  return undefined;
}

/** namespace/name of a manifest manifestProblem accepts (the kubelet's default namespace is "default"). */
function podFullName(manifest: string): string | undefined {
  try {
    const doc = loadYaml(manifest) as { metadata?: { name?: unknown; namespace?: unknown } } | undefined;
    const name = doc?.metadata?.name;
    const namespace = doc?.metadata?.namespace ?? 'default';
    return typeof name === 'string' && typeof namespace === 'string' ? `${namespace}/${name}` : undefined;
  } catch {
    return undefined;
  }
}

export const staticPod = object({
  name: string({ pattern: DNS1123_LABEL, patternHint: 'a lower-case DNS label; the file is /etc/kubernetes/manifests/<name>.yaml', description: 'the file name: /etc/kubernetes/manifests/<name>.yaml', example: 'haproxy', check: (n) => (KUBEADM_STATIC_PODS.includes(n) ? `"${n}" is kubeadm's own static pod|choose another name` : undefined) }),
  manifest: string({ minLength: 1, check: manifestProblem, description: 'the Pod manifest as YAML text', example: 'apiVersion: v1\nkind: Pod\nmetadata:\n  name: haproxy\nspec:\n  containers:\n    - name: haproxy\n      image: haproxy:3.0\n' }),
});

const kubeletSection = object({
  maxPods: optional(integer({ min: 1, max: 10_000, description: 'the most pods this node runs (kubelet maxPods; the kubelet\'s default is 110)', example: 110 })),
  systemReserved: optional(record(quantity, { key: { pattern: /^(cpu|memory|ephemeral-storage|pid)$/, patternHint: 'cpu, memory, ephemeral-storage or pid' }, description: 'resources kept for the operating system\'s daemons', example: { cpu: '500m', memory: '512Mi' } })),
  kubeReserved: optional(record(quantity, { key: { pattern: /^(cpu|memory|ephemeral-storage|pid)$/, patternHint: 'cpu, memory, ephemeral-storage or pid' }, description: 'resources kept for the kubelet and the container runtime', example: { cpu: '250m', memory: '256Mi' } })),
  evictionHard: optional(
    record(quantityOrPercent, {
      key: {
        pattern: /^(memory\.available|nodefs\.available|nodefs\.inodesFree|imagefs\.available|imagefs\.inodesFree|containerfs\.available|containerfs\.inodesFree|pid\.available)$/,
        patternHint: 'an eviction signal such as memory.available or nodefs.available',
      },
      description: 'thresholds at which the kubelet evicts pods, by signal',
      example: { 'memory.available': '100Mi', 'nodefs.available': '10%' },
    }),
  ),
}, { description: 'kubelet settings (rendered into its KubeletConfiguration)', example: { maxPods: 110 } });

// The phase groups only one of kubeadm's two workflows has (v1.22 on): kubeadm refuses a skipped
// phase its workflow lacks, and only when it runs, after prepare changed the machine.
const PHASE_GROUPS_OF = {
  init: new Set(['certs', 'kubeconfig', 'etcd', 'control-plane', 'upload-config', 'upload-certs', 'mark-control-plane', 'bootstrap-token', 'kubelet-finalize', 'addon', 'show-join-command']),
  join: new Set(['control-plane-prepare', 'check-etcd', 'etcd-join', 'kubelet-wait-bootstrap', 'control-plane-join']),
};

export const kubernetesSection = object(
  {
    role: withDefault(enumOf(['worker', 'control-plane'] as const, { description: 'what the node is: a worker, or a control-plane machine (runs the API server and etcd)', example: 'control-plane' }), 'worker'),
    bootstrap: withDefault(enumOf(['join', 'init'] as const, { description: 'init only for the first control-plane machine', example: 'init' }), 'join'),
    install: optional(installSection),
    version: optional(string({ check: kubernetesVersionProblem, jsonPattern: KUBERNETES_VERSION_SHAPE, description: 'the Kubernetes version, a release or pre-release from v1.22 (init deploys it; default: the kubeadm found)', example: 'v1.31.2' })),
    controlPlaneEndpoint: optional(envString(string({ minLength: 1, check: endpointProblem, jsonPattern: ENDPOINT_SHAPE, description: 'host:port of the API server (load balancer); or { valueFrom: { env: NAME } }', example: '10.0.0.10:6443' }))),
    token: optional(tokenSecret),
    caCertHashes: optional(array(caHashSecret, { minItems: 1 }), { description: 'pins of the cluster CA\'s public key a join checks (kubeadm --discovery-token-ca-cert-hash); required to join', example: [`sha256:${'0'.repeat(64)}`] }),
    certificateKey: optional(certificateKeySecret),
    podSubnet: optional(string({ check: (v) => cidrProblem(v, podSubnetSize), jsonPattern: CIDRS_SHAPE, description: 'the pods\' address range (init only): one CIDR, or an IPv4 and an IPv6 CIDR separated by a comma', example: '10.244.0.0/16' })),
    serviceSubnet: optional(string({ check: (v) => cidrProblem(v, serviceSubnetSize), jsonPattern: CIDRS_SHAPE, description: 'the services\' address range (init only; kubeadm\'s default 10.96.0.0/12)', example: '10.96.0.0/12' })),
    dnsDomain: optional(string({ check: dns1123SubdomainProblem, description: 'the cluster\'s DNS domain for services (default cluster.local)', example: 'cluster.example' })),
    controlPlane: optional(controlPlaneSection),
    discoveryFile: optional(string({ pattern: /^\/[^\0]*$/, patternHint: 'an absolute path, e.g. /etc/kubernetes/discovery.conf', description: 'join: a kubeconfig file on the machine that holds the cluster CA and API server address, used instead of token discovery (kubeadm discovery.file)', example: '/etc/kubernetes/discovery.conf' })),
    patchesDirectory: optional(string({ pattern: /^\/[^\0]*$/, patternHint: 'an absolute path, e.g. /etc/kubeadm/patches', description: 'a directory of kubeadm patch files (target[suffix][+type].yaml) applied to the components kubeadm writes; machineadm adds its own kubelet patch to it', example: '/etc/kubeadm/patches' })),
    // Above 6 kubeadm prints its API requests' headers and bodies, which carry the bootstrap token
    // in forms machineadm's scrubbing cannot know (base64 in a Secret's data).
    verbosity: optional(integer({ min: 0, max: KUBEADM_MAX_VERBOSITY, description: 'kubeadm log level (kubeadm --v), at most 6: higher levels print API request headers and bodies, which carry the bootstrap token; -vv and -vvv on the command line win over it', example: 5 })),
    kubeadmTimeouts: optional(
      object(
        {
          controlPlaneComponentHealthCheckSeconds: optional(integer({ min: 1, max: 86_400, description: 'how long kubeadm waits for the control-plane components to be healthy (v1beta3: apiServer.timeoutForControlPlane)', example: 1200 })),
          discoverySeconds: optional(integer({ min: 1, max: 86_400, description: 'how long a join waits to discover and trust the cluster', example: 300 })),
          etcdAPICallSeconds: optional(integer({ min: 1, max: 86_400, description: 'how long kubeadm waits for one etcd call (v1.31 and later)', example: 120 })),
          kubeletHealthCheckSeconds: optional(integer({ min: 1, max: 86_400, description: 'how long kubeadm waits for the kubelet to be healthy (v1.31 and later)', example: 240 })),
          kubernetesAPICallSeconds: optional(integer({ min: 1, max: 86_400, description: 'how long kubeadm waits for one API server call (v1.31 and later)', example: 60 })),
          tlsBootstrapSeconds: optional(integer({ min: 1, max: 86_400, description: 'how long a join waits for the kubelet\'s TLS bootstrap (v1.31 and later)', example: 300 })),
        },
        { description: "kubeadm's own waits, in seconds (kubeadm v1.31 and later; before it only discoverySeconds and controlPlaneComponentHealthCheckSeconds)", example: { discoverySeconds: 300, controlPlaneComponentHealthCheckSeconds: 1200 } },
      ),
    ),
    node: optional(
      object({
        name: optional(machineString(string({ minLength: 1, check: nodeNameProblem, description: 'the node name (default: the host name); a literal, { fromMachine: NAME } or { fromInstanceData: KEY }', example: { fromMachine: 'instanceName' } }))),
        ip: optional(array(machineString(string({ check: (v) => (nodeIpProblem(v) ? `"${v}" ${nodeIpProblem(v)}|an address of this machine, e.g. 10.0.0.21 or fd00::21` : undefined) })), { minItems: 1, maxItems: 2, description: 'the node IP the kubelet reports (kubelet --node-ip): one address, or one IPv4 and one IPv6 for dual stack; an address may be { fromMachine: privateIP }', example: ['10.0.0.21'] })),
        providerID: optional(
          either(string({ minLength: 1, check: providerIdProblem }), providerIdTemplate, {
            pick: (v) => (isPlainObject(v) ? 'b' : 'a'),
            description: 'auto (AWS, Azure or GCE\'s format, from instance metadata), the provider ID itself, or { template, values } made of this machine\'s values',
            example: 'auto',
          }),
        ),
        labels: optional(record(machineString(scalarString({ check: labelValueProblem })), { key: labelKey }), { description: 'labels the node registers with; a value may be { fromMachine: NAME } or { fromInstanceData: KEY }', example: { 'example.com/pool': 'general', 'topology.kubernetes.io/zone': { fromMachine: 'zone' } } }),
        taints: optional(array(taint), { description: 'taints the node registers with', example: [{ key: 'dedicated', value: 'gpu', effect: 'NoSchedule' }] }),
        kubeletExtraArgs: optional(record(scalarString({ check: kubeletArgumentProblem }), { key: flagName }), { description: 'extra kubelet flags by name, without dashes (node-ip, node-labels and the like have fields of their own)', example: { 'max-pods': '110' } }),
        imagePullPolicy: optional(enumOf(['Always', 'IfNotPresent', 'Never'] as const, { description: 'when kubeadm pulls the control-plane images (default IfNotPresent)', example: 'IfNotPresent' })),
        imagePullSerial: optional(boolean({ description: 'pull images one at a time (kubeadm v1.31 and later; default true)', example: false })),
      }),
      { description: 'how this node registers: name, IPs, provider ID, labels, taints, kubelet flags', example: { labels: { 'example.com/pool': 'general' } } },
    ),
    ignorePreflightChecks: optional(array(string({ pattern: /^(all|[A-Za-z][A-Za-z0-9._-]*)$/, patternHint: 'a kubeadm preflight check name as its error prints it, e.g. NumCPU or FileAvailable--etc-kubernetes-kubelet.conf, or all' }), { minItems: 1, description: 'kubeadm preflight checks whose failure is only a warning (kubeadm --ignore-preflight-errors)', example: ['NumCPU'] })),
    skipPhases: optional(array(string({ pattern: /^[a-z][a-z0-9-]*(\/[a-z][a-z0-9-]*)?$/, patternHint: 'a kubeadm phase name, e.g. addon/kube-proxy' }), { minItems: 1, description: 'kubeadm init or join phases not to run, e.g. addon/kube-proxy', example: ['addon/kube-proxy'] })),
    kubelet: optional(kubeletSection),
    staticPods: optional(array(staticPod), { description: 'extra static pods written on control-plane machines (e.g. a load balancer for the API)', example: [{ name: 'haproxy', manifest: 'apiVersion: v1\nkind: Pod\nmetadata:\n  name: haproxy\nspec:\n  containers:\n    - name: haproxy\n      image: haproxy:3.0\n' }] }),
    retries: withDefault(integer({ min: 0, max: 20, description: 'extra attempts after a join fails for a transient reason', example: 5 }), 3),
    backoffSeconds: withDefault(integer({ min: 0, max: 600, description: 'wait before the first retry; doubles each time, at most 5 minutes', example: 30 }), 10),
    timeoutSeconds: withDefault(integer({ min: 30, max: 7200, description: 'how long one kubeadm run may take', example: 900 }), 600),
  },
  {
    check: (k, report) => {
      if (k.bootstrap === 'init' && k.role === 'worker') report('bootstrap', 'init is only for the first control-plane machine', 'set role: control-plane, or bootstrap: join');
      if (k.bootstrap === 'join') {
        if (k.discoveryFile === undefined) {
          if (k.controlPlaneEndpoint === undefined) report('controlPlaneEndpoint', 'is required to join', 'the API server address, e.g. 10.0.0.10:6443');
          if (k.token === undefined) report('token', 'is required to join', 'a bootstrap token from "kubeadm token create"');
          if (k.caCertHashes === undefined) report('caCertHashes', 'is required to join (machineadm never skips CA verification)', 'kubeadm init prints it as --discovery-token-ca-cert-hash sha256:...');
        } else if (k.caCertHashes !== undefined) {
          report('caCertHashes', 'a discovery file carries the CA itself', 'remove caCertHashes, or discoveryFile to use token discovery');
        }
        for (const field of ['podSubnet', 'serviceSubnet', 'dnsDomain'] as const) {
          if (k[field] !== undefined) report(field, 'only applies to bootstrap: init (a joining machine takes the cluster settings)', 'remove it from joining machines; set it on the machine that runs init');
        }
        for (const field of Object.keys(k.controlPlane ?? {}).filter((f) => f !== 'localAPIEndpoint')) {
          report(['controlPlane', field], 'only applies to bootstrap: init (a joining control plane takes the cluster settings)', 'set it on the machine that runs init; a joining control plane keeps only controlPlane.localAPIEndpoint');
        }
      }
      if (k.bootstrap === 'init' && k.discoveryFile !== undefined) report('discoveryFile', 'only a joining machine discovers the cluster', 'remove it for bootstrap: init');
      if (k.role === 'worker' && k.controlPlane !== undefined) report('controlPlane', 'only a control-plane machine runs the control-plane components', 'remove it, or set role: control-plane');
      if (k.bootstrap === 'init' && k.caCertHashes !== undefined) report('caCertHashes', 'only a joining machine checks the CA against hashes', 'remove it for bootstrap: init');
      if (k.install !== undefined && (k.version === undefined || (k.bootstrap !== 'init' && !isExactKubernetesVersion(k.version)))) report('version', 'install needs the exact version to install: give major.minor.patch, e.g. v1.31.2', 'set spec.kubernetes.version');
      if (k.bootstrap === 'init' && k.version !== undefined && !isExactKubernetesVersion(k.version)) report('version', 'init deploys an exact version: give major.minor.patch, e.g. v1.31.2 (or a pre-release such as v1.37.0-rc.1)');
      if (k.role === 'worker' && k.certificateKey !== undefined) report('certificateKey', 'only a control-plane machine uses a certificate key', 'remove it, or set role: control-plane');
      if (k.role === 'worker' && k.staticPods !== undefined) report('staticPods', 'static pods are only written on control-plane machines', 'remove it, or set role: control-plane');
      const seenTaints = new Set<string>();
      k.node?.taints?.forEach((t, i) => {
        const id = `${t.key}:${t.effect}`;
        if (seenTaints.has(id)) report(['node', 'taints', i], `duplicate taint ${id} (Kubernetes allows one taint per key and effect)`, 'keep one of them');
        seenTaints.add(id);
      });
      if (k.ignorePreflightChecks !== undefined && k.ignorePreflightChecks.length > 1 && k.ignorePreflightChecks.some((c) => c.toLowerCase() === 'all')) report('ignorePreflightChecks', 'all already ignores every check (kubeadm refuses all together with single checks)', 'keep all alone, or list single checks');
      // An address from the machine is checked when it is read (src/config/machine-values.ts).
      const nodeIps = k.node?.ip ?? [];
      if (nodeIps.length === 2 && typeof nodeIps[0] === 'string' && typeof nodeIps[1] === 'string' && ipFamily(nodeIps[0]) === ipFamily(nodeIps[1])) report(['node', 'ip'], 'two addresses must be one IPv4 and one IPv6 (dual stack)', 'give one address, or one of each family');
      const instead = { 'node-ip': 'use node.ip', 'node-labels': 'use node.labels', 'register-with-taints': 'use node.taints', 'hostname-override': 'use node.name', 'provider-id': 'use node.providerID' } as const;
      for (const flag of Object.keys(instead) as (keyof typeof instead)[]) {
        if (k.node?.kubeletExtraArgs?.[flag] !== undefined) report(['node', 'kubeletExtraArgs', flag], 'is set by machineadm', instead[flag]);
      }
      // The kubelet takes a flag over its configuration file, so a flag beside a setting machineadm
      // writes there would win over it without a word.
      const extra = k.node?.kubeletExtraArgs;
      if (extra?.['cgroup-driver'] !== undefined) report(['node', 'kubeletExtraArgs', 'cgroup-driver'], 'would win over the cgroup driver machineadm gives the kubelet from spec.containerd.cgroupDriver, so the kubelet and containerd would disagree', 'set spec.containerd.cgroupDriver instead');
      // kubeadm writes a kubeletExtraArgs entry into kubeadm-flags.env in place of its own flag of
      // that name, and the kubelet's unit passes those after its own flags, so the entry wins.
      const passed = {
        config: ['the kubelet configuration file machineadm gives the kubelet, so the one kubeadm writes with machineadm\'s settings (cgroup driver, kubelet section) would go unread', 'remove it: set spec.kubernetes.kubelet, or a kubeletconfiguration patch in patchesDirectory'],
        kubeconfig: ['the kubeconfig machineadm gives the kubelet, so the kubelet would not use the credentials kubeadm join writes for it', 'remove it: kubeadm writes the kubelet\'s kubeconfig'],
        'bootstrap-kubeconfig': ['the bootstrap kubeconfig machineadm gives the kubelet, so the kubelet would not use the bootstrap token kubeadm join writes for it', 'remove it: kubeadm writes the kubelet\'s bootstrap kubeconfig'],
        'container-runtime-endpoint': ['the containerd socket kubeadm gives the kubelet, so the kubelet would not run its pods on the containerd machineadm configures', 'remove it: machineadm runs the kubelet on containerd'],
      } as const;
      for (const [flag, [what, hint]] of Object.entries(passed)) {
        if (extra?.[flag] !== undefined) report(['node', 'kubeletExtraArgs', flag], `would win over ${what}`, hint);
      }
      const configured = { 'max-pods': 'maxPods', 'system-reserved': 'systemReserved', 'kube-reserved': 'kubeReserved', 'eviction-hard': 'evictionHard' } as const;
      for (const [flag, field] of Object.entries(configured)) {
        if (extra?.[flag] !== undefined && k.kubelet?.[field] !== undefined) report(['node', 'kubeletExtraArgs', flag], `would win over kubelet.${field} (the kubelet takes a flag over its configuration)`, `give it once: remove the flag, or kubelet.${field}`);
      }
      const command = k.bootstrap === 'init' ? 'init' : 'join';
      const other = command === 'init' ? 'join' : 'init';
      k.skipPhases?.forEach((phase, i) => {
        if (!PHASE_GROUPS_OF[other].has(phase.split('/')[0]!)) return;
        const where = command === 'init' ? ['from the machine that runs init', 'on joining machines'] : ['from joining machines', 'on the machine that runs init'];
        report(['skipPhases', i], `"${phase}" is a phase of kubeadm ${other}, not of kubeadm ${command}, which refuses it as an invalid phase name`, `remove it ${where[0]}; skip it ${where[1]}`);
      });
      const names = new Set<string>();
      // The kubelet runs one static pod per namespace and name and ignores the others, with only an event.
      const pods = new Map<string, number>();
      k.staticPods?.forEach((p, i) => {
        if (names.has(p.name)) report(['staticPods', i, 'name'], `duplicate static pod name "${p.name}"`, 'give each static pod its own name (it is the file name)');
        names.add(p.name);
        const pod = podFullName(p.manifest);
        if (pod === undefined) return;
        if (KUBEADM_STATIC_PODS.some((own) => pod === `kube-system/${own}`)) report(['staticPods', i, 'manifest'], `is the pod ${pod}, which kubeadm writes itself`, 'choose another metadata.name');
        else if (pods.has(pod)) report(['staticPods', i, 'manifest'], `is the pod ${pod}, as staticPods[${pods.get(pod)}] is`, 'give each static pod its own metadata.name');
        else pods.set(pod, i);
      });
    },
  },
);
