// MachineConfig v1alpha1: the single source of truth for the configuration's types, validation and
// JSON Schema. Each section lives in its own file.
import { documented, enumOf, object, optional, string, withDefault, type Infer } from './dsl.ts';
import { systemFields } from './system.ts';
import { containerdSection } from './containerd.ts';
import { kubernetesSection } from './kubernetes.ts';
import { windowsSection } from './windows.ts';
import { domainJoinSection } from './domain-join.ts';
import { reportSection } from './report.ts';
import { securitySection } from './security.ts';
import { storageSection } from './storage.ts';
import { commandsSection } from './commands.ts';
import { usersSection } from './users.ts';
import { timeServersSection } from './time.ts';

export const API_GROUP = 'machineadm.cluster.x-k8s.io';
export const API_VERSION = `${API_GROUP}/v1alpha1`;
export const SUPPORTED_API_VERSIONS = [API_VERSION] as const;

export const machineConfigSpec = object(
  {
    ...systemFields,
    commands: optional(commandsSection),
    users: optional(usersSection),
    timeServers: optional(timeServersSection),
    storage: optional(storageSection),
    containerd: optional(containerdSection, { description: 'containerd\'s configuration: sandbox image, cgroup driver, registry mirrors, proxy, extra CAs', example: { sandboxImage: 'registry.k8s.io/pause:3.10', cgroupDriver: 'systemd' } }),
    kubernetes: optional(kubernetesSection, { description: 'how this machine becomes a node: kubeadm init or join, rendered from these fields (kubeadm\'s own API is never exposed)', example: { role: 'worker', controlPlaneEndpoint: '10.0.0.10:6443', token: { valueFrom: { file: '/etc/machineadm/token' } }, caCertHashes: ['sha256:' + '0'.repeat(64)] } }),
    domainJoin: optional(domainJoinSection, { description: 'join an Active Directory domain before kubeadm runs (Windows: Add-Computer or an offline djoin blob; Linux: adcli or realm)', example: { domain: 'corp.example', credentials: { username: 'joiner', password: { valueFrom: { file: '/etc/machineadm/join-password' } } } } }),
    windows: optional(windowsSection, { description: 'Windows nodes only: kubelet and containerd paths, supported builds, host agents run as services', example: { supportedBuilds: [20348], kubeletPath: 'C:\\k\\kubelet.exe' } }),
    report: withDefault(reportSection, { clusterAPISentinel: true, deadlineSeconds: 30 }, { description: 'how the outcome is told: the Cluster API sentinel and CloudEvents endpoints (the result file is always written)', example: { endpoints: [{ url: 'https://collector.example/events' }] } }),
    security: withDefault(securitySection, { requireSignedBinary: false, offline: false }, { description: 'trust and network policy of a run', example: { requireSignedBinary: true } }),
  },
  {
    check: (spec, report, _ctx, failed) => {
      // There is no kubeadm run for these to come before or after (a spec.kubernetes given but
      // wrong is absent here too, and its own problems are reported).
      for (const when of ['beforeKubeadm', 'afterKubeadm'] as const) {
        if (spec.commands?.[when]?.length && spec.kubernetes === undefined && !failed.has('kubernetes')) report(['commands', when], 'runs around kubeadm, but spec.kubernetes is not set', 'set spec.kubernetes, or move the commands to spec.commands.boot');
      }
      const seen = new Map<string, number>();
      for (const [i, user] of (spec.users ?? []).entries()) {
        const earlier = seen.get(user.name);
        if (earlier !== undefined) report(['users', i, 'name'], `"${user.name}" is also spec.users[${earlier}].name`, 'give each user once');
        else seen.set(user.name, i);
      }
    },
  },
);

export const machineConfigSchema = object({
  apiVersion: enumOf(SUPPORTED_API_VERSIONS, { description: 'the version of this API; every source names it', example: API_VERSION }),
  kind: enumOf(['MachineConfig'] as const, { description: 'always MachineConfig', example: 'MachineConfig' }),
  metadata: optional(object({ name: optional(string({ description: 'a name for this configuration, for people reading it; machineadm does not use it', example: 'linux-workers' })) }), { description: 'information about the configuration itself', example: { name: 'linux-workers' } }),
  spec: documented(machineConfigSpec, { description: 'what the machine should be: host preparation, containerd, Kubernetes, domain join, reporting', example: { kernelModules: ['overlay', 'br_netfilter'] } }),
});

export type MachineConfig = Infer<typeof machineConfigSchema>;
export type MachineConfigSpec = MachineConfig['spec'];
export type FileSpec = NonNullable<MachineConfigSpec['files']>[number];
export type ContainerdSpec = NonNullable<MachineConfigSpec['containerd']>;
export type KubernetesSpec = NonNullable<MachineConfigSpec['kubernetes']>;
export type DomainJoinSpec = NonNullable<MachineConfigSpec['domainJoin']>;
export type WindowsSpec = NonNullable<MachineConfigSpec['windows']>;
export type HostAgentSpec = NonNullable<WindowsSpec['hostAgents']>[number];
export type ReportSpec = MachineConfigSpec['report'];
export type SecuritySpec = MachineConfigSpec['security'];
export type StorageSpec = NonNullable<MachineConfigSpec['storage']>;
export type DiskSpec = NonNullable<StorageSpec['disks']>[number];
export type FilesystemSpec = NonNullable<StorageSpec['filesystems']>[number];
export type MountSpec = NonNullable<StorageSpec['mounts']>[number];
export type CommandsSpec = NonNullable<MachineConfigSpec['commands']>;
export type CommandSpec = NonNullable<CommandsSpec['boot']>[number];
export type UserSpec = NonNullable<MachineConfigSpec['users']>[number];
export type TimeServersSpec = NonNullable<MachineConfigSpec['timeServers']>;

export function machineConfigJsonSchema(): Record<string, unknown> {
  return {
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    $id: `https://${API_GROUP}/schemas/machineconfig-v1alpha1.json`,
    title: 'MachineConfig',
    ...machineConfigSchema.json('full'),
  };
}

/**
 * The schema of one source merged with others (a config.d drop-in, a user data part over an
 * image's defaults), as the CLI checks each source before merging: shapes, types and values, no
 * required field (checked on the merged configuration), except apiVersion and kind, which every
 * source names.
 */
export function machineConfigDropInJsonSchema(): Record<string, unknown> {
  const full = machineConfigSchema.json('full') as { properties: Record<string, unknown> };
  const dropIn = machineConfigSchema.json('drop-in') as { properties: Record<string, unknown> };
  return {
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    $id: `https://${API_GROUP}/schemas/machineconfig-dropin-v1alpha1.json`,
    title: 'MachineConfig drop-in',
    description: 'one source of a merged MachineConfig (e.g. /etc/machineadm/config.d/*.yaml): any field may be left out or null; required fields are checked on the merged configuration',
    ...dropIn,
    properties: { ...dropIn.properties, apiVersion: full.properties.apiVersion, kind: full.properties.kind },
    required: ['apiVersion', 'kind'],
  };
}
