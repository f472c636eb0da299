// `machineadm config import`: a Cluster API KubeadmConfig, KubeadmConfigTemplate,
// KubeadmControlPlane or KubeadmControlPlaneTemplate as an equivalent MachineConfig. Every field
// of the input maps, is explained (a note: Cluster API's own bookkeeping, a setting only another
// machine uses), or is refused with its path and why.
import { ConfigError, type ConfigIssue } from '../errors.ts';
import { formatPath, isPlainObject, type PathSegment } from '../config/schema/dsl.ts';
import { API_VERSION, machineConfigJsonSchema } from '../config/schema/index.ts';
import { KUBEADM_MAX_VERBOSITY } from '../config/schema/kubernetes.ts';
import { TrackedDocument, type ImportNote, type Path } from './tracked.ts';
import { CAPI_ENV, clusterConfiguration, initConfiguration, joinConfiguration, type KubeadmShape } from './kubeadm.ts';
import { machinePreparation } from './machine.ts';
import { hasTemplate } from './templates.ts';
import type { SecretMapping } from './secret-mapping.ts';

type Json = Record<string, unknown>;

export const BOOTSTRAP_GROUP = 'bootstrap.cluster.x-k8s.io';
export const CONTROLPLANE_GROUP = 'controlplane.cluster.x-k8s.io';
const VERSIONS = ['v1beta1', 'v1beta2'];

interface Kind {
  group: string;
  kind: string;
  /** Where the KubeadmConfigSpec is. */
  spec: Path;
  controlPlane: boolean;
}

const KINDS: Kind[] = [
  { group: BOOTSTRAP_GROUP, kind: 'KubeadmConfig', spec: ['spec'], controlPlane: false },
  { group: BOOTSTRAP_GROUP, kind: 'KubeadmConfigTemplate', spec: ['spec', 'template', 'spec'], controlPlane: false },
  { group: CONTROLPLANE_GROUP, kind: 'KubeadmControlPlane', spec: ['spec', 'kubeadmConfigSpec'], controlPlane: true },
  { group: CONTROLPLANE_GROUP, kind: 'KubeadmControlPlaneTemplate', spec: ['spec', 'template', 'spec', 'kubeadmConfigSpec'], controlPlane: true },
];

export interface ImportOptions {
  /** A joining member of a control plane (KubeadmControlPlane), or a join of a KubeadmConfig that has both. */
  join?: boolean;
  /** The machine's operating system; default: Windows when the input names containerd's named pipe. */
  os?: 'linux' | 'windows';
  /** Names the input in messages. */
  source: string;
  /** Where the values of the Kubernetes Secrets the object reads come from on the machine (default: files). */
  secrets?: SecretMapping;
}

export interface ImportResult {
  config: Json;
  notes: ImportNote[];
  shape: KubeadmShape;
}

function kindOf(doc: TrackedDocument, source: string): Kind {
  const apiVersion = doc.string(['apiVersion']) ?? '';
  const kindName = doc.string(['kind']) ?? '';
  const [group = '', version = ''] = apiVersion.split('/');
  const kind = KINDS.find((k) => k.group === group && k.kind === kindName);
  if (!kind || !VERSIONS.includes(version)) {
    const known = KINDS.map((k) => `${k.group} ${k.kind}`).join(', ');
    throw new ConfigError([{ source, path: 'kind', message: `${apiVersion || '(no apiVersion)'} ${kindName || '(no kind)'} is not a Cluster API kubeadm object machineadm imports`, hint: `one of ${known}, version ${VERSIONS.join(' or ')}` }]);
  }
  return kind;
}

function detectOs(doc: TrackedDocument, spec: Path): 'linux' | 'windows' {
  const sockets = [doc.peek([...spec, 'joinConfiguration', 'nodeRegistration', 'criSocket']), doc.peek([...spec, 'initConfiguration', 'nodeRegistration', 'criSocket'])];
  if (sockets.some((s) => typeof s === 'string' && s.includes('pipe'))) return 'windows';
  const files = doc.peek([...spec, 'files']);
  if (Array.isArray(files) && files.some((f) => isPlainObject(f) && typeof f.path === 'string' && /^[A-Za-z]:[\\/]/.test(f.path))) return 'windows';
  return 'linux';
}

