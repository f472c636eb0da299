// The Windows half of the refusal walk (test/cli/refusals.test.ts walks Linux): every Windows-only
// step of the registry that can refuse a run before its first change is run through the whole run
// (the run module, as init runs it) on the simulated Windows machine. The run ends with the
// documented exit code and message, the files under the root and the state directory are byte for
// byte as they were, and the machine saw no call that changes it (features, services, firewall,
// scheduled tasks, ACLs, joins).
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createHost, RootedFileSystem, type Facts, type Host, type ProcessRunner } from '../../src/host/index.ts';
import { ALL_PHASES } from '../../src/phases/registry.ts';
import { resetPhase } from '../../src/phases/reset.ts';
import { executeRun } from '../../src/phases/run.ts';
import { exitCodeOf } from '../../src/errors.ts';
import { windowsRestart, windowsResume } from '../../src/host/windows/index.ts';
import { configFrom } from '../report/harness.ts';
import { scratchDir } from '../support/tmp.ts';
import { snapshotTree } from '../support/tree.ts';
import { realPath, SimulatedWindows, windowsFiles } from './simulated-windows.ts';

const AGENT = Buffer.from('MZ csi-proxy stand-in\n');
const join_ = { bootstrap: 'join', role: 'worker', controlPlaneEndpoint: 'cp.internal:6443', token: 'abcdef.0123456789abcdef', caCertHashes: [`sha256:${'0'.repeat(64)}`] };
const containerd = { version: '2.1.4', sandboxImage: 'registry.k8s.io/pause:3.10' };

interface Refusal {
  by: string;
  what: string;
  spec(root: string, sim: SimulatedWindows): Record<string, unknown>;
  build?: string;
  code: number;
  message: RegExp;
  /** reset: the state an init that joined the domain online left (the walk runs init otherwise). */
  command?: 'reset';
}

/** What an init that joined corp.example with Add-Computer recorded, for reset's refusals. */
const JOINED_STATE = { version: 1, steps: { 'provision/domain/join': { result: 'warning', at: '2026-12-01T00:00:00.000Z', runId: 'earlier', durationMs: 1, data: { domain: 'corp.example', method: 'Add-Computer', computerName: 'NODE-07' } } }, runs: [{ runId: 'earlier', command: 'init', startedAt: '2026-12-01T00:00:00.000Z', finishedAt: '2026-12-01T00:00:01.000Z', result: 'success' }] };
const member = (sim: SimulatedWindows) => (sim.computer = { partOfDomain: true, domain: 'corp.example', name: 'NODE-07' });

