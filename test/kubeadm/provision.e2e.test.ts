// machineadm init end to end against the strict kubeadm stand-in: join, a rerun that skips the
// join, --force, retries after a transient failure, and the diagnosis of a failing kubelet-start.
// kubeadm runs with --rootfs <scratch root> (MACHINEADM_KUBEADM_ROOTFS=1), so nothing live changes.
import { describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { dump } from 'js-yaml';
import { NODE_BIN, REPO, TEST_PATH } from './standin.ts';
import { scratchDir } from '../support/tmp.ts';

const TOKEN = 'q1w2e3.r4t5y6u7i8o9p0a1';
const HASH = 'sha256:' + 'ab'.repeat(32);
const KEY = 'cd'.repeat(32);

interface Machine {
  root: string;
  config: string;
  log: string;
}

function machine(kubernetes: Record<string, unknown>, extraSpec: Record<string, unknown> = {}): Machine {
  const dir = scratchDir('machineadm-provision-');
  const root = join(dir, 'root');
  mkdirSync(root);
  const config = join(dir, 'machine.yaml');
  writeFileSync(config, dump({ apiVersion: 'machineadm.cluster.x-k8s.io/v1alpha1', kind: 'MachineConfig', spec: { kubernetes, ...extraSpec } }));
  return { root, config, log: join(dir, 'kubeadm.log') };
}

function machineadm(m: Machine, args: string[], env: Record<string, string> = {}) {
  const result = spawnSync(join(NODE_BIN, 'node'), ['bin/machineadm.js', ...args, '-c', m.config, '--root', m.root], {
    cwd: REPO,
    encoding: 'utf8',
    timeout: 60_000,
    env: {
      ...process.env,
      PATH: TEST_PATH,
      KUBEADM_STANDIN_VERSION: 'v1.31.2',
      KUBEADM_STANDIN_LOG: m.log,
      MACHINEADM_KUBEADM_ROOTFS: '1',
      ...env,
    },
  });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr, all: result.stdout + result.stderr };
}

function kubeadmCalls(m: Machine): { argv: string[]; configMode?: string }[] {
  if (!existsSync(m.log)) return [];
  return readFileSync(m.log, 'utf8').trim().split('\n').filter(Boolean).map((l) => JSON.parse(l) as { argv: string[]; configMode?: string });
}

const worker = { controlPlaneEndpoint: '10.0.0.10:6443', token: TOKEN, caCertHashes: [HASH], retries: 0, backoffSeconds: 0, node: { labels: { 'node.kubernetes.io/pool': 'e2e' } }, kubelet: { maxPods: 42 } };

