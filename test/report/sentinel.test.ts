import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SENTINEL_CONTENT, SENTINEL_WINDOWS, sentinelPath } from '../../src/report/sentinel.ts';
import { configFrom, runWithReporting, step } from './harness.ts';
import { scratchDir } from '../support/tmp.ts';

const sentinel = (root: string) => join(root, 'run/cluster-api/bootstrap-success.complete');

describe('the Cluster API sentinel', () => {
  it.each<[string, Parameters<typeof runWithReporting>[0] extends infer O ? Omit<O & object, 'root' | 'config'> : never, Record<string, unknown>, boolean]>([
    ['is written after a successful provisioning', { provision: [step('join')] }, {}, true],
    ['is written when provisioning was already done (its step skipped)', { provision: [step('join', { check: async () => ({ done: true, changes: [] }) })] }, {}, true],
    ['is not written when provisioning failed', { provision: [step('join', { fail: new Error('no') })] }, {}, false],
    ['is not written when an earlier phase failed', { prepare: [step('files', { fail: new Error('disk full') })], provision: [step('join')] }, {}, false],
    ['is not written when no provisioning step ran', { prepare: [step('files')] }, {}, false],
    ['is not written when the configuration turns it off', { provision: [step('join')] }, { report: { clusterAPISentinel: false } }, false],
    ['is not written when provisioning finished with a warning', { provision: [step('join', { apply: async () => ({ warning: 'joined, or maybe not' }) })] }, {}, false],
  ])('%s', async (_name, run, spec, written) => {
    const root = scratchDir();
    const result = await runWithReporting({ root, config: configFrom(spec), ...run });
    expect(existsSync(sentinel(root))).toBe(written);
    if (written) expect(readFileSync(sentinel(root), 'utf8')).toBe(SENTINEL_CONTENT);
    const report = result.outcome.phases.find((p) => p.name === 'report')!;
    expect(report.steps.map((s) => s.id)).toEqual(spec.report ? [] : ['report/sentinel']);
  });

  it.each([
    ['a configuration without spec.kubernetes', {}, 'the configuration has no spec.kubernetes: nothing joins a cluster, so there is no bootstrap to report'],
    ['a kubernetes section whose steps were left out', { kubernetes: { controlPlaneEndpoint: '10.0.0.10:6443', token: 'abcdef.0123456789abcdef', caCertHashes: ['sha256:' + 'ab'.repeat(32)] } }, 'no provisioning step ran in this run (left out by --only/--skip)'],
  ])('says why it is skipped for %s', async (_name, spec, reason) => {
    const root = scratchDir();
    const result = await runWithReporting({ root, config: configFrom(spec), prepare: [step('files')] });
    const sentinelStep = result.outcome.phases.find((p) => p.name === 'report')!.steps[0]!;
    expect(sentinelStep).toMatchObject({ id: 'report/sentinel', result: 'skipped', message: reason });
  });

  it('is written by "machineadm report" alone when the last run provisioned successfully', async () => {
    const root = scratchDir();
    await runWithReporting({ root, config: configFrom({ report: { clusterAPISentinel: false } }), provision: [step('join')] });
    expect(existsSync(sentinel(root))).toBe(false);
    await runWithReporting({ root, config: configFrom({}), command: 'report' });
    expect(readFileSync(sentinel(root), 'utf8')).toBe('success\n');
  });

  it('is not written by "machineadm report" alone after a failed run', async () => {
    const root = scratchDir();
    await runWithReporting({ root, config: configFrom({ report: { clusterAPISentinel: false } }), provision: [step('join', { fail: new Error('no') })] });
    await runWithReporting({ root, config: configFrom({}), command: 'report' });
    expect(existsSync(sentinel(root))).toBe(false);
  });

  it.each([
    ['a join skipped because it could not run here (a scratch --root)', [step('join', { check: async () => ({ done: false, changes: [], skipReason: 'kubeadm runs only at the live root' }) })], /provision\/join did not run/],
    ['a join that failed, after an earlier one succeeded', [step('join', { fail: new Error('token expired') })], /provision\/join failed|token expired/],
    ['a join that finished with a warning', [step('join', { apply: async () => ({ warning: 'joined, or maybe not' }) })], /warning/],
  ])('is not written by "machineadm report" alone after %s', async (_name, provision, reason) => {
    const root = scratchDir();
    // An earlier run provisioned the machine; the last one did not.
    await runWithReporting({ root, config: configFrom({ report: { clusterAPISentinel: false } }), provision: [step('join')] });
    await runWithReporting({ root, config: configFrom({ report: { clusterAPISentinel: false } }), provision });
    const result = await runWithReporting({ root, config: configFrom({}), command: 'report' });
    expect(existsSync(sentinel(root))).toBe(false);
    const sentinelStep = result.outcome.phases.find((p) => p.name === 'report')!.steps[0]!;
    expect(sentinelStep).toMatchObject({ result: 'skipped' });
    expect(sentinelStep.message).toMatch(/the last provisioning \(run [0-9a-f-]+\) did not succeed/);
    expect(sentinelStep.message).toMatch(reason);
  });

  it('is not written by "machineadm report" alone on a machine where nothing was provisioned', async () => {
    const root = scratchDir();
    const result = await runWithReporting({ root, config: configFrom({}), command: 'report' });
    expect(existsSync(sentinel(root))).toBe(false);
    expect(result.outcome.phases[0]!.steps[0]!.message).toBe('no provisioning is recorded on this machine (see machineadm status)');
  });

  it('lives at C:\\run\\cluster-api on Windows', () => {
    expect(sentinelPath('windows')).toBe(SENTINEL_WINDOWS);
    expect(SENTINEL_WINDOWS).toBe('C:\\run\\cluster-api\\bootstrap-success.complete');
    expect(sentinelPath('linux')).toBe('/run/cluster-api/bootstrap-success.complete');
  });
});
