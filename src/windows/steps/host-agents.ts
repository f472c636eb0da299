// prepare/windows/host-agents: host-side agents (csi-proxy and the like: Windows containers cannot
// be privileged, so storage and network plugins talk to proxies running on the host). Each one is
// downloaded and verified (sha256 and/or minisign signature, through the verified download), or
// copied from this machine (a bundle) and checked against its sha256,
// installed at its path, registered as an automatic service that restarts on failure, and
// started, before the kubelet service. A binary that changed is verified first, then the service
// is stopped, the binary replaced and the service started again.
import { createHash } from 'node:crypto';
import type { Change, Step, StepContext } from '../../engine/step.ts';
import type { HostAgentSpec } from '../../config/schema/index.ts';
import { windowsCommandLine } from '../../host/windows/index.ts';
import { errorForField } from '../../engine/managed-file.ts';
import { fetchVerifiedPending } from '../../verify/fetch.ts';
import { displayUrl } from '../../redaction.ts';
import { isLocalSource } from '../../config/schema/source.ts';
import { checkLocalSource } from '../../bundle/local-source.ts';
import { noSeamSkip, requireSeam, seamOf } from './seam.ts';
import { recordExisting, removeCreated } from './undo.ts';
import { agentLogDir, agentLogFile, kubeLogRunnerPath } from '../paths.ts';

const KUBELET_SERVICE = 'kubelet';

interface AgentPlan {
  index: number;
  agent: HostAgentSpec;
  download: boolean;
  /** rename: only the display name differs, which needs no restart. */
  service: 'create' | 'configure' | 'rename' | 'start' | 'restart' | undefined;
  changes: Change[];
}

function agentsOf(ctx: StepContext): HostAgentSpec[] {
  return ctx.config.spec.windows?.hostAgents ?? [];
}

/**
 * The service's argument vector. A service's standard output goes nowhere, so unless the agent
 * writes its own log (log: own), it runs under kube-log-runner.exe (from the Kubernetes node
 * archive, beside kubelet.exe) when that is installed, which writes C:\var\log\<name>\<name>.log.
 */
export function agentArgv(agent: HostAgentSpec, logRunner?: string): string[] {
  const runner = logRunner && agent.log !== 'own' ? [logRunner, `-log-file=${agentLogFile(agent.name)}`] : [];
  return [...runner, agent.installPath, ...agent.args];
}

function displayNameOf(agent: HostAgentSpec): string {
  return agent.displayName ?? agent.name;
}

/** kube-log-runner.exe when installed (a plan for another machine cannot look: it shows the agent as is). */
async function logRunnerOf(ctx: StepContext): Promise<string | undefined> {
  const runner = kubeLogRunnerPath(ctx.config);
  return ctx.host.fs.platform === 'windows' && (await ctx.host.fs.exists(runner)) ? runner : undefined;
}

async function installedSha(ctx: StepContext, path: string): Promise<string | undefined> {
  if (ctx.host.fs.platform !== 'windows') return undefined;
  const bytes = await ctx.host.fs.readFile(path);
  return bytes ? createHash('sha256').update(bytes).digest('hex') : undefined;
}

/** The binary is the one asked for: its sha256, or (signature only) the one verified from this URL before. */
function binaryCurrent(ctx: StepContext, agent: HostAgentSpec, sha: string | undefined): boolean {
  if (sha === undefined) return false;
  if (agent.source.sha256 !== undefined) return sha === agent.source.sha256;
  const earlier = (ctx.previous?.data?.installed as Record<string, { url?: string; sha256?: string }> | undefined)?.[agent.name];
  return earlier?.url === agent.source.url && earlier.sha256 === sha;
}

