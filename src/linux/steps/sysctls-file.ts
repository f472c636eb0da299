// prepare/sysctls/file: /etc/sysctl.d/90-machineadm.conf, so the values hold after a reboot. Runs
// after the live apply, which has already proven every key and value on the running kernel.
import type { Step, StepContext } from '../../engine/step.ts';
import { SYSCTL_FILE, renderSysctlFile } from '../../config/schema/sysctl-key.ts';
import { formatPath } from '../../config/schema/dsl.ts';
import { inspectFile, writeFiles, type DesiredFile } from '../../engine/managed-file.ts';
import { laterOverrides, type SysctlOverride } from '../sysctl-overrides.ts';

function desired(ctx: StepContext): DesiredFile {
  return { path: SYSCTL_FILE, content: Buffer.from(renderSysctlFile(ctx.config.spec.sysctls ?? {})), mode: 0o644, field: 'spec.sysctls' };
}

const asked = (ctx: StepContext): boolean => Object.keys(ctx.config.spec.sysctls ?? {}).length > 0;
const TAKEN_OUT = { action: 'delete', target: SYSCTL_FILE, detail: 'spec.sysctls is no longer set' };

// The file is written all the same: the live value is right, and the other file is not machineadm's.
function overridden(found: SysctlOverride[], sysctls: Readonly<Record<string, string>>): string {
  return found
    .map((o) => `${formatPath(['spec', 'sysctls', o.key])}: ${o.file} is read after ${SYSCTL_FILE} and sets ${JSON.stringify(o.value)}, so at boot the kernel gets that instead of ${JSON.stringify(sysctls[o.key])}; remove the key from ${o.file} or give it the same value`)
    .join('\n');
}

export const sysctlsFileStep: Step = {
  id: 'sysctls/file',
  // One file of its own under /etc/sysctl.d: downloads may begin before it.
  overtakable: true,
  summary: `write ${SYSCTL_FILE} so the values hold at boot`,
  platforms: ['linux'],
  applies: (config) => Object.keys(config.spec.sysctls ?? {}).length > 0,
  // Without sysctls too, while the last run left the file (a record without `written` is an older
  // machineadm's): systemd-sysctl would set its values again at every boot.
  leftBehind: (earlier) => earlier?.written !== false,
  // check() returns the same record when the file is as it should be: it goes out with the next state write.
  recordCanWait: true,
  writes: () => [SYSCTL_FILE],
  async check(ctx) {
    if (!asked(ctx)) return (await ctx.host.fs.exists(SYSCTL_FILE)) ? { done: false, changes: [TAKEN_OUT] } : { done: true, changes: [], record: { written: false } };
    const state = await inspectFile(ctx.host.fs, desired(ctx), ctx.facts.privileged);
    const found = await laterOverrides(ctx.host.fs, ctx.config.spec.sysctls ?? {});
    // A later file that came after the run which wrote this one still wins at every boot: said on each run.
    if (!state.change) return { done: true, changes: [], record: { written: true }, ...(found.length ? { note: `already done; ${overridden(found, ctx.config.spec.sysctls ?? {})}` } : {}) };
    const note = found.length ? `; overridden at boot by ${[...new Set(found.map((o) => o.file))].join(', ')} for ${found.map((o) => o.key).join(', ')}` : '';
    return { done: false, changes: [{ ...state.change, detail: `${state.change.detail ?? ''}${note}` }] };
  },
  async apply(ctx) {
    if (!asked(ctx)) {
      await ctx.host.fs.remove(SYSCTL_FILE);
      return { record: { written: false } };
    }
    await writeFiles(ctx.host.fs, [desired(ctx)], ctx.facts.privileged);
    const sysctls = ctx.config.spec.sysctls ?? {};
    const found = await laterOverrides(ctx.host.fs, sysctls);
    return { ...(found.length ? { warning: overridden(found, sysctls) } : {}), record: { written: true } };
  },
};
