// `machineadm report` on its own: it reports, and it leaves the record of the run that prepared and
// provisioned the machine as it was.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { HISTORY_LIMIT, readHistory } from '../../src/report/history.ts';
import { renderHistory } from '../../src/cli/commands/status.ts';
import { configFrom, runWithReporting, step } from './harness.ts';
import { scratchDir } from '../support/tmp.ts';

const read = (path: string) => readFileSync(path, 'utf8');

describe('machineadm report on its own', () => {
  it('writes its own result file and leaves result.json and its copy byte for byte as init wrote them', async () => {
    const root = scratchDir();
    const init = await runWithReporting({ root, config: configFrom({}), provision: [step('join')] });
    const result = read(join(root, 'run/machineadm/result.json'));
    const copy = read(join(root, 'var/lib/machineadm/result.json'));
    const report = await runWithReporting({ root, config: configFrom({}), command: 'report' });
    expect(read(join(root, 'run/machineadm/result.json'))).toBe(result);
    expect(read(join(root, 'var/lib/machineadm/result.json'))).toBe(copy);
    expect(JSON.parse(result)).toMatchObject({ runId: init.outcome.runId, command: 'init' });
    for (const path of ['run/machineadm/report-result.json', 'var/lib/machineadm/report-result.json']) {
      expect(JSON.parse(read(join(root, path))), path).toMatchObject({ runId: report.outcome.runId, command: 'report', state: 'finished' });
    }
  });

  it(`keeps the last init in the history however many report runs follow it (${HISTORY_LIMIT} kept)`, async () => {
    const root = scratchDir();
    const init = await runWithReporting({ root, config: configFrom({}), provision: [step('join')] });
    for (let i = 0; i < HISTORY_LIMIT + 5; i++) await runWithReporting({ root, config: configFrom({}), command: 'report' });
    const runs = JSON.parse(read(join(root, 'var/lib/machineadm/history.json'))).runs as { runId: string; command: string }[];
    expect(runs).toHaveLength(HISTORY_LIMIT);
    expect(runs[0]).toMatchObject({ runId: init.outcome.runId, command: 'init' });
    expect(runs.slice(1).every((r) => r.command === 'report')).toBe(true);
  });

  it('keeps the init that changed the machine in the history after a rerun that did nothing, however many report runs follow', async () => {
    const root = scratchDir();
    let joined = false;
    const join = step('join', {
      check: async () => ({ done: joined, changes: [{ action: 'set', target: 'join' }] }),
      apply: async () => {
        joined = true;
        return {};
      },
    });
    const init = await runWithReporting({ root, config: configFrom({}), provision: [join] });
    const rerun = await runWithReporting({ root, config: configFrom({}), provision: [join] });
    for (let i = 0; i < HISTORY_LIMIT + 5; i++) await runWithReporting({ root, config: configFrom({}), command: 'report' });
    const history = await readHistory(init.stateFs);
    expect(history).toHaveLength(HISTORY_LIMIT);
    expect(history.filter((r) => r.command === 'init').map((r) => r.runId)).toEqual([init.outcome.runId, rerun.outcome.runId]);
    const shown = renderHistory(history, false).join('\n');
    expect(shown).toMatch(new RegExp(`^last run that did something: init success, exit code 0, \\d+ steps? changed something \\(started \\S+, run ${init.outcome.runId}\\)\\n  changed provision/join: set join$`, 'm'));
  });
});
