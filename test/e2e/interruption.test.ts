// The packaged binary interrupted by a signal in the middle of `kubeadm join`, and what a closed
// stdout, --offline and a late-checked secret do to a run: each must end with the machine and the
// records in a state an operator can trust.
import { spawn, spawnSync } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { dump } from 'js-yaml';
import { describe, expect, it } from 'vitest';
import { binaryAndCollector, processRuns, standinEnv } from '../support/machine-run.ts';
import { scratchDir } from '../support/tmp.ts';
import { REPO } from '../kubeadm/standin.ts';

const TOKEN = 'q1w2e3.r4t5y6u7i8o9p0a1';
const HASH = 'sha256:' + 'ab'.repeat(32);

const machineRun = binaryAndCollector();

interface Machine {
  dir: string;
  root: string;
  config: string;
  pids: string;
}

function machine(spec: Record<string, unknown>): Machine {
  const dir = scratchDir('machineadm-interrupt-');
  const root = join(dir, 'root');
  mkdirSync(root);
  const config = join(dir, 'machine.yaml');
  writeFileSync(config, dump({ apiVersion: 'machineadm.cluster.x-k8s.io/v1alpha1', kind: 'MachineConfig', spec }));
  return { dir, root, config, pids: join(dir, 'pids') };
}

const worker = { controlPlaneEndpoint: '10.0.0.10:6443', token: TOKEN, caCertHashes: [HASH], retries: 0, backoffSeconds: 0 };

function env(m: Machine, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return standinEnv({ KUBEADM_STANDIN_PIDS: m.pids, ...extra });
}

function files(dir: string): string[] {
  return existsSync(dir) ? readdirSync(dir, { recursive: true }).map(String).sort() : [];
}

const json = (path: string) => JSON.parse(readFileSync(path, 'utf8'));

/** Waits until the stand-in and the child that holds its pipes both run: kubeadm is mid-join. */
async function kubeadmHanging(m: Machine): Promise<void> {
  for (let i = 0; i < 300 && (!existsSync(m.pids) || readFileSync(m.pids, 'utf8').trim().split('\n').length < 2); i++) await new Promise((r) => setTimeout(r, 50));
}

