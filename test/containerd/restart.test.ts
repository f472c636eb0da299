// prepare/containerd/restart: containerd is restarted only when its config.toml or proxy drop-in was
// written and it has not been restarted since; hosts.toml changes need no restart. systemd cannot
// run here, so the live machine is a scratch directory treated as the live root, and systemctl is
// a recording stand-in.
import { describe, expect, it } from 'vitest';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { scratchDir } from '../support/tmp.ts';
import { LiveLikeFileSystem } from '../support/live-like-fs.ts';
import { BlockDevices, RootedFileSystem, ProcessRunner, type Facts, type Host, type RunOptions, type RunResult } from '../../src/host/index.ts';
import { runPhases } from '../../src/engine/runner.ts';
import { preparePhase } from '../../src/phases/registry.ts';
import { StateStore } from '../../src/engine/state.ts';
import { EventBus } from '../../src/engine/events.ts';
import { SecretScrubber } from '../../src/config/secrets.ts';
import { parseWith } from '../../src/config/schema/dsl.ts';
import { machineConfigSchema } from '../../src/config/schema/index.ts';
import { systemdResume } from '../../src/host/resume.ts';

class RecordingRunner extends ProcessRunner {
  readonly calls: string[] = [];
  active = 'active';
  override async run(argv: readonly [string, ...string[]], _options: RunOptions = {}): Promise<RunResult> {
    this.calls.push(argv.join(' '));
    const stdout = argv[1] === 'is-active' ? `${this.active}\n` : '';
    return { argv, exitCode: argv[1] === 'is-active' && this.active !== 'active' ? 3 : 0, stdout, stderr: '', durationMs: 1 };
  }
  override async which(name: string): Promise<string | undefined> {
    return `/usr/bin/${name}`;
  }
}

const tmpBase = scratchDir('machineadm-restart-');

function machine(withSystemd: boolean) {
  const dir = mkdtempSync(join(tmpBase, 'machine-'));
  const root = join(dir, 'root');
  mkdirSync(root);
  if (withSystemd) mkdirSync(join(root, 'run/systemd/system'), { recursive: true });
  const fs = new LiveLikeFileSystem(root);
  const proc = new RecordingRunner({});
  const facts: Facts = { os: 'linux', arch: 'x64', hostname: 'node-1', privileged: true, liveRoot: true, containerdVersion: '1.7.24' };
  const host = { fs, local: fs, proc, devices: new BlockDevices('skip'), env: {}, offline: false, now: () => new Date(), sleep: async () => {}, facts: async () => facts, resume: systemdResume(fs), restart: async () => { throw new Error('a test never restarts the machine'); } } satisfies Host;
  const state = new StateStore(new RootedFileSystem(join(dir, 'state')));
  // Without `containerd`: a configuration that has no spec.containerd (any more).
  const run = async (containerd: Record<string, unknown> | undefined, only = ['prepare/containerd']) => {
    const { value: config, issues } = parseWith(machineConfigSchema, { apiVersion: 'machineadm.cluster.x-k8s.io/v1alpha1', kind: 'MachineConfig', spec: containerd ? { containerd } : {} });
    if (!config) throw new Error(JSON.stringify(issues));
    proc.calls.length = 0;
    const outcome = await runPhases({ command: 'prepare', phases: [preparePhase], selection: { only, skip: [] }, config, facts, host, events: new EventBus(), state, secrets: new SecretScrubber() });
    const restart = outcome.phases[0]!.steps.find((s) => s.id === 'prepare/containerd/restart')!;
    return { calls: [...proc.calls], restart };
  };
  return { run, proc, root, stateFile: join(dir, 'state', 'state.json') };
}

const base = { sandboxImage: 'registry.k8s.io/pause:3.10', proxy: { httpsProxy: 'http://proxy.example:3128' } };

