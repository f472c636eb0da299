// KubeadmConfigSpec's clusterConfiguration, initConfiguration and joinConfiguration, read into
// spec.kubernetes. Values Cluster API fills in for each Machine (the endpoint, the join token,
// the CA hashes, a control plane's certificate key) become environment references with fixed
// names, so one imported configuration serves every Machine of a template.
import { formatPath, isPlainObject } from '../config/schema/dsl.ts';
import type { TrackedDocument, Path } from './tracked.ts';
import { azureNameFill, composedProviderScheme, hasMachineTemplate, hasTemplate, isProviderIdTemplate, machineReferenceOf, providerIdTemplateOf, usesSmbiosVariable } from './templates.ts';

type Json = Record<string, unknown>;

export const CAPI_ENV = {
  endpoint: 'MACHINEADM_CAPI_ENDPOINT',
  token: 'MACHINEADM_CAPI_TOKEN',
  caCertHash: 'MACHINEADM_CAPI_CA_CERT_HASH',
  certificateKey: 'MACHINEADM_CAPI_CERTIFICATE_KEY',
} as const;

const fromEnv = (name: string) => ({ valueFrom: { env: name } });

export interface KubeadmShape {
  bootstrap: 'init' | 'join';
  role: 'worker' | 'control-plane';
  os: 'linux' | 'windows';
}

/** Go's time.Duration text (20m0s, 1h, 90s) in whole seconds, or undefined. */
export function durationSeconds(text: string): number | undefined {
  if (!/^(\d+(\.\d+)?(h|m|s|ms|us|\u00b5s|ns))+$/.test(text)) return undefined;
  const unit: Record<string, number> = { h: 3600, m: 60, s: 1, ms: 1e-3, us: 1e-6, µs: 1e-6, ns: 1e-9 };
  let total = 0;
  for (const m of text.matchAll(/(\d+(?:\.\d+)?)(h|ms|m|s|us|\u00b5s|ns)/g)) total += Number(m[1]) * unit[m[2]!]!;
  return Number.isInteger(total) && total > 0 ? total : undefined;
}

/**
 * extraArgs in either Cluster API form: v1beta1's map, v1beta2's list of {name, value}. With
 * `templates: 'refuse'` a value holding a cloud-init template is refused and left out: cloud-init
 * fills it in within CABPK's kubeadm configuration, and machineadm fills in none in a flag (the
 * kubelet's flags, which name machine values machineadm reads, are read by nodeRegistration).
 */
export function readFlags(doc: TrackedDocument, path: Path, templates: 'keep' | 'refuse' = 'keep'): Record<string, string> | undefined {
  const value = doc.take(path);
  if (value === undefined) return undefined;
  const out: Record<string, string> = {};
  const templated = (at: Path, flag: string, text: string): boolean => {
    if (templates === 'keep' || !hasTemplate(text)) return false;
    doc.refuse(at, `flag ${flag}: ${text} holds a cloud-init template, which cloud-init fills in and machineadm does not in a component's flags`, 'write the value itself');
    return true;
  };
  if (isPlainObject(value)) {
    for (const [k, v] of Object.entries(value)) if (!templated([...path, k], k, String(v))) out[k] = String(v);
    return out;
  }
  if (Array.isArray(value)) {
    for (const [i, item] of value.entries()) {
      if (!isPlainObject(item) || typeof item.name !== 'string') {
        doc.refuse([...path, i], 'expected { name, value }');
        continue;
      }
      if (out[item.name] !== undefined) {
        doc.refuse([...path, i], `flag ${item.name} is given twice: machineadm passes each flag once`, 'join the values the way the component reads them (most list flags take commas)');
        continue;
      }
      if (!templated([...path, i, 'value'], item.name, String(item.value ?? ''))) out[item.name] = String(item.value ?? '');
    }
    return out;
  }
  doc.refuse(path, 'expected a map of flags or a list of { name, value }');
  return undefined;
}

function seconds(doc: TrackedDocument, path: Path): number | undefined {
  const text = doc.string(path);
  if (text === undefined) return undefined;
  const value = durationSeconds(text);
  if (value === undefined) doc.refuse(path, `"${text}" is not a duration in whole seconds such as 5m0s`);
  return value;
}

function setIf(target: Json, key: string, value: unknown): void {
  if (value !== undefined) target[key] = value;
}

