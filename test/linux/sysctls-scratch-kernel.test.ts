// prepare/sysctls/apply against a kernel that cannot be arranged for real: sysctl timing out on one
// key (a timeout throws instead of returning a result), and a plan before br_netfilter is loaded
// (built in on this machine, so net.bridge.* always exists here). /proc/sys and /sys/module are a
// scratch directory taken for the live root, and sysctl is a stand-in that writes there.
import { describe, expect, it } from 'vitest';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { scratchDir } from '../support/tmp.ts';
import { LiveLikeFileSystem } from '../support/live-like-fs.ts';
import { BlockDevices, RootedFileSystem, ProcessRunner, type Facts, type Host, type RunOptions, type RunResult } from '../../src/host/index.ts';
import { CommandError } from '../../src/errors.ts';
import { computePlan, runPhases, type RunnerInput } from '../../src/engine/runner.ts';
import { preparePhase } from '../../src/phases/registry.ts';
import { StateStore } from '../../src/engine/state.ts';
import { EventBus } from '../../src/engine/events.ts';
import { SecretScrubber } from '../../src/config/secrets.ts';
import { parseWith } from '../../src/config/schema/dsl.ts';
import { machineConfigSchema } from '../../src/config/schema/index.ts';
import { systemdResume } from '../../src/host/resume.ts';

class SysctlStandIn extends ProcessRunner {
  readonly root: string;
  readonly hangsOn: string;
  constructor(root: string, hangsOn: string) {
    super({});
    this.root = root;
    this.hangsOn = hangsOn;
  }
  override async run(argv: readonly [string, ...string[]], _options: RunOptions = {}): Promise<RunResult> {
    const [key = '', value = ''] = (argv[2] ?? '').split('=');
    if (argv[0] !== 'sysctl' || argv[1] !== '-w') throw new Error(`unexpected command ${argv.join(' ')}`);
    if (key === this.hangsOn) throw new CommandError(`${argv.join(' ')} timed out after 30000 ms`, { argv, timedOut: true });
    writeFileSync(join(this.root, 'proc/sys', ...key.split('.')), `${value}\n`);
    return { argv, exitCode: 0, stdout: '', stderr: '', durationMs: 1 };
  }
}

function scratchKernel(values: Record<string, string>, hangsOn = '') {
  const dir = scratchDir('machineadm-sysctl-kernel-');
  const root = join(dir, 'root');
  for (const [key, value] of Object.entries(values)) {
    const file = join(root, 'proc/sys', ...key.split('.'));
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, `${value}\n`, { mode: 0o644 });
  }
  const fs = new LiveLikeFileSystem(root);
  const proc = new SysctlStandIn(root, hangsOn);
  const facts: Facts = { os: 'linux', arch: 'x64', hostname: 'node-1', privileged: true, liveRoot: true };
  const host = { fs, local: fs, proc, devices: new BlockDevices('skip'), env: {}, offline: false, now: () => new Date(), sleep: async () => {}, facts: async () => facts, resume: systemdResume(fs), restart: async () => { throw new Error('a test never restarts the machine'); } } satisfies Host;
  const input = (spec: Record<string, unknown>): RunnerInput => {
    const { value: config, issues } = parseWith(machineConfigSchema, { apiVersion: 'machineadm.cluster.x-k8s.io/v1alpha1', kind: 'MachineConfig', spec });
    if (!config) throw new Error(JSON.stringify(issues));
    return { command: 'prepare', phases: [preparePhase], selection: { only: ['prepare/sysctls/apply'], skip: [] }, config, facts, host, events: new EventBus(), state: new StateStore(new RootedFileSystem(join(dir, 'state'))), secrets: new SecretScrubber() };
  };
  return { root, input };
}

describe('prepare/sysctls/apply on a scratch kernel', () => {
  it('puts back the keys it already changed when sysctl throws, and fails the step', async () => {
    const { root, input } = scratchKernel({ 'net.core.somaxconn': '4096', 'net.ipv4.ip_forward': '0' }, 'net.ipv4.ip_forward');
    const outcome = await runPhases(input({ sysctls: { 'net.core.somaxconn': '1234', 'net.ipv4.ip_forward': '1' } }));
    const step = outcome.phases[0]!.steps.find((s) => s.id === 'prepare/sysctls/apply')!;
    expect(step.result).toBe('failure');
    expect(step.error?.message).toContain('timed out');
    // somaxconn (sorted first) was set to 1234 before ip_forward hung; it must be 4096 again.
    expect(readFileSync(join(root, 'proc/sys/net/core/somaxconn'), 'utf8').trim()).toBe('4096');
  });

  it('plans a net.bridge key that appears only once br_netfilter is loaded, instead of failing the plan', async () => {
    const { input } = scratchKernel({ 'net.ipv4.ip_forward': '0' });
    const plan = await computePlan(input({ kernelModules: ['br_netfilter'], sysctls: { 'net.ipv4.ip_forward': '1', 'net.bridge.bridge-nf-call-iptables': '1' } }));
    const step = plan.phases[0]!.steps.find((s) => s.id === 'prepare/sysctls/apply')!;
    expect(step.status).toBe('change');
    expect(step.changes.map((c) => c.target)).toEqual(['net.ipv4.ip_forward', 'net.bridge.bridge-nf-call-iptables']);
    expect(step.changes[1]!.detail).toContain('once the kernel modules are loaded');
  });

  it.each([
    ['a plan without modules to load', (i: RunnerInput) => computePlan(i).then(() => 'planned')],
    ['a run', (i: RunnerInput) => runPhases(i).then((o) => o.phases[0]!.steps[0]!.error?.message ?? 'no error')],
  ])('still refuses a key the kernel does not have in %s', async (_what, go) => {
    const { input } = scratchKernel({ 'net.ipv4.ip_forward': '0' });
    const said = await go(input({ sysctls: { 'net.bridge.bridge-nf-call-iptables': '1' } })).catch((e: Error) => e.message);
    expect(said).toContain('spec.sysctls["net.bridge.bridge-nf-call-iptables"]: unknown sysctl');
  });
});
