// A Windows node prepared and joined end to end against the simulated Windows machine: the real
// registry of steps, the real runner, a real HTTP server for the host agent, real files under a
// scratch root (Windows paths mapped into it), and a stand-in kubeadm that does what kubeadm join
// does to a Windows machine (writes kubeadm-flags.env and kubelet.conf, starts the kubelet service).
import { createHash } from 'node:crypto';
import http from 'node:http';
import https from 'node:https';
import tls from 'node:tls';
import type { AddressInfo } from 'node:net';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHost, RootedFileSystem, type Facts, type Host, type ProcessRunner } from '../../src/host/index.ts';
import { ALL_PHASES } from '../../src/phases/registry.ts';
import { computePlan, runPhases, type RunnerInput } from '../../src/engine/runner.ts';
import { StateStore } from '../../src/engine/state.ts';
import { EventBus, type MachineEvent } from '../../src/engine/events.ts';
import { SecretScrubber } from '../../src/config/secrets.ts';
import { exitCodeOf, RebootRequiredError } from '../../src/errors.ts';
import { executeRun } from '../../src/phases/run.ts';
import { windowsRestart, windowsResume } from '../../src/host/windows/index.ts';
import { configFrom } from '../report/harness.ts';
import { makePki } from '../report/certs.ts';
import { scratchDir } from '../support/tmp.ts';
import { buildBundle } from '../../src/bundle/build.ts';
import { loadConfig } from '../../src/config/load.ts';
import { formatPublicKeyLine, formatSignature } from '../../src/verify/minisign.ts';
import { generateKeyPair, signStream } from '../../src/verify/sign.ts';
import { realPath, SimulatedWindows, windowsFiles, PRIVATE_ACL } from './simulated-windows.ts';

const AGENT = Buffer.from('MZ csi-proxy stand-in\n');
const AGENT_SHA = createHash('sha256').update(AGENT).digest('hex');
// A djoin blob as the simulated machine reads it (a real one is base64 from djoin /provision).
const BLOB = JSON.stringify({ domain: 'corp.example', machine: 'NODE-09' });
const BLOB_SHA = createHash('sha256').update(BLOB).digest('hex');
// A second agent checked only by its minisign signature, as a vendor publishes it.
const SIGNED_AGENT = Buffer.from('MZ node-agent stand-in\n');
const KEYS = generateKeyPair();
let server: http.Server;
let base = '';
/** Every path either server was asked for. */
const requests: string[] = [];
// The djoin blob holds the computer account's secret, so it is fetched over https only.
let blobServer: https.Server;
let blobBase = '';