function shapeOf(doc: TrackedDocument, kind: Kind, options: ImportOptions, os: 'linux' | 'windows'): KubeadmShape {
  if (kind.controlPlane) return { bootstrap: options.join ? 'join' : 'init', role: 'control-plane', os };
  const has = (key: string) => doc.peek([...kind.spec, key]) !== undefined;
  const joins = options.join || kind.kind === 'KubeadmConfigTemplate' || !(has('initConfiguration') || has('clusterConfiguration'));
  if (!joins) return { bootstrap: 'init', role: 'control-plane', os };
  const controlPlane = doc.peek([...kind.spec, 'joinConfiguration', 'controlPlane']) !== undefined;
  return { bootstrap: 'join', role: controlPlane ? 'control-plane' : 'worker', os };
}

/** Cluster API's bookkeeping around the spec: how many machines, from which template, how to roll them. */
function noteControlPlaneFields(doc: TrackedDocument, kind: Kind): void {
  const owner = kind.spec.slice(0, -1);
  for (const key of doc.keys(owner)) {
    if (key === 'kubeadmConfigSpec' || key === 'version') continue;
    doc.note([...owner, key], 'Cluster API manages the control plane\'s machines with it; nothing on the machine');
  }
}

// Cluster API's machine controller removes this taint once it has copied the Machine's labels to
// the Node; the kubeadm bootstrap provider registers every worker with it (its joinWorker, not the
// control plane's init or join), and so does an import.
export const UNINITIALIZED_TAINT = { key: 'node.cluster.x-k8s.io/uninitialized', effect: 'NoSchedule' } as const;
// What a Windows worker would carry without a taints list: machineadm's own.
const WINDOWS_TAINTS = [{ key: 'os', value: 'windows', effect: 'NoSchedule' }];

function addUninitializedTaint(doc: TrackedDocument, kubernetes: Json, shape: KubeadmShape): void {
  if (shape.role === 'control-plane') return;
  const node = (kubernetes.node as Json | undefined) ?? {};
  const given = node.taints as Json[] | undefined;
  if (given === undefined && shape.os === 'windows') {
    doc.notes.push({ path: '(Windows worker)', message: 'CABPK registers it with the uninitialized taint alone; machineadm adds os=windows:NoSchedule, the taint Windows nodes get (Linux workloads then need no nodeSelector to stay off it): give taints: [] in the original to register without it' });
  }
  const base = given ?? (shape.os === 'windows' ? WINDOWS_TAINTS : []);
  if (base.some((t) => t.key === UNINITIALIZED_TAINT.key)) return;
  node.taints = [...base, { ...UNINITIALIZED_TAINT }];
  kubernetes.node = node;
}

/**
 * KubeadmControlPlane turns kubeadm's ControlPlaneKubeletLocalMode on from Kubernetes 1.31 until
 * 1.36 (where it is always on), unless the template sets it: a control plane's kubelet then talks
 * to its own API server, as the kubelet's version skew policy needs during an upgrade.
 */
export const KUBELET_LOCAL_MODE_GATE = 'ControlPlaneKubeletLocalMode';

function addKubeletLocalMode(kubernetes: Json): void {
  const [major, minor] = /^v?(\d+)\.(\d+)/.exec(String(kubernetes.version ?? ''))?.slice(1).map(Number) ?? [];
  if (major !== 1 || minor === undefined || minor < 31 || minor >= 36) return;
  const cp = (kubernetes.controlPlane as Json | undefined) ?? {};
  const gates = (cp.featureGates as Json | undefined) ?? {};
  if (KUBELET_LOCAL_MODE_GATE in gates) return;
  kubernetes.controlPlane = { ...cp, featureGates: { ...gates, [KUBELET_LOCAL_MODE_GATE]: true } };
}

/**
 * cloud-init renders the templates of the whole of CABPK's user data; machineadm fills in only the
 * ones the import turned into machine values (node name, IP, labels, provider ID, commands, file
 * content). One left anywhere else in a Linux import would reach the machine as text: refused,
 * named by where it is in the MachineConfig. cloudbase-init and Ignition render none: a Windows or
 * Ignition import keeps its text.
 */
function leftTemplates(value: unknown, path: PathSegment[], source: string): ConfigIssue[] {
  if (typeof value === 'string') {
    if (!hasTemplate(value)) return [];
    const template = /\{\{.*?\}\}|\{%.*?%\}/s.exec(value)?.[0] ?? value.slice(0, 60);
    return [{ source, path: `${formatPath(path)} of the MachineConfig made`, message: `holds a cloud-init template (${template}), which cloud-init fills in and machineadm would pass on as text`, hint: 'write the value itself in the original field' }];
  }
  if (Array.isArray(value)) return value.flatMap((v, i) => leftTemplates(v, [...path, i], source));
  if (isPlainObject(value)) return Object.entries(value).flatMap(([k, v]) => leftTemplates(v, [...path, k], source));
  return [];
}

