// The run module without the command line: what a run does when it is interrupted, and when it
// leaves the reboot to cloudbase-init.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createHost, RootedFileSystem } from '../../src/host/index.ts';
import { CLOUDBASE_INIT_REBOOT_AND_RERUN, executeRun, type RunRequest } from '../../src/phases/run.ts';
import { reportPhase } from '../../src/phases/registry.ts';
import { InterruptedError } from '../../src/errors.ts';
import type { Step } from '../../src/engine/step.ts';
import { configFrom } from '../report/harness.ts';
import { scratchDir } from '../support/tmp.ts';

function request(root: string, steps: Step[], extra: Partial<RunRequest> = {}, signal?: AbortSignal): RunRequest {
  return {
    command: 'init',
    config: configFrom({}),
    host: createHost({ root, env: {}, ...(signal ? { signal } : {}) }),
    stateFs: new RootedFileSystem(join(root, 'var/lib/machineadm')),
    selection: {},
    force: false,
    console: { mode: 'text', write: () => undefined },
    phases: [{ name: 'prepare', summary: 'test', steps }, reportPhase],
    ...extra,
  };
}

function bootAs(root: string, bootId: string): void {
  mkdirSync(join(root, 'proc/sys/kernel/random'), { recursive: true });
  writeFileSync(join(root, 'proc/sys/kernel/random/boot_id'), bootId);
}

const json = (path: string) => JSON.parse(readFileSync(path, 'utf8'));

describe('executeRun', () => {
  it('ends an interrupted run with 128 + the signal, naming the step, and runs no further step', async () => {
    const root = scratchDir();
    const controller = new AbortController();
    const ran: string[] = [];
    const waits: Step = {
      id: 'waits',
      summary: 'waits for a long time',
      check: async () => ({ done: false, changes: [] }),
      apply: async (ctx) => {
        ran.push('waits');
        setTimeout(() => controller.abort(new InterruptedError('SIGINT')), 20);
        await ctx.host.sleep(60_000);
      },
    };
    const after: Step = { id: 'after', summary: 'never runs', check: async () => ({ done: false, changes: [] }), apply: async () => void ran.push('after') };
    const started = Date.now();
    const report = await executeRun(request(root, [waits, after], {}, controller.signal));
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(report.exitCode).toBe(130);
    expect(ran).toEqual(['waits']);
    expect(report.error?.message).toBe('interrupted by SIGINT during step prepare/waits');
    expect(json(join(root, 'run/machineadm/result.json'))).toMatchObject({ state: 'finished', exitCode: 130, error: { stepId: 'prepare/waits', details: { signal: 'SIGINT' } } });
    expect(json(join(root, 'var/lib/machineadm/state.json')).runs.at(-1).result).toBe('interrupted');
  });

  it('with the reboot left to cloudbase-init, ends with 1003, registers nothing, and goes on as the same run after the reboot', async () => {
    const root = scratchDir();
    bootAs(root, 'first-boot');
    let rebooted = false;
    const needsReboot: Step = {
      id: 'feature',
      summary: 'a feature that needs a restart',
      check: async () => ({ done: rebooted, changes: [] }),
      apply: async () => ({ rebootRequired: 'the feature is installed; Windows restarts to finish it' }),
    };
    const resume = { argv: ['machineadm', 'init'], maxReboots: 3, reboot: true, byCloudbaseInit: true };
    const first = await executeRun(request(root, [needsReboot], { resume }));
    expect(first.exitCode).toBe(CLOUDBASE_INIT_REBOOT_AND_RERUN);
    expect(await createHost({ root }).resume.registered()).toBeUndefined();
    const before = json(join(root, 'var/lib/machineadm/result.json'));
    bootAs(root, 'second-boot');
    rebooted = true;
    const second = await executeRun(request(root, [needsReboot], { resume }));
    expect(second.exitCode).toBe(0);
    expect(second.outcome.runId).toBe(first.outcome.runId);
    // After the reboot nothing was left to do (the feature was done), but the run installed it
    // before the reboot: one run, whose result is the worst of both parts (the warning that asked
    // for the reboot is answered by the resumed part) and whose time is theirs. Each part's phases
    // keep what they saw.
    const result = json(join(root, 'var/lib/machineadm/result.json'));
    expect(result).toMatchObject({ runId: first.outcome.runId, result: 'success', exitCode: 0, resumedAt: [expect.any(String)] });
    expect(result.phases.map((p: { name: string; result: string }) => [p.name, p.result])).toEqual([['prepare', 'warning'], ['prepare', 'skipped'], ['report', 'skipped']]);
    expect(result.durationMs).toBeGreaterThanOrEqual(before.durationMs + second.outcome.durationMs);
  });
});
