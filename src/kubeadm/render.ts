// Pure renderer: spec.kubernetes + facts + secret values -> the kubeadm configuration file and the
// kubelet patch files. Reads no disk, clock or environment; the same input gives the same bytes.
//
// Where kubelet settings go: `kubeadm init` reads a KubeletConfiguration document (and uploads it
// as the cluster's kubelet-config), but `kubeadm join` skips every document except
// JoinConfiguration and takes the cluster's kubelet-config instead. A joining machine's own
// kubelet settings therefore travel as a `kubeletconfiguration` patch in `patches.directory`.
import { dump } from 'js-yaml';
import type { KubernetesSpec } from '../config/schema/index.ts';
import type { ProviderIdTemplate } from '../config/schema/kubernetes.ts';
import type { OperatingSystem } from '../host/index.ts';
import { ConfigError } from '../errors.ts';
import type { KubeadmApi } from './version.ts';
import { ECDSA_P384_SINCE, KUBEADM_GROUP } from './version.ts';
import { kubeadmPaths } from './paths.ts';
import { envLiteralOf, literalOf } from '../config/schema/machine.ts';

export const KUBELET_API_VERSION = 'kubelet.config.k8s.io/v1beta1';
/** Windows nodes cannot evict pods under memory pressure; reserve this for the OS unless the user reserves memory. */
export const WINDOWS_DEFAULT_SYSTEM_RESERVED_MEMORY = '2Gi';
export const WINDOWS_DEFAULT_TAINT = { key: 'os', value: 'windows', effect: 'NoSchedule' } as const;
const INODE_SIGNALS = ['nodefs.inodesFree', 'imagefs.inodesFree', 'containerfs.inodesFree'];
/** Every eviction signal spec.kubernetes.kubelet.evictionHard takes. */
const EVICTION_SIGNALS = ['memory.available', 'nodefs.available', 'imagefs.available', 'containerfs.available', 'pid.available', ...INODE_SIGNALS];

export interface KubeadmSecrets {
  token?: string;
  caCertHashes: string[];
  certificateKey?: string;
}

export interface RenderInput {
  kubernetes: KubernetesSpec;
  os: OperatingSystem;
  api: KubeadmApi;
  /** False for kubeadm before v1.25: a join then passes kubelet settings as kubelet flags. Default true. */
  kubeletPatches?: boolean;
  /** The kubeadm minor the API was chosen by (ApiChoice.minor), for values newer than the API itself. */
  kubeadmMinor?: number;
  /** containerd's cgroup driver (spec.containerd.cgroupDriver); the kubelet must use the same. */
  cgroupDriver: 'systemd' | 'cgroupfs';
  /** The version to deploy on init when spec.kubernetes.version is not set (the kubeadm version). */
  fallbackKubernetesVersion?: string;
  secrets: KubeadmSecrets;
}

export interface PatchFile {
  /** File name inside the patches directory, e.g. kubeletconfiguration+merge.yaml. */
  name: string;
  content: string;
}

export interface RenderedKubeadm {
  command: 'init' | 'join';
  apiVersion: string;
  /** The --config file: YAML documents separated by "---". */
  config: string;
  /** Files for patches.directory (empty when there is nothing to patch). */
  patches: PatchFile[];
  patchesDir: string;
}

type Json = Record<string, unknown>;

/** machineadm's own kubelet patch; a file of this name in spec.kubernetes.patchesDirectory is refused. */
export const MACHINEADM_PATCH = 'kubeletconfiguration+merge.yaml';

