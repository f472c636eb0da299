// resume: what the registration made for a reboot runs at the next boot. It reads the command the
// stopped run left in the state directory (resume.json, see src/engine/resume-record.ts), counts
// this boot, and runs the command; after MAX_RESUME_BOOTS boots without the run ending or
// registering anew it removes the registration instead and says so (stderr, resume.json, status).
import type { Command } from 'commander';
import type { Io } from '../io.ts';
import { addRootOption, addStateDirOption, type CommonOptions } from '../options.ts';
import { ExitCode } from '../../errors.ts';

/** `run` is the command line's own entry (main), which runs the stopped command's arguments. */
export function registerResumeCommand(program: Command, io: Io, setExit: (code: number) => void, run: (args: readonly string[], io: Io) => Promise<number>): void {
  const command = program.command('resume').description('run the command a run that stopped for a reboot left in the state directory (what the resume registration runs at boot)');
  addStateDirOption(addRootOption(command, io))
    .addHelpText('after', '\nExample:\n  $ machineadm resume --state-dir /var/lib/machineadm\n')
    .action(async (options: CommonOptions) => {
      const [{ hostFrom, stateFsFrom }, { readResumeRecord, writeResumeRecord, bootsAtStart, MAX_RESUME_BOOTS }] = await Promise.all([import('../host-options.ts'), import('../../engine/resume-record.ts')]);
      const host = hostFrom(options, io);
      const stateFs = stateFsFrom(options, io, host);
      const record = await readResumeRecord(stateFs);
      const where = stateFs.mapPath('/resume.json');
      if (!record?.args) {
        // Said only when there was one: started by hand, there is often nothing registered.
        const registered = (await host.resume.registered()) !== undefined;
        await host.resume.remove();
        io.stderr(`error: machineadm resume: there is no command to resume in ${where}${record?.gaveUp ? ` (it gave up at ${record.gaveUp.at}: ${record.gaveUp.reason})` : ''}${registered ? '; the resume registration is removed' : ''}\nhint: run the command that stopped for the reboot again by hand\n`);
        setExit(ExitCode.stepFailed);
        return;
      }
      // Started by hand before the restart, or again in a boot already counted: not a boot.
      const { bootId } = await host.facts();
      const boots = bootsAtStart(record, bootId);
      if (boots > MAX_RESUME_BOOTS) {
        const reason = `the run registered at ${record.registeredAt} was started at ${record.boots} boots without finishing (limit ${MAX_RESUME_BOOTS})`;
        await writeResumeRecord(stateFs, { registeredAt: record.registeredAt, boots: record.boots, gaveUp: { at: host.now().toISOString(), reason } });
        await host.resume.remove();
        io.stderr(`error: machineadm resume: ${reason}; the resume registration is removed and will not run again\nhint: "machineadm status" shows the last run's error; fix it and run the command again by hand\n`);
        setExit(ExitCode.stepFailed);
        return;
      }
      await writeResumeRecord(stateFs, { ...record, boots, ...(bootId ? { bootId } : {}) });
      // The command runs in this process, as if it had been given on the command line.
      setExit(await run(record.args, io));
    });
}
