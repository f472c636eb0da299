// prepare/sysctls/apply: sets each sysctl on the running kernel with `sysctl -w`, then reads the value
// back from /proc/sys, because sysctl's exit status is not reliable (a rejected value can still exit 0).
// A key that fails puts the keys already changed in this step back to their old values, so a bad
// value leaves the kernel as it was and the persistent file is never written.
import type { Step, StepContext } from '../../engine/step.ts';
import { ConfigError, StepDetailsError, type ConfigIssue } from '../../errors.ts';
import { formatPath } from '../../config/schema/dsl.ts';
import { normalizeSysctlValue, procPath, sameSysctlValue } from '../../config/schema/sysctl-key.ts';
import { liveSkipReason } from '../live.ts';
import { kernelModulesLoadStep } from './kernel-modules-load.ts';

export type SysctlOutcome = 'applied' | 'unchanged' | 'failed' | 'restored';

interface KeyState {
  key: string;
  field: string;
  want: string;
  current: string;
}

function fieldOf(key: string): string {
  return formatPath(['spec', 'sysctls', key]);
}

/**
 * Reads every key; refuses unknown and read-only keys before anything is changed. `awaitingModules`
 * (a plan, with modules still to load) returns unknown keys instead: net.bridge.* appears only once
 * br_netfilter is loaded, which the run does first but a plan does not.
 */
async function readKeys(ctx: StepContext, awaitingModules = false): Promise<{ states: KeyState[]; later: string[] }> {
  const sysctls = ctx.config.spec.sysctls ?? {};
  const issues: ConfigIssue[] = [];
  const states: KeyState[] = [];
  const later: string[] = [];
  for (const key of Object.keys(sysctls).sort()) {
    const path = procPath(key);
    const info = await ctx.host.fs.stat(path);
    if ((!info || info.kind !== 'file') && awaitingModules) {
      later.push(key);
      continue;
    }
    if (!info || info.kind !== 'file') {
      issues.push({ path: fieldOf(key), message: `unknown sysctl on this kernel (${path} does not exist)`, hint: 'check the name (sysctl -a lists them); a module may have to be loaded first (spec.kernelModules)' });
      continue;
    }
    if ((info.mode & 0o222) === 0) {
      issues.push({ path: fieldOf(key), message: `read-only sysctl (${path} has mode 0${info.mode.toString(8)})`, hint: 'the kernel does not let this value be set; remove it' });
      continue;
    }
    if ((info.mode & 0o444) === 0) {
      issues.push({ path: fieldOf(key), message: `write-only sysctl (${path} has mode 0${info.mode.toString(8)}): it triggers an action rather than holding a setting`, hint: 'remove it; run the action yourself if it is needed once' });
      continue;
    }
    const current = normalizeSysctlValue((await ctx.host.fs.readText(path)) ?? '');
    states.push({ key, field: fieldOf(key), want: normalizeSysctlValue(sysctls[key]!), current });
  }
  if (issues.length) throw new ConfigError(issues);
  return { states, later };
}