describe('prepare/containerd/restart', () => {
  it('restarts once after the configuration is written, not again when nothing changed, and again after a change', async () => {
    const { run } = machine(true);
    const first = await run(base);
    expect(first.calls).toEqual(['systemctl daemon-reload', 'systemctl restart containerd', 'systemctl is-active containerd']);
    expect(first.restart.result).toBe('success');

    const second = await run(base);
    expect(second.calls).toEqual([]);
    expect(second.restart).toMatchObject({ result: 'skipped', message: 'already done' });

    // Only config.toml changed: no daemon-reload.
    const third = await run({ ...base, sandboxImage: 'registry.k8s.io/pause:3.10.1' });
    expect(third.calls).toEqual(['systemctl restart containerd', 'systemctl is-active containerd']);
  });

  // The drop-in went with spec.containerd, but containerd kept the proxy it started with.
  it('restarts once more when spec.containerd leaves the configuration and the proxy drop-in goes with it, then no more', async () => {
    const { run, root } = machine(true);
    expect((await run(base)).restart.result).toBe('success');
    const removed = await run(undefined);
    expect(existsSync(join(root, 'etc/systemd/system/containerd.service.d/machineadm-proxy.conf'))).toBe(false);
    expect(removed.calls).toEqual(['systemctl daemon-reload', 'systemctl restart containerd', 'systemctl is-active containerd']);
    expect(removed.restart.result).toBe('success');
    const again = await run(undefined);
    expect(again.calls).toEqual([]);
    expect(again.restart).toBeUndefined();
  });

  it('restarts after a run that was killed between writing config.toml and recording it', async () => {
    const { run, stateFile } = machine(true);
    await run(base);
    const before = readFileSync(stateFile);
    // The killed run: config.toml has its new content, the state is the one from before.
    await run({ ...base, sandboxImage: 'registry.k8s.io/pause:3.10.1' }, ['prepare/containerd/config']);
    writeFileSync(stateFile, before);
    const next = await run({ ...base, sandboxImage: 'registry.k8s.io/pause:3.10.1' });
    expect(next.calls).toEqual(['systemctl restart containerd', 'systemctl is-active containerd']);
    expect(next.restart.result).toBe('success');
  });

  it('does not restart for hosts.toml changes (containerd reads them on every pull)', async () => {
    const { run } = machine(true);
    await run(base);
    const mirrors = await run({ ...base, registries: { 'docker.io': { mirrors: [{ url: 'https://mirror.example' }] } } });
    expect(mirrors.calls).toEqual([]);
    expect(mirrors.restart.result).toBe('skipped');
  });

  it('does not restart when only the mode of config.toml or the drop-in was put back (containerd reads the same content)', async () => {
    const { run, root } = machine(true);
    await run(base);
    chmodSync(join(root, 'etc/containerd/config.toml'), 0o600);
    chmodSync(join(root, 'etc/systemd/system/containerd.service.d/machineadm-proxy.conf'), 0o600);
    const fixed = await run(base);
    expect(statSync(join(root, 'etc/containerd/config.toml')).mode & 0o777).toBe(0o644);
    expect(fixed.calls).toEqual([]);
    expect(fixed.restart).toMatchObject({ result: 'skipped', message: 'already done' });
  });

  it('tries again on the next run when the restart failed', async () => {
    const { run, proc } = machine(true);
    proc.active = 'failed';
    const failed = await run(base);
    expect(failed.restart.result).toBe('failure');
    expect(failed.restart.error?.message).toContain('containerd is failed after the restart');
    proc.active = 'active';
    const retried = await run(base);
    expect(retried.calls).toContain('systemctl restart containerd');
    expect(retried.restart.result).toBe('success');
  });

  it('says it did not restart when systemd is not running, and does not repeat it', async () => {
    const { run } = machine(false);
    const first = await run(base);
    expect(first.calls).toEqual([]);
    expect(first.restart.result).toBe('warning');
    expect(first.restart.message).toContain('systemd is not running on this machine (no /run/systemd/system)');
    expect((await run(base)).restart).toMatchObject({ result: 'skipped', message: 'already done' });
  });
});