/** Fields kubeadm's v1beta3 API has no place for (kubeadm before v1.31). */
function refuseOnV1beta3(k: KubernetesSpec): void {
  const cp = k.controlPlane;
  const fields: [string, unknown][] = [
    ['controlPlane.apiServer.extraEnvs', cp?.apiServer?.extraEnvs],
    ['controlPlane.controllerManager.extraEnvs', cp?.controllerManager?.extraEnvs],
    ['controlPlane.scheduler.extraEnvs', cp?.scheduler?.extraEnvs],
    ['controlPlane.etcd.local.extraEnvs', cp?.etcd?.local?.extraEnvs],
    ['controlPlane.certificateValidityDays', cp?.certificateValidityDays],
    ['controlPlane.caCertificateValidityDays', cp?.caCertificateValidityDays],
    ['controlPlane.encryptionAlgorithm', cp?.encryptionAlgorithm],
    ['node.imagePullSerial', k.node?.imagePullSerial],
    ['kubeadmTimeouts.etcdAPICallSeconds', k.kubeadmTimeouts?.etcdAPICallSeconds],
    ['kubeadmTimeouts.kubeletHealthCheckSeconds', k.kubeadmTimeouts?.kubeletHealthCheckSeconds],
    ['kubeadmTimeouts.kubernetesAPICallSeconds', k.kubeadmTimeouts?.kubernetesAPICallSeconds],
    ['kubeadmTimeouts.tlsBootstrapSeconds', k.kubeadmTimeouts?.tlsBootstrapSeconds],
    // v1beta3 has this wait only in ClusterConfiguration, which a join does not read (it takes the cluster's).
    ['kubeadmTimeouts.controlPlaneComponentHealthCheckSeconds', k.bootstrap === 'init' ? undefined : k.kubeadmTimeouts?.controlPlaneComponentHealthCheckSeconds],
  ];
  const issues = fields.filter(([, value]) => value !== undefined).map(([field]) => ({ path: `spec.kubernetes.${field}`, message: 'needs kubeadm v1.31 or newer (kubeadm.k8s.io/v1beta4); this kubeadm reads v1beta3', hint: 'install kubeadm v1.31 or newer, or remove the field' }));
  if (issues.length > 0) throw new ConfigError(issues);
}

/** Values added to v1beta4 after v1.31: the same apiVersion, but an older kubeadm's validation refuses them. */
function refuseTooNewForKubeadm(k: KubernetesSpec, minor: number | undefined): void {
  if (minor === undefined || minor >= ECDSA_P384_SINCE || k.controlPlane?.encryptionAlgorithm !== 'ECDSA-P384') return;
  throw new ConfigError([{ path: 'spec.kubernetes.controlPlane.encryptionAlgorithm', message: `ECDSA-P384 needs kubeadm v1.${ECDSA_P384_SINCE} or newer (older ones refuse it), and the kubeadm version here is v1.${minor}`, hint: `install kubeadm v1.${ECDSA_P384_SINCE} or newer, or choose ECDSA-P256 or an RSA algorithm` }]);
}

/** A duration as kubeadm's API writes it (Go's time.Duration text). */
function duration(seconds: number): string {
  const h = Math.floor(seconds / 3600);
  const m = Math.floor((seconds % 3600) / 60);
  const s = seconds % 60;
  return `${h}h${m}m${s}s`;
}

/** v1beta4's timeouts block (machineadm's seconds as kubeadm durations), or undefined. */
function timeouts(input: RenderInput, names: readonly string[]): Json | undefined {
  const given = input.kubernetes.kubeadmTimeouts ?? {};
  const out: Json = {};
  for (const [field, value] of Object.entries(given)) {
    const name = field.replace(/Seconds$/, '');
    if (value !== undefined && names.includes(name)) out[name] = duration(value);
  }
  return Object.keys(out).length > 0 ? out : undefined;
}
const INIT_TIMEOUTS = ['controlPlaneComponentHealthCheck', 'etcdAPICall', 'kubeletHealthCheck', 'kubernetesAPICall'];
const JOIN_TIMEOUTS = ['controlPlaneComponentHealthCheck', 'discovery', 'etcdAPICall', 'kubeletHealthCheck', 'kubernetesAPICall', 'tlsBootstrap'];

function localApiEndpoint(input: RenderInput): Json | undefined {
  const endpoint = input.kubernetes.controlPlane?.localAPIEndpoint;
  if (endpoint === undefined) return undefined;
  return { ...(endpoint.advertiseAddress !== undefined ? { advertiseAddress: endpoint.advertiseAddress } : {}), ...(endpoint.bindPort !== undefined ? { bindPort: endpoint.bindPort } : {}) };
}

