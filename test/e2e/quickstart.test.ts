// The README's first command: machineadm init on the quickstart example against a scratch root,
// from source, twice. The first run shows every phase; the second has nothing left to do.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import type { MachineEvent } from '../../src/engine/events.ts';
import type { Plan } from '../../src/engine/runner.ts';
import { scratchDir } from '../support/tmp.ts';

const REPO = fileURLToPath(new URL('../..', import.meta.url));
const PHASES = ['prepare', 'provision', 'report'];

function machineadm(args: string[]) {
  const result = spawnSync(process.execPath, ['bin/machineadm.js', ...args], {
    cwd: REPO,
    encoding: 'utf8',
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/root' },
    timeout: 60_000,
  });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

function events(stdout: string): MachineEvent[] {
  return stdout
    .split('\n')
    .filter(Boolean)
    .map((line, i) => {
      try {
        return JSON.parse(line) as MachineEvent;
      } catch {
        throw new Error(`line ${i + 1} of the JSON output is not JSON: ${line}`);
      }
    });
}

const finishedSteps = (list: MachineEvent[]) => list.filter((e) => e.type === 'step.finished');

describe('init on examples/quickstart.yaml with a scratch --root', () => {
  const root = scratchDir('machineadm-quickstart-');
  const args = ['-c', 'examples/quickstart.yaml', '--root', root];
  let first: MachineEvent[] = [];

  it('exits 0 on the first run and shows every phase, with a result for every step it started', () => {
    const run = machineadm(['init', ...args, '-o', 'json']);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    first = events(run.stdout);
    expect(first.filter((e) => e.type === 'phase.started').map((e) => e.phase)).toEqual(PHASES);
    expect(first.filter((e) => e.type === 'phase.finished').map((e) => e.phase)).toEqual(PHASES);
    const started = first.filter((e) => e.type === 'step.started').map((e) => e.step);
    expect(finishedSteps(first).map((e) => e.step)).toEqual(started);
    expect(finishedSteps(first).filter((e) => e.result === 'failure')).toEqual([]);
    expect(first.at(-1)).toMatchObject({ type: 'run.finished', command: 'init' });
    // Steps that need the live machine are shown as skipped with the reason, never dropped.
    for (const e of finishedSteps(first).filter((s) => s.result === 'skipped')) expect(e.message, `${e.step} skipped without a reason`).toBeTruthy();
  });

  it('skips every step on the second run: nothing is left to change', () => {
    const run = machineadm(['init', ...args, '-o', 'json']);
    expect(run.code).toBe(0);
    const second = events(run.stdout);
    expect(second.filter((e) => e.type === 'phase.started').map((e) => e.phase)).toEqual(PHASES);
    expect(finishedSteps(second).map((e) => e.step)).toEqual(finishedSteps(first).map((e) => e.step));
    const changed = finishedSteps(second).filter((e) => e.result !== 'skipped').map((e) => `${e.step}=${e.result}: ${e.message ?? ''}`);
    expect(changed, 'steps that did something again on the second run').toEqual([]);
  });

  it('prints every phase and a summary in text mode', () => {
    const run = machineadm(['init', ...args]);
    expect(run.code).toBe(0);
    for (const phase of PHASES) expect(run.stdout).toMatch(new RegExp(`^\\S+ ${phase} started: `, 'm'));
    expect(run.stdout).toMatch(/^machineadm init: (\w+|nothing to do) in \S+ \(\d+ steps: 0 changed, \d+ skipped, 0 warnings, 0 failed\)$/m);
  });

  it('plans the steps in the order init runs them, and nothing left to change after init', () => {
    const run = machineadm(['plan', ...args, '-o', 'json']);
    expect(run.code).toBe(0);
    const plan = JSON.parse(run.stdout) as Plan;
    expect(plan.command).toBe('init');
    expect(plan.phases.map((p) => p.name)).toEqual(PHASES);
    for (const phase of plan.phases) for (const step of phase.steps) expect(step.id.startsWith(`${phase.name}/`)).toBe(true);
    const runnable = plan.phases.flatMap((p) => p.steps).filter((s) => s.status !== 'not-applicable' && s.status !== 'not-selected');
    expect(runnable.map((s) => s.id)).toEqual(finishedSteps(first).map((e) => e.step));
    expect(runnable.filter((s) => s.status === 'change').map((s) => s.id)).toEqual([]);
  });

  it('gives the same plan for init --dry-run as for plan, and changes nothing', () => {
    const fresh = scratchDir('machineadm-quickstart-dry-');
    const plan = machineadm(['plan', '-c', 'examples/quickstart.yaml', '--root', fresh, '-o', 'json']);
    const dry = machineadm(['init', '--dry-run', '-c', 'examples/quickstart.yaml', '--root', fresh, '-o', 'json']);
    expect(plan.code).toBe(0);
    expect(dry.code).toBe(0);
    expect(JSON.parse(dry.stdout)).toEqual(JSON.parse(plan.stdout));
    const steps = (JSON.parse(plan.stdout) as Plan).phases.flatMap((p) => p.steps);
    expect(steps.some((s) => s.status === 'change')).toBe(true);
    expect(spawnSync('find', [fresh, '-mindepth', '1'], { encoding: 'utf8' }).stdout).toBe('');
  });
});
