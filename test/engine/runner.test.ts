// The runner's rules, with phase lists built here (not the registry): order, check-then-skip,
// failure wrapping, the report phase after a failure, the state file, plan, reboot and resume.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { computePlan, runPhases, type RunnerInput } from '../../src/engine/runner.ts';
import { StateStore, type MachineState } from '../../src/engine/state.ts';
import type { ApplyResult, CheckResult, EarlyWork, Phase, Step, StepContext } from '../../src/engine/step.ts';
import { createHost, RootedFileSystem, type Facts } from '../../src/host/index.ts';
import { EventBus, type MachineEvent } from '../../src/engine/events.ts';
import { SecretScrubber } from '../../src/config/secrets.ts';
import { parseWith } from '../../src/config/schema/dsl.ts';
import { machineConfigSchema, type MachineConfig } from '../../src/config/schema/index.ts';
import { RebootRequiredError, StepError, VerificationError } from '../../src/errors.ts';
import { scratchDir } from '../support/tmp.ts';
import { SENTINEL_LINUX, sentinelStep } from '../../src/report/sentinel.ts';

const config: MachineConfig = parseWith(machineConfigSchema, {
  apiVersion: 'machineadm.cluster.x-k8s.io/v1alpha1',
  kind: 'MachineConfig',
  spec: {},
}).value!;

const joining: MachineConfig = parseWith(machineConfigSchema, {
  apiVersion: 'machineadm.cluster.x-k8s.io/v1alpha1',
  kind: 'MachineConfig',
  spec: {
    kubernetes: { role: 'worker', bootstrap: 'join', version: 'v1.31.2', controlPlaneEndpoint: '10.0.0.10:6443', token: 'abcdef.0123456789abcdef', caCertHashes: ['sha256:' + 'ab'.repeat(32)] },
    report: { clusterAPISentinel: true },
  },
}).value!;

const baseFacts: Facts = { os: 'linux', arch: 'x64', hostname: 'node-1', privileged: true, liveRoot: false, bootId: 'boot-1' };

/** What the fake steps saw, in order: "check prepare/a", "apply prepare/a", ... */
type Journal = string[];

interface FakeStep {
  done?: boolean | (() => boolean);
  skipReason?: string;
  applyThrows?: Error;
  checkThrows?: Error;
  reboot?: string;
  warning?: string;
  platforms?: Step['platforms'];
  applies?: boolean;
  onCheck?: (ctx: StepContext) => void;
  recordCanWait?: boolean;
}

function fake(id: string, journal: Journal, behaviour: FakeStep = {}): Step {
  return {
    id,
    summary: `summary of ${id}`,
    ...(behaviour.platforms ? { platforms: behaviour.platforms } : {}),
    ...(behaviour.applies !== undefined ? { applies: () => behaviour.applies! } : {}),
    ...(behaviour.recordCanWait ? { recordCanWait: true } : {}),
    async check(ctx): Promise<CheckResult> {
      journal.push(`check ${id}`);
      behaviour.onCheck?.(ctx);
      if (behaviour.checkThrows) throw behaviour.checkThrows;
      const done = typeof behaviour.done === 'function' ? behaviour.done() : (behaviour.done ?? false);
      return {
        done,
        changes: done ? [] : [{ action: 'update', target: `/etc/${id}`, detail: `${id} detail` }],
        ...(behaviour.skipReason ? { skipReason: behaviour.skipReason } : {}),
      };
    },
    async apply(): Promise<ApplyResult> {
      journal.push(`apply ${id}`);
      if (behaviour.applyThrows) throw behaviour.applyThrows;
      return {
        ...(behaviour.reboot ? { rebootRequired: behaviour.reboot } : {}),
        ...(behaviour.warning ? { warning: behaviour.warning } : {}),
        record: { appliedBy: id },
      };
    },
  };
}

