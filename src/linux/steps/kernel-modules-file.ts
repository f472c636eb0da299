// prepare/kernel-modules/file: /etc/modules-load.d/machineadm.conf, so the modules load at every boot.
import type { Step, StepContext } from '../../engine/step.ts';
import { MODULES_FILE, renderModulesFile } from '../modules.ts';
import { inspectFile, writeFiles, type DesiredFile } from '../../engine/managed-file.ts';

function desired(ctx: StepContext): DesiredFile {
  return { path: MODULES_FILE, content: Buffer.from(renderModulesFile(ctx.config.spec.kernelModules ?? [])), mode: 0o644, field: 'spec.kernelModules' };
}

export const kernelModulesFileStep: Step = {
  id: 'kernel-modules/file',
  // One file of its own under /etc/modules-load.d: downloads may begin before it.
  overtakable: true,
  summary: `write ${MODULES_FILE} so the modules load at boot`,
  platforms: ['linux'],
  applies: (config) => (config.spec.kernelModules?.length ?? 0) > 0,
  writes: () => [MODULES_FILE],
  async check(ctx) {
    const state = await inspectFile(ctx.host.fs, desired(ctx), ctx.facts.privileged);
    return { done: !state.change, changes: state.change ? [state.change] : [] };
  },
  async apply(ctx) {
    await writeFiles(ctx.host.fs, [desired(ctx)], ctx.facts.privileged);
  },
};
