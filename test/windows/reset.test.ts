// `machineadm init` then `machineadm reset` for every Windows example, on the simulated Windows
// machine (test/windows/simulated-windows.ts) through the run module, as the CLI runs them: the
// real steps and runner, real files under a scratch root with the records of what machineadm
// wrote, a real HTTP server for the host agent, and a kubeadm stand-in that does to the machine
// what kubeadm join and reset do on Windows. After reset and the restart it asks for, the machine
// is as before init (services, firewall rules, scheduled tasks, domain membership, files), except
// what the contract says stays: the Containers feature and the ACLs on folders that were there.
import { createHash } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { load } from 'js-yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHost, RootedFileSystem, type Facts, type Host, type ProcessRunner } from '../../src/host/index.ts';
import { executeRun } from '../../src/phases/run.ts';
import { computePlan } from '../../src/engine/runner.ts';
import { StateStore } from '../../src/engine/state.ts';
import { resetPhase } from '../../src/phases/reset.ts';
import { EventBus } from '../../src/engine/events.ts';
import { SecretScrubber } from '../../src/config/secrets.ts';
import { windowsRestart, windowsResume, type AclState } from '../../src/host/windows/index.ts';
import type { MachineConfig } from '../../src/config/schema/index.ts';
import { configFrom } from '../report/harness.ts';
import { exitCodeOf } from '../../src/errors.ts';
import { scratchDir } from '../support/tmp.ts';
import { snapshot } from '../reset/machine.ts';
import { realPath, SimulatedWindows, windowsFiles } from './simulated-windows.ts';

const EXAMPLES_DIR = resolve(import.meta.dirname, '..', '..', 'examples');
const EXAMPLES = readdirSync(EXAMPLES_DIR).filter((n) => n.startsWith('windows-') && n.endsWith('.yaml')).sort();
const AGENT = Buffer.from('MZ csi-proxy stand-in\n');
const AGENT_SHA = createHash('sha256').update(AGENT).digest('hex');
const TOKEN = 'abcdef.0123456789abcdef';
const PASSWORD = 'S3cret pass’word';
const STATE = 'C:\\ProgramData\\machineadm';
const SELF = ['C:\\Program Files\\machineadm\\machineadm.exe'];
/** A folder's ACL as Windows gives one made under C:\\ (inherited; Authenticated Users may add files). */
const IMAGE_ACL: AclState = {
  protected: false,
  entries: [
    { sid: 'S-1-5-18', rights: 'FullControl', type: 'Allow', inherited: true },
    { sid: 'S-1-5-32-544', rights: 'FullControl', type: 'Allow', inherited: true },
    { sid: 'S-1-5-11', rights: 'Modify, Synchronize', type: 'Allow', inherited: true },
  ],
  sddl: 'O:BAG:SYD:AI(A;OICIID;FA;;;SY)(A;OICIID;FA;;;BA)(A;OICIIOID;SDGXGWGR;;;AU)(A;ID;0x1301bf;;;AU)',
};

