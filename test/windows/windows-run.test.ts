// A Windows node prepared and joined end to end against the simulated Windows machine: the real
// registry of steps, the real runner, a real HTTP server for the host agent, real files under a
// scratch root (Windows paths mapped into it), and a stand-in kubeadm that does what kubeadm join
// does to a Windows machine (writes kubeadm-flags.env and kubelet.conf, starts the kubelet service).
import { createHash } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHost, RootedFileSystem, type Facts, type Host, type ProcessRunner } from '../../src/host/index.ts';
import { ALL_PHASES } from '../../src/phases/registry.ts';
import { computePlan, runPhases, type RunnerInput } from '../../src/phases/runner.ts';
import { StateStore } from '../../src/phases/state.ts';
import { EventBus, type MachineEvent } from '../../src/report/events.ts';
import { SecretScrubber } from '../../src/config/secrets.ts';
import { exitCodeOf, RebootRequiredError } from '../../src/errors.ts';
import { configFrom } from '../report/harness.ts';
import { executeRun } from '../../src/phases/run.ts';
import { windowsRestart, windowsResume } from '../../src/host/windows/index.ts';
import { scratchDir } from '../support/tmp.ts';
import { realPath, SimulatedWindows, windowsFiles, PRIVATE_ACL } from './simulated-windows.ts';

const AGENT = Buffer.from('MZ csi-proxy stand-in\n');
const AGENT_SHA = createHash('sha256').update(AGENT).digest('hex');
let server: http.Server;
let base = '';