/** Where the template gave a kubelet flag: the configuration of the command this import is for. */
function kubeletFlagPath(base: Path, shape: KubeadmShape, flag: string): Path {
  return [...base, shape.bootstrap === 'init' ? 'initConfiguration' : 'joinConfiguration', 'nodeRegistration', 'kubeletExtraArgs', flag];
}

/** A kubelet flag carried elsewhere: gone from kubeletExtraArgs, and the map with its last flag. */
function dropKubeletFlag(node: Json, flag: string): void {
  const flags = node.kubeletExtraArgs as Record<string, string>;
  delete flags[flag];
  if (Object.keys(flags).length === 0) delete node.kubeletExtraArgs;
}

/**
 * The kubelet's cgroup-driver flag would win over the driver machineadm gives the kubelet and
 * containerd alike (spec.containerd.cgroupDriver, systemd unless said): it becomes that field.
 */
function cgroupDriverFlag(doc: TrackedDocument, base: Path, shape: KubeadmShape, spec: Json, kubernetes: Json): void {
  const node = kubernetes.node as Json | undefined;
  const flags = node?.kubeletExtraArgs as Record<string, string> | undefined;
  const driver = flags?.['cgroup-driver'];
  if (node === undefined || flags === undefined || (driver !== 'systemd' && driver !== 'cgroupfs')) return;
  dropKubeletFlag(node, 'cgroup-driver');
  if (driver === 'cgroupfs') spec.containerd = { ...((spec.containerd as Json | undefined) ?? {}), cgroupDriver: driver };
  doc.notes.push({ path: formatPath(kubeletFlagPath(base, shape, 'cgroup-driver')), message: `cgroup-driver=${driver}: machineadm gives the kubelet and containerd one driver, spec.containerd.cgroupDriver${driver === 'systemd' ? ' (systemd unless said)' : ''}: carried there` });
}

/** Where an import puts kubeadm patches when the template names no folder for them. */
export const IMPORTED_PATCHES_DIRECTORY = '/etc/machineadm/kubeadm-patches';

/**
 * The kubelet's config flag names a KubeletConfiguration file of the template's own (Hetzner's),
 * read in place of the one kubeadm writes: its settings become a kubelet patch over kubeadm's, so
 * that the kubelet also keeps what kubeadm and machineadm give it (cluster DNS, the cgroup driver).
 * A file the import cannot read (from a Secret, encoded) keeps the flag, which validation refuses.
 */