const refusals: Refusal[] = [
  {
    by: 'prepare/windows/containers-feature',
    what: 'a Windows build the configuration does not support',
    spec: () => ({ containerd, windows: { supportedBuilds: [26100] }, kubernetes: join_ }),
    code: 2,
    message: /spec\.windows\.supportedBuilds/,
  },
  {
    by: 'prepare/windows/containerd-config',
    what: 'a containerd proxy, which Windows takes from machine variables',
    spec: () => ({ containerd: { ...containerd, proxy: { httpsProxy: 'http://proxy.internal:3128' } }, kubernetes: join_ }),
    code: 2,
    message: /spec\.containerd\.proxy: is not supported on Windows/,
  },
  {
    by: 'prepare/kubernetes/install',
    what: 'another kubelet.exe where install would put its own',
    spec: () => ({ containerd, kubernetes: { ...join_, version: 'v1.34.2', install: { baseUrl: 'http://127.0.0.1:9/release', sha256: { kubeadm: 'a'.repeat(64), kubelet: 'b'.repeat(64), kubectl: 'c'.repeat(64) } } } }),
    code: 2,
    message: /spec\.kubernetes\.install: C:\\k\\kubelet\.exe is already there and is not kubelet v1\.34\.2/,
  },
  {
    by: 'prepare/windows/host-agents',
    what: 'a host agent copied from this machine whose sha256 is not the one given',
    spec: (root) => {
      mkdirSync(join(root, 'bundle'), { recursive: true });
      writeFileSync(join(root, 'bundle/csi-proxy.exe'), AGENT);
      return { containerd, windows: { hostAgents: [{ name: 'csiproxy', source: { url: `file://${join(root, 'bundle/csi-proxy.exe')}`, sha256: 'a'.repeat(64) }, installPath: 'C:\\etc\\kubernetes\\node\\bin\\csi-proxy.exe' }] }, kubernetes: join_ };
    },
    code: 3,
    message: /spec\.windows\.hostAgents\[0\]\.source/,
  },
  ...(
    [
      ['cgroups-per-qos', 'true', /spec\.kubernetes\.node\.kubeletExtraArgs\["cgroups-per-qos"\]: would win over cgroupsPerQOS: false/],
      ['enforce-node-allocatable', 'pods', /spec\.kubernetes\.node\.kubeletExtraArgs\["enforce-node-allocatable"\]: would win over enforceNodeAllocatable: \[\]/],
      // config, kubeconfig, bootstrap-kubeconfig and container-runtime-endpoint the configuration
      // refuses on every platform (test/kubeadm/schema.test.ts).
      ['cert-dir', 'C:\\k\\pki', /spec\.kubernetes\.node\.kubeletExtraArgs\["cert-dir"\]: would win over --cert-dir=C:\\var\\lib\\kubelet\\pki/],
      ['resolv-conf', 'C:\\k\\resolv.conf', /spec\.kubernetes\.node\.kubeletExtraArgs\["resolv-conf"\]: would win over --resolv-conf=, which machineadm gives the Windows kubelet/],
      ['system-reserved', 'cpu=500m', /spec\.kubernetes\.node\.kubeletExtraArgs\["system-reserved"\]: would win over the memory machineadm reserves/],
    ] as const
  ).map(
    ([flag, value, message]): Refusal => ({
      by: 'prepare/windows/kubelet-service',
      what: `a kubelet flag (${flag}) that would win over the value machineadm gives the Windows kubelet`,
      spec: () => ({ containerd, kubernetes: { ...join_, node: { kubeletExtraArgs: { [flag]: value } } } }),
      code: 2,
      message,
    }),
  ),
  {
    by: 'provision/domain/join',
    what: "a join password file that is not on the machine",
    spec: () => ({ containerd, domainJoin: { domain: 'corp.example', credentials: { username: 'k8s-joiner', password: { valueFrom: { file: 'C:\\ProgramData\\machineadm\\join-password' } } } }, kubernetes: join_ }),
    code: 2,
    message: /spec\.domainJoin\.credentials\.password: secret file C:\\ProgramData\\machineadm\\join-password does not exist/,
  },
  {
    by: 'provision/domain/join',
    what: 'a member of another domain',
    spec: (_root, sim) => ((sim.computer = { partOfDomain: true, domain: 'other.example', name: 'WIN-NODE1' }), { containerd, domainJoin: { domain: 'corp.example', credentials: { username: 'k8s-joiner', password: 'pw' } }, kubernetes: join_ }),
    code: 2,
    message: /other\.example/,
  },
  {
    by: 'provision/kubeadm/join',
    what: 'a join token that cannot be read',
    spec: () => ({ containerd, kubernetes: { ...join_, token: { valueFrom: { env: 'MACHINEADM_NO_SUCH_TOKEN' } } } }),
    code: 2,
    message: /spec\.kubernetes\.token/,
  },
  {
    by: 'reset/domain/join',
    what: 'leaving a domain joined online with a configuration that has no credentials',
    command: 'reset',
    spec: (_root, sim) => (member(sim), {}),
    code: 2,
    message: /spec\.domainJoin\.credentials: reset leaves corp\.example with the credentials the join used/,
  },
  {
    by: 'reset/domain/join',
    what: 'leaving a domain with a password file that is not on the machine',
    command: 'reset',
    spec: (_root, sim) => (member(sim), { domainJoin: { domain: 'corp.example', credentials: { username: 'k8s-joiner', password: { valueFrom: { file: 'C:\\ProgramData\\machineadm\\join-password' } } } } }),
    code: 2,
    message: /spec\.domainJoin\.credentials\.password: secret file C:\\ProgramData\\machineadm\\join-password does not exist/,
  },
];

