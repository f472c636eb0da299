// The phases as explicit, ordered lists of steps. No auto-discovery: adding a step means adding
// it here, in the order it must run.
import type { Phase, PhaseName } from '../engine/step.ts';
import { kernelModulesLoadStep } from '../linux/steps/kernel-modules-load.ts';
import { kernelModulesFileStep } from '../linux/steps/kernel-modules-file.ts';
import { sysctlsApplyStep } from '../linux/steps/sysctls-apply.ts';
import { sysctlsFileStep } from '../linux/steps/sysctls-file.ts';
import { filesStep } from '../linux/steps/files.ts';
import { storageFilesystemsStep, storageFstabStep, storageMountsStep, storagePartitionsStep } from '../linux/steps/storage.ts';
import { usersStep } from '../linux/steps/users.ts';
import { timeServersFileStep, timeServersRestartStep } from '../linux/steps/time-servers.ts';
import { afterKubeadmCommandsStep, beforeKubeadmCommandsStep, bootCommandsStep } from '../commands/steps.ts';
import { rebootIfRequiredStep } from '../linux/steps/reboot-if-required.ts';
import { containerdConfigStep } from '../containerd/steps/config.ts';
import { containerdRegistriesStep } from '../containerd/steps/registries.ts';
import { containerdProxyStep } from '../containerd/steps/proxy.ts';
import { containerdRestartStep } from '../containerd/steps/restart.ts';
import { domainJoinStep } from '../domain/steps/join.ts';
import { kubeadmInitStep, kubeadmJoinStep } from '../kubeadm/steps/bootstrap.ts';
import { staticPodsStep } from '../kubeadm/steps/static-pods.ts';
import { kubernetesInstallStep } from '../kubeadm/steps/install.ts';
import { kubeletUnitStep } from '../kubeadm/steps/kubelet-unit.ts';
import { containerdImagesStep } from '../containerd/steps/images.ts';
import { sentinelStep } from '../report/sentinel.ts';
import { containersFeatureStep } from '../windows/steps/containers-feature.ts';
import { privatePathsStep } from '../windows/steps/private-paths.ts';
import { windowsContainerdConfigStep } from '../windows/steps/containerd-config.ts';
import { windowsContainerdServiceStep } from '../windows/steps/containerd-service.ts';
import { hostAgentsStep } from '../windows/steps/host-agents.ts';
import { kubeletFlagsStep, kubeletServiceStep } from '../windows/steps/kubelet-service.ts';
import { kubeletFirewallStep } from '../windows/steps/firewall.ts';

export const preparePhase: Phase = {
  name: 'prepare',
  summary: 'boot commands, kernel modules, sysctls, disks and mounts, users, files, time servers, containerd; on Windows the Containers feature and services',
  // Live changes come before the files that persist them: a module or value the kernel refuses
  // stops the run before anything is written for the next boot.
  steps: [
    // The operator's boot commands first, where cloud-init runs bootcmd.
    bootCommandsStep,
    kernelModulesLoadStep,
    kernelModulesFileStep,
    sysctlsApplyStep,
    sysctlsFileStep,
    // Disks before anything is written below their mount points (/var/lib/containerd, /var/lib/etcd),
    // after the modules (a filesystem's may be one); mounted now before fstab says so for the next boot.
    storagePartitionsStep,
    storageFilesystemsStep,
    storageMountsStep,
    storageFstabStep,
    // Users before files: a file may be owned by one of them.
    usersStep,
    filesStep,
    timeServersFileStep,
    timeServersRestartStep,
    containerdConfigStep,
    containerdRegistriesStep,
    containerdProxyStep,
    containerdRestartStep,
    // Windows: the feature first (it may need a restart before containerd can run), then
    // containerd, the host agents, the kubelet that depends on both, and its firewall rule. Before
    // all of them (and before kubelet.exe is installed), the directories SYSTEM services read are
    // locked, so nothing is written into them while any user may change it.
    privatePathsStep,
    // What a standard image lacks to become a node: after containerd, whose CNI directory the plugins share.
    kubernetesInstallStep,
    kubeletUnitStep,
    // Images for machines that cannot pull: after containerd is restarted on its configuration.
    containerdImagesStep,
    containersFeatureStep,
    windowsContainerdConfigStep,
    windowsContainerdServiceStep,
    hostAgentsStep,
    kubeletServiceStep,
    kubeletFirewallStep,
    // Last: what prepare wrote is in place for the next boot, and nothing has joined yet.
    rebootIfRequiredStep,
  ],
};

export const provisionPhase: Phase = {
  name: 'provision',
  summary: 'domain join (Linux), commands around kubeadm, kubeadm init or join',
  // The join comes first: the kubelet's identity and gMSA depend on the membership.
  steps: [domainJoinStep, beforeKubeadmCommandsStep, kubeadmInitStep, kubeadmJoinStep, afterKubeadmCommandsStep, kubeletFlagsStep, staticPodsStep],
};

export const reportPhase: Phase = {
  name: 'report',
  summary: 'result file, Cluster API sentinel, events to endpoints',
  // Result files and CloudEvents are sinks on the event bus (src/report/outcome.ts, delivery.ts),
  // attached by the CLI for every phase command; the phase holds what only a finished run decides.
  steps: [sentinelStep],
  runsAfterFailure: true,
};

export const ALL_PHASES: readonly Phase[] = [preparePhase, provisionPhase, reportPhase];

export function phasesNamed(names: readonly PhaseName[]): Phase[] {
  return ALL_PHASES.filter((p) => names.includes(p.name));
}