function component(doc: TrackedDocument, path: Path, withSans: boolean, templates: 'keep' | 'refuse'): Json | undefined {
  const out: Json = {};
  if (withSans) setIf(out, 'certSANs', doc.strings([...path, 'certSANs']));
  setIf(out, 'extraArgs', readFlags(doc, [...path, 'extraArgs'], templates));
  const volumes = doc.length([...path, 'extraVolumes']);
  if (volumes > 0) {
    out.extraVolumes = Array.from({ length: volumes }, (_, i) => {
      const at = [...path, 'extraVolumes', i];
      const v: Json = {};
      for (const key of ['name', 'hostPath', 'mountPath', 'pathType']) setIf(v, key, doc.string([...at, key]));
      setIf(v, 'readOnly', doc.boolean([...at, 'readOnly']));
      return v;
    });
  }
  const envs = envVars(doc, [...path, 'extraEnvs']);
  setIf(out, 'extraEnvs', envs);
  return Object.keys(out).length > 0 ? out : undefined;
}

function envVars(doc: TrackedDocument, path: Path): Json[] | undefined {
  const n = doc.length(path);
  if (n === 0) {
    return undefined;
  }
  const out: Json[] = [];
  for (let i = 0; i < n; i++) {
    const at = [...path, i];
    if (doc.take([...at, 'valueFrom']) !== undefined) {
      doc.refuse([...at, 'valueFrom'], 'reads a Kubernetes object: a static pod has no API to read it from', 'give the value itself');
      continue;
    }
    out.push({ name: doc.string([...at, 'name']), value: doc.string([...at, 'value']) ?? '' });
  }
  return out;
}

function endpointOf(doc: TrackedDocument, path: Path): Json | undefined {
  const address = doc.string([...path, 'advertiseAddress']);
  const port = doc.number([...path, 'bindPort']);
  if (address === undefined && port === undefined) return undefined;
  return { ...(address !== undefined ? { advertiseAddress: address } : {}), ...(port !== undefined ? { bindPort: port } : {}) };
}

const CRI_SOCKETS = {
  linux: ['unix:///var/run/containerd/containerd.sock', 'unix:///run/containerd/containerd.sock', '/var/run/containerd/containerd.sock', '/run/containerd/containerd.sock'],
  windows: ['npipe:////./pipe/containerd-containerd', '//./pipe/containerd-containerd'],
};

/** A placeholder name (@@HOSTNAME@@) a command of the same spec fills with the VM's name from Azure's metadata. */
function filledPlaceholder(doc: TrackedDocument, registration: Path, name: string): { fromMachine: 'instanceName' } | undefined {
  const spec = registration.slice(0, -2);
  const lines = [...(doc.peek([...spec, 'preKubeadmCommands']) as unknown[] | undefined ?? []), ...(doc.peek([...spec, 'bootCommands']) as unknown[] | undefined ?? [])];
  return lines.some((l) => typeof l === 'string' && azureNameFill(l)?.placeholder === name) ? { fromMachine: 'instanceName' } : undefined;
}