async function planAgent(ctx: StepContext, agent: HostAgentSpec, index: number): Promise<AgentPlan> {
  const sha = await installedSha(ctx, agent.installPath);
  const download = !binaryCurrent(ctx, agent, sha);
  const service = await seamOf(ctx)?.service(agent.name);
  const commandLine = windowsCommandLine(agentArgv(agent, await logRunnerOf(ctx)));
  const check = [agent.source.sha256 ? `sha256 ${agent.source.sha256.slice(0, 12)}...` : '', agent.source.signature ? 'minisign signature' : ''].filter(Boolean).join(' and ');
  const changes: Change[] = [];
  if (download) changes.push({ action: sha === undefined ? 'download' : 'replace', target: agent.installPath, detail: `from ${displayUrl(agent.source.url)}, checked by ${check}` });
  const displayName = displayNameOf(agent);
  let action: AgentPlan['service'];
  if (!service) action = 'create';
  else if (service.commandLine !== commandLine || service.startMode !== 'Auto') action = 'configure';
  else if (service.displayName !== displayName) action = 'rename';
  else if (download && service.state === 'Running') action = 'restart';
  else if (service.state !== 'Running') action = 'start';
  const shown = service && service.displayName !== displayName ? `; display name ${JSON.stringify(displayName)} (was ${JSON.stringify(service.displayName)})` : '';
  if (action === 'create' || action === 'configure') changes.push({ action: action === 'create' ? 'register' : 'configure', target: `service ${agent.name}`, detail: `${commandLine}${shown}; automatic, restarts on failure` });
  if (action === 'rename') changes.push({ action: 'configure', target: `service ${agent.name}`, detail: shown.slice(2) });
  // A new display name alone leaves a running agent running; a replaced binary still restarts it.
  const running = service?.state === 'Running';
  if (action === 'rename') {
    if (download || !running) changes.push({ action: download && running ? 'restart' : 'start', target: `service ${agent.name}` });
  } else if (action) changes.push({ action: action === 'restart' ? 'restart' : 'start', target: `service ${agent.name}` });
  return { index, agent, download, service: action, changes };
}

/** Starts again services a failed run of this step stopped; one that does not start is a warning, so the failure itself is what the run reports. */
async function startAgain(ctx: StepContext, services: readonly string[]): Promise<void> {
  const windows = requireSeam(ctx);
  for (const name of services) {
    try {
      if ((await windows.service(name))?.state !== 'Running') await windows.startService(name);
      ctx.log(`service ${name}: started again, as it was before the run`);
    } catch (error) {
      ctx.log(`service ${name} could not be started again: ${(error as Error).message}`, 'warning');
    }
  }
}