beforeAll(async () => {
  server = http.createServer((req, res) => {
    if (req.url === '/csi-proxy.exe') res.end(AGENT);
    else if (req.url === '/tampered.exe') res.end(Buffer.from('MZ something else\n'));
    else res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

function workerConfig(agentPath = '/csi-proxy.exe') {
  return configFrom({
    containerd: { version: '2.1.4', sandboxImage: 'registry.k8s.io/pause:3.10', registries: { 'docker.io': { mirrors: [{ url: 'https://mirror.internal:5000' }] } } },
    windows: {
      supportedBuilds: [20348],
      hostAgents: [{ name: 'csiproxy', source: { url: `${base}${agentPath}`, sha256: AGENT_SHA }, installPath: 'C:\\etc\\kubernetes\\node\\bin\\csi-proxy.exe', args: ['-windows-service'], kubeletDependsOn: true }],
    },
    kubernetes: { bootstrap: 'join', role: 'worker', controlPlaneEndpoint: 'cp.internal:6443', token: 'abcdef.0123456789abcdef', caCertHashes: [`sha256:${'0'.repeat(64)}`] },
  });
}

// What kubeadm v1.34 writes for this configuration, including a flag kubelet 1.35 refuses.
const KUBEADM_FLAGS = 'KUBELET_KUBEADM_ARGS="--container-runtime-endpoint=npipe:////./pipe/containerd-containerd --pod-infra-container-image=registry.k8s.io/pause:3.10 --register-with-taints=os=windows:NoSchedule"\n';

function machine(kubeadmFlags = KUBEADM_FLAGS) {
  const root = scratchDir('machineadm-windows-');
  const sim = new SimulatedWindows('20348');
  const writes: { path: string; protectedAcl: boolean }[] = [];
  const fs = windowsFiles(root, (path) => writes.push({ path, protectedAcl: sim.effectiveAcl(path) === PRIVATE_ACL }));
  for (const exe of ['C:\\Program Files\\containerd\\containerd.exe', 'C:\\k\\kubelet.exe']) {
    mkdirSync(dirname(realPath(root, exe)), { recursive: true });
    writeFileSync(realPath(root, exe), 'MZ');
  }
  const joinConfigs: string[] = [];
  const proc = {
    which: async (name: string) => (name === 'kubeadm' ? 'C:\\k\\kubeadm.exe' : undefined),
    run: async (argv: string[]) => {
      const ok = (stdout = '') => ({ argv, exitCode: 0, stdout, stderr: '', durationMs: 1 });
      if (argv[1] === 'version') return ok('v1.34.2\n');
      if (argv[1] === 'join') {
        joinConfigs.push((await fs.readText(argv[3]!)) ?? '');
        await fs.writeFile('C:\\var\\lib\\kubelet\\kubeadm-flags.env', kubeadmFlags);
        await fs.writeFile('C:\\etc\\kubernetes\\kubelet.conf', 'kubeconfig with the client certificate\n');
        // kubeadm join stops and starts the service "kubelet" (initsystem_windows.go).
        await sim.startService('kubelet');
        return ok('This node has joined the cluster\n');
      }
      throw new Error(`unexpected command ${argv.join(' ')}`);
    },
  } as unknown as ProcessRunner;
  const stateFs = new RootedFileSystem(join(root, 'state'));
  return { root, sim, fs, proc, writes, joinConfigs, stateFs };
}

async function run(m: ReturnType<typeof machine>, config = workerConfig()) {
  const facts: Facts = { os: 'windows', arch: 'x64', hostname: 'WIN-NODE1', privileged: true, liveRoot: true, windowsBuild: '20348', bootId: await m.sim.bootId() };
  const host: Host = { ...createHost({ root: m.root, facts, env: {}, windows: m.sim }), fs: m.fs, proc: m.proc };
  const events: MachineEvent[] = [];
  const bus = new EventBus();
  bus.listen((e) => events.push(e));
  const input: RunnerInput = { command: 'init', phases: ALL_PHASES, selection: {}, config, facts, host, events: bus, state: new StateStore(m.stateFs), force: false, secrets: new SecretScrubber() };
  const before = m.sim.calls.length;
  const outcome = await runPhases(input);
  const finished = events.filter((e) => e.type === 'step.finished').map((e) => `${e.step}=${e.result}`);
  return { outcome, finished, calls: m.sim.calls.slice(before), input };
}

/** The whole run as machineadm runs it (the run module): resume task, restart, one report. */
async function runWhole(m: ReturnType<typeof machine>) {
  const facts: Facts = { os: 'windows', arch: 'x64', hostname: 'WIN-NODE1', privileged: true, liveRoot: true, windowsBuild: '20348', bootId: await m.sim.bootId() };
  const host: Host = { ...createHost({ root: m.root, facts, env: {}, windows: m.sim }), fs: m.fs, proc: m.proc, resume: windowsResume(m.sim), restart: windowsRestart(m.sim) };
  const argv = ['C:\\Program Files\\machineadm\\machineadm.exe', 'init', '-c', 'C:\\ProgramData\\machineadm\\config.yaml'];
  return executeRun({
    command: 'init',
    config: workerConfig(),
    host,
    stateFs: m.stateFs,
    selection: {},
    force: false,
    console: { mode: 'text', write: () => undefined },
    resume: { argv, maxReboots: 3, reboot: true },
  });
}

describe('a Windows worker on the simulated machine', () => {
  it('is one run across the restart: the resume task runs it on, one report with one run id, and the task is gone at the end', async () => {
    const m = machine();
    const first = await runWhole(m);
    expect(first.exitCode).toBe(4);
    expect(m.sim.restartRequested).toBe(true);
    expect(m.sim.tasks.get('\\machineadm\\resume')).toEqual(['C:\\Program Files\\machineadm\\machineadm.exe', 'init', '-c', 'C:\\ProgramData\\machineadm\\config.yaml']);
    m.sim.reboot();
    const second = await runWhole(m);
    expect(second.exitCode).toBe(0);
    expect(second.outcome.runId).toBe(first.outcome.runId);
    expect(m.sim.tasks.size).toBe(0);
    const report = JSON.parse(readFileSync(join(m.stateFs.root, 'result.json'), 'utf8'));
    expect(report).toMatchObject({ runId: first.outcome.runId, state: 'finished', result: 'success', exitCode: 0, resumedAt: [expect.any(String)] });
    const steps = report.phases.flatMap((p: { steps: { id: string; result: string }[] }) => p.steps.map((s) => `${s.id}=${s.result}`));
    expect(steps).toContain('prepare/windows/containers-feature=warning');
    expect(steps).toContain('provision/kubeadm/join=success');
    expect(existsSync(realPath(m.root, 'C:\\run\\cluster-api\\bootstrap-success.complete'))).toBe(true);
  });

  it('installs the feature, stops for the restart, then prepares, joins and reports; a second run changes nothing', async () => {
    const m = machine();
    const first = await run(m);
    expect(first.outcome.error).toBeInstanceOf(RebootRequiredError);
    expect(exitCodeOf(first.outcome.error)).toBe(4);
    expect(first.calls).toEqual(['installFeature Containers']);
    expect(m.sim.features.get('Containers')).toBe('pending');

    m.sim.reboot();
    const second = await run(m);
    expect(second.outcome.error).toBeUndefined();
    expect(second.outcome.result).toBe('success');
    expect(second.calls).toEqual([
      'registerContainerdService',
      'startService containerd',
      'createService csiproxy',
      'startService csiproxy',
      'createService kubelet',
      'addFirewallRule machineadm-kubelet',
      'createPrivateDirectory C:\\ProgramData\\machineadm\\run',
      'createPrivateDirectory C:\\etc\\kubernetes',
      'createPrivateDirectory C:\\var\\lib\\kubelet\\pki',
      'startService kubelet',
    ]);
    const kubelet = m.sim.services.get('kubelet')!;
    expect(kubelet).toMatchObject({ state: 'Running', startMode: 'Auto', dependsOn: ['containerd', 'csiproxy'], restartOnFailure: true });
    expect(kubelet.commandLine).toMatch(/^C:\\k\\kubelet\.exe --windows-service .*--container-runtime-endpoint=npipe:\/\/\/\/\.\/pipe\/containerd-containerd --register-with-taints=os=windows:NoSchedule$/);
    expect(kubelet.commandLine).not.toContain('--pod-infra-container-image');
    expect(m.sim.services.get('csiproxy')).toMatchObject({ state: 'Running', commandLine: 'C:\\etc\\kubernetes\\node\\bin\\csi-proxy.exe -windows-service' });
    expect(m.sim.services.get('containerd')?.state).toBe('Running');
    expect(m.sim.firewall.get('machineadm-kubelet')).toEqual({ name: 'machineadm-kubelet', enabled: 'True', direction: 'Inbound', action: 'Allow', protocol: 'TCP', localPort: '10250' });
    expect(readFileSync(realPath(m.root, 'C:\\etc\\kubernetes\\node\\bin\\csi-proxy.exe'))).toEqual(AGENT);
    expect(readFileSync(realPath(m.root, 'C:\\Program Files\\containerd\\config.toml'), 'utf8')).toContain('config_path = "C:\\\\Program Files\\\\containerd\\\\certs.d"');
    expect(existsSync(realPath(m.root, 'C:\\Program Files\\containerd\\certs.d\\docker.io\\hosts.toml'))).toBe(true);
    // kubeadm got the npipe socket, the taint and the memory reservation.
    expect(m.joinConfigs[0]).toContain('criSocket: npipe:////./pipe/containerd-containerd');
    expect(m.joinConfigs[0]).toMatch(/taints:\n\s+- key: os\n\s+value: windows\n\s+effect: NoSchedule/);
    expect(existsSync(realPath(m.root, 'C:\\run\\cluster-api\\bootstrap-success.complete'))).toBe(true);

    const third = await run(m);
    expect(third.outcome.error).toBeUndefined();
    expect(third.calls).toEqual([]);
    expect(third.finished.filter((f) => f.startsWith('prepare/windows') || f.startsWith('provision/'))).toEqual([
      'prepare/windows/containers-feature=skipped',
      'prepare/windows/containerd-config=skipped',
      'prepare/windows/containerd-service=skipped',
      'prepare/windows/host-agents=skipped',
      'prepare/windows/kubelet-service=skipped',
      'prepare/windows/firewall=skipped',
      'provision/kubeadm/join=skipped',
      'provision/windows/kubelet-flags=skipped',
    ]);
  });

  it('writes the kubeadm configuration and patches only into directories already locked to SYSTEM and Administrators', async () => {
    const m = machine();
    await run(m);
    m.sim.reboot();
    await run(m);
    const secretWrites = m.writes.filter((w) => /ProgramData\\machineadm\\run/.test(w.path));
    expect(secretWrites.map((w) => w.path)).toContain('C:\\ProgramData\\machineadm\\run\\kubeadm-join.yaml');
    expect(secretWrites.filter((w) => !w.protectedAcl)).toEqual([]);
    expect(await m.sim.acl('C:\\etc\\kubernetes')).toEqual(PRIVATE_ACL);
  });

  it('puts flags kubeadm wrote beyond the configuration on the kubelet service after the join and restarts it', async () => {
    const m = machine(KUBEADM_FLAGS.replace('"\n', ' --node-ip=10.0.0.7"\n'));
    await run(m);
    m.sim.reboot();
    const second = await run(m);
    expect(second.calls.slice(-3)).toEqual(['startService kubelet', 'configureService kubelet', 'restartService kubelet']);
    expect(m.sim.services.get('kubelet')!.commandLine).toMatch(/ --node-ip=10\.0\.0\.7$/);
    expect((await run(m)).calls).toEqual([]);
  });

  it('does not go on before the machine has restarted', async () => {
    const m = machine();
    await run(m);
    const again = await run(m);
    expect(again.outcome.error).toBeInstanceOf(RebootRequiredError);
    expect(again.calls).toEqual([]);
  });

  it('replaces and restarts a host agent whose binary changed, and leaves a bad download out', async () => {
    const m = machine();
    await run(m);
    m.sim.reboot();
    await run(m);
    writeFileSync(realPath(m.root, 'C:\\etc\\kubernetes\\node\\bin\\csi-proxy.exe'), 'an older csi-proxy');
    const after = await run(m);
    expect(after.calls).toEqual(['stopService csiproxy', 'startService csiproxy']);
    expect(readFileSync(realPath(m.root, 'C:\\etc\\kubernetes\\node\\bin\\csi-proxy.exe'))).toEqual(AGENT);

    writeFileSync(realPath(m.root, 'C:\\etc\\kubernetes\\node\\bin\\csi-proxy.exe'), 'an older csi-proxy');
    const tampered = await run(m, workerConfig('/tampered.exe'));
    expect(exitCodeOf(tampered.outcome.error)).toBe(3);
    expect(tampered.outcome.error!.message).toMatch(/spec\.windows\.hostAgents\[0\]\.source/);
    expect(tampered.calls).toEqual([]);
    expect(m.sim.services.get('csiproxy')!.state).toBe('Running');
    expect(readFileSync(realPath(m.root, 'C:\\etc\\kubernetes\\node\\bin\\csi-proxy.exe'), 'utf8')).toBe('an older csi-proxy');
  });

  it.each([
    ['17763', [20348], /build 17763 \(ltsc2019\), which cannot run container images of build 20348 \(ltsc2022\)/],
    ['20348', [26100], /build 20348 \(ltsc2022\), which cannot run container images of build 26100 \(ltsc2025\)/],
  ])('refuses a build %s node for supportedBuilds %j before anything changes', async (build, supported, message) => {
    const m = machine();
    const sim = new SimulatedWindows(build);
    Object.assign(m, { sim });
    const facts: Facts = { os: 'windows', arch: 'x64', hostname: 'WIN-NODE1', privileged: true, liveRoot: true, windowsBuild: build, bootId: await sim.bootId() };
    const config = workerConfig();
    config.spec.windows!.supportedBuilds = supported;
    const host: Host = { ...createHost({ root: m.root, facts, env: {}, windows: sim }), fs: m.fs, proc: m.proc };
    const { preflightRun } = await import('../../src/phases/runner.ts');
    await expect(preflightRun({ command: 'init', phases: ALL_PHASES, selection: {}, config, facts, host, events: new EventBus(), state: new StateStore(m.stateFs), force: false, secrets: new SecretScrubber() })).rejects.toThrow(message);
    expect(sim.calls).toEqual([]);
  });

  it('plans, in order, the feature, containerd, the host agent, the kubelet service, the firewall rule, the join and the sentinel', async () => {
    const m = machine();
    const facts: Facts = { os: 'windows', arch: 'x64', hostname: 'WIN-NODE1', privileged: true, liveRoot: true, windowsBuild: '20348' };
    // A plan made on another machine: no Windows seam, no Windows files.
    const host = createHost({ root: m.root, facts, env: {} });
    const plan = await computePlan({ command: 'init', phases: ALL_PHASES, selection: {}, config: workerConfig(), facts, host, events: new EventBus(), state: new StateStore(m.stateFs), force: false, secrets: new SecretScrubber() });
    const changing = plan.phases.flatMap((p) => p.steps.filter((s) => s.status === 'change').map((s) => `${s.id}: ${s.changes.map((c) => `${c.action} ${c.target}`).join('; ')}`));
    expect(changing).toEqual([
      'prepare/windows/containers-feature: install feature Containers',
      'prepare/windows/containerd-config: write C:\\Program Files\\containerd\\config.toml; write C:\\Program Files\\containerd\\certs.d\\docker.io\\hosts.toml',
      'prepare/windows/containerd-service: register service containerd; start service containerd',
      'prepare/windows/host-agents: download C:\\etc\\kubernetes\\node\\bin\\csi-proxy.exe; register service csiproxy; start service csiproxy',
      'prepare/windows/kubelet-service: register service kubelet',
      'prepare/windows/firewall: add firewall rule machineadm-kubelet',
      'provision/kubeadm/join: create C:\\ProgramData\\machineadm\\run; create C:\\etc\\kubernetes; create C:\\var\\lib\\kubelet\\pki; write C:\\ProgramData\\machineadm\\run\\kubeadm-join.yaml; write C:\\ProgramData\\machineadm\\run\\kubeadm-patches\\kubeletconfiguration+merge.yaml; run kubeadm join --config C:\\ProgramData\\machineadm\\run\\kubeadm-join.yaml',
      'report/sentinel: create C:\\run\\cluster-api\\bootstrap-success.complete',
    ]);
    const feature = plan.phases[0]!.steps.find((s) => s.id === 'prepare/windows/containers-feature')!;
    expect(feature.changes[0]!.detail).toContain('build 20348 (ltsc2022)');
    const join = plan.phases[1]!.steps.find((s) => s.id === 'provision/kubeadm/join')!;
    expect(join.changes.find((c) => c.target.endsWith('kubeletconfiguration+merge.yaml'))!.diff).toContain('memory: 2Gi');
  });
});