function phases(prepare: Step[], provision: Step[] = [], report: Step[] = []): Phase[] {
  return [
    { name: 'prepare', summary: 'prepare things', steps: prepare },
    { name: 'provision', summary: 'provision things', steps: provision },
    { name: 'report', summary: 'report things', steps: report, runsAfterFailure: true },
  ];
}

function setup(list: Phase[], options: { facts?: Partial<Facts>; selection?: RunnerInput['selection']; stateDir?: string; force?: boolean } = {}) {
  const root = scratchDir('machineadm-runner-');
  const stateDir = options.stateDir ?? join(root, 'var/lib/machineadm');
  const facts = { ...baseFacts, ...options.facts };
  const events: MachineEvent[] = [];
  const bus = new EventBus();
  bus.listen((e) => events.push(e));
  const input: RunnerInput = {
    command: 'init',
    phases: list,
    selection: options.selection ?? {},
    config,
    facts,
    host: createHost({ root, facts }),
    events: bus,
    state: new StateStore(new RootedFileSystem(stateDir)),
    force: options.force ?? false,
    secrets: new SecretScrubber(),
  };
  const stateFile = join(stateDir, 'state.json');
  const readState = (): MachineState => JSON.parse(readFileSync(stateFile, 'utf8')) as MachineState;
  return { input, events, stateDir, stateFile, readState };
}

const stepResults = (events: MachineEvent[]) => events.filter((e) => e.type === 'step.finished').map((e) => `${e.step}=${e.result}`);

