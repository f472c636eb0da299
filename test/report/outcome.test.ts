import { chmodSync, mkdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ExitCode, StepDetailsError } from '../../src/errors.ts';
import { RESULT_FILE, RUN_DIR, RunResultBuilder, STATUS_DELAY_MS, STATUS_FILE, readLastResult, type RunResultDocument } from '../../src/report/outcome.ts';
import type { MachineEvent } from '../../src/engine/events.ts';
import { validateJsonSchema } from './json-schema.ts';
import { configFrom, runWithReporting, step } from './harness.ts';
import { scratchDir } from '../support/tmp.ts';
import { stubWallClock } from '../support/wall-clock.ts';

const schema = JSON.parse(readFileSync(new URL('../../docs/schema/result-v1.json', import.meta.url), 'utf8')) as Record<string, unknown>;
/**
 * Waits, idle, until `ms` have passed on the process's clock. A timer alone may end sooner: it is
 * due in whole milliseconds from the event loop's time, taken when the loop last woke.
 */
async function idleFor(ms: number): Promise<void> {
  const until = performance.now() + ms;
  while (performance.now() < until) await new Promise((r) => setTimeout(r, Math.ceil(until - performance.now())));
}
const read = (root: string, path: string) => JSON.parse(readFileSync(join(root, path), 'utf8')) as RunResultDocument;

