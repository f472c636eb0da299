import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createHost, RootedFileSystem } from '../../src/host/index.ts';
import { InterruptedError } from '../../src/errors.ts';
import { executeRun } from '../../src/phases/run.ts';
import { reportPhase } from '../../src/phases/registry.ts';
import { RESULT_FILE, type RunResultDocument } from '../../src/report/outcome.ts';
import { readHistory } from '../../src/report/history.ts';
import { configFrom, facts, runWithReporting, step } from './harness.ts';
import { scratchDir } from '../support/tmp.ts';

describe('the summary of a run resumed after a reboot', () => {
  it('says the run succeeded without a warning once the step that asked for the reboot is found done', async () => {
    const root = scratchDir();
    let enabled = false;
    const steps = () => [
      step('feature', {
        check: async () => ({ done: enabled, changes: enabled ? [] : [{ action: 'enable', target: 'feature' }] }),
        apply: async () => {
          enabled = true;
          return { rebootRequired: 'the feature is on after a restart' };
        },
      }),
      step('after'),
    ];
    const first = await runWithReporting({ root, config: configFrom({}), prepare: steps() });
    expect(first.summary).toMatch(/^machineadm init: reboot required in \S+ \(1 steps: 0 changed, 0 skipped, 1 warnings, 0 failed\)/);

    const resumed = await runWithReporting({ root, config: configFrom({}), prepare: steps() });
    const result = JSON.parse(readFileSync(join(root, RESULT_FILE), 'utf8')) as RunResultDocument;
    expect(result).toMatchObject({ runId: first.outcome.runId, result: 'success', exitCode: 0 });
    // Both parts of the run are in it: the step that asked for the reboot changed the machine before it.
    expect(resumed.summary).toMatch(/^machineadm init: success in \S+ \(4 steps: 2 changed, 2 skipped, 0 warnings, 0 failed\)\n/);
    expect(resumed.summary).not.toMatch(/^  warning:/m);
    expect((await readHistory(resumed.stateFs)).map((r) => [r.runId, r.result, r.warnings])).toEqual([[first.outcome.runId, 'success', 0]]);
  });
});

describe('the summary of a failed run', () => {
  it('points at the result file to look at when the run was interrupted between steps', async () => {
    const root = scratchDir();
    const stop = new AbortController();
    const host = createHost({ root, facts, offline: false, env: {}, signal: stop.signal });
    let text = '';
    const { exitCode } = await executeRun({
      command: 'init',
      config: configFrom({}),
      host,
      stateFs: new RootedFileSystem(join(root, 'var/lib/machineadm')),
      selection: {},
      force: false,
      console: { mode: 'text', write: (t) => (text += t) },
      phases: [{ name: 'prepare', summary: 'test prepare', steps: [step('first', { apply: async () => (stop.abort(new InterruptedError('SIGTERM')), {}) }), step('second')] }, reportPhase],
    });
    expect(exitCode).toBe(143);
    expect(text).toContain('  error: interrupted by SIGTERM\n');
    expect(text).toContain(`  look at: ${join(root, RESULT_FILE)} (or "machineadm status -o json")`);
    expect(text).not.toContain('  result: ');
  });

  it('does not point at a result file it could not write', async () => {
    const root = scratchDir();
    // A directory where the result file goes: it is not written, its copy in the state dir is.
    mkdirSync(join(root, RESULT_FILE), { recursive: true });
    const run = await runWithReporting({ root, config: configFrom({}), prepare: [step('broken', { fail: new Error('it broke') })] });
    expect(run.console).toContain('  failed: prepare/broken: ');
    expect(run.console).toContain(`  could not write ${join(root, RESULT_FILE)}: `);
    expect(run.console).not.toContain('  look at: ');
  });
});
