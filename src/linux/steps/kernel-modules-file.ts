// prepare/kernel-modules/file: /etc/modules-load.d/machineadm.conf, so the modules load at every boot.
import type { Step, StepContext } from '../../engine/step.ts';
import { MODULES_FILE, renderModulesFile } from '../modules.ts';
import { inspectFile, writeFiles, type DesiredFile } from '../../engine/managed-file.ts';

function desired(ctx: StepContext): DesiredFile {
  return { path: MODULES_FILE, content: Buffer.from(renderModulesFile(ctx.config.spec.kernelModules ?? [])), mode: 0o644, field: 'spec.kernelModules' };
}

const asked = (ctx: StepContext): boolean => (ctx.config.spec.kernelModules?.length ?? 0) > 0;

export const kernelModulesFileStep: Step = {
  id: 'kernel-modules/file',
  // One file of its own under /etc/modules-load.d: downloads may begin before it.
  overtakable: true,
  summary: `write ${MODULES_FILE} so the modules load at boot`,
  platforms: ['linux'],
  applies: (config) => (config.spec.kernelModules?.length ?? 0) > 0,
  // Without modules too, while the last run left the file (a record without `written` is an older
  // machineadm's): systemd-modules-load would load them again at every boot.
  leftBehind: (earlier) => earlier?.written !== false,
  // check() returns the same record when the file is as it should be: it goes out with the next state write.
  recordCanWait: true,
  writes: () => [MODULES_FILE],
  async check(ctx) {
    if (!asked(ctx)) return (await ctx.host.fs.exists(MODULES_FILE)) ? { done: false, changes: [{ action: 'delete', target: MODULES_FILE, detail: 'spec.kernelModules is no longer set' }] } : { done: true, changes: [], record: { written: false } };
    const state = await inspectFile(ctx.host.fs, desired(ctx), ctx.facts.privileged);
    return { done: !state.change, changes: state.change ? [state.change] : [], record: { written: true } };
  },
  async apply(ctx) {
    if (!asked(ctx)) {
      await ctx.host.fs.remove(MODULES_FILE);
      return { record: { written: false } };
    }
    await writeFiles(ctx.host.fs, [desired(ctx)], ctx.facts.privileged);
    return { record: { written: true } };
  },
};