/** The simulated machine's calls that change it (reads such as feature or ACL queries are not). */
const changing = (calls: string[]) => calls.filter((c) => !/^(feature|service|computerSystem|acl|bootId|firewallRule|scheduledTask)\b/.test(c));

async function runOn(r: Refusal) {
  const root = scratchDir('machineadm-windows-refusal-');
  const sim = new SimulatedWindows(r.build ?? '20348');
  const fs = windowsFiles(root);
  for (const exe of ['C:\\Program Files\\containerd\\containerd.exe', 'C:\\k\\kubelet.exe']) {
    mkdirSync(dirname(realPath(root, exe)), { recursive: true });
    writeFileSync(realPath(root, exe), 'MZ');
  }
  const stateDir = join(root, 'state');
  mkdirSync(stateDir);
  // An earlier run's records: a refused run must not add to them.
  writeFileSync(join(stateDir, 'state.json'), JSON.stringify(r.command === 'reset' ? JOINED_STATE : { version: 1, steps: {}, runs: [{ runId: 'earlier', command: 'init', startedAt: '2026-12-01T00:00:00.000Z', finishedAt: '2026-12-01T00:00:01.000Z', result: 'success' }] }) + '\n');
  const spec = r.spec(root, sim);
  const proc = {
    which: async (name: string) => (name === 'kubeadm' ? 'C:\\k\\kubeadm.exe' : undefined),
    run: async (argv: string[]) => {
      if (argv[1] === 'version') return { argv, exitCode: 0, stdout: 'v1.34.2\n', stderr: '', durationMs: 1 };
      throw new Error(`a refused run ran ${argv.join(' ')}`);
    },
  } as unknown as ProcessRunner;
  const before = { root: snapshotTree(root), calls: sim.calls.length };
  const facts: Facts = { os: 'windows', arch: 'x64', hostname: 'WIN-NODE1', privileged: true, liveRoot: true, windowsBuild: sim.build, bootId: await sim.bootId() };
  const host: Host = { ...createHost({ root, facts, env: {}, windows: sim }), fs, proc, resume: windowsResume(sim), restart: windowsRestart(sim) };
  let code = 0;
  let message = '';
  try {
    const report = await executeRun({
      command: r.command ?? 'init',
      config: configFrom(spec),
      host,
      stateFs: new RootedFileSystem(stateDir),
      selection: {},
      force: false,
      console: { mode: 'text', write: () => undefined },
      ...(r.command === 'reset' ? {} : { resume: { argv: ['machineadm.exe', 'init'], maxReboots: 3, reboot: true } }),
    });
    // A run that started: it was not refused before its first change.
    code = report.exitCode;
    message = report.error?.message ?? 'the run started';
  } catch (error) {
    code = exitCodeOf(error);
    message = (error as Error).message;
  }
  return { code, message, root, before, after: snapshotTree(root), calls: changing(sim.calls.slice(before.calls)) };
}

describe('a refusal before the first change, on Windows', () => {
  it.each(refusals.map((r) => [r.by, r.what, r] as const))('%s refuses %s: the run exits with its code, nothing changed', async (_by, _what, r) => {
    const ran = await runOn(r);
    expect(ran.code, ran.message).toBe(r.code);
    expect(ran.message).toMatch(r.message);
    expect(ran.after).toEqual(ran.before.root);
    expect(ran.calls).toEqual([]);
  });

  it('is walked for every Windows-only step of the registry that has a preflight', () => {
    const refusing = ALL_PHASES.flatMap((phase) => phase.steps.filter((step) => step.preflight && step.platforms?.includes('windows')).map((step) => `${phase.name}/${step.id}`));
    expect(refusing.length).toBeGreaterThan(0);
    expect(refusing.filter((id) => !refusals.some((r) => r.by === id))).toEqual([]);
  });

  it('is walked for every reset step that has a preflight and runs on Windows', () => {
    const refusing = resetPhase.steps.filter((step) => step.preflight && (!step.platforms || step.platforms.includes('windows'))).map((step) => `reset/${step.id}`);
    expect(refusing).toContain('reset/domain/join');
    expect(refusing.filter((id) => !refusals.some((r) => r.by === id && r.command === 'reset'))).toEqual([]);
  });
});
