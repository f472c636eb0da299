import { describe, expect, it } from 'vitest';
import { readHistory } from '../../src/report/history.ts';
import { renderHistory } from '../../src/cli/commands/status.ts';
import { configFrom, runWithReporting, step } from './harness.ts';
import { scratchDir } from '../support/tmp.ts';

describe('the run history', () => {
  it('counts a step that ended with a warning as the summary does, so status still shows that run after a rerun that did nothing', async () => {
    const root = scratchDir();
    let looked = false;
    const warns = step('clock', {
      check: async () => ({ done: looked, changes: [] }),
      apply: async () => {
        looked = true;
        return { warning: 'the clock is 40 s off and nothing here may set it' };
      },
    });
    const warned = await runWithReporting({ root, config: configFrom({}), prepare: [warns] });
    expect(warned.summary).toContain('1 warnings');
    await runWithReporting({ root, config: configFrom({}), prepare: [warns] });

    const history = await readHistory(warned.stateFs);
    expect(history.map((r) => [r.result, r.warnings])).toEqual([
      ['warning', 1],
      ['skipped', 0],
    ]);
    const shown = renderHistory(history, false).join('\n');
    expect(shown).toContain(`last run that did something: init warning, exit code 0, nothing changed (started ${history[0]!.startedAt}, run ${history[0]!.runId})\n  1 warning`);
  });
});