/** The node's name, labels, taints and kubelet flags (InitConfiguration or JoinConfiguration). */
function nodeRegistration(doc: TrackedDocument, path: Path, shape: KubeadmShape, k: Json): void {
  const node: Json = (k.node as Json) ?? {};
  const name = doc.string([...path, 'name']);
  if (name !== undefined) {
    const reference = machineReferenceOf(name) ?? filledPlaceholder(doc, path, name);
    if (reference) node.name = reference;
    else if (hasMachineTemplate(name)) doc.refuse([...path, 'name'], `template ${name} is not a value machineadm reads from the machine`, 'use a literal name, or a key of the instance data such as {{ ds.meta_data.local_hostname }}');
    else node.name = name;
  }
  const socket = doc.string([...path, 'criSocket']);
  if (socket !== undefined && !CRI_SOCKETS[shape.os].includes(socket)) {
    doc.refuse([...path, 'criSocket'], `${socket} is not containerd's socket: machineadm configures and uses containerd`, `remove it (machineadm writes ${CRI_SOCKETS[shape.os][0]})`);
  }
  setIf(k, 'ignorePreflightChecks', doc.strings([...path, 'ignorePreflightErrors']));
  setIf(node, 'imagePullPolicy', doc.string([...path, 'imagePullPolicy']));
  setIf(node, 'imagePullSerial', doc.boolean([...path, 'imagePullSerial']));
  const taintCount = doc.length([...path, 'taints']);
  if (doc.peek([...path, 'taints']) !== undefined && Array.isArray(doc.peek([...path, 'taints']))) {
    node.taints = Array.from({ length: taintCount }, (_, i) => {
      const at = [...path, 'taints', i];
      doc.note([...at, 'timeAdded'], 'is set by the API server when the taint is added');
      const t: Json = { key: doc.string([...at, 'key']), effect: doc.string([...at, 'effect']) };
      setIf(t, 'value', doc.string([...at, 'value']));
      return t;
    });
  }
  const flags = readFlags(doc, [...path, 'kubeletExtraArgs']) ?? {};
  const rest: Record<string, string> = {};
  for (const [flag, value] of Object.entries(flags)) {
    const at = [...path, 'kubeletExtraArgs', flag];
    switch (flag) {
      case 'node-labels':
        node.labels = { ...((node.labels as Json) ?? {}), ...labels(doc, at, value) };
        break;
      case 'node-ip':
        node.ip = value.split(',').map((v) => {
          const reference = machineReferenceOf(v);
          if (reference) return reference;
          if (hasMachineTemplate(v)) doc.refuse(at, `template ${v.trim()} is not a value machineadm reads from the machine`, 'leave node-ip out (the kubelet picks the address of the default route), give the address, or use {{ ds.meta_data.local_ipv4 }}');
          return v.trim();
        });
        break;
      case 'provider-id': {
        const template = providerIdTemplateOf(value);
        if (isProviderIdTemplate(value) && composedProviderScheme(value)) node.providerID = 'auto';
        else if (template) {
          node.providerID = template;
          if (usesSmbiosVariable(value)) doc.notes.push({ path: formatPath(at), message: `${value}: the VM's SMBIOS UUID, which CAPMOX's Ignition data hands its Flatcar units; machineadm reads it as instanceId from /sys/class/dmi/id/product_uuid given --set cloud=bare-metal (Proxmox has no metadata service), or give each machine's ID with --set providerID=...` });
        }
        else if (isProviderIdTemplate(value)) {
          // An Afterburn variable (Flatcar: no cloud-init, so no instance data to read).
          node.providerID = 'auto';
          doc.notes.push({ path: formatPath(at), message: `${value}: providerID: auto composes AWS, Azure and GCE IDs from their metadata services only; on this cloud give each machine's ID with --set providerID=... (or a --facts file): without it the run stops before any change (exit 6)` });
        }
        else if (hasMachineTemplate(value)) doc.refuse(at, `template ${value} is not a provider ID machineadm composes`, 'write providerID: auto, the ID itself, or a template of keys of the instance data such as oci://{{ ds["id"] }}');
        else node.providerID = value;
        break;
      }
      case 'register-with-taints':
        node.taints = [...((node.taints as Json[]) ?? []), ...value.split(',').filter(Boolean).map((t) => taintOf(t))];
        break;
      case 'hostname-override': {
        const reference = machineReferenceOf(value);
        if (reference) node.name = reference;
        else if (hasMachineTemplate(value)) doc.refuse(at, `template ${value} is not a value machineadm reads from the machine`);
        else node.name = value;
        break;
      }
      default:
        if (hasMachineTemplate(value)) doc.refuse(at, `template ${value} is not expanded by machineadm`, 'give the value itself');
        else rest[flag] = value;
    }
  }
  if (Object.keys(rest).length > 0) node.kubeletExtraArgs = rest;
  if (Object.keys(node).length > 0) k.node = node;
}

function labels(doc: TrackedDocument, path: Path, value: string): Json {
  const out: Json = {};
  for (const pair of value.split(',').filter(Boolean)) {
    const [key = '', ...rest] = pair.split('=');
    const text = rest.join('=');
    const reference = machineReferenceOf(text);
    if (reference) out[key] = reference;
    else if (hasMachineTemplate(text)) doc.refuse(path, `label ${key}: template ${text} is not a value machineadm reads from the machine`);
    else out[key] = text;
  }
  return out;
}

function taintOf(text: string): Json {
  const [keyValue = '', effect = ''] = text.split(':');
  const [key = '', value] = keyValue.split('=');
  return { key, ...(value !== undefined ? { value } : {}), effect };
}

function timeouts(doc: TrackedDocument, path: Path, k: Json): void {
  const out: Json = (k.kubeadmTimeouts as Json) ?? {};
  for (const name of ['controlPlaneComponentHealthCheckSeconds', 'discoverySeconds', 'etcdAPICallSeconds', 'kubeletHealthCheckSeconds', 'kubernetesAPICallSeconds', 'tlsBootstrapSeconds']) {
    setIf(out, name, doc.number([...path, name]));
  }
  if (Object.keys(out).length > 0) k.kubeadmTimeouts = out;
}

