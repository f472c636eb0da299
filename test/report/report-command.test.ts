// `machineadm report` on its own: it reports, and it leaves the record of the run that prepared and
// provisioned the machine as it was.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { HISTORY_LIMIT } from '../../src/report/history.ts';
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
});
