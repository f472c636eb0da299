// reset against a real containerd: prepare replaces the machine's config.toml and restarts the
// daemon once; reset gives the old config.toml back byte for byte and restarts the daemon once
// more, with that config; a second reset restarts nothing. systemd cannot run here: the machine
// is a scratch directory taken for the live root, and systemctl is a stand-in that stops and
// starts a real containerd daemon (fixtures/systemctl), which must come up with each config.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { scratchDir } from '../support/tmp.ts';
import { missingRequirement } from '../support/environment.ts';
import { LiveLikeFileSystem } from '../support/live-like-fs.ts';
import { BlockDevices, ProcessRunner, RootedFileSystem, type Facts, type Host } from '../../src/host/index.ts';
import { runPhases } from '../../src/engine/runner.ts';
import { preparePhase } from '../../src/phases/registry.ts';
import { resetPhase } from '../../src/phases/reset.ts';
import { StateStore } from '../../src/engine/state.ts';
import { EventBus } from '../../src/engine/events.ts';
import { SecretScrubber } from '../../src/config/secrets.ts';
import { parseWith } from '../../src/config/schema/dsl.ts';
import { machineConfigSchema } from '../../src/config/schema/index.ts';
import { systemdResume } from '../../src/host/resume.ts';

const skip = missingRequirement({ root: true, commands: ['containerd', 'ctr'] });
const FIXTURES = join(import.meta.dirname, 'fixtures');

describe.skipIf(skip)('reset with a real containerd', () => {
  const dir = scratchDir('machineadm-reset-containerd-');
  const root = join(dir, 'root');
  const daemon = join(dir, 'containerd');
  const log = join(dir, 'systemctl.log');
  const stateDir = join(dir, 'state');
  mkdirSync(join(root, 'etc/containerd'), { recursive: true });
  mkdirSync(join(root, 'run/systemd/system'), { recursive: true });
  mkdirSync(daemon, { recursive: true });
  // Every folder the daemon uses stays under the scratch directory, with either config.
  const paths = [`[plugins."io.containerd.internal.v1.opt"]`, `  path = "${dir}/opt"`, `[plugins."io.containerd.grpc.v1.cri".cni]`, `  bin_dir = "${dir}/cni/bin"`, `  conf_dir = "${dir}/cni/net.d"`].join('\n');
  const original = `version = 2\n# the image's own containerd configuration\n${paths}\n`;
  const env = { ...process.env, PATH: `${FIXTURES}:${process.env.PATH ?? ''}`, CONTAINERD_DIR: daemon, MACHINE_ROOT: root, SYSTEMCTL_LOG: log };

  afterAll(() => {
    const pid = existsSync(join(daemon, 'pid')) ? Number(readFileSync(join(daemon, 'pid'), 'utf8')) : undefined;
    if (pid) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone already
      }
    }
  });

  const sha = (text: string | Buffer): string => createHash('sha256').update(text).digest('hex');
  const restarts = (): string[] => (existsSync(log) ? readFileSync(log, 'utf8').split('\n').filter(Boolean) : []);

  async function run(phase: 'prepare' | 'reset'): Promise<{ result: string; steps: Record<string, string> }> {
    const fs = new LiveLikeFileSystem(root, { backupDir: join(stateDir, 'backup'), writtenDir: join(stateDir, 'written') });
    const proc = new ProcessRunner(env);
    const version = /containerd \S+ v?(\d+\.\d+\.\d+)/.exec(execFileSync('containerd', ['--version'], { encoding: 'utf8' }))?.[1];
    const facts: Facts = { os: 'linux', arch: 'x64', hostname: 'node-1', privileged: true, liveRoot: true, ...(version ? { containerdVersion: version } : {}) };
    const host = { fs, local: fs, proc, devices: new BlockDevices('skip'), env, offline: false, now: () => new Date(), sleep: async () => {}, facts: async () => facts, resume: systemdResume(fs), restart: async () => { throw new Error('a test never restarts the machine'); } } satisfies Host;
    const { value: config, issues } = parseWith(machineConfigSchema, {
      apiVersion: 'machineadm.cluster.x-k8s.io/v1alpha1',
      kind: 'MachineConfig',
      spec: { containerd: { sandboxImage: 'registry.k8s.io/pause:3.10', cgroupDriver: 'cgroupfs', extraConfig: paths } },
    });
    if (!config) throw new Error(JSON.stringify(issues));
    const outcome = await runPhases({
      command: phase,
      phases: [phase === 'prepare' ? preparePhase : resetPhase],
      selection: { only: phase === 'prepare' ? ['prepare/containerd'] : [], skip: [] },
      config,
      facts,
      host,
      events: new EventBus(),
      state: new StateStore(new RootedFileSystem(stateDir)),
      secrets: new SecretScrubber(),
    });
    if (outcome.error) throw outcome.error;
    return { result: outcome.result, steps: Object.fromEntries(outcome.phases[0]!.steps.map((s) => [s.id, s.result])) };
  }

  it('gives config.toml back byte for byte and restarts containerd once, with it; a second reset restarts nothing', async () => {
    writeFileSync(join(root, 'etc/containerd/config.toml'), original, { mode: 0o640 });
    execFileSync(join(FIXTURES, 'systemctl'), ['restart', 'containerd'], { env });
    expect(restarts()).toEqual([`restart ${sha(original)}`]);

    const prepared = await run('prepare');
    expect(prepared.steps['prepare/containerd/restart']).toBe('success');
    const written = readFileSync(join(root, 'etc/containerd/config.toml'));
    expect(written.toString()).toContain('pause:3.10');
    expect(restarts()).toEqual([`restart ${sha(original)}`, `restart ${sha(written)}`]);

    const reset = await run('reset');
    expect(reset.steps['reset/files']).toBe('success');
    expect(reset.steps['reset/containerd/restart']).toBe('success');
    expect(readFileSync(join(root, 'etc/containerd/config.toml'), 'utf8')).toBe(original);
    expect(statSync(join(root, 'etc/containerd/config.toml')).mode & 0o7777).toBe(0o640);
    // Restarted once by reset, with the config it gave back; and the daemon answers.
    expect(restarts()).toEqual([`restart ${sha(original)}`, `restart ${sha(written)}`, `restart ${sha(original)}`]);
    expect(execFileSync(join(FIXTURES, 'systemctl'), ['is-active', 'containerd'], { env, encoding: 'utf8' }).trim()).toBe('active');

    const again = await run('reset');
    expect(again.steps['reset/containerd/restart']).toBe('skipped');
    expect(restarts()).toHaveLength(3);
  }, 120_000);
});