describe('runPhases', () => {
  it('runs the phases and their steps in list order, checking each step before applying it', async () => {
    const journal: Journal = [];
    const { input, events } = setup(phases([fake('a', journal), fake('b/c', journal)], [fake('join', journal)], [fake('result', journal)]));
    const outcome = await runPhases(input);
    expect(journal).toEqual(['check a', 'apply a', 'check b/c', 'apply b/c', 'check join', 'apply join', 'check result', 'apply result']);
    expect(outcome.result).toBe('success');
    expect(outcome.error).toBeUndefined();
    const oneStep = ['step.started', 'step.finished'];
    expect(events.map((e) => e.type)).toEqual([
      'run.started',
      ...['phase.started', ...oneStep, ...oneStep, 'phase.finished'],
      ...['phase.started', ...oneStep, 'phase.finished'],
      ...['phase.started', ...oneStep, 'phase.finished'],
      'run.finished',
    ]);
    const finished = events.filter((e) => e.type === 'step.finished');
    expect(finished.map((e) => e.step)).toEqual(['prepare/a', 'prepare/b/c', 'provision/join', 'report/result']);
    for (const e of finished) expect(e.durationMs).toBeGreaterThanOrEqual(0);
    // Each step's start, on the process's clock: after the run's, each at or after the end of the one before.
    const starts = events.filter((e) => e.type === 'step.started').map((e) => e.sinceStartMs!);
    expect(starts).toHaveLength(4);
    expect(starts[0]).toBeGreaterThanOrEqual(events[0]!.sinceStartMs!);
    for (let i = 1; i < starts.length; i++) expect(starts[i]).toBeGreaterThanOrEqual(starts[i - 1]! + finished[i - 1]!.durationMs!);
    expect(finished[0]?.changes).toEqual([{ action: 'update', target: '/etc/a', detail: 'a detail' }]);
  });

  it.each<[string, FakeStep, string]>([
    ['check says the machine already matches', { done: true }, 'already done'],
    ['check gives a skip reason', { skipReason: 'needs the live machine (--root is a scratch directory)' }, 'needs the live machine (--root is a scratch directory)'],
    ['check gives a skip reason even when not done', { done: false, skipReason: 'not on a scratch root' }, 'not on a scratch root'],
  ])('skips a step without applying it when %s', async (_name, behaviour, message) => {
    const journal: Journal = [];
    const { input, events } = setup(phases([fake('a', journal, behaviour), fake('b', journal)]));
    const outcome = await runPhases(input);
    expect(journal).toEqual(['check a', 'check b', 'apply b']);
    expect(outcome.phases[0]?.steps[0]).toMatchObject({ id: 'prepare/a', result: 'skipped', message });
    expect(events.find((e) => e.type === 'step.finished' && e.step === 'prepare/a')).toMatchObject({ result: 'skipped', message });
    // "skipped" is the mildest result: a phase is skipped only when every step in it was.
    expect(outcome.result).toBe('success');
  });

  it('leaves out steps of another platform, steps the configuration does not ask for, and unselected steps', async () => {
    const journal: Journal = [];
    const { input, events } = setup(
      phases([fake('win', journal, { platforms: ['windows'] }), fake('unasked', journal, { applies: false }), fake('unselected', journal), fake('wanted', journal)]),
      { selection: { skip: ['prepare/unselected'] } },
    );
    await runPhases(input);
    expect(journal).toEqual(['check wanted', 'apply wanted']);
    expect(stepResults(events)).toEqual(['prepare/wanted=success']);
  });

  it('does not take the machine as provisioned when a provisioning step was left out by --skip: no sentinel, in the plan as in the run', async () => {
    const list = () => phases([], [fake('join', []), fake('pods', [])], [sentinelStep]);
    const env = setup(list(), { selection: { skip: ['provision/join'] } });
    const input = { ...env.input, config: joining };
    const plan = await computePlan(input);
    const planned = plan.phases.flatMap((p) => p.steps).find((s) => s.id === 'report/sentinel');
    expect(planned).toMatchObject({ status: 'skipped', reason: expect.stringContaining('provision/join') });
    const outcome = await runPhases({ ...input, phases: list() });
    expect(outcome.phases.at(-1)?.steps[0]).toMatchObject({ id: 'report/sentinel', result: 'skipped', message: expect.stringContaining('provision/join') });
    expect(await input.host.fs.readText(SENTINEL_LINUX)).toBeUndefined();
    expect(env.readState().provision).toMatchObject({ provisioned: false, reason: expect.stringContaining('provision/join') });
  });

  it('wraps a failure as "step X failed: ...", stops, and still runs the report phase', async () => {
    const journal: Journal = [];
    let reportSawFailure: boolean | undefined;
    const report = fake('result', journal, { onCheck: (ctx) => (reportSawFailure = ctx.run.failed) });
    const { input, events } = setup(phases([fake('a', journal), fake('b', journal, { applyThrows: new Error('disk full') }), fake('c', journal)], [fake('join', journal)], [report]));
    const outcome = await runPhases(input);
    expect(journal).toEqual(['check a', 'apply a', 'check b', 'apply b', 'check result', 'apply result']);
    expect(outcome.error).toBeInstanceOf(StepError);
    expect(outcome.error?.message).toBe('step prepare/b failed: disk full');
    expect(outcome.error?.exitCode).toBe(1);
    expect(outcome.result).toBe('failure');
    expect(reportSawFailure).toBe(true);
    expect(outcome.phases.map((p) => `${p.name}=${p.result}`)).toEqual(['prepare=failure', 'report=success']);
    const finished = events.find((e) => e.type === 'step.finished' && e.step === 'prepare/b');
    expect(finished?.error).toMatchObject({ message: 'step prepare/b failed: disk full', code: 1, stepId: 'prepare/b' });
    expect(events.at(-1)).toMatchObject({ type: 'run.finished', result: 'failure', error: { stepId: 'prepare/b' } });
  });

  it('wraps a failing check the same way', async () => {
    const journal: Journal = [];
    const { input } = setup(phases([fake('a', journal, { checkThrows: new Error('cannot read /etc/a') })]));
    const outcome = await runPhases(input);
    expect(outcome.error?.message).toBe('step prepare/a failed: cannot read /etc/a');
    expect(journal).toEqual(['check a']);
  });

  it('keeps the exit code of a verification failure inside a step', async () => {
    const { input } = setup(phases([fake('fetch', [], { applyThrows: new VerificationError('signature does not match', { hint: 'check the key' }) })]));
    const outcome = await runPhases(input);
    expect(outcome.error?.exitCode).toBe(3);
    expect(outcome.error?.hint).toBe('check the key');
  });

  it('keeps the first failure as the run error when a report step fails too', async () => {
    const { input } = setup(phases([fake('a', [], { applyThrows: new Error('first') })], [], [fake('result', [], { applyThrows: new Error('second') })]));
    const outcome = await runPhases(input);
    expect(outcome.error?.message).toBe('step prepare/a failed: first');
    expect(outcome.phases.map((p) => `${p.name}=${p.result}`)).toEqual(['prepare=failure', 'report=failure']);
  });

  it('writes the state file after every step, so a later step already sees the earlier ones on disk', async () => {
    const journal: Journal = [];
    const seenOnDisk: string[][] = [];
    let env!: ReturnType<typeof setup>;
    const probe = (ctx: StepContext) => {
      seenOnDisk.push(Object.keys(env.readState().steps));
      void ctx;
    };
    env = setup(phases([fake('a', journal), fake('b', journal, { onCheck: probe })], [fake('join', journal, { onCheck: probe, done: true })]));
    await runPhases(env.input);
    expect(seenOnDisk).toEqual([['prepare/a'], ['prepare/a', 'prepare/b']]);
    const state = env.readState();
    expect(state.steps['prepare/a']).toMatchObject({ result: 'success', runId: env.input.events.runId, data: { appliedBy: 'a' } });
    expect(state.steps['provision/join']).toMatchObject({ result: 'skipped' });
    expect(state.runs.at(-1)).toMatchObject({ command: 'init', result: 'success', runId: env.input.events.runId });
    expect(statSync(env.stateFile).mode & 0o777).toBe(0o600);
    // Atomic writes leave nothing but the file itself (no temporaries, no backup of the state).
    expect(readdirSync(env.stateDir)).toEqual(['state.json']);
  });

  it.each<[string, () => Phase[], number]>([
    ['every step was already done (their records can be rebuilt by checking again)', () => phases([fake('a', [], { done: true }), fake('b', [], { done: true })], [fake('join', [], { done: true })]), 1],
    ['two steps applied changes they recorded and three were already done', () => phases([fake('a', []), fake('b', [], { done: true }), fake('c', [])], [fake('join', [], { done: true })], [fake('result', [], { done: true })]), 3],
    ['a step failed after one was already done', () => phases([fake('a', [], { done: true }), fake('b', [], { applyThrows: new Error('boom') })]), 1],
    ['two steps applied changes whose records can wait (the next run rebuilds them)', () => phases([fake('a', [], { recordCanWait: true }), fake('b', [], { recordCanWait: true })], [fake('join', [], { done: true })]), 1],
  ])('writes the state file only when it changes in a way a later run relies on: %s', async (_name, list, writes) => {
    const env = setup(list());
    let saves = 0;
    const save = env.input.state.save.bind(env.input.state);
    env.input.state.save = async (state) => {
      saves++;
      await save(state);
    };
    await runPhases(env.input);
    expect(saves).toBe(writes);
    // The records that wait for a later write still reach the disk by the end of the run.
    expect(Object.keys(env.readState().steps).length).toBeGreaterThan(0);
    expect(env.readState().runs.at(-1)).toMatchObject({ runId: env.input.events.runId, finishedAt: expect.any(String) });
  });

  it("makes the machine's changes durable before every state write and at the end of every phase", async () => {
    const journal: Journal = [];
    const env = setup(phases([fake('a', journal), fake('b', journal, { recordCanWait: true })], [fake('join', journal, { done: true })]));
    const sync = env.input.host.fs.syncDirectories.bind(env.input.host.fs);
    env.input.host.fs.syncDirectories = async () => {
      journal.push('sync');
      await sync();
    };
    const save = env.input.state.save.bind(env.input.state);
    env.input.state.save = async (state, options) => {
      journal.push('save');
      await save(state, options);
    };
    await runPhases(env.input);
    expect(journal).toEqual([
      'check a',
      'apply a',
      // a's record cannot be rebuilt: on disk at once, after what a changed.
      'sync',
      'save',
      'check b',
      'apply b',
      // The end of prepare: b's changes are on disk before provisioning; its record waits.
      'sync',
      'check join',
      'sync',
      'sync',
      // The run's end record.
      'sync',
      'save',
    ]);
    expect(env.readState().steps['prepare/b']).toMatchObject({ result: 'success', data: { appliedBy: 'b' } });
  });

  it('keeps what a step recorded earlier when a later run skips it', async () => {
    const env = setup(phases([fake('a', [])]));
    await runPhases(env.input);
    const again = { ...env.input, phases: phases([fake('a', [], { done: true })]), events: new EventBus() };
    await runPhases(again);
    expect(env.readState().steps['prepare/a']).toMatchObject({ result: 'skipped', data: { appliedBy: 'a' } });
  });

  it('records what a done check says when the run that applied the step was killed before recording it', async () => {
    const env = setup(phases([fake('a', [], { done: true })]));
    const step = env.input.phases[0]!.steps[0]!;
    const found: Step = { ...step, check: async (ctx) => ({ ...(await step.check(ctx)), record: { foundBy: 'check' } }) };
    await runPhases({ ...env.input, phases: phases([found]) });
    expect(env.readState().steps['prepare/a']).toMatchObject({ result: 'skipped', data: { foundBy: 'check' } });
  });

  it('stops with exit code 4 when a step needs a reboot, and resumes only after the machine rebooted', async () => {
    const journal: Journal = [];
    let rebooted = false;
    const list = () =>
      phases(
        [fake('a', journal, { done: () => rebooted }), fake('feature', journal, { reboot: 'the Containers feature was enabled', done: () => rebooted }), fake('after', journal)],
        [],
        [fake('result', journal)],
      );
    const env = setup(list());

    const first = await runPhases(env.input);
    expect(first.error).toBeInstanceOf(RebootRequiredError);
    expect(first.error?.exitCode).toBe(4);
    expect(journal).toEqual(['check a', 'apply a', 'check feature', 'apply feature']);
    expect(env.readState().pendingReboot).toMatchObject({ stepId: 'prepare/feature', bootId: 'boot-1', reason: 'the Containers feature was enabled' });
    expect(env.readState().runs.at(-1)?.result).toBe('reboot-required');

    // Run again before the reboot (same boot id): nothing is checked or applied, still exit 4.
    journal.length = 0;
    const same = await runPhases({ ...env.input, phases: list(), events: new EventBus() });
    expect(same.error?.exitCode).toBe(4);
    expect(same.error?.message).toContain('has not rebooted yet');
    expect(journal).toEqual([]);
    expect(env.readState().pendingReboot?.stepId).toBe('prepare/feature');

    // After the reboot (a new boot id): every step checks again, only what is not done is applied.
    journal.length = 0;
    rebooted = true;
    const facts = { ...baseFacts, bootId: 'boot-2' };
    const resumed = await runPhases({ ...env.input, facts, phases: list(), events: new EventBus() });
    expect(resumed.error).toBeUndefined();
    expect(journal).toEqual(['check a', 'check feature', 'check after', 'apply after', 'check result', 'apply result']);
    expect(env.readState().pendingReboot).toBeUndefined();
  });
});