describe('the result files', () => {
  afterEach(() => vi.unstubAllGlobals());

  it('hold a failed run with its phases, steps, error details and timings, valid against the published schema', async () => {
    const root = scratchDir();
    let statusSeen: RunResultDocument | undefined;
    const run = await runWithReporting({
      root,
      config: configFrom({}),
      prepare: [
        step('first'),
        step('already', { check: async () => ({ done: true, changes: [] }) }),
        step('peek', {
          // By now status.json shows the run in progress (written between events, not only at the end):
          // a step that has run for STATUS_DELAY_MS is shown running.
          apply: async () => {
            await new Promise((r) => setTimeout(r, STATUS_DELAY_MS + 100));
            statusSeen = read(root, STATUS_FILE);
            return {};
          },
        }),
      ],
      provision: [step('join', { fail: new StepDetailsError('kubeadm join exited 1', { kubeadmPhase: 'kubelet-start', exitCode: 1, outputTail: 'line 1\nline 2\n[kubelet-start] timed out' }) })],
    });
    expect(statusSeen?.state).toBe('running');
    expect(statusSeen?.result).toBeUndefined();
    expect(statusSeen?.phases[0]?.steps.map((s) => [s.id, s.state])).toEqual([
      ['prepare/first', 'finished'],
      ['prepare/already', 'finished'],
      ['prepare/peek', 'running'],
    ]);

    const result = read(root, RESULT_FILE);
    expect(validateJsonSchema(schema, result)).toEqual([]);
    expect(validateJsonSchema(schema, read(root, STATUS_FILE))).toEqual([]);
    expect(result).toMatchObject({ kind: 'MachineadmRunResult', command: 'init', state: 'finished', result: 'failure', exitCode: 1, failedSteps: ['provision/join'] });
    expect(result.machine).toMatchObject({ hostname: 'test-node', nodeName: 'test-node', os: 'linux' });
    expect(result.phases.map((p) => [p.name, p.result])).toEqual([
      ['prepare', 'success'],
      ['provision', 'failure'],
      ['report', 'skipped'],
    ]);
    const join_ = result.phases[1]!.steps[0]!;
    expect(join_.error).toMatchObject({ code: 1, stepId: 'provision/join', details: { kubeadmPhase: 'kubelet-start', exitCode: 1 } });
    expect(result.error?.message).toContain('kubeadm join exited 1');
    expect(result.runId).toBe(run.outcome.runId);
    // Two clocks (the wall clock's times, the process clock's duration) read at nearly the same
    // moments: apart by what a loaded machine's scheduler adds between the two reads.
    expect(Math.abs(Date.parse(result.finishedAt!) - Date.parse(result.startedAt) - result.durationMs!)).toBeLessThan(1000);
    // The copy in the state dir survives a reboot (which clears /run).
    expect(JSON.parse(readFileSync(join(root, 'var/lib/machineadm/result.json'), 'utf8'))).toEqual(result);
    expect(await readLastResult(run.host.fs, run.stateFs)).toEqual(result);
  });

  it('show where the run went: its start after the process began, each step in turn with the time it waited rather than worked', async () => {
    const root = scratchDir();
    await runWithReporting({
      root,
      config: configFrom({}),
      prepare: [
        // Waits for an answer (a timer here; the network or kubeadm in a run): the process is idle.
        step('waits', { apply: async () => (await idleFor(400), {}) }),
        // Works without waiting: the process is busy the whole time.
        step('works', {
          apply: async () => {
            for (const end = performance.now() + 300; performance.now() < end; );
            return {};
          },
        }),
      ],
    });
    const result = read(root, RESULT_FILE);
    expect(validateJsonSchema(schema, result)).toEqual([]);
    const path = result.criticalPath!;
    expect(path.steps.map((s) => s.id)).toEqual(['prepare/waits', 'prepare/works', 'report/sentinel']);
    const [waits, works] = path.steps;
    expect(waits!.durationMs).toBeGreaterThanOrEqual(400);
    expect(waits!.waitingMs).toBeGreaterThanOrEqual(300);
    expect(works!.durationMs).toBeGreaterThanOrEqual(300);
    expect(works!.waitingMs).toBeLessThan(100);
    // In process time: the run starts after the process did, each step after the one before, and
    // the run ends after the last; what is not in a step is the runner's own time.
    expect(path.startMs).toBeGreaterThan(0);
    expect(waits!.startMs).toBeGreaterThanOrEqual(path.startMs);
    expect(works!.startMs).toBeGreaterThanOrEqual(waits!.startMs + waits!.durationMs);
    const last = path.steps.at(-1)!;
    expect(path.endMs).toBeGreaterThanOrEqual(last.startMs + last.durationMs);
    expect(path.betweenStepsMs).toBe(path.endMs! - path.startMs - path.steps.reduce((sum, s) => sum + s.durationMs, 0));
    expect(path.waitingMs).toBeGreaterThanOrEqual(waits!.waitingMs);
  });

  // A boot's start is mostly waiting for the probes of containerd and kubeadm (processes starting),
  // and partly machineadm's own loading: the result tells the two apart.
  it("show how much of the run's own start the process waited rather than worked", async () => {
    const root = scratchDir();
    const idleBefore = performance.eventLoopUtilization().idle;
    // Before the run: waits (as for a probe), then works.
    await idleFor(300);
    for (const end = performance.now() + 300; performance.now() < end; );
    await runWithReporting({ root, config: configFrom({}), prepare: [step('a')] });
    const path = read(root, RESULT_FILE).criticalPath!;
    expect(path.startWaitingMs).toBeGreaterThanOrEqual(Math.round(idleBefore) + 250);
    expect(path.startWaitingMs).toBeLessThanOrEqual(path.startMs);
    // The work is not counted as waiting.
    expect(path.startMs - path.startWaitingMs!).toBeGreaterThanOrEqual(300);
  });

  it('show when the work of a step began ahead of its turn, the step itself in turn', async () => {
    const root = scratchDir();
    await runWithReporting({
      root,
      config: configFrom({}),
      prepare: [
        step('before', { overtakable: true, apply: async () => (await new Promise((r) => setTimeout(r, 200)), {}) }),
        step('downloads', { begin: () => ({ startMs: performance.now(), cancel: async () => undefined }) }),
      ],
    });
    const result = read(root, RESULT_FILE);
    expect(validateJsonSchema(schema, result)).toEqual([]);
    const [before, downloads] = result.criticalPath!.steps;
    expect(before!.earlyStartMs).toBeUndefined();
    // Began with the run, before the step before it; its own turn comes after that step.
    expect(downloads!.earlyStartMs).toBeLessThanOrEqual(before!.startMs);
    expect(downloads!.startMs).toBeGreaterThanOrEqual(before!.startMs + before!.durationMs);
  });

  it('keep each step in its place and length when the wall clock is set back an hour mid-run', async () => {
    // A boot's first time sync may set the clock while machineadm runs: here, during a step.
    const clock = stubWallClock();
    const root = scratchDir();
    const pause = async () => (await idleFor(60), {});
    await runWithReporting({
      root,
      config: configFrom({}),
      prepare: [
        step('first', { apply: pause }),
        step('synced', { apply: async () => (clock.shift(-3_600_000), pause()) }),
        step('after', { apply: pause }),
      ],
    });
    const result = read(root, RESULT_FILE);
    expect(validateJsonSchema(schema, result)).toEqual([]);
    const steps = result.criticalPath!.steps.filter((s) => s.id.startsWith('prepare/'));
    expect(steps.map((s) => s.id)).toEqual(['prepare/first', 'prepare/synced', 'prepare/after']);
    for (const [i, s] of steps.entries()) {
      expect(s.durationMs).toBeGreaterThanOrEqual(60);
      expect(s.durationMs).toBeLessThan(10_000);
      if (i > 0) expect(s.startMs).toBeGreaterThanOrEqual(steps[i - 1]!.startMs + steps[i - 1]!.durationMs);
    }
    expect(result.criticalPath!.endMs! - result.criticalPath!.startMs).toBeLessThan(10_000);
  });

  it('give, for a run resumed after a reboot, the critical path of the process that resumed it', () => {
    let seq = 0;
    const at = (ms: number): string => new Date(Date.UTC(2026, 0, 1) + ms).toISOString();
    const event = (ms: number, fields: Partial<MachineEvent> & Pick<MachineEvent, 'type'>): MachineEvent => ({ id: `run1.${String(++seq).padStart(6, '0')}`, time: at(ms), runId: 'run1', command: 'init', ...fields });
    const identity = { hostname: 'n', nodeName: 'n', machineadmVersion: '0.1.0' };
    // One process's part of the run: it starts `startMs` after the process, runs one step from
    // `stepAt` for `durationMs` (waiting `waitingMs`), and ends at `endAt` (event times from `t0`).
    const part = (builder: RunResultBuilder, t0: number, p: { startMs: number; phase: string; step: string; stepAt: number; durationMs: number; waitingMs: number; endAt: number; runWaitingMs: number }): void => {
      for (const e of [
        event(t0, { type: 'run.started', sinceStartMs: p.startMs }),
        event(t0, { type: 'phase.started', phase: p.phase }),
        event(t0 + p.stepAt, { type: 'step.started', phase: p.phase, step: p.step }),
        event(t0 + p.stepAt + p.durationMs, { type: 'step.finished', phase: p.phase, step: p.step, result: 'success', durationMs: p.durationMs, waitingMs: p.waitingMs }),
        event(t0 + p.endAt, { type: 'run.finished', result: 'success', durationMs: p.endAt, waitingMs: p.runWaitingMs, sinceStartMs: p.startMs + p.endAt }),
      ])
        builder.add(e);
    };
    const first = new RunResultBuilder(identity);
    part(first, 0, { startMs: 120, phase: 'prepare', step: 'prepare/feature', stepAt: 10, durationMs: 30, waitingMs: 25, endAt: 50, runWaitingMs: 30 });
    expect(first.document?.criticalPath).toEqual({ startMs: 120, endMs: 170, waitingMs: 30, betweenStepsMs: 20, steps: [{ id: 'prepare/feature', startMs: 130, durationMs: 30, waitingMs: 25 }] });
    // After the reboot: a new process, started 80 ms before it resumed the run.
    const resumed = new RunResultBuilder(identity, first.document);
    part(resumed, 60_000, { startMs: 80, phase: 'provision', step: 'provision/join', stepAt: 5, durationMs: 100, waitingMs: 90, endAt: 110, runWaitingMs: 95 });
    expect(resumed.document?.criticalPath).toEqual({ startMs: 80, endMs: 190, waitingMs: 95, betweenStepsMs: 10, steps: [{ id: 'provision/join', startMs: 85, durationMs: 100, waitingMs: 90 }] });
    expect(validateJsonSchema(schema, resumed.document)).toEqual([]);
  });

  it.each<[string, [string, string][], [string, string][], string]>([
    ['the reboot step done after the reboot, the rest skipped', [['prepare/feature', 'warning']], [['prepare/feature', 'skipped'], ['provision/join', 'skipped']], 'success'],
    ['a warning of another step before the reboot', [['prepare/sysctls', 'warning'], ['prepare/feature', 'warning']], [['prepare/feature', 'skipped']], 'warning'],
    ['the same step warning again after the reboot', [['prepare/feature', 'warning']], [['prepare/feature', 'warning']], 'warning'],
    ['a failure after the reboot', [['prepare/feature', 'warning']], [['prepare/feature', 'skipped'], ['provision/join', 'failure']], 'failure'],
    ['nothing changed before the reboot but the step that asked for it', [['prepare/modules', 'skipped'], ['prepare/feature', 'warning']], [['prepare/feature', 'skipped']], 'success'],
  ])('give a resumed run one result over both parts: %s', (_name, before, after, expected) => {
    let seq = 0;
    const at = (ms: number): string => new Date(Date.UTC(2026, 0, 1) + ms).toISOString();
    const event = (ms: number, fields: Partial<MachineEvent> & Pick<MachineEvent, 'type'>): MachineEvent => ({ id: `run1.${String(++seq).padStart(6, '0')}`, time: at(ms), runId: 'run1', command: 'init', ...fields });
    const identity = { hostname: 'n', nodeName: 'n', machineadmVersion: '0.1.0' };
    const worst = (steps: [string, string][]) => (['failure', 'warning', 'success', 'skipped'] as const).find((r) => steps.some(([, x]) => x === r)) ?? 'skipped';
    const part = (builder: RunResultBuilder, t0: number, steps: [string, string][], durationMs: number): void => {
      builder.add(event(t0, { type: 'run.started' }));
      builder.add(event(t0, { type: 'phase.started', phase: 'prepare' }));
      for (const [step, result] of steps) {
        builder.add(event(t0 + 1, { type: 'step.started', phase: 'prepare', step }));
        builder.add(event(t0 + 2, { type: 'step.finished', phase: 'prepare', step, result: result as MachineEvent['result'], durationMs: 1 }));
      }
      builder.add(event(t0 + durationMs, { type: 'run.finished', result: worst(steps), durationMs }));
    };
    const first = new RunResultBuilder(identity);
    part(first, 0, before, 700);
    const resumed = new RunResultBuilder(identity, first.document);
    part(resumed, 60_000, after, 300);
    expect(resumed.document).toMatchObject({ result: expected, durationMs: 1000 });
    expect(validateJsonSchema(schema, resumed.document)).toEqual([]);
  });

  it('are shown as a summary naming the failed step, its hint, and its output tail', async () => {
    const root = scratchDir();
    const run = await runWithReporting({
      root,
      config: configFrom({}),
      provision: [step('join', { fail: new StepDetailsError('kubeadm join exited 1', { kubeadmPhase: 'kubelet-start', outputTail: 'alpha\nbeta\nomega' }, { hint: 'check the kubelet log' }) })],
    });
    expect(run.summary).toMatch(/^machineadm init: failure in \d+ms \(2 steps: 0 changed, 1 skipped, 0 warnings, 1 failed\)/);
    expect(run.summary).toContain('failed: provision/join: step provision/join failed: kubeadm join exited 1');
    expect(run.summary).toContain('what to do: check the kubelet log');
    expect(run.summary).toContain('kubeadmPhase: kubelet-start');
    expect(run.summary).toMatch(/outputTail \(last lines\):\n {6}alpha\n {6}beta\n {6}omega/);
    expect(run.summary).toContain('look at: /run/machineadm/result.json');
  });

  it.each([
    ['does not exist yet', undefined],
    ['already exists with mode 0755', 0o755],
    ['already exists with mode 0777', 0o777],
  ])('keep /run/machineadm mode 0700 when it %s', async (_name, before) => {
    const root = scratchDir();
    if (before !== undefined) {
      mkdirSync(join(root, RUN_DIR), { recursive: true });
      // chmod, not mkdir's mode: the umask would narrow it.
      chmodSync(join(root, RUN_DIR), before);
      expect(statSync(join(root, RUN_DIR)).mode & 0o777).toBe(before);
    }
    await runWithReporting({ root, config: configFrom({}), prepare: [step('one')] });
    expect(statSync(join(root, RESULT_FILE)).mode & 0o777).toBe(0o600);
    expect(statSync(join(root, RUN_DIR)).mode & 0o777).toBe(0o700);
  });

  it('fall back to the state dir copy when /run was cleared by a reboot', async () => {
    const root = scratchDir();
    const run = await runWithReporting({ root, config: configFrom({}), prepare: [step('one')] });
    await run.host.fs.remove('/run/machineadm');
    expect((await readLastResult(run.host.fs, run.stateFs))?.runId).toBe(run.outcome.runId);
  });
});

