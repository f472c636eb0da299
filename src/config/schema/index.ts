// MachineConfig v1alpha1: the single source of truth for the configuration's types, validation and
// JSON Schema. Each section lives in its own file.
import { enumOf, object, optional, string, withDefault, type Infer } from './dsl.ts';
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
    containerd: optional(containerdSection),
    kubernetes: optional(kubernetesSection),
    domainJoin: optional(domainJoinSection),
    windows: optional(windowsSection),
    report: withDefault(reportSection, { clusterAPISentinel: true, deadlineSeconds: 30 }),
    security: withDefault(securitySection, { requireSignedBinary: false, offline: false }),
  },
  {
    check: (spec, report) => {
      // There is no kubeadm run for these to come before or after.
      for (const when of ['beforeKubeadm', 'afterKubeadm'] as const) {
        if (spec.commands?.[when]?.length && spec.kubernetes === undefined) report(['commands', when], 'runs around kubeadm, but spec.kubernetes is not set', 'set spec.kubernetes, or move the commands to spec.commands.boot');
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
  apiVersion: enumOf(SUPPORTED_API_VERSIONS),
  kind: enumOf(['MachineConfig'] as const),
  metadata: optional(object({ name: optional(string()) })),
  spec: machineConfigSpec,
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
