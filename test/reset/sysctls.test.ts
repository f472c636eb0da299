// reset/sysctls/apply on the real kernel, inside a fresh network namespace: the values before
// machineadm's first change of each key come back (a second prepare with other values does not
// move that record), and a second reset changes nothing. The host's values stay as they were.
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { missingRequirement } from '../support/environment.ts';
import { scratchDir } from '../support/tmp.ts';

const ROOT = join(import.meta.dirname, '..', '..');
const NODE = join(ROOT, 'node_modules', '.bin', 'node');
const SCRIPT = join(ROOT, 'test', 'linux', 'fixtures', 'run-live-step.ts');
const skip = missingRequirement({ root: true, commands: ['unshare', 'sysctl'] });

const hostValue = (key: string): string => readFileSync(`/proc/sys/${key.split('.').join('/')}`, 'utf8').trim().split(/\s+/).join(' ');

describe.skipIf(skip)('reset/sysctls/apply in a network namespace', () => {
  it('sets each key back to its value before the first run, and a second reset changes nothing', () => {
    const dir = scratchDir('machineadm-reset-sysctl-');
    const keys = ['net.core.somaxconn', 'net.ipv4.ip_local_port_range'];
    const host = Object.fromEntries(keys.map((k) => [k, hostValue(k)]));
    const config = (name: string, sysctls: Record<string, string>): string => {
      const path = join(dir, `${name}.json`);
      writeFileSync(path, JSON.stringify({ apiVersion: 'machineadm.cluster.x-k8s.io/v1alpha1', kind: 'MachineConfig', spec: { sysctls } }));
      return path;
    };
    const first = config('first', { 'net.core.somaxconn': '1234', 'net.ipv4.ip_local_port_range': '20000 40000' });
    const second = config('second', { 'net.core.somaxconn': '2345', 'net.ipv4.ip_local_port_range': '20000 40000' });
    const state = join(dir, 'state');
    const step = (configFile: string, id: string) => [NODE, SCRIPT, configFile, state, id, ...keys].map((a) => `'${a}'`).join(' ');
    // The namespace's own values before anything: read there by the first line.
    const script = [`cat /proc/sys/net/core/somaxconn`, step(first, 'prepare/sysctls/apply'), step(second, 'prepare/sysctls/apply'), step(second, 'reset/sysctls/apply'), step(second, 'reset/sysctls/apply')].join('; ');
    const [initial, ...lines] = execFileSync('unshare', ['-n', 'sh', '-c', script], { encoding: 'utf8', timeout: 60_000 }).trim().split('\n');
    const [prepared, preparedAgain, reset, resetAgain] = lines.map((l) => JSON.parse(l) as { step?: { result: string; message?: string }; values: Record<string, string> });
    expect(prepared!.values['net.core.somaxconn']).toBe('1234');
    expect(preparedAgain!.values['net.core.somaxconn']).toBe('2345');
    expect(reset!.step?.result).toBe('success');
    expect(reset!.values['net.core.somaxconn']).toBe(initial!.trim());
    expect(reset!.values['net.ipv4.ip_local_port_range']).not.toBe('20000 40000');
    expect(resetAgain!.step).toMatchObject({ result: 'skipped', message: 'already done' });
    expect(Object.fromEntries(keys.map((k) => [k, hostValue(k)]))).toEqual(host);
  });
});