export const sysctlsApplyStep: Step = {
  id: 'sysctls/apply',
  // Kernel values only: downloads may begin before it (one that needed a value is done again).
  overtakable: true,
  summary: 'set the sysctls on the running kernel and read them back',
  platforms: ['linux'],
  applies: (config) => Object.keys(config.spec.sysctls ?? {}).length > 0,
  // The record says what apply() did, for people; no run reads it.
  recordCanWait: true,
  async check(ctx) {
    const skip = liveSkipReason(ctx.host);
    if (skip) {
      const sysctls = ctx.config.spec.sysctls ?? {};
      return { done: false, skipReason: skip, changes: Object.keys(sysctls).sort().map((k) => ({ action: 'set', target: k, detail: `-> ${sysctls[k]}` })) };
    }
    const awaitingModules = ctx.options.dryRun && !(await kernelModulesLoadStep.check(ctx)).done;
    const { states, later } = await readKeys(ctx, awaitingModules);
    const changes = states.filter((s) => !sameSysctlValue(s.current, s.want)).map((s) => ({ action: 'set', target: s.key, detail: `${s.current} -> ${s.want}` }));
    for (const key of later) changes.push({ action: 'set', target: key, detail: `-> ${normalizeSysctlValue(ctx.config.spec.sysctls![key]!)} (the key appears once the kernel modules are loaded)` });
    return { done: changes.length === 0, changes };
  },
  async apply(ctx) {
    const { states } = await readKeys(ctx);
    const outcome: Record<string, { result: SysctlOutcome; before: string; after?: string; reason?: string }> = {};
    const changed: KeyState[] = [];
    const failures: string[] = [];
    const restore = async () => {
      for (const s of changed) {
        await ctx.host.proc.run(['sysctl', '-w', `${s.key}=${s.current}`], { timeoutMs: 30_000, allowFailure: true });
        const back = normalizeSysctlValue((await ctx.host.fs.readText(procPath(s.key))) ?? '');
        if (outcome[s.key]?.result === 'applied') outcome[s.key] = { ...outcome[s.key]!, result: 'restored', after: back };
      }
    };
    try {
      for (const s of states) {
        if (sameSysctlValue(s.current, s.want)) {
          outcome[s.key] = { result: 'unchanged', before: s.current };
          continue;
        }
        const result = await ctx.host.proc.run(['sysctl', '-w', `${s.key}=${s.want}`], { timeoutMs: 30_000, allowFailure: true });
        const after = normalizeSysctlValue((await ctx.host.fs.readText(procPath(s.key))) ?? '');
        if (sameSysctlValue(after, s.want)) {
          outcome[s.key] = { result: 'applied', before: s.current, after };
          changed.push(s);
          ctx.log(`${s.key}: applied (${s.current} -> ${after})`);
          continue;
        }
        const said = (result.stderr.trim().split('\n').pop() ?? '').replace(/^sysctl:\s*/, '');
        const reason = said || (result.exitCode !== 0 ? `sysctl exited ${result.exitCode}` : `the kernel kept ${after}`);
        outcome[s.key] = { result: 'failed', before: s.current, after, reason };
        failures.push(`${s.field}: ${JSON.stringify(s.want)} was not accepted (${reason}; the value read back is ${JSON.stringify(after)})`);
        ctx.log(`${s.key}: failed (${reason})`, 'warning');
        // A partly written value (the kernel took another value) is put back too.
        if (after !== s.current) changed.push(s);
      }
    } catch (error) {
      // sysctl timing out (or missing) throws instead of returning a result: the keys already
      // changed are put back all the same.
      await restore().catch(() => undefined);
      throw error;
    }
    if (failures.length) {
      await restore();
      throw new StepDetailsError(
        `${failures.length} sysctl value${failures.length === 1 ? '' : 's'} not accepted by the kernel:\n  ${failures.join('\n  ')}\n  (keys changed by this step were set back; /etc/sysctl.d was not written)`,
        { sysctls: outcome },
      );
    }
    return { record: { sysctls: Object.fromEntries(Object.entries(outcome).map(([k, v]) => [k, v.result])) } };
  },
  // The kernel's values before machineadm's first change of each key: what reset sets back.
  async undoRecord(ctx) {
    if (liveSkipReason(ctx.host)) return undefined;
    const { states } = await readKeys(ctx);
    const changing = states.filter((s) => !sameSysctlValue(s.current, s.want));
    return changing.length ? { before: Object.fromEntries(changing.map((s) => [s.key, s.current])) } : undefined;
  },
  undo: {
    summary: 'set the sysctls back to their values before machineadm first changed them',
    // After /etc/sysctl.d is given back, so the file and the kernel agree.
    when: 'after-files',
    async check(ctx) {
      const before = (ctx.undoRecord?.before ?? {}) as Record<string, string>;
      const keys = Object.keys(before).sort();
      if (keys.length === 0) {
        // Applied by a machineadm that kept no record of the values before.
        const applied = Object.entries((ctx.done?.data?.sysctls ?? {}) as Record<string, string>).filter(([, r]) => r === 'applied').map(([k]) => k);
        if (applied.length === 0) return { done: true, changes: [] };
        return { done: false, changes: [], skipReason: `the values before the first run were not recorded (state from an older machineadm): ${applied.join(', ')} left as they are` };
      }
      const changes = [];
      for (const key of keys) {
        const now = normalizeSysctlValue((await ctx.host.fs.readText(procPath(key))) ?? '');
        if (now !== before[key]) changes.push({ action: 'set', target: key, detail: `${now} -> ${before[key]}` });
      }
      const skip = liveSkipReason(ctx.host);
      if (skip && changes.length) return { done: false, changes, skipReason: skip };
      return { done: changes.length === 0, changes };
    },
    async apply(ctx) {
      const before = (ctx.undoRecord?.before ?? {}) as Record<string, string>;
      const kept: string[] = [];
      for (const key of Object.keys(before).sort()) {
        const path = procPath(key);
        if (normalizeSysctlValue((await ctx.host.fs.readText(path)) ?? '') === before[key]) continue;
        await ctx.host.proc.run(['sysctl', '-w', `${key}=${before[key]}`], { timeoutMs: 30_000, allowFailure: true });
        const after = normalizeSysctlValue((await ctx.host.fs.readText(path)) ?? '');
        if (after === before[key]) ctx.log(`${key}: set back to ${after}`);
        else kept.push(`${key} (${after}, was ${before[key]})`);
      }
      if (kept.length) return { warning: `the kernel did not take back: ${kept.join(', ')}` };
      return {};
    },
  },
};