describe('machineadm init with the kubeadm stand-in', () => {
  it('joins a control plane that brings the cluster certificates as files, without a certificate key', () => {
    const pem = (what: string) => ({ path: `/etc/kubernetes/pki/${what}`, content: `-----BEGIN ${what}-----\nx\n-----END ${what}-----\n`, mode: what.endsWith('.key') ? '0600' : '0644' });
    const files = ['ca.crt', 'ca.key', 'sa.key', 'sa.pub', 'front-proxy-ca.crt', 'front-proxy-ca.key'].map(pem);
    const m = machine({ ...worker, role: 'control-plane', controlPlane: { localAPIEndpoint: { advertiseAddress: '10.0.0.12', bindPort: 6443 } } }, { files });
    const run = machineadm(m, ['init']);
    expect(run.status, run.all).toBe(0);
    expect(run.all).not.toContain('Downloading the certificates');
    expect(existsSync(join(m.root, 'etc/kubernetes/kubelet.conf'))).toBe(true);
  });

  it.each([
    ['a retry after a transient failure', [] as string[], { KUBEADM_STANDIN_FAIL_PHASE: 'kubelet-start', KUBEADM_STANDIN_FAIL_TIMES: '1' }],
    ['--force over a join that failed halfway', ['--force'], {}],
  ])('keeps the certificates and static pods spec.files wrote through the kubeadm reset before %s', (_case, flags, env) => {
    const pem = (what: string) => ({ path: `/etc/kubernetes/pki/${what}`, content: `-----BEGIN ${what}-----\nx\n-----END ${what}-----\n`, mode: what.endsWith('.key') ? '0600' : '0644' });
    const files = [...['ca.crt', 'ca.key', 'sa.key', 'sa.pub', 'front-proxy-ca.crt', 'front-proxy-ca.key'].map(pem), { path: '/etc/kubernetes/manifests/kube-vip.yaml', content: 'apiVersion: v1\nkind: Pod\nmetadata:\n  name: kube-vip\n', mode: '0600' }];
    const m = machine({ ...worker, retries: flags.length ? 0 : 1, role: 'control-plane', controlPlane: { localAPIEndpoint: { advertiseAddress: '10.0.0.12', bindPort: 6443 } } }, { files });
    if (flags.length) expect(machineadm(m, ['init'], { KUBEADM_STANDIN_FAIL_PHASE: 'kubelet-start' }).status).toBe(1);
    const run = machineadm(m, ['init', ...flags], env);
    expect(run.status, run.all).toBe(0);
    expect(kubeadmCalls(m).map((c) => c.argv[0]).filter((c) => c !== 'version')).toEqual(['join', 'reset', 'join']);
    for (const file of files.filter((f) => f.path !== '/etc/kubernetes/pki/ca.crt')) {
      expect(readFileSync(join(m.root, file.path), 'utf8'), file.path).toBe(file.content);
      expect((statSync(join(m.root, file.path)).mode & 0o777).toString(8), file.path).toBe(file.mode.slice(1));
    }
  });

  it('joins with a discovery file that spec.files writes, and refuses one that is not on the machine before any change, naming the field', () => {
    const fileJoin = { discoveryFile: '/etc/kubernetes/discovery.conf', token: TOKEN, retries: 0, backoffSeconds: 0 };
    const discovery = { path: '/etc/kubernetes/discovery.conf', content: 'apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: "https://10.0.0.10:6443"}\n', mode: '0600' };
    const written = machine(fileJoin, { files: [discovery] });
    const joined = machineadm(written, ['init']);
    expect(joined.status, joined.all).toBe(0);
    expect(existsSync(join(written.root, 'etc/kubernetes/kubelet.conf'))).toBe(true);

    const missing = machine(fileJoin, { sysctls: { 'net.ipv4.ip_forward': '1' } });
    const refused = machineadm(missing, ['init']);
    expect(refused.status, refused.all).toBe(2);
    expect(refused.stderr).toContain('spec.kubernetes.discoveryFile: /etc/kubernetes/discovery.conf is not on this machine');
    expect(kubeadmCalls(missing).filter((c) => c.argv[0] === 'join')).toEqual([]);
    expect(existsSync(join(missing.root, 'etc/sysctl.d'))).toBe(false);
  });

  it('copies the patches directory next to its own kubelet patch, and passes the verbosity', () => {
    const patch = { path: '/etc/kubeadm/patches/kubeletconfiguration0+merge.yaml', content: 'serializeImagePulls: false\n' };
    const m = machine({ ...worker, patchesDirectory: '/etc/kubeadm/patches', verbosity: 3 }, { files: [patch] });
    const run = machineadm(m, ['init']);
    expect(run.status, run.all).toBe(0);
    const call = kubeadmCalls(m).find((c) => c.argv[0] === 'join')!;
    expect(call.argv).toContain('--v=3');
    // Both patches reached the kubelet configuration: machineadm's own and the directory's.
    expect(JSON.parse(readFileSync(join(m.root, 'var/lib/kubelet/config.yaml'), 'utf8'))).toMatchObject({ maxPods: 42, serializeImagePulls: false });
    expect(existsSync(join(m.root, 'run/machineadm/kubeadm-patches'))).toBe(false);
    expect(readFileSync(join(m.root, patch.path), 'utf8')).toBe(patch.content);
  });

  it('joins once, keeps no config file behind, and skips the join on the second run', () => {
    const m = machine(worker);
    const first = machineadm(m, ['init']);
    expect(first.status, first.all).toBe(0);
    expect(existsSync(join(m.root, 'etc/kubernetes/kubelet.conf'))).toBe(true);
    // The rendered config (with the token) was 0600 while kubeadm ran and is gone now.
    const calls = kubeadmCalls(m).filter((c) => c.argv[0] === 'join');
    expect(calls).toHaveLength(1);
    expect(calls[0]!.argv).toEqual(['join', '--config', '/run/machineadm/kubeadm-join.yaml', '--rootfs', m.root]);
    expect(calls[0]!.configMode).toBe('600');
    expect(existsSync(join(m.root, 'run/machineadm/kubeadm-join.yaml'))).toBe(false);
    expect(existsSync(join(m.root, 'run/machineadm/kubeadm-patches'))).toBe(false);
    // The kubelet patch reached the kubelet configuration; labels reached the kubelet flags.
    expect(JSON.parse(readFileSync(join(m.root, 'var/lib/kubelet/config.yaml'), 'utf8'))).toMatchObject({ maxPods: 42, cgroupDriver: 'systemd' });
    expect(readFileSync(join(m.root, 'var/lib/kubelet/kubeadm-flags.env'), 'utf8')).toContain('--node-labels=node.kubernetes.io/pool=e2e');
    expect(first.all).toContain('This node has joined the cluster');
    // Provisioning succeeded, so the report phase wrote the Cluster API sentinel.
    expect(readFileSync(join(m.root, 'run/cluster-api/bootstrap-success.complete'), 'utf8')).toBe('success\n');
    expect(first.all).not.toContain(TOKEN);
    const state = JSON.parse(readFileSync(join(m.root, 'var/lib/machineadm/state.json'), 'utf8'));
    expect(state.steps['provision/kubeadm/join'].data).toMatchObject({ joined: true, apiVersion: 'kubeadm.k8s.io/v1beta4', kubeadmVersion: 'v1.31.2', attempts: 1 });

    const second = machineadm(m, ['init']);
    expect(second.status, second.all).toBe(0);
    expect(second.all).toMatch(/provision\/kubeadm\/join skipped .*already done/);
    expect(kubeadmCalls(m).filter((c) => c.argv[0] === 'join')).toHaveLength(1);

    const forced = machineadm(m, ['init', '--force']);
    expect(forced.status, forced.all).toBe(0);
    const commands = kubeadmCalls(m).map((c) => c.argv[0]).filter((c) => c !== 'version');
    expect(commands).toEqual(['join', 'reset', 'join']);
  });

  it('tells on a rerun which node settings changed since the join, which kubeadm applies only when it joins', () => {
    const m = machine(worker);
    expect(machineadm(m, ['init']).status).toBe(0);
    writeFileSync(m.config, dump({ apiVersion: 'machineadm.cluster.x-k8s.io/v1alpha1', kind: 'MachineConfig', spec: { kubernetes: { ...worker, node: { labels: { 'node.kubernetes.io/pool': 'gpu' } }, kubelet: { maxPods: 60 } } } }));
    const rerun = machineadm(m, ['init']);
    expect(rerun.status, rerun.all).toBe(0);
    expect(rerun.all).toMatch(/provision\/kubeadm\/join skipped .*spec\.kubernetes\.node\.labels, spec\.kubernetes\.kubelet changed since this machine joined/);
    expect(rerun.all).toContain('--force');
    const plan = machineadm(m, ['plan']);
    expect(plan.all).toMatch(/provision\/kubeadm\/join.*spec\.kubernetes\.node\.labels, spec\.kubernetes\.kubelet changed since this machine joined/);
    expect(kubeadmCalls(m).filter((c) => c.argv[0] === 'join')).toHaveLength(1);
    // What the kubelet runs with is still the first join's.
    expect(readFileSync(join(m.root, 'var/lib/kubelet/kubeadm-flags.env'), 'utf8')).toContain('--node-labels=node.kubernetes.io/pool=e2e');
  });

  // The facts ask kubeadm for its version when the run starts; the join step asks again only when
  // an earlier step of the run may have put another kubeadm in place.
  it.each([
    ['only steps that leave kubeadm alone changed the machine', { sysctls: { 'net.ipv4.ip_forward': '1' }, files: [{ path: '/etc/example.conf', content: 'x\n' }] }, 1],
    ['a file of the run is named kubeadm', { files: [{ path: '/usr/local/bin/kubeadm', content: '#!/bin/sh\n', mode: '0755' }] }, 2],
  ])('asks kubeadm for its version again before joining only when it may have changed: %s', (_case, spec, times) => {
    const m = machine(worker, spec);
    const run = machineadm(m, ['init']);
    expect(run.status, run.all).toBe(0);
    expect(kubeadmCalls(m).map((c) => c.argv[0])).toEqual([...Array<string>(times).fill('version'), 'join']);
    const state = JSON.parse(readFileSync(join(m.root, 'var/lib/machineadm/state.json'), 'utf8'));
    expect(state.steps['provision/kubeadm/join'].data).toMatchObject({ apiVersion: 'kubeadm.k8s.io/v1beta4', kubeadmVersion: 'v1.31.2' });
  });

  it.each(['/etc/kubernetes/kubelet.conf', '/etc/kubernetes/bootstrap-kubelet.conf', '/etc/kubernetes/pki/ca.crt'])(
    'refuses before any change to join over %s it has no record of (exit 2), and resets and joins with --force',
    (file) => {
      const m = machine(worker, { files: [{ path: '/etc/example.conf', content: 'x\n' }] });
      mkdirSync(join(m.root, file, '..'), { recursive: true });
      writeFileSync(join(m.root, file), 'left by another kubeadm\n');
      const refused = machineadm(m, ['init']);
      expect(refused.status, refused.all).toBe(2);
      expect(refused.stderr).toContain('error: refused before any change (1 problem):');
      expect(refused.stderr).toContain(`spec.kubernetes.bootstrap: kubeadm join: ${file} exists but machineadm has no record of joining this machine`);
      expect(refused.stderr).toContain('run again with --force');
      // Nothing was changed: not the file prepare would write, no state, no kubeadm run.
      expect(existsSync(join(m.root, 'etc/example.conf'))).toBe(false);
      expect(existsSync(join(m.root, 'var/lib/machineadm'))).toBe(false);
      expect(kubeadmCalls(m).filter((c) => c.argv[0] !== 'version')).toEqual([]);
      const plan = machineadm(m, ['plan']);
      expect(plan.stdout).toMatch(new RegExp(`refuse ${file.replaceAll('/', '\\/')}`));
      const forced = machineadm(m, ['init', '--force']);
      expect(forced.status, forced.all).toBe(0);
      expect(forced.stdout).toContain(`--force: resetting the node first (${file} exists)`);
      expect(kubeadmCalls(m).map((c) => c.argv[0]).filter((c) => c !== 'version')).toEqual(['reset', 'join']);
    },
  );

  it('machineadm reset removes the backups kubeadm keeps in /etc/kubernetes/tmp (an etcd copy after an upgrade) and the folders made for them', () => {
    const m = machine(worker);
    expect(machineadm(m, ['init']).status).toBe(0);
    const backup = join(m.root, 'etc/kubernetes/tmp/kubeadm-backup-etcd-2026-12-07-19-00-00/etcd/member/snap');
    mkdirSync(backup, { recursive: true });
    writeFileSync(join(backup, 'db'), 'the cluster\'s secrets\n');
    const reset = spawnSync(join(NODE_BIN, 'node'), ['bin/machineadm.js', 'reset', '--root', m.root], { cwd: REPO, encoding: 'utf8', timeout: 60_000, env: { ...process.env, PATH: TEST_PATH, KUBEADM_STANDIN_VERSION: 'v1.31.2', KUBEADM_STANDIN_LOG: m.log, MACHINEADM_KUBEADM_ROOTFS: '1' } });
    expect(reset.status, reset.stdout + reset.stderr).toBe(0);
    expect(kubeadmCalls(m).find((c) => c.argv[0] === 'reset')!.argv).toEqual(['reset', '-f', '--cri-socket', 'unix:///var/run/containerd/containerd.sock', '--cleanup-tmp-dir', '--rootfs', m.root]);
    expect(existsSync(join(m.root, 'etc'))).toBe(false);
    expect(reset.stdout + reset.stderr).not.toContain('left in place');
  });

  it('machineadm reset never shows a token kubeadm reset prints, in its output or the failure it reports', () => {
    const m = machine(worker);
    expect(machineadm(m, ['init']).status).toBe(0);
    const printed = 'z9y8x7.w6v5u4t3s2r1q0p9';
    const reset = spawnSync(join(NODE_BIN, 'node'), ['bin/machineadm.js', 'reset', '--root', m.root, '-o', 'json'], {
      cwd: REPO,
      encoding: 'utf8',
      timeout: 60_000,
      env: { ...process.env, PATH: TEST_PATH, KUBEADM_STANDIN_VERSION: 'v1.31.2', KUBEADM_STANDIN_LOG: m.log, MACHINEADM_KUBEADM_ROOTFS: '1', KUBEADM_STANDIN_FAIL_PHASE: 'preflight', KUBEADM_STANDIN_FAIL_MESSAGE: `token ${printed} is not valid` },
    });
    expect(reset.status, reset.stdout + reset.stderr).toBe(1);
    expect(reset.stdout + reset.stderr).toContain('kubeadm reset -f failed in phase preflight');
    expect(reset.stdout + reset.stderr).toContain('token <redacted> is not valid');
    expect(reset.stdout + reset.stderr).not.toContain(printed);
  });

  it.each([
    ['v1.25.16', ['reset', '-f', '--cri-socket', 'unix:///var/run/containerd/containerd.sock']],
    ['v1.26.0', ['reset', '-f', '--cri-socket', 'unix:///var/run/containerd/containerd.sock', '--cleanup-tmp-dir']],
  ])('machineadm reset of a node joined with kubeadm %s gives kubeadm reset only flags it has, and the backups in /etc/kubernetes/tmp still go', (version, argv) => {
    const m = machine(worker);
    const env = { KUBEADM_STANDIN_VERSION: version };
    expect(machineadm(m, ['init'], env).status).toBe(0);
    const backup = join(m.root, 'etc/kubernetes/tmp/kubeadm-backup-etcd-2026-12-07-19-00-00/etcd/member/snap');
    mkdirSync(backup, { recursive: true });
    writeFileSync(join(backup, 'db'), 'the cluster\'s secrets\n');
    const reset = spawnSync(join(NODE_BIN, 'node'), ['bin/machineadm.js', 'reset', '--root', m.root], { cwd: REPO, encoding: 'utf8', timeout: 60_000, env: { ...process.env, PATH: TEST_PATH, KUBEADM_STANDIN_VERSION: version, KUBEADM_STANDIN_LOG: m.log, MACHINEADM_KUBEADM_ROOTFS: '1' } });
    expect(reset.status, reset.stdout + reset.stderr).toBe(0);
    expect(kubeadmCalls(m).find((c) => c.argv[0] === 'reset')!.argv).toEqual([...argv, '--rootfs', m.root]);
    expect(existsSync(join(m.root, 'etc'))).toBe(false);
  });

  it('fails at kubelet-start with exit 1, naming the phase and showing the output tail', () => {
    const m = machine(worker);
    const run = machineadm(m, ['init'], { KUBEADM_STANDIN_FAIL_PHASE: 'kubelet-start' });
    expect(run.status, run.all).toBe(1);
    expect(run.stdout).toContain('failed: provision/kubeadm/join');
    expect(run.stdout).toMatch(/kubeadm join failed in phase kubelet-start \(exit code 1\): error execution phase kubelet-start: timed out waiting for the condition/);
    // The summary after the streamed output repeats kubeadm's last lines under the failure.
    const summary = run.stdout.slice(run.stdout.indexOf('failed: provision/kubeadm/join'));
    expect(summary).toContain('[kubelet-check] Waiting for a healthy kubelet');
    expect(summary).toContain('[kubelet-start] Starting the kubelet');
    expect(summary).toContain('what to do: the kubelet did not start');
    expect(existsSync(join(m.root, 'run/machineadm/kubeadm-join.yaml'))).toBe(false);
    expect(run.all).not.toContain(TOKEN);
    expect(existsSync(join(m.root, 'run/cluster-api/bootstrap-success.complete'))).toBe(false);
  });

  it('reports the kubeadm phase and output tail as data in -o json events', () => {
    const m = machine(worker);
    const run = machineadm(m, ['init', '-o', 'json'], { KUBEADM_STANDIN_FAIL_PHASE: 'kubelet-start' });
    expect(run.status).toBe(1);
    const finished = run.stdout.split('\n').filter(Boolean).map((l) => JSON.parse(l)).find((e) => e.type === 'step.finished' && e.step === 'provision/kubeadm/join');
    expect(finished.result).toBe('failure');
    expect(finished.error.details).toMatchObject({ kubeadmPhase: 'kubelet-start', exitCode: 1, transient: true, attempts: 1 });
    expect(finished.error.details.outputTail.split('\n').length).toBeLessThanOrEqual(50);
    expect(finished.error.details.outputTail).toContain('error execution phase kubelet-start');
  });

  it('adds the kubelet log from journalctl to the failure, scrubbed', () => {
    const m = machine(worker);
    // A journalctl that answers only the expected question, printing a line with the token in it.
    const bin = scratchDir('machineadm-journal-');
    writeFileSync(
      join(bin, 'journalctl'),
      `#!/bin/sh\n[ "$*" = "--root ${m.root} -u kubelet -n 50 --no-pager" ] || { echo "unexpected: $*" >&2; exit 1; }\necho 'kubelet[42]: E1129 bootstrap failed with token ${TOKEN}'\necho 'kubelet[42]: E1129 failed to run Kubelet: validate service connection'\n`,
      { mode: 0o755 },
    );
    const run = machineadm(m, ['init', '-o', 'json'], { KUBEADM_STANDIN_FAIL_PHASE: 'kubelet-start', PATH: `${bin}:${TEST_PATH}` });
    expect(run.status).toBe(1);
    const finished = run.stdout.split('\n').filter(Boolean).map((l) => JSON.parse(l)).find((e) => e.type === 'step.finished' && e.step === 'provision/kubeadm/join');
    expect(finished.error.details.kubeletLogTail).toBe('kubelet[42]: E1129 bootstrap failed with token <redacted>\nkubelet[42]: E1129 failed to run Kubelet: validate service connection');
    expect(run.all).not.toContain(TOKEN);
  });

  it('reports a kubeadm killed by a signal from its scrubbed output, not the raw one', () => {
    const m = machine(worker);
    // A kubeadm that prints a token it made up (so machineadm does not know it) and is then killed.
    const made = 'zz9yy8.xx7ww6vv5uu4tt3s';
    const bin = scratchDir('machineadm-killed-');
    writeFileSync(
      join(bin, 'kubeadm'),
      `#!/bin/sh\ncase "$1" in\n  version) echo v1.31.2 ;;\n  join) echo '[preflight] Running pre-flight checks'; echo "[bootstrap-token] Using token: ${made}" >&2; kill -9 $$ ;;\n  *) exit 3 ;;\nesac\n`,
      { mode: 0o755 },
    );
    const run = machineadm(m, ['init', '-o', 'json'], { PATH: `${bin}:${TEST_PATH}` });
    expect(run.status, run.all).toBe(1);
    expect(run.all).not.toContain(made);
    const finished = run.stdout.split('\n').filter(Boolean).map((l) => JSON.parse(l)).find((e) => e.type === 'step.finished' && e.step === 'provision/kubeadm/join');
    expect(finished.error.message).toContain('kubeadm join failed in phase bootstrap-token (killed by a signal)');
    expect(finished.error.details).toMatchObject({ kubeadmCommand: 'kubeadm join', timedOut: false, transient: false, attempts: 1 });
    expect(finished.error.details.outputTail).toContain('[bootstrap-token] Using token: <redacted>');
  });

  it('retries a transient join failure after kubeadm reset -f', () => {
    const m = machine({ ...worker, retries: 2 });
    const run = machineadm(m, ['init'], { KUBEADM_STANDIN_FAIL_PHASE: 'kubelet-start', KUBEADM_STANDIN_FAIL_TIMES: '1' });
    expect(run.status, run.all).toBe(0);
    expect(kubeadmCalls(m).map((c) => c.argv[0]).filter((c) => c !== 'version')).toEqual(['join', 'reset', 'join']);
    expect(kubeadmCalls(m).find((c) => c.argv[0] === 'reset')!.argv).toEqual(['reset', '-f', '--cri-socket', 'unix:///var/run/containerd/containerd.sock', '--rootfs', m.root]);
    expect(run.all).toMatch(/failed in phase kubelet-start \(attempt 1 of 3\); transient/);
  });

  it('does not retry a failure that is the same every time (a configuration kubeadm refuses)', () => {
    // A kubeadm v1.30 gets v1beta3 (picked from the binary's own version); the bad token fails the same way every time.
    const m = machine({ ...worker, retries: 3 });
    const run = machineadm(m, ['init'], { KUBEADM_STANDIN_VERSION: 'v1.30.0', KUBEADM_STANDIN_FAIL_PHASE: 'preflight', KUBEADM_STANDIN_FAIL_MESSAGE: "couldn't validate the identity of the API Server: could not find a JWS signature in the cluster-info ConfigMap for token ID \"q1w2e3\"" });
    expect(run.status, run.all).toBe(1);
    expect(kubeadmCalls(m).map((c) => c.argv[0]).filter((c) => c !== 'version')).toEqual(['join']);
    expect(run.stdout).toContain('kubeadm join failed in phase preflight');
  });

  it('does not retry a kubelet-start failure over a node name another Ready node has, and says what to do', () => {
    const m = machine({ ...worker, retries: 3 });
    const run = machineadm(m, ['init'], { KUBEADM_STANDIN_FAIL_PHASE: 'kubelet-start', KUBEADM_STANDIN_FAIL_MESSAGE: 'a Node with name "worker-1" and status "Ready" already exists in the cluster. You must delete the existing Node or change the name of this new joining Node' });
    expect(run.status, run.all).toBe(1);
    expect(kubeadmCalls(m).map((c) => c.argv[0]).filter((c) => c !== 'version')).toEqual(['join']);
    expect(run.stdout).toContain('what to do: another machine is registered under this node name');
  });

  it('initialises the first control plane and never prints the token or key kubeadm prints', () => {
    const m = machine({ role: 'control-plane', bootstrap: 'init', version: 'v1.31.2', controlPlaneEndpoint: 'cp.example.internal:6443', token: TOKEN, certificateKey: KEY, staticPods: [{ name: 'extra', manifest: 'apiVersion: v1\nkind: Pod\nmetadata:\n  name: extra\nspec:\n  containers:\n    - name: c\n      image: registry.k8s.io/pause:3.10\n' }] });
    const run = machineadm(m, ['init']);
    expect(run.status, run.all).toBe(0);
    expect(kubeadmCalls(m).find((c) => c.argv[0] === 'init')!.argv).toEqual(['init', '--config', '/run/machineadm/kubeadm-init.yaml', '--upload-certs', '--rootfs', m.root]);
    expect(run.all).toContain('Your Kubernetes control-plane has initialized successfully!');
    expect(run.all).not.toContain(TOKEN);
    expect(run.all).not.toContain(KEY);
    expect(run.all).not.toMatch(/--discovery-token-ca-cert-hash sha256:[a-f0-9]{64}/);
    expect(readFileSync(join(m.root, 'etc/kubernetes/manifests/extra.yaml'), 'utf8')).toContain('name: extra');
    // Like kubeadm's own manifests: they can carry credentials in container arguments.
    expect(statSync(join(m.root, 'etc/kubernetes/manifests/extra.yaml')).mode & 0o777).toBe(0o600);
  });

  it('puts a static pod manifest back to mode 0600 when its content is right but others can read it', () => {
    const manifest = 'apiVersion: v1\nkind: Pod\nmetadata:\n  name: extra\nspec:\n  containers:\n    - name: c\n      image: registry.k8s.io/pause:3.10\n      args: ["--password=hunter2"]\n';
    const m = machine({ role: 'control-plane', bootstrap: 'init', version: 'v1.31.2', controlPlaneEndpoint: 'cp.example.internal:6443', token: TOKEN, certificateKey: KEY, staticPods: [{ name: 'extra', manifest }] });
    expect(machineadm(m, ['init']).status).toBe(0);
    const path = join(m.root, 'etc/kubernetes/manifests/extra.yaml');
    chmodSync(path, 0o644);
    const plan = machineadm(m, ['plan']);
    expect(plan.stdout).toMatch(/chmod \/etc\/kubernetes\/manifests\/extra\.yaml .*mode 0644 -> 0600/);
    expect(plan.all).not.toContain('hunter2');
    const again = machineadm(m, ['init']);
    expect(again.status, again.all).toBe(0);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(readFileSync(path, 'utf8')).toBe(manifest);
  });

  it('plans the join under a scratch root with the config redacted and the run skipped', () => {
    const m = machine(worker);
    const plan = spawnSync(join(NODE_BIN, 'node'), ['bin/machineadm.js', 'plan', '-c', m.config, '--root', m.root], { cwd: REPO, encoding: 'utf8', env: { ...process.env, PATH: `${NODE_BIN}:/usr/bin:/bin` } });
    expect(plan.status, plan.stderr).toBe(0);
    expect(plan.stdout).toMatch(/provision\/kubeadm\/join: .*\[skipped: kubeadm join changes the live machine/);
    expect(plan.stdout).toContain('kubeadm.k8s.io/v1beta4 for default');
    expect(plan.stdout).toContain('token: <redacted>');
    expect(plan.stdout).toContain('- <redacted>');
    expect(plan.stdout).not.toContain(TOKEN);
    expect(plan.stdout).not.toContain(HASH);
  });

  it('does not write the sentinel when the join could not run under a scratch root', () => {
    const m = machine(worker);
    const run = spawnSync(join(NODE_BIN, 'node'), ['bin/machineadm.js', 'init', '-c', m.config, '--root', m.root], { cwd: REPO, encoding: 'utf8', env: { ...process.env, PATH: `${NODE_BIN}:/usr/bin:/bin` } });
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/report\/sentinel skipped .*provision\/kubeadm\/join did not run/);
    expect(existsSync(join(m.root, 'run/cluster-api/bootstrap-success.complete'))).toBe(false);
  });

  it('plans for the kubeadm found on the machine rather than kubernetes.version', () => {
    const m = machine({ ...worker, version: 'v1.31.2' });
    const plan = machineadm(m, ['plan'], { KUBEADM_STANDIN_VERSION: 'v1.30.1' });
    expect(plan.status, plan.all).toBe(0);
    expect(plan.stdout).toContain('kubeadm.k8s.io/v1beta3 for kubeadm v1.30.1');
    expect(plan.stdout).toMatch(/kubeletExtraArgs:\n\s+node-labels: node.kubernetes.io\/pool=e2e/);
    expect(kubeadmCalls(m).map((c) => c.argv[0])).toEqual(['version']);
  });

  it('reads the token and CA hash through valueFrom, and never shows them', () => {
    const m = machine({ ...worker, token: { valueFrom: { file: '/etc/machineadm/token' } }, caCertHashes: [{ valueFrom: { env: 'E2E_CA_HASH' } }] });
    mkdirSync(join(m.root, 'etc/machineadm'), { recursive: true });
    writeFileSync(join(m.root, 'etc/machineadm/token'), TOKEN + '\n', { mode: 0o600 });
    const run = machineadm(m, ['init', '-o', 'json'], { E2E_CA_HASH: HASH });
    expect(run.status, run.all).toBe(0);
    expect(run.all).not.toContain(TOKEN);
    expect(run.all).not.toContain(HASH);
    expect(existsSync(join(m.root, 'etc/kubernetes/kubelet.conf'))).toBe(true);
  });

  it.each([
    ['a malformed token', { ...worker, token: 'not-a-token-at-all' }, 'spec.kubernetes.token: is not valid'],
    ['a control-plane join without certificate key', { ...worker, role: 'control-plane' }, 'spec.kubernetes.certificateKey: a control-plane join needs the certificate key'],
    ['an endpoint without port', { ...worker, controlPlaneEndpoint: 'cp.example.com' }, 'spec.kubernetes.controlPlaneEndpoint: is not host:port'],
  ])('refuses %s with exit 2 before anything runs', (_, kubernetes, message) => {
    const m = machine(kubernetes);
    const run = machineadm(m, ['init']);
    expect(run.status).toBe(2);
    expect(run.stderr).toContain(message);
    expect(run.all).not.toContain('not-a-token-at-all');
    expect(kubeadmCalls(m).filter((c) => c.argv[0] !== 'version')).toEqual([]);
    expect(existsSync(join(m.root, 'var/lib/machineadm/state.json'))).toBe(false);
  });

  it.each([
    ['with no kubeadm installed, for spec.kubernetes.version', {}, [], 'kubeadm.k8s.io/v1beta4 for spec.kubernetes.version v1.31.2', '- name: node-labels', 0],
    ['for the kubeadm found on the machine', { KUBEADM_STANDIN_VERSION: 'v1.30.2', PATH: TEST_PATH }, [], 'kubeadm.k8s.io/v1beta3 for kubeadm v1.30.2', 'node-labels: node.kubernetes.io/pool=general', 0],
    // The example's containerd proxy is a Linux drop-in: the Windows machine would refuse it, and so does its plan.
    ['for a Windows machine', {}, ['--os', 'windows'], 'criSocket: npipe:////./pipe/containerd-containerd', 'value: windows', 2],
  ])('plans examples/linux-worker.yaml %s, secrets redacted', (_, env, args, expected, expected2, status) => {
    // The machine has the token file the example reads (the plan reads it as the run would).
    const root = scratchDir('machineadm-plan-example-');
    mkdirSync(join(root, 'etc/machineadm'), { recursive: true });
    writeFileSync(join(root, 'etc/machineadm/bootstrap-token'), `${TOKEN}\n`, { mode: 0o600 });
    const run = spawnSync(join(NODE_BIN, 'node'), ['bin/machineadm.js', 'plan', '-c', 'examples/linux-worker.yaml', '--root', root, ...args], {
      cwd: REPO,
      encoding: 'utf8',
      timeout: 60_000,
      env: { ...process.env, PATH: `${NODE_BIN}:/usr/bin:/bin`, ...env },
    });
    expect(run.status, run.stderr).toBe(status);
    if (status === 2) expect(run.stderr).toContain('spec.containerd.proxy: is not supported on Windows');
    expect(run.stdout).toMatch(/provision\/kubeadm\/join: kubeadm join: join the cluster/);
    expect(run.stdout).toContain('kind: JoinConfiguration');
    expect(run.stdout).toContain('token: <redacted>');
    expect(run.stdout).toContain(expected);
    expect(run.stdout).toContain(expected2);
    expect(run.stdout).not.toMatch(/sha256:[a-f0-9]{64}/);
    expect(run.stdout).not.toContain(TOKEN);
  });

  it('plans examples/linux-worker.yaml on a machine without its token file, then refuses with exit 2 as init would', () => {
    const root = scratchDir('machineadm-plan-example-');
    const run = spawnSync(join(NODE_BIN, 'node'), ['bin/machineadm.js', 'plan', '-c', 'examples/linux-worker.yaml', '--root', root], { cwd: REPO, encoding: 'utf8', timeout: 60_000, env: { ...process.env, PATH: `${NODE_BIN}:/usr/bin:/bin` } });
    expect(run.status, run.stderr).toBe(2);
    expect(run.stdout).toContain('kind: JoinConfiguration');
    expect(run.stderr).toContain('spec.kubernetes.token: secret file /etc/machineadm/bootstrap-token does not exist');
    const json = spawnSync(join(NODE_BIN, 'node'), ['bin/machineadm.js', 'plan', '-c', 'examples/linux-worker.yaml', '--root', root, '-o', 'json'], { cwd: REPO, encoding: 'utf8', timeout: 60_000, env: { ...process.env, PATH: `${NODE_BIN}:/usr/bin:/bin` } });
    expect(json.status).toBe(2);
    expect(JSON.parse(json.stdout).refused).toMatchObject({ exitCode: 2, issues: [{ path: 'spec.kubernetes.token', message: 'secret file /etc/machineadm/bootstrap-token does not exist' }] });
  });
});
