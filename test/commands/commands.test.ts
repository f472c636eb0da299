// spec.commands through the command line, on a scratch root with MACHINEADM_COMMANDS_UNDER_ROOT=1
// (the commands really run, in the root's directory): plan shows them, a run reports each one
// with its exit code and duration, a failure names the command, a timeout stops its whole process
// group, output is bounded and scrubbed of the configuration's secrets, and the rerun rules of
// boot, beforeKubeadm and afterKubeadm hold (kubeadm is the strict stand-in under --rootfs).
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { dump } from 'js-yaml';
import { describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.ts';
import { scratchDir } from '../support/tmp.ts';
import { standinEnv, processRuns } from '../support/machine-run.ts';
import { MAX_LINE_CHARS, MAX_OUTPUT_LINES } from '../../src/commands/run.ts';

interface Machine {
  root: string;
  state: string;
  config: string;
}

function machine(spec: Record<string, unknown>): Machine {
  const dir = scratchDir('machineadm-commands-');
  const m = { root: join(dir, 'root'), state: join(dir, 'state'), config: join(dir, 'machine.yaml') };
  mkdirSync(join(m.root, 'etc'), { recursive: true });
  writeFileSync(join(m.root, 'etc/hostname'), 'node-1\n');
  writeFileSync(m.config, dump({ apiVersion: 'machineadm.cluster.x-k8s.io/v1alpha1', kind: 'MachineConfig', spec }));
  return m;
}

const env = (extra: Record<string, string> = {}) => standinEnv({ MACHINEADM_COMMANDS_UNDER_ROOT: '1', ...extra });

async function run(m: Machine, command: string, extra: string[] = [], environment = env()) {
  return runCli([command, '-c', m.config, '--root', m.root, '--state-dir', m.state, ...extra], { env: environment });
}

function result(m: Machine): { phases: { steps: { id: string; result: string; changes?: { action: string; target: string; detail?: string }[]; error?: { message: string; details?: Record<string, unknown> } }[] }[] } {
  return JSON.parse(readFileSync(join(m.root, 'run/machineadm/result.json'), 'utf8'));
}

function step(m: Machine, id: string) {
  return result(m).phases.flatMap((p) => p.steps).find((s) => s.id === id);
}

const log = (m: Machine) => (existsSync(join(m.root, 'log')) ? readFileSync(join(m.root, 'log'), 'utf8') : '');

describe('spec.commands', () => {
  it('shows every command in plan (text and JSON), and reports each run with its exit code and duration', async () => {
    const m = machine({ commands: { boot: [{ name: 'greet', shell: 'echo hello >> log' }, { argv: ['/bin/sh', '-c', 'echo two >> log'], timeoutSeconds: 20 }] } });
    const text = await run(m, 'plan');
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toContain('run spec.commands.boot[0] (greet) (/bin/sh -c "echo hello >> log", timeout 300s)');
    expect(text.stdout).toContain('run spec.commands.boot[1] (/bin/sh -c "echo two >> log", timeout 20s)');
    const json = JSON.parse((await run(m, 'plan', ['-o', 'json'])).stdout);
    const planned = json.phases[0].steps.find((s: { id: string }) => s.id === 'prepare/commands/boot');
    expect(planned.status).toBe('change');
    expect(planned.changes.map((c: { target: string }) => c.target)).toEqual(['spec.commands.boot[0] (greet)', 'spec.commands.boot[1]']);
    expect(log(m)).toBe('');

    const first = await run(m, 'prepare', ['-o', 'json']);
    expect(first.code, first.stderr).toBe(0);
    expect(log(m)).toBe('hello\ntwo\n');
    const changes = step(m, 'prepare/commands/boot')!.changes!;
    expect(changes.map((c) => c.action)).toEqual(['ran', 'ran']);
    for (const c of changes) expect(c.detail).toMatch(/^exit code 0 in \d+ ms$/);
    // Boot commands run on every run, like cloud-init's bootcmd.
    expect((await run(m, 'prepare')).code).toBe(0);
    expect(log(m)).toBe('hello\ntwo\nhello\ntwo\n');
  });

  it('is skipped under a scratch --root unless MACHINEADM_COMMANDS_UNDER_ROOT=1', async () => {
    const m = machine({ commands: { boot: [{ shell: 'echo ran >> log' }] } });
    const out = await run(m, 'prepare', [], standinEnv());
    expect(out.code, out.stderr).toBe(0);
    expect(log(m)).toBe('');
    expect(step(m, 'prepare/commands/boot')!.result).toBe('skipped');
    expect(out.stdout + out.stderr).toContain('MACHINEADM_COMMANDS_UNDER_ROOT=1 runs them there');
  });

  it('fails the step on a non-zero exit, naming the command, its exit code and last output line; later commands do not run', async () => {
    const m = machine({ commands: { boot: [{ shell: 'echo one >> log' }, { name: 'check disk', shell: 'echo "disk missing" >&2; exit 3' }, { shell: 'echo three >> log' }] } });
    const out = await run(m, 'prepare');
    expect(out.code).toBe(1);
    expect(out.stderr).toContain('spec.commands.boot[1] (check disk) exited with code 3; its last output line: disk missing (1 later command of spec.commands.boot not run)');
    expect(log(m)).toBe('one\n');
    const failed = step(m, 'prepare/commands/boot')!;
    expect(failed.result).toBe('failure');
    expect(failed.error!.details).toMatchObject({ command: 'spec.commands.boot[1]', name: 'check disk', exitCode: 3, outputTail: 'disk missing' });
  });

  it('stops a command that runs past its timeout with every process it started', async () => {
    const m = machine({ commands: { boot: [{ name: 'hang', shell: 'sleep 300 & echo $! > child.pid; wait', timeoutSeconds: 1 }] } });
    const started = Date.now();
    const out = await run(m, 'prepare');
    expect(out.code).toBe(1);
    expect(out.stderr).toContain('spec.commands.boot[0] (hang) timed out after 1s (the command and every process it started were stopped)');
    expect(Date.now() - started).toBeLessThan(20_000);
    const child = Number(readFileSync(join(m.root, 'child.pid'), 'utf8'));
    expect(child).toBeGreaterThan(0);
    expect(processRuns(child)).toBe(false);
    expect(step(m, 'prepare/commands/boot')!.error!.details).toMatchObject({ timedOut: true });
  });

  it("scrubs every configured secret from the commands' output and errors, and does not pass secrets held in environment variables on", async () => {
    const hash = '$6$saltsalt$' + 'h'.repeat(40);
    const m = machine({
      users: [{ name: 'ops', passwordHash: hash }, { name: 'deploy', passwordHash: { valueFrom: { env: 'DEPLOY_HASH' } } }],
      commands: { boot: [{ shell: `echo 'literal ${hash}'; echo "env [$DEPLOY_HASH]"; echo 'fail ${hash}' >&2; exit 1` }] },
    });
    const envHash = '$6$othersalt$' + 'e'.repeat(40);
    const out = await run(m, 'prepare', ['--only', 'prepare/commands/boot', '-o', 'json'], env({ DEPLOY_HASH: envHash }));
    expect(out.code).toBe(1);
    const everything = out.stdout + out.stderr + readFileSync(join(m.root, 'run/machineadm/result.json'), 'utf8') + readFileSync(join(m.state, 'result.json'), 'utf8');
    expect(everything).not.toContain(hash);
    expect(everything).not.toContain(envHash);
    expect(out.stdout).toContain('literal <redacted>');
    expect(out.stdout).toContain('env []');
    expect(out.stderr).toContain('fail <redacted>');
  });

  it('never shows the first part of a secret that the cut of a long output line goes through', async () => {
    const hash = '$6$saltsalt$' + 'h'.repeat(40);
    const m = machine({ users: [{ name: 'ops', passwordHash: hash }], commands: { boot: [{ shell: `printf '%${MAX_LINE_CHARS - 10}s' '' | tr ' ' x; echo '${hash}'; exit 1` }] } });
    const out = await run(m, 'prepare', ['--only', 'prepare/commands/boot', '-o', 'json']);
    expect(out.code).toBe(1);
    const everything = out.stdout + out.stderr + readFileSync(join(m.root, 'run/machineadm/result.json'), 'utf8') + readFileSync(join(m.state, 'result.json'), 'utf8');
    expect(everything).toContain(`${'x'.repeat(MAX_LINE_CHARS - 10)}<redacted>`);
    expect(everything).not.toContain(hash.slice(0, 8));
  });

  it('fails the step naming the signal that killed a command, which did start', async () => {
    const m = machine({ commands: { boot: [{ name: 'oom', shell: 'echo started; kill -KILL $$' }, { shell: 'echo next >> log' }] } });
    const out = await run(m, 'prepare');
    expect(out.code).toBe(1);
    expect(out.stderr).toContain('spec.commands.boot[0] (oom) was killed by SIGKILL; its last output line: started (1 later command of spec.commands.boot not run)');
    expect(out.stderr).not.toContain('could not start');
    expect(log(m)).toBe('');
    const failed = step(m, 'prepare/commands/boot')!;
    expect(failed.error!.details).toMatchObject({ command: 'spec.commands.boot[0]', name: 'oom', signal: 'SIGKILL', outputTail: 'started' });
    expect(out.stdout).toMatch(/spec\.commands\.boot\[0\] \(oom\): killed by SIGKILL after \d+ ms/);
    expect(out.stdout).not.toContain('did not start');
  });

  it(`streams at most ${MAX_OUTPUT_LINES} lines of one command's output, and cuts long lines`, async () => {
    const m = machine({ commands: { boot: [{ shell: `seq 1 ${MAX_OUTPUT_LINES * 4}; head -c 100000 /dev/zero | tr '\\0' x; echo` }] } });
    const out = await run(m, 'prepare', ['-o', 'json']);
    expect(out.code, out.stderr).toBe(0);
    const lines = out.stdout.split('\n').filter(Boolean).map((l) => JSON.parse(l) as { type: string; message?: string }).filter((e) => e.type === 'step.output');
    expect(lines).toHaveLength(MAX_OUTPUT_LINES + 1);
    expect(lines.at(-1)!.message).toContain(`output cut after ${MAX_OUTPUT_LINES} lines`);
    expect(out.stdout.length).toBeLessThan(200_000);
  });

  describe('around kubeadm', () => {
    const worker = { controlPlaneEndpoint: '10.0.0.10:6443', token: 'abcdef.0123456789abcdef', caCertHashes: ['sha256:' + 'ab'.repeat(32)] };

    it('runs beforeKubeadm and afterKubeadm once for the join: a rerun after the join runs only the boot commands', async () => {
      const m = machine({
        kubernetes: worker,
        commands: { boot: [{ shell: 'echo boot >> log' }], beforeKubeadm: [{ shell: 'echo before >> log; test ! -e etc/kubernetes/kubelet.conf' }], afterKubeadm: [{ shell: 'echo after >> log; test -e etc/kubernetes/kubelet.conf' }] },
        report: { clusterAPISentinel: false },
      });
      const plan = await run(m, 'plan');
      expect(plan.code, plan.stderr).toBe(0);
      expect(plan.stdout).toMatch(/provision\/commands\/before-kubeadm[\s\S]*provision\/kubeadm\/join[\s\S]*provision\/commands\/after-kubeadm/);
      expect(plan.stdout).toContain('run spec.commands.afterKubeadm[0]');
      const first = await run(m, 'init');
      expect(first.code, first.stderr).toBe(0);
      expect(log(m)).toBe('boot\nbefore\nafter\n');
      const again = await run(m, 'init');
      expect(again.code, again.stderr).toBe(0);
      expect(log(m)).toBe('boot\nbefore\nafter\nboot\n');
      expect(step(m, 'provision/commands/before-kubeadm')!.result).toBe('skipped');
      expect(step(m, 'provision/commands/after-kubeadm')!.result).toBe('skipped');
      const plan2 = await run(m, 'plan');
      expect(plan2.stdout).toMatch(/provision\/commands\/after-kubeadm: .*\[up to date\]/);
    });

    it('runs afterKubeadm again on the next run when it failed, without joining again', async () => {
      const m = machine({
        kubernetes: worker,
        commands: { afterKubeadm: [{ name: 'label', shell: 'echo after >> log; test -e fixed' }] },
        report: { clusterAPISentinel: false },
      });
      const first = await run(m, 'init');
      expect(first.code).toBe(1);
      expect(first.stderr).toContain('spec.commands.afterKubeadm[0] (label) exited with code 1');
      writeFileSync(join(m.root, 'fixed'), '');
      const second = await run(m, 'init');
      expect(second.code, second.stderr).toBe(0);
      expect(log(m)).toBe('after\nafter\n');
      expect(step(m, 'provision/kubeadm/join')!.result).toBe('skipped');
      expect((await run(m, 'init')).code).toBe(0);
      expect(log(m)).toBe('after\nafter\n');
    });
  });

  it('says nothing of commands around kubeadm when spec.kubernetes is given but wrong: only what is wrong with it', async () => {
    const m = machine({ commands: { beforeKubeadm: [{ shell: 'true' }] }, kubernetes: { controlPlaneEndpoint: '10.0.0.10:6443', token: 'abcdef.0123456789abcdef', caCertHashes: [`sha256:${'ab'.repeat(32)}`], node: { kubeletExtraArgs: { 'node-ip': '10.0.0.5' } } } });
    const out = await runCli(['config', 'validate', '-c', m.config]);
    expect(out.code).toBe(2);
    expect(out.stderr).toContain('spec.kubernetes.node.kubeletExtraArgs["node-ip"]');
    expect(out.stderr).not.toContain('spec.kubernetes is not set');
  });

  it.each([
    [{ boot: [{ argv: ['/bin/true'], shell: 'true' }] }, 'spec.commands.boot[0]: give exactly one of argv or shell'],
    [{ boot: [{ name: 'x' }] }, 'spec.commands.boot[0]: give exactly one of argv or shell'],
    [{ boot: [{ shell: 'true', timeoutSeconds: 0 }] }, 'spec.commands.boot[0].timeoutSeconds: must be at least 1'],
    [{ beforeKubeadm: [{ shell: 'true' }] }, 'spec.commands.beforeKubeadm: runs around kubeadm, but spec.kubernetes is not set'],
    [{ boot: [{ argv: [] }] }, 'spec.commands.boot[0].argv: needs at least 1 item'],
  ])('refuses %j in validation', async (commands, message) => {
    const m = machine({ commands });
    const out = await runCli(['config', 'validate', '-c', m.config]);
    expect(out.code).toBe(2);
    expect(out.stderr).toContain(message);
  });
});
