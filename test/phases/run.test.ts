// The run module without the command line: what a run does when it is interrupted, when it leaves
// the reboot to cloudbase-init, and which run goes on after a reboot.
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

  it('ends a run interrupted during a step that asks for a reboot as interrupted: exit 130, no resume registered, no restart, and the reboot still awaited', async () => {
    const root = scratchDir();
    bootAs(root, 'first-boot');
    const controller = new AbortController();
    const needsReboot: Step = {
      id: 'feature',
      summary: 'a feature that needs a restart',
      check: async () => ({ done: false, changes: [] }),
      apply: async () => {
        controller.abort(new InterruptedError('SIGINT'));
        return { rebootRequired: 'the feature is installed' };
      },
    };
    const restarts: string[] = [];
    const machine = createHost({ root, env: {}, signal: controller.signal });
    const host = { ...machine, facts: async () => ({ ...(await machine.facts()), liveRoot: true }), restart: async (why: string) => void restarts.push(why) };
    const resume = { argv: ['machineadm', 'init'], maxReboots: 3, reboot: true };
    const report = await executeRun(request(root, [needsReboot], { resume, host }));
    expect(report.exitCode).toBe(130);
    expect(report.error?.message).toBe('interrupted by SIGINT during step prepare/feature');
    expect(restarts).toEqual([]);
    expect(await createHost({ root }).resume.registered()).toBeUndefined();
    expect(json(join(root, 'run/machineadm/result.json'))).toMatchObject({ state: 'finished', result: 'failure', exitCode: 130 });
    const state = json(join(root, 'var/lib/machineadm/state.json'));
    expect(state.runs.at(-1).result).toBe('interrupted');
    expect(state.pendingReboot).toMatchObject({ stepId: 'prepare/feature', bootId: 'first-boot' });

    const again = await executeRun(request(root, [needsReboot], { resume }));
    expect(again.exitCode).toBe(4);
    expect(again.error?.message).toContain('has not rebooted yet');
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

  // A package that needs a reboot (done once `rebooted` says so), and the resume of the init that installs it.
  const kernelStep = (rebooted: () => boolean = () => false): Step => ({
    id: 'kernel',
    summary: 'a package that needs a reboot',
    check: async () => ({ done: rebooted(), changes: [] }),
    apply: async () => ({ rebootRequired: 'a new kernel is installed' }),
  });
  const INIT_RESUME = { argv: ['machineadm', 'init'], maxReboots: 3, reboot: false };

  it('runs reset after the reboot an init asked for as a run of its own: its own run id and a result of reset only', async () => {
    const root = scratchDir();
    bootAs(root, 'first-boot');
    const needsReboot = kernelStep();
    const resume = INIT_RESUME;
    const init = await executeRun(request(root, [needsReboot], { resume }));
    expect(init.exitCode).toBe(4);
    bootAs(root, 'second-boot');
    const undo: Step = { id: 'undo', summary: 'undoes', check: async () => ({ done: false, changes: [] }), apply: async () => undefined };
    const reset = await executeRun(request(root, [], { command: 'reset', phases: [{ name: 'reset', summary: 'test', steps: [undo] }] }));
    expect(reset.exitCode).toBe(0);
    expect(reset.outcome.runId).not.toBe(init.outcome.runId);
    const result = json(join(root, 'run/machineadm/result.json'));
    expect(result).toMatchObject({ runId: reset.outcome.runId, command: 'reset', result: 'success', exitCode: 0 });
    expect(result.resumedAt).toBeUndefined();
    expect(result.phases.map((p: { name: string }) => p.name)).toEqual(['reset']);
  });

  it('takes away the resume of the init it undoes before any of its steps, so a reset that fails does not start that init again at the next boot', async () => {
    const root = scratchDir();
    bootAs(root, 'first-boot');
    const needsReboot = kernelStep();
    const init = await executeRun(request(root, [needsReboot], { resume: INIT_RESUME }));
    expect(init.exitCode).toBe(4);
    const host = createHost({ root });
    expect(await host.resume.registered()).toEqual(['machineadm', 'init']);
    const failing: Step = { id: 'undo', summary: 'undoes', check: async () => ({ done: false, changes: [] }), apply: async () => { throw new Error('userdel exited with code 8'); } };
    const reset = await executeRun(request(root, [], { command: 'reset', phases: [{ name: 'reset', summary: 'test', steps: [failing] }] }));
    expect(reset.exitCode).toBe(1);
    expect(await host.resume.registered()).toBeUndefined();
    expect(json(join(root, 'var/lib/machineadm/state.json')).pendingReboot).toBeUndefined();
  });

  it('leaves the resume of the run that asked for the reboot to that run when another command runs first after the reboot', async () => {
    const root = scratchDir();
    bootAs(root, 'first-boot');
    let rebooted = false;
    const needsReboot = kernelStep(() => rebooted);
    const resume = INIT_RESUME;
    const init = await executeRun(request(root, [needsReboot], { resume }));
    expect(init.exitCode).toBe(4);
    bootAs(root, 'second-boot');
    rebooted = true;
    const host = createHost({ root });
    const report = await executeRun(request(root, [], { command: 'report', resume: { ...resume, argv: ['machineadm', 'report'] }, phases: [reportPhase] }));
    expect(report.exitCode).toBe(0);
    expect(report.outcome.runId).not.toBe(init.outcome.runId);
    expect(json(join(root, 'run/machineadm/report-result.json'))).toMatchObject({ runId: report.outcome.runId, command: 'report' });
    expect(await host.resume.registered()).toEqual(['machineadm', 'init']);
    expect(json(join(root, 'var/lib/machineadm/state.json')).pendingReboot).toMatchObject({ runId: init.outcome.runId });

    const resumed = await executeRun(request(root, [needsReboot], { resume }));
    expect(resumed.exitCode).toBe(0);
    expect(resumed.outcome.runId).toBe(init.outcome.runId);
    expect(json(join(root, 'run/machineadm/result.json'))).toMatchObject({ runId: init.outcome.runId, resumedAt: [expect.any(String)] });
    expect(await host.resume.registered()).toBeUndefined();
    expect(json(join(root, 'var/lib/machineadm/state.json')).pendingReboot).toBeUndefined();
  });

  it('leaves the resume to the run that asked for the reboot however many runs of another command waited for the reboot before it', async () => {
    const root = scratchDir();
    bootAs(root, 'first-boot');
    let rebooted = false;
    const needsReboot = kernelStep(() => rebooted);
    const resume = INIT_RESUME;
    const init = await executeRun(request(root, [needsReboot], { resume }));
    expect(init.exitCode).toBe(4);
    const reportRequest = () => request(root, [], { command: 'report', resume: { ...resume, argv: ['machineadm', 'report'] }, phases: [reportPhase] });
    // A report timer while the restart waits (--no-reboot): more runs than the state file keeps.
    for (let i = 0; i < 60; i++) expect((await executeRun(reportRequest())).exitCode).toBe(4);
    bootAs(root, 'second-boot');
    rebooted = true;
    const host = createHost({ root });
    const report = await executeRun(reportRequest());
    expect(report.exitCode).toBe(0);
    expect(report.outcome.runId).not.toBe(init.outcome.runId);
    expect(await host.resume.registered()).toEqual(['machineadm', 'init']);
    expect(json(join(root, 'var/lib/machineadm/state.json')).pendingReboot).toMatchObject({ runId: init.outcome.runId });

    const resumed = await executeRun(request(root, [needsReboot], { resume }));
    expect(resumed.exitCode).toBe(0);
    expect(resumed.outcome.runId).toBe(init.outcome.runId);
    expect(await host.resume.registered()).toBeUndefined();
  });
});