beforeAll(async () => {
  const signature = formatSignature(await signStream([SIGNED_AGENT], KEYS.secretKey, { trustedComment: 'node-agent.exe' }));
  server = http.createServer((req, res) => {
    requests.push(req.url ?? '');
    if (req.url === '/csi-proxy.exe') res.end(AGENT);
    else if (req.url === '/node-agent.exe') res.end(SIGNED_AGENT);
    else if (req.url === '/node-agent.exe.minisig') res.end(signature);
    else if (req.url === '/tampered.exe') res.end(Buffer.from('MZ something else\n'));
    else res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const pki = makePki(scratchDir('machineadm-windows-pki-'));
  // This machine trusts the test CA, as a node trusts its organisation's CA.
  tls.setDefaultCACertificates([...tls.getCACertificates('default'), pki.ca]);
  blobServer = https.createServer({ cert: pki.serverCert, key: pki.serverKey }, (req, res) => {
    requests.push(req.url ?? '');
    if (req.url === '/odj.txt') res.end(BLOB);
    else res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => blobServer.listen(0, '127.0.0.1', resolve));
  blobBase = `https://127.0.0.1:${(blobServer.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
  await new Promise<void>((resolve) => blobServer.close(() => resolve()));
});

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

/** Every directory a SYSTEM service reads from, runs from or logs to, locked before the first change. */
const LOCKED = ['C:\\ProgramData\\machineadm', 'C:\\var\\lib\\kubelet', 'C:\\etc\\kubernetes', 'C:\\var\\log\\kubelet', 'C:\\k', 'C:\\Program Files\\containerd', 'C:\\ProgramData\\containerd', 'C:\\opt\\cni\\bin', 'C:\\etc\\cni\\net.d', 'C:\\etc\\kubernetes\\node\\bin', 'C:\\var\\log\\csiproxy'];

function machine(kubeadmFlags = KUBEADM_FLAGS, kubeadmVersion = 'v1.34.2') {
  const root = scratchDir('machineadm-windows-');
  const sim = new SimulatedWindows('20348');
  const writes: { path: string; protectedAcl: boolean }[] = [];
  const fs = windowsFiles(root, (path) => writes.push({ path, protectedAcl: sim.effectiveAcl(path) === PRIVATE_ACL }));
  for (const exe of ['C:\\Program Files\\containerd\\containerd.exe', 'C:\\k\\kubelet.exe']) {
    mkdirSync(dirname(realPath(root, exe)), { recursive: true });
    writeFileSync(realPath(root, exe), 'MZ');
  }
  const joinConfigs: string[] = [];
  /** The kubelet service's command line when kubeadm join ran (the kubelet join starts runs with it). */
  const kubeletAtJoin: string[] = [];
  const proc = {
    which: async (name: string) => (name === 'kubeadm' ? 'C:\\k\\kubeadm.exe' : undefined),
    run: async (argv: string[]) => {
      const ok = (stdout = '') => ({ argv, exitCode: 0, stdout, stderr: '', durationMs: 1 });
      if (argv[1] === 'version') return ok(`${kubeadmVersion}\n`);
      if (argv[1] === 'join') {
        joinConfigs.push((await fs.readText(argv[3]!)) ?? '');
        kubeletAtJoin.push(sim.services.get('kubelet')?.commandLine ?? '');
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
  return { root, sim, fs, proc, writes, joinConfigs, kubeletAtJoin, stateFs };
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
  const warnings = events.flatMap((e) => (e.type === 'log' && e.level === 'warning' ? [`${e.step}: ${e.message}`] : []));
  return { outcome, finished, warnings, calls: m.sim.calls.slice(before), input };
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
    // The run's files are under %ProgramData%, never in a drive-less \run\machineadm.
    expect(JSON.parse(readFileSync(realPath(m.root, 'C:\\ProgramData\\machineadm\\run\\result.json'), 'utf8'))).toMatchObject({ kind: 'MachineadmRunResult', result: 'success' });
    expect(existsSync(realPath(m.root, 'C:\\ProgramData\\machineadm\\run\\status.json'))).toBe(true);
    expect(existsSync(realPath(m.root, 'C:\\run\\machineadm'))).toBe(false);
  });

  it('runs kubeadm.exe from the kubelet\'s folder (C:\\k) when it is not on PATH', async () => {
    const m = machine();
    const inner = m.proc;
    const programs: string[] = [];
    m.proc = {
      which: async (name: string) => (name === 'C:\\k\\kubeadm.exe' ? name : undefined),
      run: async (argv: [string, ...string[]]) => {
        programs.push(argv[0]);
        return inner.run(argv);
      },
    } as unknown as ProcessRunner;
    await run(m);
    m.sim.reboot();
    const joined = await run(m);
    expect(joined.outcome.error).toBeUndefined();
    expect(m.joinConfigs).toHaveLength(1);
    expect(programs.length).toBeGreaterThan(0);
    expect([...new Set(programs)]).toEqual(['C:\\k\\kubeadm.exe']);
  });

  it('installs the feature, stops for the restart, then prepares, joins and reports; a second run changes nothing', async () => {
    const m = machine();
    const first = await run(m);
    expect(first.outcome.error).toBeInstanceOf(RebootRequiredError);
    expect(exitCodeOf(first.outcome.error)).toBe(4);
    expect(first.calls).toEqual([...LOCKED.map((dir) => `createPrivateDirectory ${dir}`), 'installFeature Containers']);
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
      'prepare/windows/private-paths=skipped',
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

  it('restarts containerd when config.toml changed, also after a run killed before it recorded the write, and not again after', async () => {
    const m = machine();
    await run(m);
    m.sim.reboot();
    await run(m);
    const changed = workerConfig();
    changed.spec.containerd!.sandboxImage = 'registry.k8s.io/pause:3.10.1';
    // The killed run: config.toml has its new content, the state is the one from before.
    const stateFile = join(m.stateFs.root, 'state.json');
    const before = readFileSync(stateFile);
    const { fs } = m;
    await fs.writeFile('C:\\Program Files\\containerd\\config.toml', ((await fs.readText('C:\\Program Files\\containerd\\config.toml')) ?? '').replace('pause:3.10"', 'pause:3.10.1"'));
    writeFileSync(stateFile, before);
    const next = await run(m, changed);
    expect(next.calls).toEqual(['restartService containerd']);
    expect((await run(m, changed)).calls).toEqual([]);
  });

  it('restarts a running containerd once when nothing records what it was started for, and not again after', async () => {
    const m = machine();
    await run(m);
    m.sim.reboot();
    await run(m);
    // A state without the service step's record (an older machineadm, or a lost state directory).
    const stateFile = join(m.stateFs.root, 'state.json');
    const state = JSON.parse(readFileSync(stateFile, 'utf8'));
    delete state.steps['prepare/windows/containerd-service'];
    writeFileSync(stateFile, JSON.stringify(state));
    expect((await run(m)).calls).toEqual(['restartService containerd']);
    expect((await run(m)).calls).toEqual([]);
  });

  it('runs the kubelet under kube-log-runner when it is beside kubelet.exe, so its output goes to a log file', async () => {
    const m = machine();
    writeFileSync(realPath(m.root, 'C:\\k\\kube-log-runner.exe'), 'MZ');
    await run(m);
    m.sim.reboot();
    const second = await run(m);
    expect(second.outcome.error).toBeUndefined();
    expect(second.warnings.filter((w) => w.includes('kube-log-runner'))).toEqual([]);
    expect(m.sim.services.get('kubelet')!.commandLine).toMatch(/^C:\\k\\kube-log-runner\.exe -log-file=C:\\var\\log\\kubelet\\kubelet\.log C:\\k\\kubelet\.exe --windows-service /);
    expect(existsSync(realPath(m.root, 'C:\\var\\log\\kubelet'))).toBe(true);
    expect((await run(m)).calls).toEqual([]);
  });

  it('runs a host agent under kube-log-runner, logging to C:\\var\\log\\<name>\\<name>.log, unless it writes its own log', async () => {
    const m = machine();
    writeFileSync(realPath(m.root, 'C:\\k\\kube-log-runner.exe'), 'MZ');
    const config = workerConfig();
    config.spec.windows!.hostAgents!.push({ name: 'ownlog', source: { url: `${base}/csi-proxy.exe`, sha256: AGENT_SHA }, installPath: 'C:\\k\\own-log.exe', args: ['-log_file=C:\\var\\log\\own.log'], kubeletDependsOn: false, log: 'own' });
    await run(m, config);
    m.sim.reboot();
    const second = await run(m, config);
    expect(second.outcome.error).toBeUndefined();
    expect(m.sim.services.get('csiproxy')!.commandLine).toBe('C:\\k\\kube-log-runner.exe -log-file=C:\\var\\log\\csiproxy\\csiproxy.log C:\\etc\\kubernetes\\node\\bin\\csi-proxy.exe -windows-service');
    expect(existsSync(realPath(m.root, 'C:\\var\\log\\csiproxy'))).toBe(true);
    expect(m.sim.services.get('ownlog')!.commandLine).toBe('C:\\k\\own-log.exe -log_file=C:\\var\\log\\own.log');
    expect(second.warnings.filter((w) => w.includes('discarded'))).toEqual([]);
    expect((await run(m, config)).calls).toEqual([]);
  });

  it('says a host agent\'s output is discarded when kube-log-runner is not installed and the agent keeps no log of its own', async () => {
    const m = machine();
    await run(m);
    m.sim.reboot();
    const second = await run(m);
    expect(second.warnings).toContainEqual(expect.stringMatching(/^prepare\/windows\/host-agents: C:\\k\\kube-log-runner\.exe is not installed: the output of csiproxy is discarded/));
  });

  it('says the kubelet output is discarded when kube-log-runner is not installed', async () => {
    const m = machine();
    await run(m);
    m.sim.reboot();
    const second = await run(m);
    expect(second.warnings).toContainEqual(expect.stringMatching(/^prepare\/windows\/kubelet-service: C:\\k\\kube-log-runner\.exe is not installed: the kubelet's output is discarded/));
    expect(m.sim.services.get('kubelet')!.commandLine).toMatch(/^C:\\k\\kubelet\.exe /);
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

  it('locks every directory a SYSTEM service reads before writing into it: kubeadm-flags.env, the kubelet, the CNI plugins and their configuration, the host agent and its log, the state', async () => {
    const m = machine();
    await run(m);
    m.sim.reboot();
    await run(m);
    for (const dir of LOCKED) expect(await m.sim.acl(dir), dir).toEqual(PRIVATE_ACL);
    const fed = m.writes.filter((w) => /^C:\\(var\\lib\\kubelet|etc\\kubernetes\\node\\bin|k)\\/i.test(w.path));
    expect(fed.map((w) => w.path)).toEqual(expect.arrayContaining(['C:\\var\\lib\\kubelet\\kubeadm-flags.env', 'C:\\etc\\kubernetes\\node\\bin\\csi-proxy.exe']));
    expect(fed.filter((w) => !w.protectedAcl)).toEqual([]);
    // A lock taken away (or never there on an older node) is put back by the next run, and only then.
    m.sim.acls.delete('c:\\var\\lib\\kubelet');
    expect((await run(m)).calls).toEqual(['createPrivateDirectory C:\\var\\lib\\kubelet']);
    expect((await run(m)).calls).toEqual([]);
  });

  it('locks the folder containerd runs from, so no other user can replace containerd.exe or the shims it starts as SYSTEM', async () => {
    const m = machine();
    const config = workerConfig();
    config.spec.windows!.containerdPath = 'D:\\containerd\\bin\\containerd.exe';
    mkdirSync(realPath(m.root, 'D:\\containerd\\bin'), { recursive: true });
    writeFileSync(realPath(m.root, 'D:\\containerd\\bin\\containerd.exe'), 'MZ');
    const first = await run(m, config);
    expect(first.calls).toContain('createPrivateDirectory D:\\containerd\\bin');
    expect(first.calls.indexOf('createPrivateDirectory D:\\containerd\\bin')).toBeLessThan(first.calls.indexOf('installFeature Containers'));
    expect(await m.sim.acl('D:\\containerd\\bin')).toEqual(PRIVATE_ACL);
  });

  it('never locks a folder Windows owns, such as the one a host agent is installed in under C:\\Program Files', async () => {
    const m = machine();
    const config = workerConfig();
    config.spec.windows!.hostAgents![0]!.installPath = 'C:\\Program Files\\csi-proxy.exe';
    config.spec.windows!.kubeletPath = 'C:\\Windows\\kubelet.exe';
    const first = await run(m, config);
    expect(first.calls.filter((c) => c.startsWith('createPrivateDirectory'))).toEqual(LOCKED.filter((d) => d !== 'C:\\k' && !d.endsWith('node\\bin')).map((d) => `createPrivateDirectory ${d}`));
  });

  it('registers and starts containerd for a worker without spec.containerd, before the kubelet that depends on it', async () => {
    const m = machine();
    const config = workerConfig();
    delete (config.spec as { containerd?: unknown }).containerd;
    await run(m, config);
    m.sim.reboot();
    const second = await run(m, config);
    expect(second.outcome.error).toBeUndefined();
    expect(second.calls.indexOf('registerContainerdService')).toBeGreaterThanOrEqual(0);
    expect(second.calls.indexOf('registerContainerdService')).toBeLessThan(second.calls.indexOf('createService kubelet'));
    expect(m.sim.services.get('containerd')?.state).toBe('Running');
    expect(readFileSync(realPath(m.root, 'C:\\Program Files\\containerd\\config.toml'), 'utf8')).toContain('address = "\\\\\\\\.\\\\pipe\\\\containerd-containerd"');
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

  it('starts the kubelet of the join with every kubelet flag kubeadm is given: the node IP, and for kubeadm before v1.25 the Windows settings and the memory reservation', async () => {
    const m = machine(KUBEADM_FLAGS, 'v1.24.17');
    const config = workerConfig();
    config.spec.kubernetes!.version = 'v1.24.17';
    config.spec.kubernetes!.node = { ip: ['10.0.0.7'] };
    await run(m, config);
    m.sim.reboot();
    const second = await run(m, config);
    expect(second.outcome.error).toBeUndefined();
    expect(m.joinConfigs[0]).toContain("cgroups-per-qos: 'false'");
    const flags = m.kubeletAtJoin[0]!.split(' ');
    expect(flags).toEqual(expect.arrayContaining(['--cgroups-per-qos=false', '--enforce-node-allocatable=', '--system-reserved=memory=2Gi', '--node-ip=10.0.0.7', '--register-with-taints=os=windows:NoSchedule']));
  });

  it('does not reconfigure or restart the kubelet after the join when kubeadm wrote the flags the configuration predicted, in its order (sorted by name)', async () => {
    const m = machine('KUBELET_KUBEADM_ARGS="--container-runtime-endpoint=npipe:////./pipe/containerd-containerd --node-labels=node.kubernetes.io/pool=windows --register-with-taints=os=windows:NoSchedule"\n');
    const config = workerConfig();
    config.spec.kubernetes!.node = { labels: { 'node.kubernetes.io/pool': 'windows' } };
    await run(m, config);
    m.sim.reboot();
    const second = await run(m, config);
    expect(second.outcome.error).toBeUndefined();
    expect(second.calls.slice(-2)).toEqual(['createPrivateDirectory C:\\var\\lib\\kubelet\\pki', 'startService kubelet']);
    expect(second.finished).toContain('provision/windows/kubelet-flags=skipped');
  });

  it('does not restart the kubelet after the join when node.name is the machine\'s own hostname, for which kubeadm writes no --hostname-override', async () => {
    // kubeadm passes --hostname-override only when the node name differs from the lower-cased hostname (flags.go).
    const m = machine('KUBELET_KUBEADM_ARGS="--container-runtime-endpoint=npipe:////./pipe/containerd-containerd --register-with-taints=os=windows:NoSchedule"\n');
    const config = workerConfig();
    config.spec.kubernetes!.node = { name: 'win-node1' };
    await run(m, config);
    m.sim.reboot();
    const second = await run(m, config);
    expect(second.outcome.error).toBeUndefined();
    expect(m.kubeletAtJoin[0]).toContain('--hostname-override=win-node1');
    expect(second.calls.slice(-2)).toEqual(['createPrivateDirectory C:\\var\\lib\\kubelet\\pki', 'startService kubelet']);
    expect(second.finished).toContain('provision/windows/kubelet-flags=skipped');
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
    expect(after.calls).toEqual(['stopService csiproxy', 'startService csiproxy', 'startService kubelet']);
    expect(readFileSync(realPath(m.root, 'C:\\etc\\kubernetes\\node\\bin\\csi-proxy.exe'))).toEqual(AGENT);

    writeFileSync(realPath(m.root, 'C:\\etc\\kubernetes\\node\\bin\\csi-proxy.exe'), 'an older csi-proxy');
    const tampered = await run(m, workerConfig('/tampered.exe'));
    expect(exitCodeOf(tampered.outcome.error)).toBe(3);
    expect(tampered.outcome.error!.message).toMatch(/spec\.windows\.hostAgents\[0\]\.source/);
    expect(tampered.calls).toEqual([]);
    expect(m.sim.services.get('csiproxy')!.state).toBe('Running');
    expect(readFileSync(realPath(m.root, 'C:\\etc\\kubernetes\\node\\bin\\csi-proxy.exe'), 'utf8')).toBe('an older csi-proxy');
  });

  it('starts the kubelet again after replacing the binary of a host agent it depends on, which Stop-Service -Force stopped with it', async () => {
    const m = machine();
    await run(m);
    m.sim.reboot();
    await run(m);
    expect(m.sim.services.get('kubelet')!.state).toBe('Running');
    writeFileSync(realPath(m.root, 'C:\\etc\\kubernetes\\node\\bin\\csi-proxy.exe'), 'an older csi-proxy');
    const after = await run(m);
    expect(after.outcome.error).toBeUndefined();
    expect(readFileSync(realPath(m.root, 'C:\\etc\\kubernetes\\node\\bin\\csi-proxy.exe'))).toEqual(AGENT);
    expect(m.sim.services.get('csiproxy')!.state).toBe('Running');
    expect(m.sim.services.get('kubelet')!.state).toBe('Running');
  });

  it('gives a host agent the display name changed in the configuration on a rerun, planned as a change, without restarting it', async () => {
    const m = machine();
    await run(m);
    m.sim.reboot();
    const joined = await run(m);
    expect(m.sim.services.get('csiproxy')!.displayName).toBe('csiproxy');
    const config = workerConfig();
    config.spec.windows!.hostAgents![0]!.displayName = 'CSI Proxy';
    const plan = await computePlan({ ...joined.input, config });
    const planned = plan.phases.flatMap((p) => p.steps).find((s) => s.id === 'prepare/windows/host-agents');
    expect(planned?.status).toBe('change');
    expect(planned?.changes).toEqual([expect.objectContaining({ action: 'configure', target: 'service csiproxy', detail: expect.stringContaining('display name "CSI Proxy"') })]);
    const again = await run(m, config);
    expect(again.outcome.error).toBeUndefined();
    expect(again.calls).toEqual(['configureService csiproxy']);
    expect(m.sim.services.get('csiproxy')).toMatchObject({ displayName: 'CSI Proxy', state: 'Running' });
    expect(m.sim.services.get('kubelet')!.state).toBe('Running');
    expect((await run(m, config)).calls).toEqual([]);
  });

  it('puts the agent\'s old binary back to work and starts the kubelet again when replacing the binary fails after both were stopped', async () => {
    const m = machine();
    await run(m);
    m.sim.reboot();
    await run(m);
    const installPath = 'C:\\etc\\kubernetes\\node\\bin\\csi-proxy.exe';
    writeFileSync(realPath(m.root, installPath), 'an older csi-proxy');
    // Windows refuses the rename while the stopped agent's process still holds its image open.
    const locked = new Proxy(m.fs, {
      get(target, prop, receiver) {
        if (prop !== 'openWrite') return Reflect.get(target, prop, receiver) as unknown;
        return async (path: string, options?: unknown) => {
          const pending = await target.openWrite(path, options as Parameters<typeof target.openWrite>[1]);
          if (path !== installPath) return pending;
          return { ...pending, commit: async () => Promise.reject(Object.assign(new Error(`EBUSY: resource busy or locked, rename '${installPath}'`), { code: 'EBUSY' })) };
        };
      },
    });
    Object.assign(m, { fs: locked });
    const after = await run(m);
    expect(after.outcome.error?.message).toMatch(/spec\.windows\.hostAgents\[0\]\.installPath.*EBUSY/);
    expect(readFileSync(realPath(m.root, installPath), 'utf8')).toBe('an older csi-proxy');
    expect(after.calls).toEqual(['stopService csiproxy', 'startService csiproxy', 'startService kubelet']);
    expect(m.sim.services.get('csiproxy')!.state).toBe('Running');
    expect(m.sim.services.get('kubelet')!.state).toBe('Running');
  });

  it.each([
    ['26100', [17763], /build 26100 \(ltsc2025\), which cannot run container images of build 17763 \(ltsc2019\)/],
    ['17763', undefined, /^this machine is Windows build 17763 \(ltsc2019\); machineadm needs Windows build 20348 \(Windows Server 2022, ltsc2022\) or later$/],
    ['17763', [20348], /^this machine is Windows build 17763 \(ltsc2019\); machineadm needs Windows build 20348 \(Windows Server 2022, ltsc2022\) or later$/],
    ['14393', [14393], /^this machine is Windows build 14393 \(ltsc2016\); machineadm needs Windows build 20348/],
    ['20348', [26100], /build 20348 \(ltsc2022\), which cannot run container images of build 26100 \(ltsc2025\)/],
    // Above 26100 the oldest image build a host runs is 26100's, the LTSC before it (hcsshim's CheckHostAndContainerCompat).
    ['26200', [20348], /build 26200, which cannot run container images of build 20348 \(ltsc2022\)/],
  ] as [string, number[] | undefined, RegExp][])('refuses a build %s node for supportedBuilds %j before anything changes (exit 2)', async (build, supported, message) => {
    const m = machine();
    const sim = new SimulatedWindows(build);
    Object.assign(m, { sim });
    const facts: Facts = { os: 'windows', arch: 'x64', hostname: 'WIN-NODE1', privileged: true, liveRoot: true, windowsBuild: build, bootId: await sim.bootId() };
    const config = workerConfig();
    if (supported) config.spec.windows!.supportedBuilds = supported;
    else delete config.spec.windows!.supportedBuilds;
    const host: Host = { ...createHost({ root: m.root, facts, env: {}, windows: sim }), fs: m.fs, proc: m.proc };
    const { preflightRun } = await import('../../src/engine/runner.ts');
    const refusal = await preflightRun({ command: 'init', phases: ALL_PHASES, selection: {}, config, facts, host, events: new EventBus(), state: new StateStore(m.stateFs), force: false, secrets: new SecretScrubber() }).catch((e: unknown) => e);
    expect(refusal).toBeInstanceOf(Error);
    expect(exitCodeOf(refusal)).toBe(2);
    expect((refusal as Error).message.replace(/^.*?: /, (p) => (p.startsWith('step ') || p.startsWith('spec.') ? '' : p))).toMatch(message);
    expect(sim.calls).toEqual([]);
  });

  it('makes a node of Windows Server 2019 (build 17763) when supportedBuilds lists it, saying in the plan what it goes without', async () => {
    const m = machine();
    const sim = new SimulatedWindows('17763');
    const facts: Facts = { os: 'windows', arch: 'x64', hostname: 'WIN-NODE1', privileged: true, liveRoot: true, windowsBuild: '17763', bootId: await sim.bootId() };
    const input = (supportedBuilds: number[]) => {
      const config = workerConfig();
      config.spec.windows!.supportedBuilds = supportedBuilds;
      const host: Host = { ...createHost({ root: m.root, facts, env: {}, windows: sim }), fs: m.fs, proc: m.proc };
      return { command: 'init' as const, phases: ALL_PHASES, selection: {}, config, facts, host, events: new EventBus(), state: new StateStore(m.stateFs), force: false, secrets: new SecretScrubber() };
    };
    const { preflightRun } = await import('../../src/engine/runner.ts');
    await expect(preflightRun(input([17763]))).resolves.toBeUndefined();
    const plan = await computePlan(input([17763]));
    const feature = plan.phases[0]!.steps.find((s) => s.id === 'prepare/windows/containers-feature')!;
    expect(feature.changes.map((c) => c.action)).toEqual(['install']);
    expect(feature.changes[0]!.detail).toContain('build 17763 (ltsc2019) (accepted because spec.windows.supportedBuilds lists 17763: it runs container images of build 17763 only');
    // Not listed: refused, and the hint says how to accept it.
    const refusal = await preflightRun(input([20348])).catch((e: unknown) => e);
    expect(exitCodeOf(refusal)).toBe(2);
    expect((refusal as { hint?: string }).hint).toContain('or list 17763 in spec.windows.supportedBuilds');
  });

  it('plans, in order, the feature, containerd, the host agent, the kubelet service, the firewall rule, the join and the sentinel', async () => {
    const m = machine();
    const facts: Facts = { os: 'windows', arch: 'x64', hostname: 'WIN-NODE1', privileged: true, liveRoot: true, windowsBuild: '20348' };
    // A plan made on another machine: no Windows seam, no Windows files.
    const host = createHost({ root: m.root, facts, env: {} });
    const plan = await computePlan({ command: 'init', phases: ALL_PHASES, selection: {}, config: workerConfig(), facts, host, events: new EventBus(), state: new StateStore(m.stateFs), force: false, secrets: new SecretScrubber() });
    const changing = plan.phases.flatMap((p) => p.steps.filter((s) => s.status === 'change').map((s) => `${s.id}: ${s.changes.map((c) => `${c.action} ${c.target}`).join('; ')}`));
    expect(changing).toEqual([
      `prepare/windows/private-paths: ${LOCKED.map((dir) => `lock ${dir}`).join('; ')}`,
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

describe('a Windows machine that only joins the Active Directory domain', () => {
  it('gets no kubelet service, no firewall rule for it, no Containers feature and no kubelet or containerd folders locked', async () => {
    const m = machine();
    const facts: Facts = { os: 'windows', arch: 'x64', hostname: 'WIN-DJ1', privileged: true, liveRoot: true, windowsBuild: '20348' };
    const host = createHost({ root: m.root, facts, env: {} });
    const config = configFrom({ domainJoin: { domain: 'corp.example', computerName: 'WIN-DJ1', credentials: { username: 'joiner', password: 'pw' } } });
    const plan = await computePlan({ command: 'init', phases: ALL_PHASES, selection: {}, config, facts, host, events: new EventBus(), state: new StateStore(m.stateFs), force: false, secrets: new SecretScrubber() });
    const steps = new Map(plan.phases.flatMap((p) => p.steps.map((s) => [s.id, s] as const)));
    for (const id of ['prepare/windows/kubelet-service', 'prepare/windows/firewall', 'prepare/windows/containers-feature', 'prepare/windows/containerd-config', 'prepare/windows/containerd-service', 'provision/windows/kubelet-flags']) {
      expect(steps.get(id), id).toMatchObject({ status: 'not-applicable', reason: 'not asked for by the configuration' });
    }
    expect(steps.get('prepare/windows/private-paths')!.changes.map((c) => `${c.action} ${c.target}`)).toEqual(['lock C:\\ProgramData\\machineadm']);
    expect(steps.get('provision/domain/join')!.status).toBe('change');
  });
});

describe('a Windows worker that joins the Active Directory domain', () => {
  const PASSWORD = 'S3cret pass’word';
  const RESUME = ['C:\\Program Files\\machineadm\\machineadm.exe', 'init', '-c', 'C:\\machineadm\\config.yaml'];

  function joinConfig(domainJoin: Record<string, unknown> = {}) {
    const config = workerConfig();
    const dj = { domain: 'corp.example', organizationalUnit: 'OU=Nodes,DC=corp,DC=example', computerName: 'NODE-07', credentials: { username: 'k8s-joiner', password: PASSWORD }, ...domainJoin };
    return configFrom({ ...config.spec, domainJoin: dj });
  }

  function joinMachine() {
    const m = machine();
    // The feature is there: the only restart this run asks for is the join's.
    m.sim.features.set('Containers', 'installed');
    m.sim.readFile = (path) => {
      try {
        return readFileSync(realPath(m.root, path), 'utf8');
      } catch {
        return undefined;
      }
    };
    return m;
  }

  /** One machineadm process, as the CLI (or the resume task after the restart) starts it. */
  async function execute(m: ReturnType<typeof machine>, config: ReturnType<typeof joinConfig>, offline = false) {
    const facts: Facts = { os: 'windows', arch: 'x64', hostname: m.sim.computer.name, privileged: true, liveRoot: true, windowsBuild: '20348', bootId: await m.sim.bootId() };
    // The live machine: machineadm restarts it itself (the files stay under the scratch root).
    const fs = new Proxy(m.fs, { get: (target, prop, receiver) => (prop === 'isLiveRoot' ? true : Reflect.get(target, prop, receiver)) });
    const host: Host = { ...createHost({ root: m.root, facts, env: {}, windows: m.sim, offline }), fs, proc: m.proc, resume: windowsResume(m.sim), restart: windowsRestart(m.sim) };
    let console = '';
    const before = m.sim.calls.length;
    const report = await executeRun({ command: 'init', config, host, stateFs: m.stateFs, selection: {}, force: false, console: { mode: 'json', write: (t) => (console += t) }, resume: { argv: RESUME, maxReboots: 3, reboot: true } });
    return { ...report, console, calls: m.sim.calls.slice(before) };
  }

  function everything(m: ReturnType<typeof machine>): string {
    return readdirSync(m.root, { recursive: true, withFileTypes: true }).filter((e) => e.isFile()).map((e) => readFileSync(join(e.parentPath, e.name), 'utf8')).join('\n');
  }

  it('joins, restarts and resumes as the same run, then joins the cluster; one report; a second run changes nothing; the password is nowhere', async () => {
    const m = joinMachine();
    const config = joinConfig();
    const first = await execute(m, config);
    expect(first.exitCode).toBe(4);
    expect(first.calls.filter((c) => /join|Resume|restart/i.test(c))).toEqual(['joinDomain corp.example OU=Nodes,DC=corp,DC=example as NODE-07', 'registerResume', 'restart']);
    expect(m.sim.passwords).toEqual([PASSWORD]);
    expect(m.sim.tasks.get('\\machineadm\\resume')).toEqual(RESUME);
    expect(m.sim.computer.partOfDomain).toBe(false);
    expect(m.joinConfigs).toEqual([]);

    m.sim.reboot();
    expect(m.sim.computer).toEqual({ partOfDomain: true, domain: 'corp.example', name: 'NODE-07' });
    const second = await execute(m, config);
    expect(second.exitCode, second.error?.message).toBe(0);
    expect(second.calls).not.toContain(expect.stringMatching(/^joinDomain/));
    expect(m.joinConfigs).toHaveLength(1);
    expect(m.sim.tasks.size).toBe(0);
    const doc = second.reported.document!;
    expect(doc.runId).toBe(first.reported.document!.runId);
    expect(doc.resumedAt).toHaveLength(1);
    expect(doc.result).toBe('success');
    const steps = doc.phases.flatMap((p) => p.steps.map((s) => `${s.id}=${s.result}`));
    expect(steps.filter((s) => /domain|kubeadm/.test(s))).toEqual(['provision/domain/join=warning', 'provision/domain/join=skipped', 'provision/kubeadm/join=success']);
    const state = JSON.parse(readFileSync(join(m.root, 'state', 'state.json'), 'utf8')) as { steps: Record<string, { data?: unknown }> };
    const joinRecord = { domain: 'corp.example', method: 'Add-Computer', computerName: 'NODE-07', organizationalUnit: 'OU=Nodes,DC=corp,DC=example' };
    expect(state.steps['provision/domain/join']!.data).toEqual(joinRecord);
    // The join is in the result file and in the step's events: what it did, then what it found.
    expect(doc.domainJoin).toEqual(joinRecord);
    const joinEvents = [...first.console.split('\n'), ...second.console.split('\n')].filter((l) => l.includes('"step.finished"') && l.includes('provision/domain/join')).map((l) => JSON.parse(l) as { record?: unknown; recordAs?: string });
    expect(joinEvents.map((e) => [e.recordAs, e.record])).toEqual([['domainJoin', joinRecord], ['domainJoin', joinRecord]]);

    const third = await execute(m, config);
    expect(third.exitCode).toBe(0);
    expect(third.calls).toEqual([]);
    expect(m.sim.directory.accounts.size).toBe(1);
    expect(everything(m) + first.console + second.console + third.console).not.toContain(PASSWORD);
  });

  it.each([
    ['a wrong password', { credentials: { username: 'k8s-joiner', password: 'wrong' } }, 'credentials', /the domain rejected the credentials of k8s-joiner@CORP\.EXAMPLE \(Add-Computer, code 1326\)/],
    ['an unknown domain', { domain: 'other.example', organizationalUnit: 'OU=Nodes,DC=other,DC=example' }, 'unreachable', /no domain controller of other\.example could be reached \(Add-Computer, code 1355\)/],
    ['a computer account another user created', {}, 'account-exists', /the computer account NODE-07 exists in corp\.example and may not be reused by k8s-joiner \(Add-Computer, code 2732\)/],
  ])('fails with exit 1 and a clear message for %s, and changes nothing', async (_name, domainJoin, failure, message) => {
    const m = joinMachine();
    m.sim.directory.accounts.set('NODE-07', 'someone-else');
    const run = await execute(m, joinConfig(domainJoin));
    expect(run.exitCode).toBe(1);
    expect(run.error!.message).toMatch(message);
    const failed = run.reported.document!.phases.flatMap((p) => p.steps).find((s) => s.id === 'provision/domain/join')!;
    expect(failed.error).toMatchObject({ details: { failure, tool: 'Add-Computer', outputTail: expect.stringContaining('failed to join domain') } });
    expect(m.sim.computer.partOfDomain).toBe(false);
    expect(m.sim.pendingJoin).toBeUndefined();
    expect(m.sim.restarts).toEqual([]);
    expect(m.joinConfigs).toEqual([]);
  });

  it('refuses to move a member of another domain, without calling Add-Computer', async () => {
    const m = joinMachine();
    m.sim.computer = { partOfDomain: true, domain: 'legacy.example', name: 'WIN-NODE1' };
    // Refused before the run's first change, as the plan shows it (exit 2).
    const before = m.sim.calls.length;
    await expect(execute(m, joinConfig())).rejects.toMatchObject({ exitCode: 2, message: expect.stringMatching(/this machine is a member of legacy\.example \(Win32_ComputerSystem\), not of corp\.example/) });
    expect(m.sim.calls.slice(before).filter((c) => c.startsWith('join'))).toEqual([]);
    expect(m.sim.computer.domain).toBe('legacy.example');
  });

  it.each([
    ['a local file', (m: ReturnType<typeof machine>) => {
      mkdirSync(dirname(realPath(m.root, 'C:\\machineadm\\odj.txt')), { recursive: true });
      writeFileSync(realPath(m.root, 'C:\\machineadm\\odj.txt'), BLOB);
      return { file: 'C:\\machineadm\\odj.txt' };
    }, 'joinDomainOffline C:\\machineadm\\odj.txt'],
    ['a verified download', () => ({ url: `${blobBase}/odj.txt`, sha256: BLOB_SHA }), 'joinDomainOffline C:\\ProgramData\\machineadm\\run\\domain-join.odj'],
  ])('joins offline with a djoin blob from %s, restarts, and goes on', async (_name, blob, call) => {
    const m = joinMachine();
    const config = joinConfig({ credentials: undefined, computerName: undefined, windows: { offlineBlob: blob(m) } });
    const first = await execute(m, config);
    expect(first.exitCode).toBe(4);
    expect(first.calls.filter((c) => /join|restart/i.test(c))).toEqual([call, 'restart']);
    // A downloaded blob holds the account's secret: gone once djoin has read it.
    expect(existsSync(realPath(m.root, 'C:\\ProgramData\\machineadm\\run\\domain-join.odj'))).toBe(false);
    m.sim.reboot();
    expect(m.sim.computer).toEqual({ partOfDomain: true, domain: 'corp.example', name: 'NODE-09' });
    const second = await execute(m, config);
    expect(second.exitCode, second.error?.message).toBe(0);
    expect(m.joinConfigs).toHaveLength(1);
  });

  it('refuses a downloaded blob whose sha256 differs (exit 3) before djoin runs', async () => {
    const m = joinMachine();
    const run = await execute(m, joinConfig({ credentials: undefined, windows: { offlineBlob: { url: `${blobBase}/odj.txt`, sha256: '0'.repeat(64) } } }));
    expect(run.exitCode).toBe(3);
    expect(run.calls.filter((c) => c.startsWith('join'))).toEqual([]);
    expect(existsSync(realPath(m.root, 'C:\\ProgramData\\machineadm\\run\\domain-join.odj'))).toBe(false);
  });

  describe('from an air-gapped bundle', () => {
    /** Host agents (one by sha256, one by signature only) and the djoin blob, bundled from the servers. */
    async function bundled(): Promise<string> {
      const config = joinConfig({ credentials: undefined, computerName: undefined, windows: { offlineBlob: { url: `${blobBase}/odj.txt`, sha256: BLOB_SHA } } });
      config.spec.windows!.hostAgents!.push({ name: 'nodeagent', source: { url: `${base}/node-agent.exe`, signature: { publicKey: formatPublicKeyLine(KEYS.publicKey) } }, installPath: 'C:\\k\\node-agent.exe', args: [], kubeletDependsOn: false, log: 'kube-log-runner' });
      const dir = join(scratchDir('machineadm-windows-bundle-'), 'bundle');
      await buildBundle(createHost({ root: scratchDir() }), { config, destination: dir });
      // Copied elsewhere, as to a USB stick: its configuration names its files relative to itself.
      const copy = join(scratchDir('machineadm-windows-usb-'), 'node-bundle');
      cpSync(dir, copy, { recursive: true });
      return copy;
    }

    async function loaded(dir: string) {
      return (await loadConfig(createHost({ root: scratchDir() }), [join(dir, 'config.yaml')])).config;
    }

    it('carries the host agents and the blob: an --offline run installs and joins from it, with no request to any server', async () => {
      const dir = await bundled();
      const written = readFileSync(join(dir, 'config.yaml'), 'utf8');
      expect(written).not.toMatch(/127\.0\.0\.1|file:|publicKey/);
      expect(written).toContain('url: agents/0-csi-proxy.exe');
      expect(written).toContain('url: agents/1-node-agent.exe');
      expect(written).toContain('url: domain-join/offline-blob.odj');
      // The blob holds the computer account's secret.
      expect(statSync(join(dir, 'domain-join/offline-blob.odj')).mode & 0o777).toBe(0o600);
      expect(readFileSync(join(dir, 'SHA256SUMS'), 'utf8')).toContain(`${createHash('sha256').update(SIGNED_AGENT).digest('hex')}  agents/1-node-agent.exe`);

      const m = joinMachine();
      const config = await loaded(dir);
      const before = requests.length;
      const first = await execute(m, config, true);
      expect(first.exitCode, first.error?.message).toBe(4);
      expect(first.calls.filter((c) => /Service (csiproxy|nodeagent)|join/.test(c))).toEqual([
        'createService csiproxy',
        'startService csiproxy',
        'createService nodeagent',
        'startService nodeagent',
        'joinDomainOffline C:\\ProgramData\\machineadm\\run\\domain-join.odj',
      ]);
      expect(readFileSync(realPath(m.root, 'C:\\etc\\kubernetes\\node\\bin\\csi-proxy.exe'))).toEqual(AGENT);
      expect(readFileSync(realPath(m.root, 'C:\\k\\node-agent.exe'))).toEqual(SIGNED_AGENT);
      expect(existsSync(realPath(m.root, 'C:\\ProgramData\\machineadm\\run\\domain-join.odj'))).toBe(false);
      m.sim.reboot();
      expect(m.sim.computer).toEqual({ partOfDomain: true, domain: 'corp.example', name: 'NODE-09' });
      const second = await execute(m, config, true);
      expect(second.exitCode, second.error?.message).toBe(0);
      expect(m.joinConfigs).toHaveLength(1);
      expect(requests.length).toBe(before);
    });

    it.each([
      ['a host agent', 'agents/1-node-agent.exe', /spec\.windows\.hostAgents\[1\]\.source\.sha256: .*SHA-256 is/],
      ['the djoin blob', 'domain-join/offline-blob.odj', /spec\.domainJoin\.windows\.offlineBlob\.sha256: .*SHA-256 is/],
    ])('fails with exit 3 before anything changes when %s in the bundle was tampered with', async (_name, file, message) => {
      const dir = await bundled();
      writeFileSync(join(dir, file), 'changed on the way\n');
      const m = joinMachine();
      // Found in the run's preflight, which the command line reports with the error's exit code.
      const error = await execute(m, await loaded(dir), true).then(() => undefined, (e: unknown) => e as Error);
      expect(exitCodeOf(error)).toBe(3);
      expect(error!.message).toMatch(message);
      expect(m.sim.calls).toEqual([]);
      expect(existsSync(realPath(m.root, 'C:\\etc\\kubernetes\\node\\bin\\csi-proxy.exe'))).toBe(false);
      expect(existsSync(realPath(m.root, 'C:\\Program Files\\containerd\\config.toml'))).toBe(false);
    });
  });
});
