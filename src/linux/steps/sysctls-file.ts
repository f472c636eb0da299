// prepare/sysctls/file: /etc/sysctl.d/90-machineadm.conf, so the values hold after a reboot. Runs
// after the live apply, which has already proven every key and value on the running kernel.
import type { Step, StepContext } from '../../engine/step.ts';
import { SYSCTL_FILE, renderSysctlFile } from '../../config/schema/sysctl-key.ts';
import { inspectFile, writeFiles, type DesiredFile } from '../../engine/managed-file.ts';

function desired(ctx: StepContext): DesiredFile {
  return { path: SYSCTL_FILE, content: Buffer.from(renderSysctlFile(ctx.config.spec.sysctls ?? {})), mode: 0o644, field: 'spec.sysctls' };
}

export const sysctlsFileStep: Step = {
  id: 'sysctls/file',
  // One file of its own under /etc/sysctl.d: downloads may begin before it.
  overtakable: true,
  summary: `write ${SYSCTL_FILE} so the values hold at boot`,
  platforms: ['linux'],
  applies: (config) => Object.keys(config.spec.sysctls ?? {}).length > 0,
  writes: () => [SYSCTL_FILE],
  async check(ctx) {
    const state = await inspectFile(ctx.host.fs, desired(ctx), ctx.facts.privileged);
    return { done: !state.change, changes: state.change ? [state.change] : [] };
  },
  async apply(ctx) {
    await writeFiles(ctx.host.fs, [desired(ctx)], ctx.facts.privileged);
  },
};