export const hostAgentsStep: Step = {
  id: 'windows/host-agents',
  summary: 'download, verify, register and start the host agents (spec.windows.hostAgents) as services',
  platforms: ['windows'],
  applies: (config) => (config.spec.windows?.hostAgents?.length ?? 0) > 0,
  // reset deletes the agents' services machineadm registered; their binaries go with reset/files.
  undoRecord: recordExisting('services', (ctx) => agentsOf(ctx).map((a) => a.name)),
  undo: removeCreated('services', 'delete the host agents\' services machineadm registered (stopped, then deleted)'),
  // A bundled binary that is not the one the configuration names fails the run (exit 3) before
  // anything changes, as spec.files does.
  async preflight(ctx) {
    for (const [index, agent] of agentsOf(ctx).entries()) {
      const { url, sha256 } = agent.source;
      if (!isLocalSource(url) || sha256 === undefined) continue;
      await checkLocalSource(ctx.host, { url, sha256 }, `spec.windows.hostAgents[${index}].source`);
    }
  },
  async check(ctx) {
    const plans = await Promise.all(agentsOf(ctx).map((a, i) => planAgent(ctx, a, i)));
    const changes = plans.flatMap((p) => p.changes);
    // A binary from a bundle is copied from this machine: no network, also with --offline.
    const network = plans.filter((p) => p.download && !isLocalSource(p.agent.source.url)).map((p) => `download ${displayUrl(p.agent.source.url)} for spec.windows.hostAgents[${p.index}]`);
    const skip = noSeamSkip(ctx);
    return { done: changes.length === 0, changes, ...(network.length ? { network } : {}), ...(skip && changes.length ? { skipReason: skip } : {}) };
  },
  async apply(ctx) {
    const windows = requireSeam(ctx);
    const installed: Record<string, { url: string; sha256: string }> = { ...((ctx.previous?.data?.installed as Record<string, { url: string; sha256: string }>) ?? {}) };
    let stoppedKubelet = false;
    // Whatever fails after an agent the kubelet depends on was stopped, the kubelet runs again as before.
    try {
      for (const [index, agent] of agentsOf(ctx).entries()) {
        const plan = await planAgent(ctx, agent, index);
        const field = `spec.windows.hostAgents[${index}]`;
        if (plan.download) {
          const signature = agent.source.signature;
          let pending;
          try {
            ({ pending } = await fetchVerifiedPending(ctx.host, {
              urls: [agent.source.url],
              destination: agent.installPath,
              onProgress: ctx.downloadProgress(agent.installPath),
              ...(agent.source.sha256 ? { sha256: agent.source.sha256 } : {}),
              ...(signature ? { signature: { publicKey: signature.publicKey, ...(signature.url ? { url: signature.url } : {}) } } : {}),
            }));
          } catch (error) {
            throw errorForField(`${field}.source`, error);
          }
          // Stop-Service -Force stops the kubelet with an agent it depends on, and starting the agent
          // again does not start the kubelet: it is started again below.
          if (agent.kubeletDependsOn && (await windows.service(KUBELET_SERVICE))?.state === 'Running') stoppedKubelet = true;
          // Verified before the running agent is stopped: a bad download leaves it running as it was.
          const wasRunning = (await windows.service(agent.name))?.state === 'Running';
          try {
            if (wasRunning) await windows.stopService(agent.name);
            await pending.commit();
          } catch (error) {
            await pending.abort();
            // The old binary is still in place: the agent runs it again, as before the run.
            if (wasRunning) await startAgain(ctx, [agent.name]);
            throw errorForField(`${field}.installPath`, error);
          }
          installed[agent.name] = { url: agent.source.url, sha256: (await installedSha(ctx, agent.installPath)) ?? '' };
          ctx.log(`installed ${agent.installPath} from ${displayUrl(agent.source.url)}`);
        }
        const runner = await logRunnerOf(ctx);
        // kube-log-runner opens its log file but does not make its folder.
        if (runner && agent.log !== 'own') await ctx.host.fs.mkdirp(agentLogDir(agent.name));
        else if (agent.log !== 'own' && plan.service) ctx.log(`${kubeLogRunnerPath(ctx.config)} is not installed: the output of ${agent.name} is discarded (a service has no console); put kube-log-runner.exe from the Kubernetes node archive beside kubelet.exe, or give the agent's own log flag in args and set log: own`, 'warning');
        const spec = { name: agent.name, displayName: displayNameOf(agent), argv: agentArgv(agent, runner), dependsOn: [] };
        if (plan.service === 'create') await windows.createService(spec);
        if (plan.service === 'configure' || plan.service === 'rename') await windows.configureService(spec);
        // Stopped above when its binary was replaced; a configured one restarts for its new command line.
        if (plan.service === 'configure' && (await windows.service(agent.name))?.state === 'Running') await windows.restartService(agent.name);
        else if ((await windows.service(agent.name))?.state !== 'Running') await windows.startService(agent.name);
        if (plan.service) ctx.log(`service ${agent.name}: ${plan.service === 'create' ? 'registered and started' : plan.service === 'configure' ? 'reconfigured and restarted' : plan.service === 'rename' ? `shown as ${JSON.stringify(spec.displayName)}` : 'started'}`);
      }
    } catch (error) {
      if (stoppedKubelet) await startAgain(ctx, [KUBELET_SERVICE]);
      throw error;
    }
    if (stoppedKubelet && (await windows.service(KUBELET_SERVICE))?.state !== 'Running') {
      await windows.startService(KUBELET_SERVICE);
      ctx.log(`service ${KUBELET_SERVICE}: started again (stopping a host agent it depends on stopped it)`);
    }
    return { record: { installed } };
  },
};