// A step may begin its long work (downloads) when the run starts, while the steps before it run,
// only when each of them may be overtaken; whatever it does not take is undone.
describe('runPhases: early work (Step.begin)', () => {
  /** A step with early work: `begin` records itself; its apply records the work it was handed. */
  function beginning(id: string, journal: Journal, seen: { early?: EarlyWork }): Step {
    const step = fake(id, journal);
    return {
      ...step,
      begin: () => {
        journal.push(`begin ${id}`);
        return { startMs: 7, cancel: async () => void journal.push(`cancel ${id}`) };
      },
      async apply(ctx, check) {
        seen.early = ctx.early;
        return step.apply(ctx, check);
      },
    };
  }

  it('begins it when the run starts, before the overtakable steps before it apply; hands it to its apply; then cancels what is left', async () => {
    const journal: Journal = [];
    const seen: { early?: EarlyWork } = {};
    const { input, events } = setup(phases([{ ...fake('modules', journal), overtakable: true }, { ...fake('sysctls', journal), overtakable: true }, beginning('files', journal, seen), fake('containerd', journal)]));
    const outcome = await runPhases(input);
    expect(outcome.error).toBeUndefined();
    expect(journal).toEqual(['begin files', 'check modules', 'apply modules', 'check sysctls', 'apply sysctls', 'check files', 'apply files', 'cancel files', 'check containerd', 'apply containerd']);
    expect(seen.early?.startMs).toBe(7);
    // The critical path tells the step's turn from when its work began.
    const finished = events.filter((e) => e.type === 'step.finished');
    expect(finished.find((e) => e.step === 'prepare/files')?.earlyStartMs).toBe(7);
    expect(finished.filter((e) => e.earlyStartMs !== undefined).map((e) => e.step)).toEqual(['prepare/files']);
  });

  it.each<[string, (journal: Journal) => Step]>([
    ['a step before it is not overtakable (it may mount a disk, make a user, run commands)', (journal) => fake('storage', journal)],
    ['a step before it is not overtakable, even one the machine already matches', (journal) => fake('users', journal, { done: true })],
  ])('does not begin it when %s', async (_case, before) => {
    const journal: Journal = [];
    const seen: { early?: EarlyWork } = {};
    const { input } = setup(phases([{ ...fake('modules', journal), overtakable: true }, before(journal), beginning('files', journal, seen)]));
    await runPhases(input);
    expect(journal.filter((j) => j.startsWith('begin') || j.startsWith('cancel'))).toEqual([]);
    expect(seen.early).toBeUndefined();
  });

  it('cancels it as soon as a step before it fails, before the report phase runs', async () => {
    const journal: Journal = [];
    const { input } = setup(phases([{ ...fake('sysctls', journal, { applyThrows: new Error('sysctl refused') }), overtakable: true }, beginning('files', journal, {})], [], [fake('result', journal)]));
    const outcome = await runPhases(input);
    expect(outcome.error).toBeInstanceOf(StepError);
    expect(journal).toEqual(['begin files', 'check sysctls', 'apply sysctls', 'cancel files', 'check result', 'apply result']);
  });

  it('leaves out a step that is not selected or not asked for, and never begins anything for a plan', async () => {
    const journal: Journal = [];
    const list = phases([{ ...fake('modules', journal, { applies: false }) }, fake('other', journal), beginning('files', journal, {})]);
    const { input } = setup(list, { selection: { skip: ['prepare/other'] } });
    await runPhases(input);
    expect(journal).toEqual(['begin files', 'check files', 'apply files', 'cancel files']);
    journal.length = 0;
    await computePlan(setup(list).input);
    expect(journal.some((j) => j.startsWith('begin'))).toBe(false);
  });
});