/**
 * Whether a kubeadm document is this machine's to read: when it is another's (`why` says whose),
 * each of its fields is noted as not carried. Its apiVersion and kind are machineadm's to choose.
 */
function readsDocument(doc: TrackedDocument, path: Path, why: string | undefined): boolean {
  if (why !== undefined) {
    for (const key of doc.keys(path)) doc.note([...path, key], why);
    return false;
  }
  doc.note([...path, 'apiVersion'], "machineadm writes the kubeadm API version the machine's kubeadm reads");
  doc.note([...path, 'kind'], 'implied');
  return true;
}

export function clusterConfiguration(doc: TrackedDocument, path: Path, shape: KubeadmShape, k: Json): void {
  if (doc.peek(path) === undefined) return;
  // kubeadm join reads the cluster's own ClusterConfiguration; a joining member's copy is unused.
  if (!readsDocument(doc, path, shape.bootstrap === 'join' ? "a joining machine takes the cluster's setting (made by the init machine); not carried" : undefined)) return;
  setIf(k, 'version', doc.string([...path, 'kubernetesVersion']));
  const endpoint = doc.string([...path, 'controlPlaneEndpoint']);
  if (endpoint !== undefined) k.controlPlaneEndpoint = endpoint;
  const cp: Json = (k.controlPlane as Json) ?? {};
  // cloud-init renders CABPK's kubeadm configuration (Linux); cloudbase-init renders nothing.
  const templates = shape.os === 'linux' ? 'refuse' : 'keep';
  setIf(cp, 'apiServer', component(doc, [...path, 'apiServer'], true, templates));
  const healthCheck = seconds(doc, [...path, 'apiServer', 'timeoutForControlPlane']);
  if (healthCheck !== undefined) k.kubeadmTimeouts = { ...((k.kubeadmTimeouts as Json) ?? {}), controlPlaneComponentHealthCheckSeconds: healthCheck };
  setIf(cp, 'controllerManager', component(doc, [...path, 'controllerManager'], false, templates));
  setIf(cp, 'scheduler', component(doc, [...path, 'scheduler'], false, templates));
  const etcd = [...path, 'etcd'];
  if (doc.peek([...etcd, 'local']) !== undefined) {
    const at = [...etcd, 'local'];
    const local: Json = {};
    for (const key of ['dataDir', 'imageRepository', 'imageTag']) setIf(local, key, doc.string([...at, key]));
    setIf(local, 'extraArgs', readFlags(doc, [...at, 'extraArgs'], templates));
    setIf(local, 'extraEnvs', envVars(doc, [...at, 'extraEnvs']));
    setIf(local, 'serverCertSANs', doc.strings([...at, 'serverCertSANs']));
    setIf(local, 'peerCertSANs', doc.strings([...at, 'peerCertSANs']));
    if (Object.keys(local).length > 0) cp.etcd = { local };
  }
  if (doc.peek([...etcd, 'external']) !== undefined) {
    const at = [...etcd, 'external'];
    const external: Json = { endpoints: doc.strings([...at, 'endpoints']) };
    for (const key of ['caFile', 'certFile', 'keyFile']) setIf(external, key, doc.string([...at, key]));
    cp.etcd = { external };
  }
  const dns: Json = {};
  for (const key of ['imageRepository', 'imageTag']) setIf(dns, key, doc.string([...path, 'dns', key]));
  if (Object.keys(dns).length > 0) cp.dns = dns;
  setIf(cp, 'imageRepository', doc.string([...path, 'imageRepository']));
  const gates = doc.take([...path, 'featureGates']);
  if (isPlainObject(gates)) cp.featureGates = gates;
  setIf(cp, 'clusterName', doc.string([...path, 'clusterName']));
  setIf(cp, 'certificatesDir', doc.string([...path, 'certificatesDir']));
  setIf(cp, 'certificateValidityDays', doc.number([...path, 'certificateValidityPeriodDays']));
  setIf(cp, 'caCertificateValidityDays', doc.number([...path, 'caCertificateValidityPeriodDays']));
  setIf(cp, 'encryptionAlgorithm', doc.string([...path, 'encryptionAlgorithm']));
  if (Object.keys(cp).length > 0) k.controlPlane = cp;
  const net = [...path, 'networking'];
  setIf(k, 'podSubnet', doc.string([...net, 'podSubnet']));
  setIf(k, 'serviceSubnet', doc.string([...net, 'serviceSubnet']));
  setIf(k, 'dnsDomain', doc.string([...net, 'dnsDomain']));
}