/** Secrets as the plan shows them: the rendered file's shape without any value. */
export function placeholderSecrets(kubernetes: KubernetesSpec, placeholder: string): KubeadmSecrets {
  return {
    ...(kubernetes.token !== undefined ? { token: placeholder } : {}),
    caCertHashes: (kubernetes.caCertHashes ?? []).map(() => placeholder),
    ...(kubernetes.certificateKey !== undefined ? { certificateKey: placeholder } : {}),
  };
}

export function renderKubeadm(input: RenderInput): RenderedKubeadm {
  const k = input.kubernetes;
  const paths = kubeadmPaths(input.os);
  const command = k.bootstrap === 'init' ? 'init' : 'join';
  if (input.os === 'windows' && k.role === 'control-plane') {
    throw new ConfigError([{ path: 'spec.kubernetes.role', message: 'Windows machines can only be workers', hint: 'set role: worker for Windows nodes' }]);
  }
  const kubelet = kubeletSettings(input);
  const apiVersion = `${KUBEADM_GROUP}/${input.api}`;
  const docs: Json[] = [];
  const patches: PatchFile[] = [];
  if (input.api === 'v1beta3') refuseOnV1beta3(k);
  else refuseTooNewForKubeadm(k, input.kubeadmMinor);
  if (command === 'init') {
    const init = initConfiguration(input, apiVersion);
    if (k.patchesDirectory !== undefined) init.patches = { directory: paths.patchesDir };
    docs.push(init, clusterConfiguration(input, apiVersion));
    docs.push({ apiVersion: KUBELET_API_VERSION, kind: 'KubeletConfiguration', ...kubelet });
  } else {
    const join = joinConfiguration(input, apiVersion, input.kubeletPatches === false ? kubeletFlags(kubelet) : {});
    if (Object.keys(kubelet).length > 0 && input.kubeletPatches !== false) {
      // A JSON merge patch: lists (enforceNodeAllocatable: []) replace, maps merge key by key.
      patches.push({ name: MACHINEADM_PATCH, content: toYaml(kubelet) });
    }
    // The user's patch files are copied next to machineadm's own (kubeadm reads one directory).
    if (patches.length > 0 || k.patchesDirectory !== undefined) join.patches = { directory: paths.patchesDir };
    docs.push(join);
  }
  return { command, apiVersion, config: docs.map(toYaml).join('---\n'), patches, patchesDir: paths.patchesDir };
}

function toYaml(value: unknown): string {
  return dump(value, { lineWidth: -1, noRefs: true });
}

function args(api: KubeadmApi, values: Record<string, string>): unknown {
  const sorted = Object.keys(values).sort();
  // v1beta3 takes a map; v1beta4 a list of {name, value} (duplicates allowed, order kept).
  if (api === 'v1beta3') return Object.fromEntries(sorted.map((name) => [name, values[name]]));
  return sorted.map((name) => ({ name, value: values[name] }));
}