function kubeletConfigFlag(doc: TrackedDocument, base: Path, shape: KubeadmShape, spec: Json, kubernetes: Json): void {
  const node = kubernetes.node as Json | undefined;
  const flags = node?.kubeletExtraArgs as Record<string, string> | undefined;
  const path = flags?.config;
  const files = (spec.files as Json[] | undefined) ?? [];
  const file = files.find((f) => f.path === path);
  if (node === undefined || flags === undefined || file === undefined || typeof file.content !== 'string' || file.encoding !== undefined) return;
  if (!/^kind:\s*["']?KubeletConfiguration["']?\s*$/m.test(file.content)) return;
  const dir = (kubernetes.patchesDirectory as string | undefined) ?? IMPORTED_PATCHES_DIRECTORY;
  const patch = `${dir}/kubeletconfiguration0+merge.yaml`;
  if (files.some((f) => f.path === patch)) return;
  dropKubeletFlag(node, 'config');
  kubernetes.patchesDirectory = dir;
  files.push({ path: patch, content: file.content, mode: '0644' });
  doc.notes.push({ path: formatPath(kubeletFlagPath(base, shape, 'config')), message: `${path}: the kubelet would read this file in place of the configuration kubeadm writes, without the cluster DNS and cgroup driver kubeadm and machineadm give it: its settings are carried as the kubelet patch ${patch} (spec.kubernetes.patchesDirectory), applied over kubeadm's` });
}

/** The fields in the order the schema lists them (the order the docs and `config view` use). */
function inSchemaOrder(value: unknown, schema: Json | undefined): unknown {
  const props = (schema?.properties ?? (schema?.anyOf as Json[] | undefined)?.[0]?.properties) as Record<string, Json> | undefined;
  if (Array.isArray(value)) return value.map((v) => inSchemaOrder(v, (schema?.items as Json | undefined) ?? (schema?.anyOf as Json[] | undefined)?.[0]?.items as Json | undefined));
  if (!isPlainObject(value) || !props) return value;
  const known = Object.keys(props).filter((k) => k in value);
  const rest = Object.keys(value).filter((k) => !(k in props));
  return Object.fromEntries([...known, ...rest].map((k) => [k, inSchemaOrder(value[k], props[k])]));
}

export function importClusterApi(input: unknown, options: ImportOptions): ImportResult {
  if (!isPlainObject(input)) throw new ConfigError([{ source: options.source, path: '', message: 'expected one YAML document (a map)' }]);
  const doc = new TrackedDocument(input, options.source);
  const kind = kindOf(doc, options.source);
  const os = options.os ?? detectOs(doc, kind.spec);
  const shape = shapeOf(doc, kind, options, os);
  const name = doc.string(['metadata', 'name']);
  for (const key of doc.keys(['metadata'])) doc.note(['metadata', key], 'the Cluster API object\'s own metadata');
  doc.note(['status'], 'written by Cluster API');
  if (kind.kind.endsWith('Template')) for (const key of doc.keys(['spec', 'template'])) if (key !== 'spec') doc.note(['spec', 'template', key], 'template metadata for the objects Cluster API makes');
  if (kind.controlPlane) noteControlPlaneFields(doc, kind);

  const spec: Json = {};
  machinePreparation(doc, kind.spec, os, spec, shape.bootstrap, options.secrets);
  const kubernetes: Json = { role: shape.role, bootstrap: shape.bootstrap };
  // KubeadmControlPlane's version is the cluster's; CABPK writes it as kubernetesVersion.
  if (kind.controlPlane) {
    const version = doc.string([...kind.spec.slice(0, -1), 'version']);
    if (version !== undefined) kubernetes.version = version;
  }
  clusterConfiguration(doc, [...kind.spec, 'clusterConfiguration'], shape, kubernetes);
  initConfiguration(doc, [...kind.spec, 'initConfiguration'], shape, kubernetes);
  joinConfiguration(doc, [...kind.spec, 'joinConfiguration'], shape, kubernetes);
  if (shape.bootstrap === 'init' && kubernetes.controlPlaneEndpoint === undefined) kubernetes.controlPlaneEndpoint = { valueFrom: { env: 'MACHINEADM_CAPI_ENDPOINT' } };
  const verbosity = doc.number([...kind.spec, 'verbosity']);
  if (verbosity !== undefined) kubernetes.verbosity = Math.min(verbosity, KUBEADM_MAX_VERBOSITY);
  if (verbosity !== undefined && verbosity > KUBEADM_MAX_VERBOSITY) {
    doc.note([...kind.spec, 'verbosity'], `kubeadm --v=${verbosity} prints API request headers and bodies, which carry the bootstrap token: machineadm passes --v=${KUBEADM_MAX_VERBOSITY} at most`);
  }
  addUninitializedTaint(doc, kubernetes, shape);
  if (kind.controlPlane && shape.bootstrap === 'init') {
    addKubeletLocalMode(kubernetes);
    // The machines that join this control plane download its certificates with the key Cluster
    // API's variable gives them (see joinConfiguration): the first one uploads them with it.
    kubernetes.certificateKey = { valueFrom: { env: CAPI_ENV.certificateKey } };
  }
  if (os === 'linux') {
    cgroupDriverFlag(doc, kind.spec, shape, spec, kubernetes);
    kubeletConfigFlag(doc, kind.spec, shape, spec, kubernetes);
  }
  spec.kubernetes = kubernetes;
  doc.refuseUnread();
  // Ignition renders no templates either: CABPK's Ignition data writes them as text too.
  if (os === 'linux' && doc.peek([...kind.spec, 'format']) !== 'ignition') doc.issues.push(...leftTemplates(spec, ['spec'], options.source));
  if (doc.issues.length > 0) throw new ConfigError(doc.issues);
  if (shape.role === 'control-plane') {
    doc.notes.push({
      path: '(control plane)',
      message:
        shape.bootstrap === 'init'
          ? 'Cluster API writes the cluster CAs and service-account keys into /etc/kubernetes/pki through the bootstrap data; deliver them with the configuration (spec.files) or before machineadm runs. kubeadm init uploads the control-plane certificates with MACHINEADM_CAPI_CERTIFICATE_KEY (--upload-certs), for the control planes that join with the same key'
          : 'a joining control plane downloads the certificates with MACHINEADM_CAPI_CERTIFICATE_KEY, or finds them in /etc/kubernetes/pki when the bootstrap data writes them (then leave certificateKey out)',
    });
  }
  const config: Json = { apiVersion: API_VERSION, kind: 'MachineConfig', ...(name !== undefined ? { metadata: { name } } : {}), spec };
  return { config: inSchemaOrder(config, machineConfigJsonSchema()) as Json, notes: doc.notes, shape };
}
