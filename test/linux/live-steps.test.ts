// The live prepare steps on the real kernel: net.* sysctls are applied inside a fresh network
// namespace (`unshare -n`), read back there, and the host's values are checked unchanged; kernel
// modules are checked against /sys/module and a real modprobe.
import { describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { missingRequirement } from '../support/environment.ts';
import { scratchDir } from '../support/tmp.ts';
import { createHost, RootedFileSystem } from '../../src/host/index.ts';
import { preflightRun } from '../../src/engine/runner.ts';
import { preparePhase } from '../../src/phases/registry.ts';
import { StateStore } from '../../src/engine/state.ts';
import { EventBus } from '../../src/engine/events.ts';
import { SecretScrubber } from '../../src/config/secrets.ts';
import { parseWith } from '../../src/config/schema/dsl.ts';
import { machineConfigSchema } from '../../src/config/schema/index.ts';
import { ConfigError } from '../../src/errors.ts';

const ROOT = join(import.meta.dirname, '..', '..');
const NODE = join(ROOT, 'node_modules', '.bin', 'node');
const SCRIPT = join(import.meta.dirname, 'fixtures', 'run-live-step.ts');

const skipSysctl = missingRequirement({ root: true, commands: ['unshare', 'sysctl', 'ip'] });
const skipModules = missingRequirement({ root: true, commands: ['modprobe'] });

interface StepRun {
  result: string;
  step?: { result: string; message?: string; error?: { message: string; details?: Record<string, unknown> } };
  logs: string[];
  values: Record<string, string>;
}

function hostValue(key: string): string {
  return readFileSync(`/proc/sys/${key.split('.').join('/')}`, 'utf8').trim().split(/\s+/).join(' ');
}

/** Runs the step `times` times inside one new network namespace (after `setup`, a shell command); one result per run. */
function inNetns(dir: string, spec: Record<string, unknown>, stepId: string, keys: string[], times = 1, netns = true, setup = ''): StepRun[] {
  const config = join(dir, `config-${Math.random().toString(36).slice(2)}.json`);
  writeFileSync(config, JSON.stringify({ apiVersion: 'machineadm.cluster.x-k8s.io/v1alpha1', kind: 'MachineConfig', spec }));
  const one = [NODE, SCRIPT, config, join(dir, 'state'), stepId, ...keys].map((a) => `'${a}'`).join(' ');
  const script = [...(setup ? [setup] : []), ...Array.from({ length: times }, () => one)].join('; ');
  const out = execFileSync(netns ? 'unshare' : 'sh', netns ? ['-n', 'sh', '-c', script] : ['-c', script], { encoding: 'utf8', timeout: 60_000 });
  return out.trim().split('\n').map((l) => JSON.parse(l) as StepRun);
}

describe.skipIf(skipSysctl)('prepare/sysctls/apply in a network namespace', () => {
  const dir = skipSysctl ? '' : scratchDir('machineadm-sysctl-');
  const keys = ['net.ipv4.ip_forward', 'net.core.somaxconn', 'net.ipv4.ip_local_port_range'];

  it('sets the values there, reads them back, reports each key, and leaves the host as it was', () => {
    const before = Object.fromEntries(keys.map((k) => [k, hostValue(k)]));
    const want = { 'net.ipv4.ip_forward': before['net.ipv4.ip_forward'] === '1' ? '0' : '1', 'net.core.somaxconn': '1234', 'net.ipv4.ip_local_port_range': '20000 40000' };
    const [first, second] = inNetns(dir, { sysctls: want }, 'prepare/sysctls/apply', keys, 2);
    expect(first!.step?.result).toBe('success');
    expect(first!.values).toEqual(want);
    expect(first!.logs.filter((l) => / applied \(/.test(l))).toHaveLength(3);
    // The second run in the same namespace finds every value in place.
    expect(second!.step).toMatchObject({ result: 'skipped', message: 'already done' });
    expect(Object.fromEntries(keys.map((k) => [k, hostValue(k)]))).toEqual(before);
  });

  it('sets a key of an interface whose name holds a dot (a VLAN such as eth0.100), written with "/" as sysctl -a prints it', () => {
    const vlanDir = scratchDir('machineadm-sysctl-vlan-');
    const key = 'net.ipv4.conf.v/1.forwarding';
    const runs = inNetns(vlanDir, { sysctls: { [key]: '1' } }, 'prepare/sysctls/apply', [key], 2, true, 'ip link add name v.1 type veth peer name v.2 >&2');
    expect(runs[0]!.step?.error?.message).toBeUndefined();
    expect(runs[0]!.step?.result).toBe('success');
    expect(runs[0]!.values[key]).toBe('1');
    expect(runs[1]!.step).toMatchObject({ result: 'skipped', message: 'already done' });
  });

  // The kernel reads numbers as strtoul(..., 0) does and prints port lists sorted and merged, so a
  // value it took can read back in another spelling.
  it('takes a value the kernel keeps in its own spelling (hex, octal, a port list out of order) as applied, and finds it in place on the next run', () => {
    const spellingDir = scratchDir('machineadm-sysctl-spelling-');
    const want = { 'net.core.somaxconn': '0x400', 'net.ipv4.ip_local_port_range': '0100000 60999', 'net.ipv4.ip_local_reserved_ports': '30010,30000-30005,30006' };
    const kernel = { 'net.core.somaxconn': '1024', 'net.ipv4.ip_local_port_range': '32768 60999', 'net.ipv4.ip_local_reserved_ports': '30000-30006,30010' };
    const [first, second] = inNetns(spellingDir, { sysctls: want }, 'prepare/sysctls/apply', Object.keys(want), 2);
    expect(first!.step?.error?.message).toBeUndefined();
    expect(first!.step?.result).toBe('success');
    expect(first!.values).toEqual(kernel);
    expect(second!.step).toMatchObject({ result: 'skipped', message: 'already done' });
  });

  it.each([
    ['an unknown key', { 'net.ipv4.no_such_key': '1' }, 'spec.sysctls["net.ipv4.no_such_key"]: unknown sysctl'],
    ['a read-only key', { 'net.ipv4.conf.all.mc_forwarding': '1' }, 'spec.sysctls["net.ipv4.conf.all.mc_forwarding"]: read-only sysctl'],
    ['a write-only key (an action, not a setting)', { 'vm.drop_caches': '3' }, 'spec.sysctls["vm.drop_caches"]: write-only sysctl'],
  ])('refuses %s before changing anything, naming the field', (_what, bad, message) => {
    const [run] = inNetns(dir, { sysctls: { 'net.core.somaxconn': '1234', ...bad } }, 'prepare/sysctls/apply', ['net.core.somaxconn']);
    expect(run!.step?.result).toBe('failure');
    expect(run!.step?.error?.message).toContain(message);
    expect(run!.values['net.core.somaxconn']).not.toBe('1234');
  });

  it('puts back the keys it changed when the kernel refuses a value (sysctl exits 0 for some refusals)', () => {
    const [run] = inNetns(dir, { sysctls: { 'net.core.somaxconn': '1234', 'net.ipv4.ip_forward': 'abc' } }, 'prepare/sysctls/apply', ['net.core.somaxconn', 'net.ipv4.ip_forward']);
    expect(run!.step?.result).toBe('failure');
    expect(run!.step?.error?.message).toContain('spec.sysctls["net.ipv4.ip_forward"]: "abc" was not accepted (setting key "net.ipv4.ip_forward": Invalid argument');
    expect(run!.step?.error?.details?.sysctls).toMatchObject({ 'net.core.somaxconn': { result: 'restored' }, 'net.ipv4.ip_forward': { result: 'failed' } });
    expect(run!.values['net.core.somaxconn']).not.toBe('1234');
    expect(run!.values['net.ipv4.ip_forward']).toMatch(/^[01]$/);
  });
});

describe.skipIf(skipModules)('prepare/kernel-modules/load on the live kernel', () => {
  const dir = skipModules ? '' : scratchDir('machineadm-modules-');

  it('finds modules that are already in the kernel (loaded or built in) and loads nothing', () => {
    // overlay shows in /sys/module; br_netfilter is built in here without a /sys/module entry.
    const [run] = inNetns(dir, { kernelModules: ['overlay', 'br_netfilter'] }, 'prepare/kernel-modules/load', [], 1, false);
    expect(run!.step).toMatchObject({ result: 'skipped', message: 'already done' });
  });

  it('fails with a clear error naming the field for a module that does not exist', () => {
    const [run] = inNetns(dir, { kernelModules: ['overlay', 'no_such_module_machineadm'] }, 'prepare/kernel-modules/load', [], 1, false);
    expect(run!.step?.result).toBe('failure');
    expect(run!.step?.error?.message).toMatch(/spec\.kernelModules\[1\]: kernel module "no_such_module_machineadm" does not exist for kernel \S+ \(modprobe: FATAL: Module no_such_module_machineadm not found/);
  });

  // The step loads the modules in order and stops at the missing one: those before it stayed
  // loaded, and boot commands had run. modprobe --dry-run finds it before the run changes anything.
  it('refuses a module that does not exist before the first change of the run, naming the field', async () => {
    const { value: config, issues } = parseWith(machineConfigSchema, { apiVersion: 'machineadm.cluster.x-k8s.io/v1alpha1', kind: 'MachineConfig', spec: { kernelModules: ['overlay', 'no_such_module_machineadm'] } });
    if (!config) throw new Error(JSON.stringify(issues));
    const host = createHost({ root: '/', stateDir: join(dir, 'state-preflight') });
    const input = { command: 'prepare', phases: [preparePhase], selection: { only: [], skip: [] }, config, facts: await host.facts(), host, events: new EventBus(), state: new StateStore(new RootedFileSystem(join(dir, 'state-preflight'))), secrets: new SecretScrubber() };
    const refused = await preflightRun(input).then(() => undefined, (error: unknown) => error);
    expect(refused).toBeInstanceOf(ConfigError);
    expect((refused as ConfigError).issues).toEqual([expect.objectContaining({ path: 'spec.kernelModules[1]', message: expect.stringMatching(/^kernel module "no_such_module_machineadm" does not exist for kernel \S+ \(modprobe: FATAL: Module no_such_module_machineadm not found/) })]);
  });
});

