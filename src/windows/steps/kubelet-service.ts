// prepare/windows/kubelet-service: the kubelet registered as a Windows service before kubeadm
// join (join stops and starts the service "kubelet", so it must exist), starting after containerd
// and the host agents it depends on, restarting on failure, with the flags kubeadm writes (see
// kubelet-flags.ts). Not started here: kubeadm join starts it once its configuration is in place.
// provision/windows/kubelet-flags runs after kubeadm: it puts the flags kubeadm actually wrote on
// the service's command line and restarts the kubelet when they differ.
import type { Change, Step, StepContext } from '../../engine/step.ts';
import { ConfigError, MachineadmError, ExitCode } from '../../errors.ts';
import { windowsCommandLine } from '../../host/windows/index.ts';
import { KUBEADM_FLAGS_ENV, KUBELET_LOG, KUBELET_LOG_DIR, kubeletPath, kubeLogRunnerPath, kubernetesNeeded } from '../paths.ts';
import { expectedKubeadmFlags, joinKubeletArgs, kubeletServiceArgv, overridingKubeletFlags, parseKubeadmFlags } from '../kubelet-flags.ts';
import { chooseOrFail, kubeadmFound, kubeadmProgram, render } from '../../kubeadm/steps/kubeadm-inputs.ts';
import { currentKubeadmVersion } from '../../kubeadm/steps/kubeadm-machine.ts';
import { placeholderSecrets } from '../../kubeadm/render.ts';
import { REDACTED } from '../../config/secrets.ts';
import { noSeamSkip, requireSeam, seamOf } from './seam.ts';
import { recordExisting, removeCreated } from './undo.ts';

const SERVICE = 'kubelet';
const DISPLAY_NAME = 'Kubernetes kubelet';

/**
 * The kubelet flags of the join configuration, rendered as the join will render it: for the kubeadm
 * on this machine (a plan for another machine goes by the facts and spec.kubernetes.version).
 */
async function joinArgs(ctx: StepContext): Promise<[string, string][]> {
  const k = ctx.config.spec.kubernetes!;
  const onMachine = ctx.host.fs.platform === 'windows' && ctx.facts.os === 'windows';
  const version = onMachine ? await currentKubeadmVersion(ctx, (await kubeadmFound(ctx)) ?? kubeadmProgram(ctx)) : ctx.facts.kubeadmVersion;
  return joinKubeletArgs(render(ctx, k, chooseOrFail(version, k), placeholderSecrets(k, REDACTED), version));
}

async function kubeadmFlags(ctx: StepContext): Promise<{ flags: string[]; from: string }> {
  const text = ctx.host.fs.platform === 'windows' ? await ctx.host.fs.readText(KUBEADM_FLAGS_ENV) : undefined;
  const written = text === undefined ? undefined : parseKubeadmFlags(text);
  return written ? { flags: written, from: KUBEADM_FLAGS_ENV } : { flags: expectedKubeadmFlags(ctx.config, await joinArgs(ctx), ctx.facts.hostname), from: 'the configuration (kubeadm has not written its flags yet)' };
}

function dependencies(ctx: StepContext): string[] {
  const agents = (ctx.config.spec.windows?.hostAgents ?? []).filter((a) => a.kubeletDependsOn).map((a) => a.name);
  return ['containerd', ...agents];
}

/** kube-log-runner.exe when it is installed beside the kubelet (a plan for another machine cannot look). */
async function logRunner(ctx: StepContext): Promise<string | undefined> {
  const runner = kubeLogRunnerPath(ctx.config);
  return ctx.host.fs.platform === 'windows' && (await ctx.host.fs.exists(runner)) ? runner : undefined;
}

async function desired(ctx: StepContext) {
  const { flags, from } = await kubeadmFlags(ctx);
  const runner = await logRunner(ctx);
  const argv = kubeletServiceArgv(ctx.config, ctx.facts, flags, runner);
  return { argv, commandLine: windowsCommandLine(argv), dependsOn: dependencies(ctx), from, logged: runner !== undefined };
}