export function initConfiguration(doc: TrackedDocument, path: Path, shape: KubeadmShape, k: Json): void {
  if (doc.peek(path) === undefined) return;
  if (!readsDocument(doc, path, shape.bootstrap === 'join' ? 'used only by the init machine; not carried' : undefined)) return;
  if (doc.take([...path, 'bootstrapTokens']) !== undefined) {
    doc.refuse([...path, 'bootstrapTokens'], 'machineadm makes the init machine\'s bootstrap token from spec.kubernetes.token (or kubeadm makes one)', 'remove it; Cluster API makes join tokens itself');
  }
  const endpoint = endpointOf(doc, [...path, 'localAPIEndpoint']);
  if (endpoint) k.controlPlane = { ...((k.controlPlane as Json) ?? {}), localAPIEndpoint: endpoint };
  nodeRegistration(doc, [...path, 'nodeRegistration'], shape, k);
  setIf(k, 'patchesDirectory', doc.string([...path, 'patches', 'directory']));
  setIf(k, 'skipPhases', doc.strings([...path, 'skipPhases']));
  timeouts(doc, [...path, 'timeouts'], k);
  // Cluster API fills the endpoint of the cluster on init too.
  if (k.controlPlaneEndpoint === undefined) k.controlPlaneEndpoint = fromEnv(CAPI_ENV.endpoint);
}

export function joinConfiguration(doc: TrackedDocument, path: Path, shape: KubeadmShape, k: Json): void {
  if (!readsDocument(doc, path, shape.bootstrap === 'init' ? 'used only by joining machines; not carried (import with --join for them)' : undefined)) return;
  const caCertPath = doc.string([...path, 'caCertPath']);
  if (caCertPath !== undefined && caCertPath !== '/etc/kubernetes/pki/ca.crt') doc.refuse([...path, 'caCertPath'], `${caCertPath} is not kubeadm's default: machineadm keeps the CA at /etc/kubernetes/pki/ca.crt`, 'remove it');
  if (shape.role === 'control-plane') {
    const endpoint = endpointOf(doc, [...path, 'controlPlane', 'localAPIEndpoint']);
    if (endpoint) k.controlPlane = { ...((k.controlPlane as Json) ?? {}), localAPIEndpoint: endpoint };
    k.certificateKey = fromEnv(CAPI_ENV.certificateKey);
  }
  const discovery = [...path, 'discovery'];
  const file = [...discovery, 'file'];
  if (doc.peek(file) !== undefined) {
    setIf(k, 'discoveryFile', doc.string([...file, 'kubeConfigPath']));
    if (doc.take([...file, 'kubeConfig']) !== undefined) doc.refuse([...file, 'kubeConfig'], 'Cluster API writes this kubeconfig from the cluster; machineadm reads a file on the machine', 'write the kubeconfig with spec.files and give its path as kubeConfigPath');
  }
  const token = [...discovery, 'bootstrapToken'];
  if (doc.boolean([...token, 'unsafeSkipCAVerification']) === true) {
    doc.refuse([...token, 'unsafeSkipCAVerification'], 'machineadm never joins without checking the cluster CA', 'remove it: Cluster API gives the CA hashes');
  }
  if (k.discoveryFile === undefined) {
    k.controlPlaneEndpoint = doc.string([...token, 'apiServerEndpoint']) ?? fromEnv(CAPI_ENV.endpoint);
    const literal = doc.string([...token, 'token']);
    k.token = literal ?? fromEnv(CAPI_ENV.token);
    k.caCertHashes = doc.strings([...token, 'caCertHashes']) ?? [fromEnv(CAPI_ENV.caCertHash)];
  } else {
    const tls = doc.string([...discovery, 'tlsBootstrapToken']);
    k.token = tls ?? fromEnv(CAPI_ENV.token);
  }
  const wait = seconds(doc, [...discovery, 'timeout']);
  if (wait !== undefined) k.kubeadmTimeouts = { ...((k.kubeadmTimeouts as Json) ?? {}), discoverySeconds: wait };
  if (k.discoveryFile === undefined && doc.take([...discovery, 'tlsBootstrapToken']) !== undefined) {
    doc.refuse([...discovery, 'tlsBootstrapToken'], 'with token discovery the same token bootstraps the kubelet', 'remove it');
  }
  nodeRegistration(doc, [...path, 'nodeRegistration'], shape, k);
  setIf(k, 'patchesDirectory', doc.string([...path, 'patches', 'directory']));
  setIf(k, 'skipPhases', doc.strings([...path, 'skipPhases']));
  timeouts(doc, [...path, 'timeouts'], k);
}