describe('an interrupted init', () => {
  it.each([
    ['SIGTERM', 143],
    ['SIGINT', 130],
    ['SIGHUP', 129],
  ] as const)('stops kubeadm join and its children on %s, removes the join config, records the run as interrupted and exits %i', async (signal, code) => {
    const m = machine({ files: [{ path: '/etc/example.conf', content: 'x\n' }], kubernetes: worker, report: { deadlineSeconds: 5, endpoints: [{ url: machineRun.collector.url }] } });
    const child = spawn(machineRun.binary, ['init', '-c', m.config, '--root', m.root], { cwd: REPO, env: env(m, { KUBEADM_STANDIN_HANG_PHASE: 'kubelet-start' }), stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (c: Buffer) => (output += c.toString()));
    child.stderr.on('data', (c: Buffer) => (output += c.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (status) => resolve(status)));
    // Both the stand-in and the child that holds its pipes are up: kubeadm is mid-join.
    await kubeadmHanging(m);
    const pids = readFileSync(m.pids, 'utf8').trim().split('\n').map(Number);
    expect(pids).toHaveLength(2);
    expect(existsSync(join(m.root, 'run/machineadm/kubeadm-join.yaml'))).toBe(true);
    const sent = Date.now();
    child.kill(signal);
    const status = await exited;
    const tookMs = Date.now() - sent;

    expect(status, output).toBe(code);
    // TERM reaches the stand-in at once; nothing needs the 5 s KILL grace.
    expect(tookMs).toBeLessThan(5_000);
    await new Promise((r) => setTimeout(r, 100));
    expect(pids.filter(processRuns)).toEqual([]);
    expect(output).toContain(`${signal} received`);
    expect(output).not.toContain(TOKEN);
    // Nothing that holds the token outlives the run.
    expect(existsSync(join(m.root, 'run/machineadm/kubeadm-join.yaml'))).toBe(false);
    expect(existsSync(join(m.root, 'run/machineadm/kubeadm-patches'))).toBe(false);
    const statusDoc = json(join(m.root, 'run/machineadm/status.json'));
    expect(statusDoc).toMatchObject({ state: 'finished', result: 'failure', exitCode: code, error: { code, stepId: 'provision/kubeadm/join', details: { signal } } });
    expect(statusDoc.error.message).toBe(`interrupted by ${signal} during step provision/kubeadm/join`);
    const state = json(join(m.root, 'var/lib/machineadm/state.json'));
    expect(state.runs.at(-1)).toMatchObject({ result: 'interrupted' });
    expect(state.steps['provision/kubeadm/join']).toBeUndefined();
    expect(existsSync(join(m.root, 'run/cluster-api/bootstrap-success.complete'))).toBe(false);
    // The run's last event reached the collector (or waits in the spool).
    const finished = machineRun.collector.requests.flatMap((r) => r.events).filter((e) => e.type === 'io.machineadm.run.finished' && (e.data as { error?: { stepId?: string } })?.error?.stepId === 'provision/kubeadm/join');
    const spooled = files(join(m.root, 'var/lib/machineadm/spool')).filter((f) => f.endsWith('.json'));
    expect(finished.length + spooled.length).toBeGreaterThan(0);

    // The rerun converges: the join completes and nothing of the interrupted one is in the way.
    const rerun = spawnSync(machineRun.binary, ['init', '-c', m.config, '--root', m.root], { cwd: REPO, env: env(m), encoding: 'utf8', timeout: 60_000 });
    expect(rerun.status, rerun.stdout + rerun.stderr).toBe(0);
    expect(existsSync(join(m.root, 'etc/kubernetes/kubelet.conf'))).toBe(true);
  });
});

describe('Ctrl-C on a terminal', () => {
  it('interrupts the run while the spinner turns (the terminal keeps its Ctrl-C), exits 130 and records the run as interrupted', async () => {
    const m = machine({ kubernetes: worker });
    // script(1) runs machineadm on a pseudo-terminal; the byte 0x03 written to it is the operator's
    // Ctrl-C, which the terminal turns into SIGINT only while it is not in raw mode.
    const command = [machineRun.binary, 'init', '-c', m.config, '--root', m.root].map((a) => `'${a}'`).join(' ');
    // An operator's terminal: ora draws no spinner at all when CI is set in the environment.
    const { CI: _ci, ...operator } = env(m, { KUBEADM_STANDIN_HANG_PHASE: 'kubelet-start', TERM: 'xterm' });
    const child = spawn('script', ['-qfec', `stty cols 120 rows 30; exec ${command}`, '/dev/null'], { cwd: REPO, env: operator, stdio: ['pipe', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (c: Buffer) => (output += c.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (status) => resolve(status)));
    await kubeadmHanging(m);
    // The spinner is up: the step's line is drawn with a spinner frame, not a plain log line.
    expect(output).toMatch(/[\u2800-\u28ff](\x1b\[\d+m)* provision\/kubeadm\/join/);
    child.stdin.write('\x03');
    const status = await Promise.race([exited, new Promise<'hung'>((r) => setTimeout(() => r('hung'), 15_000))]);
    if (status === 'hung') child.kill('SIGKILL');
    expect(status, output.slice(-2000)).toBe(130);
    expect(output).toContain('SIGINT received');
    expect(json(join(m.root, 'var/lib/machineadm/state.json')).runs.at(-1)).toMatchObject({ result: 'interrupted' });
  });
});

describe('a second run while one holds the state directory', () => {
  it('refuses at once with exit 5, naming the run that holds it, and changes nothing; the first run goes on', async () => {
    const m = machine({ kubernetes: worker });
    const first = spawn(machineRun.binary, ['init', '-c', m.config, '--root', m.root], { cwd: REPO, env: env(m, { KUBEADM_STANDIN_HANG_PHASE: 'kubelet-start' }), stdio: ['ignore', 'pipe', 'pipe'] });
    const exited = new Promise<number | null>((resolve) => first.on('exit', (status) => resolve(status)));
    await kubeadmHanging(m);
    const state = readFileSync(join(m.root, 'var/lib/machineadm/state.json'), 'utf8');
    const began = Date.now();
    const second = spawnSync(machineRun.binary, ['init', '-c', m.config, '--root', m.root], { cwd: REPO, env: env(m), encoding: 'utf8', timeout: 60_000 });
    expect(Date.now() - began).toBeLessThan(5_000);
    expect(second.status, second.stderr).toBe(5);
    expect(second.stderr).toContain(`error: another machineadm run (init, pid ${first.pid}`);
    expect(second.stderr).toContain('nothing was changed');
    expect(readFileSync(join(m.root, 'var/lib/machineadm/state.json'), 'utf8')).toBe(state);
    first.kill('SIGTERM');
    expect(await exited).toBe(143);
    // The lock went with the run that held it.
    expect(existsSync(join(m.root, 'var/lib/machineadm/run.lock'))).toBe(false);
  });
});

describe('a signal while a download is in flight', () => {
  it('ends the run at once (exit 143), leaves no partial file at the target or beside it, and records the run as interrupted', async () => {
    // A server that sends the first bytes of a 64 MiB file and then nothing more.
    const server = createServer((_req, res) => {
      res.writeHead(200, { 'content-length': String(64 << 20) });
      res.write(Buffer.alloc(64 * 1024, 0x61));
    });
    await new Promise<void>((listening) => server.listen(0, '127.0.0.1', listening));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/big.bin`;
      const m = machine({ files: [{ path: '/opt/big.bin', source: { url, sha256: 'a'.repeat(64) } }] });
      const child = spawn(machineRun.binary, ['init', '-c', m.config, '--root', m.root], { cwd: REPO, env: env(m), stdio: ['ignore', 'pipe', 'pipe'] });
      let output = '';
      child.stdout.on('data', (c: Buffer) => (output += c.toString()));
      child.stderr.on('data', (c: Buffer) => (output += c.toString()));
      const exited = new Promise<number | null>((resolve) => child.on('exit', (status) => resolve(status)));
      // The download has started: its temporary file is beside the target.
      for (let i = 0; i < 300 && !(existsSync(join(m.root, 'opt')) && readdirSync(join(m.root, 'opt')).length > 0); i++) await new Promise((r) => setTimeout(r, 50));
      expect(readdirSync(join(m.root, 'opt')).length, output).toBeGreaterThan(0);
      const sent = Date.now();
      child.kill('SIGTERM');
      expect(await exited, output).toBe(143);
      expect(Date.now() - sent).toBeLessThan(3_000);
      expect(files(join(m.root, 'opt'))).toEqual([]);
      expect(json(join(m.root, 'var/lib/machineadm/state.json')).runs.at(-1)).toMatchObject({ result: 'interrupted' });
    } finally {
      server.closeAllConnections();
      server.close();
    }
  });
});

describe('a second signal', () => {
  it('ends machineadm at once while the interrupted run still waits for its events to be delivered', async () => {
    const m = machine({ kubernetes: worker, report: { deadlineSeconds: 30, endpoints: [{ url: machineRun.collector.url }] } });
    machineRun.collector.mode = { kind: 'hang' };
    try {
      const child = spawn(machineRun.binary, ['init', '-c', m.config, '--root', m.root], { cwd: REPO, env: env(m, { KUBEADM_STANDIN_HANG_PHASE: 'kubelet-start' }), stdio: ['ignore', 'pipe', 'pipe'] });
      let output = '';
      child.stdout.on('data', (c: Buffer) => (output += c.toString()));
      child.stderr.on('data', (c: Buffer) => (output += c.toString()));
      const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
      await kubeadmHanging(m);
      child.kill('SIGTERM');
      // The first signal is being handled: kubeadm stopped, events waiting for the hung machineRun.collector.
      for (let i = 0; i < 100 && !existsSync(join(m.root, 'var/lib/machineadm/state.json')); i++) await new Promise((r) => setTimeout(r, 20));
      await new Promise((r) => setTimeout(r, 300));
      const second = Date.now();
      child.kill('SIGTERM');
      const end = await exited;
      expect(end, output).toEqual({ code: null, signal: 'SIGTERM' });
      expect(Date.now() - second).toBeLessThan(1_000);
      expect(output).toContain('SIGTERM again: exiting at once');
    } finally {
      machineRun.collector.mode = { kind: 'ok' };
    }
  });
});

describe('a signal while a finished run waits for its endpoints', () => {
  it('cuts the wait to at most 2 s, keeps what was not delivered spooled and the run finished, and exits 143', async () => {
    const m = machine({ kubernetes: worker, report: { deadlineSeconds: 60, endpoints: [{ url: machineRun.collector.url }] } });
    machineRun.collector.mode = { kind: 'hang' };
    try {
      const child = spawn(machineRun.binary, ['init', '-c', m.config, '--root', m.root], { cwd: REPO, env: env(m), stdio: ['ignore', 'pipe', 'pipe'] });
      let output = '';
      child.stdout.on('data', (c: Buffer) => (output += c.toString()));
      child.stderr.on('data', (c: Buffer) => (output += c.toString()));
      const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
      // Every step is done; the run says it waits for the hung collector.
      for (let i = 0; i < 600 && !output.includes('waiting up to 60s for'); i++) await new Promise((r) => setTimeout(r, 50));
      expect(output).toContain('waiting up to 60s for');
      const signalled = Date.now();
      child.kill('SIGTERM');
      const end = await exited;
      expect(end, output).toEqual({ code: 143, signal: null });
      expect(Date.now() - signalled).toBeLessThan(4_000);
      expect(output).toContain('error: interrupted by SIGTERM while the finished run waited for its endpoints');
      expect(json(join(m.root, 'run/machineadm/result.json'))).toMatchObject({ state: 'finished', result: 'success' });
      expect(existsSync(join(m.root, 'run/cluster-api/bootstrap-success.complete'))).toBe(true);
      expect(files(join(m.root, 'var/lib/machineadm/spool')).filter((f) => f.endsWith('.json')).length).toBeGreaterThan(0);
    } finally {
      machineRun.collector.mode = { kind: 'ok' };
    }
  });
});

describe('a kubeadm that never finishes', () => {
  it('is stopped with its children at timeoutSeconds, and the run ends then, not when the pipes close', async () => {
    const m = machine({ kubernetes: { ...worker, timeoutSeconds: 30 } });
    const started = Date.now();
    const run = spawnSync(machineRun.binary, ['init', '-c', m.config, '--root', m.root], { cwd: REPO, env: env(m, { KUBEADM_STANDIN_HANG_PHASE: 'kubelet-start' }), encoding: 'utf8', timeout: 90_000 });
    const tookS = (Date.now() - started) / 1000;
    expect(run.status, run.stdout + run.stderr).toBe(1);
    expect(run.stdout).toContain('kubeadm join failed in phase kubelet-start (timed out after 30s)');
    // 30 s, TERM ends both at once; at most the 5 s KILL grace and the 1 s pipe grace on top.
    expect(tookS).toBeGreaterThanOrEqual(30);
    expect(tookS).toBeLessThan(38);
    const pids = readFileSync(m.pids, 'utf8').trim().split('\n').map(Number);
    expect(pids.filter(processRuns)).toEqual([]);
    expect(existsSync(join(m.root, 'run/machineadm/kubeadm-join.yaml'))).toBe(false);
  }, 90_000);
});

describe('a rerun after an interrupted join', () => {
  it.each([
    // kubeadm got as far as the kubelet's credentials before the signal.
    ['the kubelet\'s credentials', { ...worker, role: 'control-plane', certificateKey: 'cd'.repeat(32) }, 'control-plane-join/mark-control-plane', ['etc/kubernetes/kubelet.conf'], [], 'resetting the node first'],
    // Only kubeadm's first files: the bootstrap kubeconfig and the CA, no kubelet.conf yet.
    ['its first files', worker, 'kubelet-start/tls-bootstrap', ['etc/kubernetes/bootstrap-kubelet.conf', 'etc/kubernetes/pki/ca.crt'], ['etc/kubernetes/kubelet.conf'], 'resetting the node first (/etc/kubernetes/bootstrap-kubelet.conf exists)'],
  ] as const)('after kubeadm wrote %s resets the node the interrupted join left half-done and joins, without --force', async (_what, kubernetes, phase, present, absent, said) => {
    const m = machine({ kubernetes });
    const child = spawn(machineRun.binary, ['init', '-c', m.config, '--root', m.root], { cwd: REPO, env: env(m, { KUBEADM_STANDIN_HANG_PHASE: phase }), stdio: 'ignore' });
    const exited = new Promise<number | null>((resolve) => child.on('exit', (status) => resolve(status)));
    await kubeadmHanging(m);
    for (const file of present) expect(existsSync(join(m.root, file)), file).toBe(true);
    for (const file of absent) expect(existsSync(join(m.root, file)), file).toBe(false);
    child.kill('SIGTERM');
    expect(await exited).toBe(143);
    const rerun = spawnSync(machineRun.binary, ['init', '-c', m.config, '--root', m.root], { cwd: REPO, env: env(m), encoding: 'utf8', timeout: 60_000 });
    expect(rerun.status, rerun.stdout + rerun.stderr).toBe(0);
    expect(rerun.stdout).toContain(`an earlier run stopped during this step: ${said}`);
    expect(existsSync(join(m.root, 'etc/kubernetes/kubelet.conf'))).toBe(true);
    expect(json(join(m.root, 'var/lib/machineadm/state.json')).started).toBeUndefined();
  });
});

describe('a run whose stdout is closed', () => {
  it('goes on, finishes and records its true result when the reader goes away (| head -1)', () => {
    const root = scratchDir();
    const run = spawnSync('bash', ['-c', `"$1" init -c examples/quickstart.yaml --root "$2" | head -1; exit \${PIPESTATUS[0]}`, 'bash', machineRun.binary, root], { cwd: REPO, env: { ...process.env, NODE_OPTIONS: '' }, encoding: 'utf8', timeout: 60_000 });
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout.trim().split('\n')).toHaveLength(1);
    expect(run.stderr).not.toMatch(/EPIPE|\n\s+at /);
    expect(json(join(root, 'run/machineadm/status.json'))).toMatchObject({ state: 'finished', result: 'success', exitCode: 0 });
    expect(json(join(root, 'var/lib/machineadm/state.json')).runs.at(-1)).toMatchObject({ result: 'success' });
  });
});

describe('--offline', () => {
  it('refuses a run that would download, before anything is changed, naming each download', () => {
    const m = machine({
      kernelModules: ['overlay'],
      sysctls: { 'net.ipv4.ip_forward': '1' },
      files: [
        { path: '/etc/inline.conf', content: 'x\n' },
        { path: '/opt/tool', source: { url: 'https://downloads.example/tool?X-Amz-Signature=abc123secret', sha256: 'ab'.repeat(32) } },
      ],
    });
    const run = spawnSync(machineRun.binary, ['init', '--offline', '-c', m.config, '--root', m.root], { cwd: REPO, env: env(m), encoding: 'utf8', timeout: 60_000 });
    expect(run.status).toBe(2);
    expect(run.stderr).toContain('--offline: this run would use the network, so nothing was changed');
    expect(run.stderr).toContain('prepare/files: download https://downloads.example/tool');
    expect(run.stderr).not.toContain('abc123secret');
    expect(files(m.root)).toEqual([]);
  });

  it('runs kubeadm join, which reaches only the cluster\'s own control plane, as the contract says', () => {
    const m = machine({ kubernetes: worker, report: { clusterAPISentinel: true } });
    const run = spawnSync(machineRun.binary, ['init', '--offline', '-c', m.config, '--root', m.root], { cwd: REPO, env: env(m), encoding: 'utf8', timeout: 60_000 });
    expect(run.status, run.stdout + run.stderr).toBe(0);
    expect(existsSync(join(m.root, 'etc/kubernetes/kubelet.conf'))).toBe(true);
    expect(existsSync(join(m.root, 'run/cluster-api/bootstrap-success.complete'))).toBe(true);
  });
});

describe('secrets read through valueFrom', () => {
  it('are checked before the first change: a token file holding something else changes nothing', () => {
    const m = machine({ kubernetes: { ...worker, token: { valueFrom: { file: '/etc/machineadm/token' } } }, files: [{ path: '/etc/example.conf', content: 'x\n' }] });
    mkdirSync(join(m.root, 'etc/machineadm'), { recursive: true });
    writeFileSync(join(m.root, 'etc/machineadm/token'), 'NOT-A-TOKEN\n');
    const before = files(m.root);
    const run = spawnSync(machineRun.binary, ['init', '-c', m.config, '--root', m.root], { cwd: REPO, env: env(m), encoding: 'utf8', timeout: 60_000 });
    expect(run.status).toBe(2);
    expect(run.stderr).toContain('spec.kubernetes.token: the value read is not a bootstrap token');
    expect(run.stderr).not.toContain('NOT-A-TOKEN');
    expect(files(m.root)).toEqual(before);
  });
});

describe('a kubeadm that exits 0 without writing kubelet.conf', () => {
  it('fails the join (exit 1) and the Cluster API sentinel is not written', () => {
    const m = machine({ kubernetes: worker, report: { clusterAPISentinel: true } });
    const run = spawnSync(machineRun.binary, ['init', '-c', m.config, '--root', m.root], { cwd: REPO, env: env(m, { KUBEADM_STANDIN_NO_KUBELET_CONF: '1' }), encoding: 'utf8', timeout: 60_000 });
    expect(run.status, run.stdout + run.stderr).toBe(1);
    expect(run.stdout).toContain('kubeadm join exited 0 but did not write /etc/kubernetes/kubelet.conf: the node did not join');
    expect(existsSync(join(m.root, 'run/cluster-api/bootstrap-success.complete'))).toBe(false);
  });
});

describe('leftovers of a killed run', () => {
  it('removes a join configuration that a killed run left behind before its first step', () => {
    const m = machine({ files: [{ path: '/etc/example.conf', content: 'x\n' }] });
    mkdirSync(join(m.root, 'run/machineadm/kubeadm-patches'), { recursive: true });
    writeFileSync(join(m.root, 'run/machineadm/kubeadm-join.yaml'), `token: ${TOKEN}\n`, { mode: 0o600 });
    writeFileSync(join(m.root, 'run/machineadm/kubeadm-patches/kubeletconfiguration+strategic.yaml'), 'x: 1\n');
    const run = spawnSync(machineRun.binary, ['prepare', '-c', m.config, '--root', m.root], { cwd: REPO, env: env(m), encoding: 'utf8', timeout: 60_000 });
    expect(run.status, run.stderr).toBe(0);
    expect(existsSync(join(m.root, 'run/machineadm/kubeadm-join.yaml'))).toBe(false);
    expect(existsSync(join(m.root, 'run/machineadm/kubeadm-patches'))).toBe(false);
  });
});