let server: http.Server;
let base = '';
beforeAll(async () => {
  server = http.createServer((req, res) => (req.url === '/csi-proxy.exe' ? res.end(AGENT) : res.writeHead(404).end()));
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((done) => server.close(() => done())));

/** The example as written, but its host agents downloaded from the local server (the example's URL is a placeholder). */
function exampleConfig(name: string, change: (spec: Record<string, any>) => void = () => undefined): MachineConfig {
  const doc = load(readFileSync(join(EXAMPLES_DIR, name), 'utf8')) as { spec: Record<string, any> };
  for (const agent of doc.spec.windows?.hostAgents ?? []) agent.source = { url: `${base}/csi-proxy.exe`, sha256: AGENT_SHA };
  change(doc.spec);
  return configFrom(doc.spec);
}

/** A Windows Server 2022 machine as the image left it: the binaries in place, the join blob copied in. */
function machine() {
  const root = scratchDir('machineadm-windows-reset-');
  const sim = new SimulatedWindows('20348');
  const stateReal = realPath(root, STATE);
  // machineadm's own file system keeps its records in the state directory, as on the machine.
  const fs = windowsFiles(root, undefined, { backupDir: join(stateReal, 'backup'), writtenDir: join(stateReal, 'written') });
  // kubeadm writes its files itself: nothing of machineadm records them.
  const kubeadmFs = windowsFiles(root);
  const put = (path: string, content: string | Buffer) => {
    mkdirSync(dirname(realPath(root, path)), { recursive: true });
    writeFileSync(realPath(root, path), content);
  };
  put('C:\\Program Files\\containerd\\containerd.exe', 'MZ');
  put('C:\\k\\kubelet.exe', 'MZ');
  put('C:\\k\\kubeadm.exe', 'MZ');
  put(`${STATE}\\node.odj`, JSON.stringify({ domain: 'corp.example', machine: 'NODE-07' }));
  sim.readFile = (path) => (existsSync(realPath(root, path)) ? readFileSync(realPath(root, path), 'utf8') : undefined);
  sim.makeDirectory = (path) => mkdirSync(realPath(root, path), { recursive: true });
  const kubeadm: string[] = [];
  const proc = {
    which: async (name: string) => (name === 'kubeadm' ? 'C:\\k\\kubeadm.exe' : undefined),
    run: async (argv: string[]) => {
      const ok = (stdout = '') => ({ argv, exitCode: 0, stdout, stderr: '', durationMs: 1 });
      kubeadm.push(argv.slice(0, 3).join(' '));
      if (argv[1] === 'version') return ok('v1.31.2\n');
      if (argv[1] === 'join') {
        await kubeadmFs.writeFile('C:\\var\\lib\\kubelet\\kubeadm-flags.env', 'KUBELET_KUBEADM_ARGS="--container-runtime-endpoint=npipe:////./pipe/containerd-containerd --register-with-taints=os=windows:NoSchedule"\n');
        await kubeadmFs.writeFile('C:\\var\\lib\\kubelet\\config.yaml', 'kind: KubeletConfiguration\n');
        await kubeadmFs.writeFile('C:\\etc\\kubernetes\\kubelet.conf', 'kubeconfig\n');
        await kubeadmFs.writeFile('C:\\etc\\kubernetes\\pki\\ca.crt', 'ca\n');
        await sim.startService('kubelet');
        return ok('This node has joined the cluster\n');
      }
      if (argv[1] === 'reset') {
        // kubeadm reset: stops the kubelet, removes its kubeconfig files and empties its folders.
        expect(argv).toEqual(['kubeadm', 'reset', '-f', '--cri-socket', 'npipe:////./pipe/containerd-containerd', '--cleanup-tmp-dir']);
        await sim.stopService('kubelet');
        for (const file of ['C:\\var\\lib\\kubelet\\kubeadm-flags.env', 'C:\\var\\lib\\kubelet\\config.yaml', 'C:\\etc\\kubernetes\\kubelet.conf', 'C:\\etc\\kubernetes\\pki\\ca.crt']) await kubeadmFs.remove(file);
        await kubeadmFs.removeFolderIfEmpty('C:\\etc\\kubernetes\\pki');
        await kubeadmFs.removeFolderIfEmpty('C:\\var\\lib\\kubelet\\pki');
        return ok('[reset] Deleted contents of the kubelet\'s directories\n');
      }
      throw new Error(`unexpected command ${argv.join(' ')}`);
    },
  } as unknown as ProcessRunner;
  return { root, sim, fs, proc, kubeadm, stateFs: new RootedFileSystem(stateReal) };
}

type Machine = ReturnType<typeof machine>;

/** One machineadm process (init with its resume, or reset), as the CLI starts it on the live machine. */
async function execute(m: Machine, command: 'init' | 'reset', config: MachineConfig, options: { keepDomain?: boolean } = {}) {
  const facts: Facts = { os: 'windows', arch: 'x64', hostname: m.sim.computer.name, privileged: true, liveRoot: true, windowsBuild: '20348', bootId: await m.sim.bootId() };
  const fs = new Proxy(m.fs, { get: (target, prop, receiver) => (prop === 'isLiveRoot' ? true : Reflect.get(target, prop, receiver)) });
  const host: Host = { ...createHost({ root: m.root, facts, env: { MACHINEADM_JOIN_TOKEN: TOKEN }, windows: m.sim, stateDir: STATE }), fs, proc: m.proc, resume: windowsResume(m.sim), restart: windowsRestart(m.sim) };
  let console = '';
  const before = m.sim.calls.length;
  const report = await executeRun({
    command, config, host, stateFs: m.stateFs, selection: {}, force: false,
    ...(options.keepDomain ? { keepDomain: true } : {}),
    console: { mode: 'json', write: (t) => (console += t) },
    ...(command === 'init' ? { resume: { argv: [...SELF, 'init', '-c', 'C:\\ProgramData\\machineadm\\config.yaml'], maxReboots: 3, reboot: true } } : {}),
  });
  return { ...report, console, calls: m.sim.calls.slice(before) };
}

/** reset --dry-run on the machine: each step that would change something, with its changes. */
async function planReset(m: Machine, config: MachineConfig, skipped?: Record<string, string>, elsewhere = false): Promise<string[]> {
  const facts: Facts = { os: 'windows', arch: 'x64', hostname: m.sim.computer.name, privileged: true, liveRoot: true, windowsBuild: '20348', bootId: await m.sim.bootId() };
  // Elsewhere: planned from another machine (plan reset --os windows), with the state directory's records only.
  const host: Host = elsewhere ? createHost({ root: m.root, facts, env: {} }) : { ...createHost({ root: m.root, facts, env: { MACHINEADM_JOIN_TOKEN: TOKEN }, windows: m.sim, stateDir: STATE }), fs: m.fs, proc: m.proc };
  const plan = await computePlan({ command: 'reset', phases: [resetPhase], selection: {}, config, facts, host, events: new EventBus(), state: new StateStore(m.stateFs), force: false, secrets: new SecretScrubber() });
  for (const step of plan.phases.flatMap((p) => p.steps)) if (skipped && step.status === 'skipped') skipped[step.id] = step.reason ?? '';
  return plan.phases.flatMap((p) => p.steps.filter((s) => s.status === 'change').map((s) => `${s.id}: ${s.changes.map((c) => `${c.action} ${c.target}`).join('; ')}`));
}

/** init to the end: the restarts it asks for, the resume task running it on after each. */
async function initToTheEnd(m: Machine, config: MachineConfig) {
  for (let boot = 0; boot < 4; boot++) {
    const run = await execute(m, 'init', config);
    if (run.exitCode !== 4) return run;
    m.sim.reboot();
  }
  throw new Error('init asked for more restarts than expected');
}

/** What reset must give back: the machine's state as the seam and the disk show it. */
function machineState(m: Machine) {
  const files = snapshot(m.root, (rel) => rel === 'C/ProgramData/machineadm' || rel.startsWith('C/ProgramData/machineadm/') || rel.startsWith('C/ProgramData/machineadm.reset-'));
  return {
    services: [...m.sim.services.keys()].sort(),
    firewall: [...m.sim.firewall.keys()].sort(),
    tasks: [...m.sim.tasks.keys()].sort(),
    membership: { partOfDomain: m.sim.computer.partOfDomain, domain: m.sim.computer.domain },
    files,
  };
}

describe.each(EXAMPLES)('%s on the simulated Windows machine: init, then reset', (example) => {
  it('gives back services, firewall rules, the resume task, the domain membership and the files as before init; after the restart, a second reset does nothing', async () => {
    const m = machine();
    // C:\k, where the image put kubelet.exe, has the ACL a folder under C:\ gets (users may add files).
    m.sim.acls.set('c:\\k', IMAGE_ACL);
    m.sim.sddls.set(IMAGE_ACL.sddl!, IMAGE_ACL);
    const config = exampleConfig(example);
    const before = machineState(m);
    const init = await initToTheEnd(m, config);
    expect(init.exitCode, init.console).toBe(0);
    expect(m.sim.computer).toMatchObject({ partOfDomain: true, domain: 'corp.example', name: 'NODE-07' });
    expect([...m.sim.services.keys()].sort()).toEqual(['containerd', 'csiproxy', 'kubelet']);

    // The plan first (reset --dry-run): every undo, the leave and the restart, nothing changed.
    const calls = m.sim.calls.length;
    const skipped: Record<string, string> = {};
    const planned = await planReset(m, config, skipped);
    expect(m.sim.calls.length).toBe(calls);
    expect(skipped['reset/windows/containers-feature']).toBe('the Containers feature stays installed (other software may use it; Uninstall-WindowsFeature Containers removes it, with a restart)');
    expect(planned).toEqual([
      'reset/kubeadm/join: run kubeadm reset -f --cri-socket npipe:////./pipe/containerd-containerd --cleanup-tmp-dir',
      'reset/domain/join: leave corp.example; restart the machine',
      'reset/windows/firewall: remove firewall rule machineadm-kubelet',
      'reset/windows/kubelet-service: delete service kubelet',
      'reset/windows/host-agents: delete service csiproxy',
      'reset/windows/containerd-service: delete service containerd',
      expect.stringMatching(/^reset\/files: (delete [^;]+; )*delete [^;]+$/),
      // (A plan cannot count what kubeadm reset will empty: the kubelet's folders show in the run only.)
      'reset/windows/private-paths: delete C:\\ProgramData\\containerd\\; delete C:\\var\\log\\csiproxy\\; delete C:\\var\\log\\kubelet\\; delete C:\\etc\\cni\\net.d\\; delete C:\\opt\\cni\\bin\\; delete C:\\var\\log\\; delete C:\\opt\\cni\\; delete C:\\etc\\cni\\; delete C:\\opt\\; restore ACL of C:\\k',
      'reset/restart: restart the machine',
    ]);

    const reset = await execute(m, 'reset', config);
    // Windows finishes leaving the domain at the next boot: reset says so with exit 4.
    expect(reset.exitCode, reset.console).toBe(4);
    expect(reset.error?.message).toMatch(/left corp\.example: Windows finishes leaving the domain at the next boot; restart the machine, then run machineadm reset again/);
    expect(reset.calls).toEqual([
      'stopService kubelet',
      'leaveDomainLocally WORKGROUP',
      'removeFirewallRule machineadm-kubelet',
      'removeService kubelet',
      'removeService csiproxy',
      'removeService containerd',
      'restoreAcl C:\\k',
    ]);
    // An offline join: no credential reached the machine, so the account stays in the directory and reset names it.
    const events = reset.console.split('\n').filter(Boolean).map((l) => JSON.parse(l) as { type: string; level?: string; message?: string });
    expect(events.filter((e) => e.level === 'warning').map((e) => e.message)).toContainEqual(expect.stringMatching(/^left corp\.example on this machine only \(an offline join: no credential is on the machine\): the computer account NODE-07 stays in corp\.example; remove it in the directory/));
    expect(m.sim.directory.accounts.has('NODE-07')).toBe(true);
    expect(m.sim.directory.disabled.has('NODE-07')).toBe(false);

    // Run again before the restart: nothing changes, the restart is still asked for.
    const again = await execute(m, 'reset', config);
    expect(again.exitCode).toBe(4);
    expect(again.calls).toEqual([]);

    m.sim.reboot();
    const after = await execute(m, 'reset', config);
    expect(after.exitCode, after.console).toBe(0);
    expect(after.calls).toEqual([]);
    expect(after.archivedTo).toMatch(/machineadm\.reset-\d{8}T\d{6}Z$/);
    // What stays (documented): the Containers feature, the computer name the join gave, and the
    // lock on the folder that was there before (C:\k, kubelet.exe's); everything else is as before.
    expect(m.sim.features.get('Containers')).toBe('installed');
    expect(m.sim.computer.name).toBe('NODE-07');
    expect([...m.sim.acls.keys()].filter((dir) => existsSync(realPath(m.root, dir)))).toEqual(['c:\\k']);
    expect(machineState(m)).toEqual(before);
  }, 60_000);
});

describe('reset on Windows leaves a domain joined online with the join\'s credentials', () => {
  /** The example joined online (Add-Computer) instead of from a blob. */
  const online = (change: (dj: Record<string, unknown>) => void = () => undefined) => exampleConfig('windows-worker.yaml', (spec) => {
    spec.domainJoin = { domain: 'corp.example', computerName: 'NODE-07', credentials: { username: 'k8s-joiner', password: PASSWORD } };
    change(spec.domainJoin);
  });

  async function joined(config = online()) {
    const m = machine();
    const init = await initToTheEnd(m, config);
    expect(init.exitCode, init.console).toBe(0);
    expect(m.sim.computer).toMatchObject({ partOfDomain: true, domain: 'corp.example', name: 'NODE-07' });
    m.sim.passwords.length = 0;
    return m;
  }

  const warnings = (console: string) => console.split('\n').filter(Boolean).map((l) => JSON.parse(l) as { level?: string; message?: string }).filter((e) => e.level === 'warning').map((e) => e.message);

  it('disables the computer account with Remove-Computer, the password on standard input only, and the machine is in the workgroup after the restart', async () => {
    const m = await joined();
    const reset = await execute(m, 'reset', online());
    expect(reset.exitCode, reset.console).toBe(4);
    expect(reset.calls).toContain('leaveDomain WORKGROUP');
    expect(m.sim.passwords).toEqual([PASSWORD]);
    expect(reset.console).not.toContain(PASSWORD);
    expect(readFileSync(join(realPath(m.root, STATE), 'state.json'), 'utf8')).not.toContain(PASSWORD);
    expect(m.sim.directory.disabled.has('NODE-07')).toBe(true);
    m.sim.reboot();
    const after = await execute(m, 'reset', online());
    expect(after.exitCode, after.console).toBe(0);
    expect(m.sim.computer).toMatchObject({ partOfDomain: false, domain: 'WORKGROUP' });
    expect(after.calls).toEqual([]);
    // Nothing machineadm wrote (reports, state, the archived state directory, events) holds the password.
    const written = readdirSync(m.root, { recursive: true, withFileTypes: true }).filter((e) => e.isFile()).map((e) => readFileSync(join(e.parentPath, e.name), 'utf8'));
    expect(written.length).toBeGreaterThan(10);
    expect(written.filter((text) => text.includes(PASSWORD))).toEqual([]);
  }, 60_000);

  it('refuses (exit 2, nothing changed) a reset while the join waits for the restart that would make the machine a member', async () => {
    const m = machine();
    // init up to the join, which Windows finishes only at the next boot.
    for (let boot = 0; m.sim.pendingJoin === undefined; boot++) {
      expect(boot).toBeLessThan(4);
      expect((await execute(m, 'init', online())).exitCode).toBe(4);
      if (m.sim.pendingJoin === undefined) m.sim.reboot();
    }
    const before = machineState(m);
    const calls = m.sim.calls.length;
    const refused = await execute(m, 'reset', online()).catch((e: unknown) => e);
    const code = refused instanceof Error ? exitCodeOf(refused) : (refused as { exitCode: number }).exitCode;
    expect(code).toBe(2);
    expect(String((refused as Error).message ?? (refused as { error?: { message: string } }).error?.message)).toMatch(/the join of corp\.example waits for the restart/);
    expect(m.sim.calls.slice(calls)).toEqual([]);
    expect(machineState(m)).toEqual(before);
    // After the restart init goes on to its end; reset then leaves the domain it joined.
    m.sim.reboot();
    expect((await initToTheEnd(m, online())).exitCode).toBe(0);
    expect((await execute(m, 'reset', online())).exitCode).toBe(4);
    m.sim.reboot();
    expect(m.sim.computer).toMatchObject({ partOfDomain: false, domain: 'WORKGROUP' });
  }, 60_000);

  it('goes on after a reset stopped between Remove-Computer and its record: the leave is not tried twice into a failure', async () => {
    const m = await joined();
    expect((await execute(m, 'reset', online())).exitCode).toBe(4);
    // As if killed after Remove-Computer and before the state recorded it.
    const file = join(realPath(m.root, STATE), 'state.json');
    const state = JSON.parse(readFileSync(file, 'utf8'));
    delete state.steps['reset/domain/join'];
    writeFileSync(file, JSON.stringify(state));
    const again = await execute(m, 'reset', online());
    expect(again.exitCode, again.console).toBe(4);
    expect(again.calls).toEqual(['leaveDomain WORKGROUP']);
    m.sim.reboot();
    expect((await execute(m, 'reset', online())).exitCode).toBe(0);
    expect(m.sim.computer).toMatchObject({ partOfDomain: false, domain: 'WORKGROUP' });
  }, 60_000);

  it('leaves on this machine only when no domain controller answers, and names the computer account that stays', async () => {
    const m = await joined();
    m.sim.directory.reachable = false;
    const reset = await execute(m, 'reset', online());
    expect(reset.exitCode, reset.console).toBe(4);
    expect(reset.calls.filter((c) => c.startsWith('leave'))).toEqual(['leaveDomain WORKGROUP', 'leaveDomainLocally WORKGROUP']);
    expect(warnings(reset.console)).toContainEqual('left corp.example on this machine only (no domain controller of corp.example answered): the computer account NODE-07 stays in corp.example; remove it in the directory. Windows finishes leaving at the next boot');
    expect(m.sim.directory.disabled.has('NODE-07')).toBe(false);
  }, 60_000);

  it('says a refused leave is insufficient permissions of the user (exit 1), and leaves the machine in the domain', async () => {
    const m = await joined();
    m.sim.directory.mayNotDisable.add('k8s-joiner');
    const reset = await execute(m, 'reset', online());
    expect(reset.exitCode).toBe(1);
    expect(reset.error?.message).toMatch(/k8s-joiner has insufficient permissions to disable the computer account NODE-07 in corp\.example \(the directory denied the write\) \(Remove-Computer, code 5\)/);
    expect(m.sim.pendingLeave).toBeUndefined();
    expect(m.sim.directory.disabled.has('NODE-07')).toBe(false);
  }, 60_000);

  it('says when the computer account is gone from the directory, and leaves on this machine', async () => {
    const m = await joined();
    m.sim.directory.accounts.delete('NODE-07');
    const reset = await execute(m, 'reset', online());
    expect(reset.exitCode, reset.console).toBe(4);
    expect(warnings(reset.console)).toContainEqual(expect.stringMatching(/^left corp\.example on this machine only \(the computer account NODE-07 does not exist in corp\.example \(someone deleted it in the directory\)\): nothing of it is left in the directory/));
  }, 60_000);

  it('refuses, before any change (exit 2), a reset whose configuration has no credentials to leave with', async () => {
    const m = await joined();
    const before = machineState(m);
    const calls = m.sim.calls.length;
    const refused = await execute(m, 'reset', configFrom({})).catch((e: unknown) => e);
    const code = refused instanceof Error ? exitCodeOf(refused) : (refused as { exitCode: number }).exitCode;
    expect(code).toBe(2);
    expect(String((refused as Error).message ?? (refused as { error?: { message: string } }).error?.message)).toMatch(/spec\.domainJoin\.credentials/);
    expect(m.sim.calls.slice(calls)).toEqual([]);
    expect(machineState(m)).toEqual(before);
  }, 60_000);

  it('keeps the membership with --keep-domain: no leave, no restart, everything else undone', async () => {
    const m = await joined();
    const reset = await execute(m, 'reset', configFrom({}), { keepDomain: true });
    expect(reset.exitCode, reset.console).toBe(0);
    expect(reset.calls.filter((c) => c.startsWith('leave'))).toEqual([]);
    expect(m.sim.computer).toMatchObject({ partOfDomain: true, domain: 'corp.example' });
    expect([...m.sim.services.keys()]).toEqual([]);
    // C:\\k had no ACL this machine could read before the lock: it stays locked, and reset says so.
    expect(reset.console).toContain('C:\\\\k keep their ACL for SYSTEM and Administrators only (no record of the one before)');
  }, 60_000);
});

describe('reset on Windows planned from another machine', () => {
  it('shows every undo the records name, the leave and the restart, from the state directory alone', async () => {
    const m = machine();
    const config = exampleConfig('windows-worker.yaml');
    expect((await initToTheEnd(m, config)).exitCode).toBe(0);
    const planned = await planReset(m, configFrom({}), undefined, true);
    expect(planned).toEqual(expect.arrayContaining([
      'reset/kubeadm/join: run kubeadm reset -f',
      'reset/domain/join: leave corp.example; restart the machine',
      'reset/windows/firewall: remove firewall rule machineadm-kubelet',
      'reset/windows/kubelet-service: delete service kubelet',
      'reset/windows/host-agents: delete service csiproxy',
      'reset/windows/containerd-service: delete service containerd',
      'reset/restart: restart the machine',
    ]));
  }, 60_000);
});

describe('reset on Windows of a run waiting for its restart', () => {
  it('removes the resume task through the seam, and what the first part of init did', async () => {
    const m = machine();
    const config = exampleConfig('windows-worker.yaml');
    const before = machineState(m);
    const init = await execute(m, 'init', config);
    expect(init.exitCode).toBe(4);
    expect(m.sim.tasks.has('\\machineadm\\resume')).toBe(true);
    const reset = await execute(m, 'reset', config);
    expect(reset.exitCode, reset.console).toBe(0);
    expect(reset.calls).toEqual(['removeResume']);
    expect(m.sim.tasks.size).toBe(0);
    expect(machineState(m)).toEqual(before);
  }, 60_000);
});

describe('reset on Windows and what was there before machineadm', () => {
  it('leaves a containerd service the image registered, and says so', async () => {
    const m = machine();
    await m.sim.registerContainerdService({ executable: 'C:\\Program Files\\containerd\\containerd.exe', config: 'C:\\Program Files\\containerd\\config.toml', logFile: 'C:\\ProgramData\\containerd\\containerd.log' });
    await m.sim.startService('containerd');
    const config = exampleConfig('windows-worker.yaml');
    expect((await initToTheEnd(m, config)).exitCode).toBe(0);
    const reset = await execute(m, 'reset', config);
    expect(reset.calls).not.toContain('removeService containerd');
    expect([...m.sim.services.keys()]).toEqual(['containerd']);
    const steps = reset.console.split('\n').filter(Boolean).map((l) => JSON.parse(l) as { type: string; step?: string; message?: string; result?: string });
    expect(steps.find((e) => e.type === 'step.finished' && e.step === 'reset/windows/containerd-service')).toMatchObject({ result: 'skipped', message: "service containerd was there before machineadm's first run: left as it is" });
  }, 60_000);
});