async function changesFor(ctx: StepContext, restartRunning: boolean): Promise<{ changes: Change[]; action?: 'create' | 'configure'; restart: boolean }> {
  const want = await desired(ctx);
  const service = await seamOf(ctx)?.service(SERVICE);
  const detail = `${want.commandLine}; depends on ${want.dependsOn.join(', ')}; flags from ${want.from}; automatic, restarts on failure`;
  if (!service) return { changes: [{ action: 'register', target: `service ${SERVICE}`, detail }], action: 'create', restart: false };
  const sameDeps = [...service.dependsOn].map((d) => d.toLowerCase()).sort().join() === [...want.dependsOn].map((d) => d.toLowerCase()).sort().join();
  if (service.commandLine === want.commandLine && sameDeps && service.startMode === 'Auto') return { changes: [], restart: false };
  const restart = restartRunning && service.state === 'Running';
  return {
    changes: [{ action: 'configure', target: `service ${SERVICE}`, detail }, ...(restart ? [{ action: 'restart', target: `service ${SERVICE}`, detail: 'to run with the new command line' }] : [])],
    action: 'configure',
    restart,
  };
}

async function applyService(ctx: StepContext, restartRunning: boolean): Promise<void> {
  const windows = requireSeam(ctx);
  const plan = await changesFor(ctx, restartRunning);
  if (!plan.action) return;
  const want = await desired(ctx);
  // kube-log-runner opens its log file but does not make its folder.
  if (want.logged) await ctx.host.fs.mkdirp(KUBELET_LOG_DIR);
  else ctx.log(`${kubeLogRunnerPath(ctx.config)} is not installed: the kubelet's output is discarded (a service has no console); put kube-log-runner.exe from the Kubernetes node archive beside kubelet.exe and machineadm runs the kubelet under it, logging to ${KUBELET_LOG}`, 'warning');
  if (plan.action === 'create') {
    if (!(await ctx.host.fs.exists(kubeletPath(ctx.config)))) {
      throw new MachineadmError(`the kubelet is not installed: ${kubeletPath(ctx.config)} does not exist`, ExitCode.stepFailed, { hint: 'put kubelet.exe (and kubeadm.exe) from https://dl.k8s.io/<version>/bin/windows/amd64/ there, or set spec.windows.kubeletPath' });
    }
    await windows.createService({ name: SERVICE, displayName: DISPLAY_NAME, argv: want.argv, dependsOn: want.dependsOn });
    ctx.log(`registered service ${SERVICE} (flags from ${want.from})`);
  } else {
    await windows.configureService({ name: SERVICE, displayName: DISPLAY_NAME, argv: want.argv, dependsOn: want.dependsOn });
    ctx.log(`reconfigured service ${SERVICE} (flags from ${want.from})`);
  }
  if (plan.restart) {
    await windows.restartService(SERVICE);
    ctx.log(`restarted service ${SERVICE}`);
  }
}

export const kubeletServiceStep: Step = {
  id: 'windows/kubelet-service',
  summary: 'register the kubelet as a Windows service (after containerd and host agents, restart on failure)',
  platforms: ['windows'],
  // A machine that only joins the domain (no spec.kubernetes) gets no kubelet that could never start.
  applies: kubernetesNeeded,
  undoRecord: recordExisting('services', () => [SERVICE]),
  undo: removeCreated('services', 'delete the kubelet service machineadm registered (stopped, then deleted)'),
  async preflight(ctx) {
    const refused = overridingKubeletFlags(ctx.config, ctx.facts.hostname);
    if (refused.length) throw new ConfigError(refused);
  },
  async check(ctx) {
    // Shown in a plan for another machine (--os windows) too, which runs no preflight.
    const refused = overridingKubeletFlags(ctx.config, ctx.facts.hostname);
    if (refused.length) return { done: false, changes: refused.map((r) => ({ action: 'refuse', target: r.path, detail: `${r.message} (${r.hint})` })) };
    const { changes } = await changesFor(ctx, true);
    const skip = noSeamSkip(ctx);
    return { done: changes.length === 0, changes, ...(skip && changes.length ? { skipReason: skip } : {}) };
  },
  async apply(ctx) {
    await applyService(ctx, true);
  },
};

export const kubeletFlagsStep: Step = {
  id: 'windows/kubelet-flags',
  summary: 'put the flags kubeadm wrote on the kubelet service and restart it when they changed',
  platforms: ['windows'],
  applies: kubernetesNeeded,
  async check(ctx) {
    // Before kubeadm ran (a plan), there is nothing of kubeadm's to carry over.
    const written = ctx.host.fs.platform === 'windows' && (await ctx.host.fs.exists(KUBEADM_FLAGS_ENV));
    if (!written || !seamOf(ctx)) return { done: true, changes: [] };
    const { changes } = await changesFor(ctx, true);
    return { done: changes.length === 0, changes };
  },
  async apply(ctx) {
    await applyService(ctx, true);
  },
};