describe('computePlan', () => {
  it('gives every step with its status and changes, in order, and touches nothing', async () => {
    const journal: Journal = [];
    const list = phases(
      [
        fake('a', journal),
        fake('done', journal, { done: true }),
        fake('live', journal, { skipReason: 'needs the live machine' }),
        fake('win', journal, { platforms: ['windows'] }),
        fake('left-out', journal),
      ],
      [fake('join', journal, { applies: false })],
      [fake('result', journal)],
    );
    const { input, stateDir, events } = setup(list, { selection: { skip: ['prepare/left-out'] } });
    const plan = await computePlan(input);
    expect(journal).toEqual(['check a', 'check done', 'check live', 'check result']);
    expect(() => readdirSync(stateDir)).toThrow();
    expect(events).toEqual([]);
    expect(plan.command).toBe('init');
    expect(plan.os).toBe('linux');
    expect(plan.phases.map((p) => p.name)).toEqual(['prepare', 'provision', 'report']);
    expect(plan.phases.flatMap((p) => p.steps.map((s) => [s.id, s.status, s.reason ?? '']))).toEqual([
      ['prepare/a', 'change', ''],
      ['prepare/done', 'up-to-date', ''],
      ['prepare/live', 'skipped', 'needs the live machine'],
      ['prepare/win', 'not-applicable', 'only on windows'],
      ['prepare/left-out', 'not-selected', 'left out by --only/--skip'],
      ['provision/join', 'not-applicable', 'not asked for by the configuration'],
      ['report/result', 'change', ''],
    ]);
    expect(plan.phases[0]?.steps[0]?.changes).toEqual([{ action: 'update', target: '/etc/a', detail: 'a detail' }]);
  });

  it('gives steps a dry run: the context says so', async () => {
    let dryRun: boolean | undefined;
    const { input } = setup(phases([fake('a', [], { onCheck: (ctx) => (dryRun = ctx.options.dryRun) })]));
    await computePlan(input);
    expect(dryRun).toBe(true);
    await runPhases(input);
    expect(dryRun).toBe(false);
  });

  it('plans what the run then does: the steps planned as changes are the ones applied', async () => {
    const journal: Journal = [];
    const list = phases([fake('a', journal), fake('b', journal, { done: true }), fake('c', journal, { skipReason: 'no' })], [fake('join', journal)]);
    const { input } = setup(list);
    const plan = await computePlan(input);
    journal.length = 0;
    await runPhases(input);
    const planned = plan.phases.flatMap((p) => p.steps.filter((s) => s.status === 'change').map((s) => s.id));
    const applied = journal.filter((j) => j.startsWith('apply ')).map((j) => j.replace('apply ', ''));
    expect(applied.map((id) => (id === 'join' ? 'provision/join' : `prepare/${id}`))).toEqual(planned);
  });

  it('shows a step what the run would have been through, as the run itself does', async () => {
    type Seen = { name: string; result: string; steps: { id: string; result: string; upToDate: boolean }[] }[];
    const seen: Seen[] = [];
    const capture = (ctx: StepContext) =>
      seen.push(ctx.run.phases.map((p) => ({ name: p.name, result: p.result, steps: p.steps.map((x) => ({ id: x.id, result: x.result, upToDate: x.upToDate ?? false })) })));
    const list = () =>
      phases(
        [fake('a', []), fake('b', [], { done: true })],
        [fake('join', [], { skipReason: 'needs the live machine' })],
        [fake('sentinel', [], { onCheck: capture })],
      );
    const { input } = setup(list());
    await computePlan({ ...input, phases: list() });
    await runPhases({ ...input, phases: list() });
    expect(seen).toHaveLength(2);
    expect(seen[0]).toEqual(seen[1]);
    expect(seen[0]).toEqual([
      { name: 'prepare', result: 'success', steps: [{ id: 'prepare/a', result: 'success', upToDate: false }, { id: 'prepare/b', result: 'skipped', upToDate: true }] },
      { name: 'provision', result: 'skipped', steps: [{ id: 'provision/join', result: 'skipped', upToDate: false }] },
      { name: 'report', result: 'skipped', steps: [] },
    ]);
  });

  it('wraps a failing check in the plan too', async () => {
    const { input } = setup(phases([fake('a', [], { checkThrows: new Error('unreadable') })]));
    await expect(computePlan(input)).rejects.toThrow('step prepare/a failed: unreadable');
  });

  it('rejects an unknown id before checking anything', async () => {
    const journal: Journal = [];
    const { input } = setup(phases([fake('a', journal)]), { selection: { only: ['prepare/typo'] } });
    await expect(computePlan(input)).rejects.toThrow('no step has the id "prepare/typo"');
    await expect(runPhases(input)).rejects.toThrow('no step has the id "prepare/typo"');
    expect(journal).toEqual([]);
  });
});