describe('the console', () => {
  it('prints one "time phase/step result duration" line per step without a terminal', async () => {
    const root = scratchDir();
    const run = await runWithReporting({ root, config: configFrom({}), prepare: [step('one'), step('two', { check: async () => ({ done: true, changes: [] }) })] });
    const lines = run.console.split('\n').filter((l) => / prepare\/(one|two) /.test(l));
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(/^\d{4}-\d\d-\d\dT[\d:.]+Z prepare\/one success \d+ms \(set one\)$/);
    expect(lines[1]).toMatch(/^\S+ prepare\/two skipped \d+ms \(already done\)$/);
  });
});

describe('the published result schema', () => {
  it('allows every exit code machineadm exits with (src/errors.ts), in exitCode and in error.code', () => {
    const codes = Object.values(ExitCode);
    const properties = schema.properties as Record<string, { enum?: number[] }>;
    expect(properties.exitCode!.enum!.toSorted((a, b) => a - b)).toEqual(codes.toSorted((a, b) => a - b));
    const error = (schema.$defs as Record<string, { properties: Record<string, { enum?: number[] }> }>).error!;
    expect(error.properties.code!.enum!.toSorted((a, b) => a - b)).toEqual(codes.filter((c) => c !== ExitCode.ok).toSorted((a, b) => a - b));
  });
});