function nodeRegistration(input: RenderInput, kubeletFlagArgs: Record<string, string> = {}): Json {
  const node = input.kubernetes.node ?? {};
  const out: Json = {};
  if (node.name !== undefined) out.name = literalOf(node.name, 'spec.kubernetes.node.name');
  out.criSocket = kubeadmPaths(input.os).criSocket;
  // Absent taints let kubeadm default them (the control-plane taint on control planes, none on
  // workers); an explicit empty list means no taints at all, also on a control plane.
  const taints = node.taints ?? (input.os === 'windows' ? [WINDOWS_DEFAULT_TAINT] : undefined);
  if (taints !== undefined) out.taints = taints.map((t) => ({ key: t.key, ...(t.value !== undefined && t.value !== '' ? { value: t.value } : {}), effect: t.effect }));
  const extra: Record<string, string> = { ...kubeletFlagArgs, ...(node.kubeletExtraArgs ?? {}) };
  const labels = Object.entries(node.labels ?? {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  if (labels.length > 0) extra['node-labels'] = labels.map(([k, v]) => `${k}=${literalOf(v, `spec.kubernetes.node.labels["${k}"]`)}`).join(',');
  if (node.ip !== undefined) extra['node-ip'] = node.ip.map((ip) => literalOf(ip, 'spec.kubernetes.node.ip')).join(',');
  // init uploads its KubeletConfiguration as every node's kubelet-config, so the one setting that
  // belongs to this machine alone travels as a flag in this machine's kubeadm-flags.env.
  if (input.kubernetes.bootstrap === 'init' && node.providerID !== undefined) extra['provider-id'] = resolvedProviderId(node.providerID);
  if (Object.keys(extra).length > 0) out.kubeletExtraArgs = args(input.api, extra);
  if (input.kubernetes.ignorePreflightChecks !== undefined) out.ignorePreflightErrors = [...input.kubernetes.ignorePreflightChecks];
  if (node.imagePullPolicy !== undefined) out.imagePullPolicy = node.imagePullPolicy;
  if (node.imagePullSerial !== undefined) out.imagePullSerial = node.imagePullSerial;
  return out;
}

function joinConfiguration(input: RenderInput, apiVersion: string, kubeletFlagArgs: Record<string, string>): Json {
  const k = input.kubernetes;
  const { secrets } = input;
  const discovery: Json =
    k.discoveryFile !== undefined
      ? { file: { kubeConfigPath: k.discoveryFile }, ...(secrets.token !== undefined ? { tlsBootstrapToken: secrets.token } : {}) }
      : {
          bootstrapToken: {
            apiServerEndpoint: envLiteralOf(k.controlPlaneEndpoint!, 'spec.kubernetes.controlPlaneEndpoint'),
            token: secrets.token,
            caCertHashes: secrets.caCertHashes,
          },
        };
  const discoverySeconds = k.kubeadmTimeouts?.discoverySeconds;
  if (input.api === 'v1beta3' && discoverySeconds !== undefined) discovery.timeout = duration(discoverySeconds);
  const doc: Json = { apiVersion, kind: 'JoinConfiguration', discovery, nodeRegistration: nodeRegistration(input, kubeletFlagArgs) };
  if (k.role === 'control-plane') {
    // Without a certificate key the cluster's certificates are already on the machine as files.
    const endpoint = localApiEndpoint(input);
    doc.controlPlane = { ...(endpoint ? { localAPIEndpoint: endpoint } : {}), ...(secrets.certificateKey !== undefined ? { certificateKey: secrets.certificateKey } : {}) };
  }
  if (k.skipPhases !== undefined) doc.skipPhases = [...k.skipPhases];
  const waits = input.api === 'v1beta4' ? timeouts(input, JOIN_TIMEOUTS) : undefined;
  if (waits) doc.timeouts = waits;
  return doc;
}

function initConfiguration(input: RenderInput, apiVersion: string): Json {
  const { secrets } = input;
  const doc: Json = { apiVersion, kind: 'InitConfiguration' };
  // Without a token kubeadm makes a random one (printed once, scrubbed from machineadm's output).
  if (secrets.token !== undefined) doc.bootstrapTokens = [{ token: secrets.token, description: 'bootstrap token from machineadm', ttl: '24h0m0s' }];
  if (secrets.certificateKey !== undefined) doc.certificateKey = secrets.certificateKey;
  const endpoint = localApiEndpoint(input);
  if (endpoint) doc.localAPIEndpoint = endpoint;
  doc.nodeRegistration = nodeRegistration(input);
  if (input.kubernetes.skipPhases !== undefined) doc.skipPhases = [...input.kubernetes.skipPhases];
  const waits = input.api === 'v1beta4' ? timeouts(input, INIT_TIMEOUTS) : undefined;
  if (waits) doc.timeouts = waits;
  return doc;
}

function clusterConfiguration(input: RenderInput, apiVersion: string): Json {
  const k = input.kubernetes;
  const doc: Json = { apiVersion, kind: 'ClusterConfiguration' };
  const version = k.version ?? input.fallbackKubernetesVersion;
  if (version !== undefined) doc.kubernetesVersion = version.startsWith('v') ? version : `v${version}`;
  if (k.controlPlaneEndpoint !== undefined) doc.controlPlaneEndpoint = envLiteralOf(k.controlPlaneEndpoint, 'spec.kubernetes.controlPlaneEndpoint');
  const cp = k.controlPlane ?? {};
  if (cp.clusterName !== undefined) doc.clusterName = cp.clusterName;
  if (cp.imageRepository !== undefined) doc.imageRepository = cp.imageRepository;
  if (cp.certificatesDir !== undefined) doc.certificatesDir = cp.certificatesDir;
  if (cp.featureGates !== undefined) doc.featureGates = sortedRecord(cp.featureGates);
  if (cp.encryptionAlgorithm !== undefined) doc.encryptionAlgorithm = cp.encryptionAlgorithm;
  if (cp.certificateValidityDays !== undefined) doc.certificateValidityPeriod = duration(cp.certificateValidityDays * 86_400);
  if (cp.caCertificateValidityDays !== undefined) doc.caCertificateValidityPeriod = duration(cp.caCertificateValidityDays * 86_400);
  const networking: Json = {};
  if (k.dnsDomain !== undefined) networking.dnsDomain = k.dnsDomain;
  if (k.podSubnet !== undefined) networking.podSubnet = k.podSubnet;
  if (k.serviceSubnet !== undefined) networking.serviceSubnet = k.serviceSubnet;
  if (Object.keys(networking).length > 0) doc.networking = networking;
  const apiServer: Json = { ...(cp.apiServer?.certSANs !== undefined ? { certSANs: [...cp.apiServer.certSANs] } : {}), ...component(input.api, cp.apiServer) };
  // v1beta3 has the control plane's health-check wait here; v1beta4 moved it to timeouts.
  const healthCheck = k.kubeadmTimeouts?.controlPlaneComponentHealthCheckSeconds;
  if (input.api === 'v1beta3' && healthCheck !== undefined) apiServer.timeoutForControlPlane = duration(healthCheck);
  if (Object.keys(apiServer).length > 0) doc.apiServer = apiServer;
  for (const name of ['controllerManager', 'scheduler'] as const) {
    const rendered = component(input.api, cp[name]);
    if (Object.keys(rendered).length > 0) doc[name] = rendered;
  }
  if (cp.etcd?.local !== undefined) {
    const { extraArgs, extraEnvs, ...rest } = cp.etcd.local;
    doc.etcd = { local: { ...rest, ...(extraArgs !== undefined ? { extraArgs: args(input.api, extraArgs) } : {}), ...(extraEnvs !== undefined ? { extraEnvs } : {}) } };
  } else if (cp.etcd?.external !== undefined) {
    doc.etcd = { external: { ...cp.etcd.external } };
  }
  if (cp.dns !== undefined) doc.dns = { ...cp.dns };
  return doc;
}

type Component = { extraArgs?: Record<string, string>; extraVolumes?: Json[]; extraEnvs?: Json[] };

function component(api: KubeadmApi, settings: Component | undefined): Json {
  const out: Json = {};
  if (settings?.extraArgs !== undefined) out.extraArgs = args(api, settings.extraArgs);
  if (settings?.extraVolumes !== undefined) out.extraVolumes = settings.extraVolumes.map((v) => ({ ...v }));
  if (settings?.extraEnvs !== undefined) out.extraEnvs = settings.extraEnvs.map((v) => ({ ...v }));
  return out;
}

/** The kubelet fields machineadm sets; used as the init document's body and as the join patch. */
function kubeletSettings(input: RenderInput): Json {
  const kubelet = input.kubernetes.kubelet ?? {};
  const out: Json = {};
  if (input.os === 'windows') {
    // The kubelet on Windows has no QoS cgroups; false needs enforceNodeAllocatable written as an
    // empty list (omitting it means ["pods"], which is rejected together with false).
    out.cgroupsPerQOS = false;
    out.enforceNodeAllocatable = [];
  } else {
    out.cgroupDriver = input.cgroupDriver;
  }
  // A joining machine's patch is its own: the provider ID goes where the kubelet documents it.
  const providerID = input.kubernetes.node?.providerID;
  if (input.kubernetes.bootstrap !== 'init' && providerID !== undefined) out.providerID = resolvedProviderId(providerID);
  if (kubelet.maxPods !== undefined) out.maxPods = kubelet.maxPods;
  const systemReserved = { ...(kubelet.systemReserved ?? {}) };
  if (input.os === 'windows' && systemReserved.memory === undefined && kubelet.kubeReserved?.memory === undefined) {
    systemReserved.memory = WINDOWS_DEFAULT_SYSTEM_RESERVED_MEMORY;
  }
  if (Object.keys(systemReserved).length > 0) out.systemReserved = sortedRecord(systemReserved);
  if (kubelet.kubeReserved !== undefined) out.kubeReserved = sortedRecord(kubelet.kubeReserved);
  if (kubelet.evictionHard !== undefined) {
    const inode = Object.keys(kubelet.evictionHard).filter((s) => INODE_SIGNALS.includes(s));
    if (input.os === 'windows' && inode.length > 0) {
      throw new ConfigError(inode.map((s) => ({ path: `spec.kubernetes.kubelet.evictionHard["${s}"]`, message: 'Windows has no inode eviction signals', hint: 'remove it for Windows nodes' })));
    }
    out.evictionHard = sortedRecord(kubelet.evictionHard);
  }
  // A join merges this patch into the cluster's kubelet-config key by key (kubeadm applies it as a
  // JSON merge patch), so a map given here would keep the cluster's other thresholds: null removes
  // each signal not given, so the given ones hold as a whole. None given, a Linux kubelet keeps the
  // cluster's thresholds, its right default; a Windows one drops them (made for Linux nodes: inode
  // signals Windows has no statistics for, memory sized for Linux) and takes its own defaults
  // (memory.available 500Mi). Init needs no null: its KubeletConfiguration is not a patch.
  const given = kubelet.evictionHard;
  if (input.kubernetes.bootstrap !== 'init' && given !== undefined) {
    const removed = EVICTION_SIGNALS.filter((signal) => given[signal] === undefined).map((signal) => [signal, null] as const);
    out.evictionHard = sortedRecord({ ...given, ...Object.fromEntries(removed) });
  } else if (input.kubernetes.bootstrap !== 'init' && input.os === 'windows') {
    out.evictionHard = null;
  }
  return out;
}

/** The same settings as kubelet flags (kubeadm before v1.25 cannot patch a joining node's kubelet configuration). */
function kubeletFlags(settings: Json): Record<string, string> {
  const pairs = (values: unknown, sep: string) => Object.entries(values as Record<string, string>).map(([k, v]) => `${k}${sep}${v}`).join(',');
  const flags: Record<string, string> = {};
  if (settings.cgroupDriver !== undefined) flags['cgroup-driver'] = String(settings.cgroupDriver);
  if (settings.cgroupsPerQOS !== undefined) flags['cgroups-per-qos'] = String(settings.cgroupsPerQOS);
  if (settings.enforceNodeAllocatable !== undefined) flags['enforce-node-allocatable'] = (settings.enforceNodeAllocatable as string[]).join(',');
  if (settings.providerID !== undefined) flags['provider-id'] = String(settings.providerID);
  if (settings.maxPods !== undefined) flags['max-pods'] = String(settings.maxPods);
  if (settings.systemReserved !== undefined) flags['system-reserved'] = pairs(settings.systemReserved, '=');
  if (settings.kubeReserved !== undefined) flags['kube-reserved'] = pairs(settings.kubeReserved, '=');
  // A flag cannot remove a threshold (null above): only the given ones are passed.
  const evictionHard = Object.entries((settings.evictionHard ?? {}) as Record<string, string | null>).filter(([, v]) => v !== null);
  if (evictionHard.length > 0) flags['eviction-hard'] = pairs(Object.fromEntries(evictionHard), '<');
  return flags;
}

function sortedRecord<T>(values: Record<string, T>): Record<string, T> {
  return Object.fromEntries(Object.keys(values).sort().map((key) => [key, values[key]!]));
}

function resolvedProviderId(value: string | ProviderIdTemplate): string {
  if (value === 'auto' || typeof value !== 'string') throw new Error('spec.kubernetes.node.providerID is still auto or a template: resolve machine values before rendering');
  return value;
}
