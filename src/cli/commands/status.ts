// status: what ran on this machine, from the state file, the last run's result.json and the spool.
import type { Command } from 'commander';
import type { Io } from '../io.ts';
import { addCommonOptions, type CommonOptions } from '../options.ts';
import { ExitCode } from '../../errors.ts';

// Loaded when status runs, not at every start of machineadm.
const implementation = () =>
  Promise.all([import('../host-options.ts'), import('../../phases/state.ts'), import('../../report/outcome.ts'), import('../../report/spool.ts')]);

export function registerStatusCommand(program: Command, io: Io, setExit: (code: number) => void): void {
  addCommonOptions(program.command('status').description('show what machineadm did on this machine'))
    .addHelpText('after', '\nExample:\n  $ machineadm status -o json\n')
    .action(async (options: CommonOptions) => {
      const [{ hostFrom, stateFsFrom }, { StateStore }, { readLastResult }, { spoolContents }] = await implementation();
      const host = hostFrom(options, io);
      const stateFs = stateFsFrom(options, io, host);
      const store = new StateStore(stateFs);
      const state = await store.load();
      const lastResult = await readLastResult(host.fs, stateFs);
      const spool = (await spoolContents(stateFs)).filter((s) => s.events > 0);
      if (options.output === 'json') {
        io.stdout(JSON.stringify({ stateDir: store.directory, ...state, lastResult: lastResult ?? null, spool }, null, 2) + '\n');
      } else {
        const last = state.runs.at(-1);
        const lines = [`state: ${store.directory}`, last ? `last run: ${last.command} ${last.result ?? 'unfinished'} (started ${last.startedAt}, run ${last.runId})` : 'machineadm has not run on this machine'];
        if (state.pendingReboot) lines.push(`waiting for a reboot requested by ${state.pendingReboot.stepId}: ${state.pendingReboot.reason}`);
        for (const [id, record] of Object.entries(state.steps)) lines.push(`  ${id}: ${record.result} at ${record.at}`);
        if (lastResult) {
          lines.push(`last result: ${lastResult.command} ${lastResult.state === 'finished' ? (lastResult.result ?? '') : 'unfinished'} (run ${lastResult.runId}, exit code ${lastResult.exitCode ?? '-'})`);
          for (const id of lastResult.failedSteps ?? []) lines.push(`  failed: ${id}`);
        }
        for (const s of spool) lines.push(`spool: ${s.events} event${s.events === 1 ? '' : 's'} waiting in spool/${s.key} ("machineadm report" sends them)`);
        io.stdout(lines.join('\n') + '\n');
      }
      setExit(ExitCode.ok);
    });
}
