// prepare/kernel-modules/load: loads each configured module that is not in the running kernel yet.
// Runs before the modules-load.d file is written, so a module that does not exist stops the run
// before anything is persisted.
import type { Step, StepContext } from '../../engine/step.ts';
import { ConfigError, MachineadmError, ExitCode, type ConfigIssue } from '../../errors.ts';
import { builtinModules, moduleEvidence } from '../modules.ts';
import { liveSkipReason } from '../live.ts';

async function isPresent(ctx: StepContext, name: string, builtin: Set<string>): Promise<boolean> {
  if (builtin.has(name.replace(/-/g, '_'))) return true;
  for (const path of moduleEvidence(name)) if (await ctx.host.fs.exists(path)) return true;
  return false;
}

async function builtinList(ctx: StepContext): Promise<Set<string>> {
  const release = ctx.facts.kernelRelease;
  if (!release) return new Set();
  for (const dir of ['/lib/modules', '/usr/lib/modules']) {
    const text = await ctx.host.fs.readText(`${dir}/${release}/modules.builtin`).catch(() => undefined);
    if (text !== undefined) return builtinModules(text);
  }
  return new Set();
}

async function missingModules(ctx: StepContext): Promise<{ name: string; index: number }[]> {
  const builtin = await builtinList(ctx);
  const modules = ctx.config.spec.kernelModules ?? [];
  const missing: { name: string; index: number }[] = [];
  for (const [index, name] of modules.entries()) if (!(await isPresent(ctx, name, builtin))) missing.push({ name, index });
  return missing;
}

const lastLine = (result: { stdout: string; stderr: string }): string => (result.stderr || result.stdout).trim().split('\n').pop() ?? '';
const doesNotExist = (ctx: StepContext, name: string, said: string): string => `kernel module "${name}" does not exist for kernel ${ctx.facts.kernelRelease ?? '(unknown)'} (${said})`;
const NOT_FOUND_HINT = 'check the name (modinfo NAME), or install the package that ships the module';

export const kernelModulesLoadStep: Step = {
  id: 'kernel-modules/load',
  // A module loaded changes no file: downloads of spec.files may begin before it (Step.overtakable).
  overtakable: true,
  summary: 'load the kernel modules that are not in the running kernel',
  platforms: ['linux'],
  applies: (config) => (config.spec.kernelModules?.length ?? 0) > 0,
  // The record says what apply() did, for people; no run reads it.
  recordCanWait: true,
  // apply() loads in order and stops at a missing module, after the ones before it (and the boot
  // commands): `modprobe --dry-run` resolves each name and its dependencies without loading.
  async preflight(ctx) {
    if (liveSkipReason(ctx.host) || !(await ctx.host.proc.which('modprobe'))) return;
    const issues: ConfigIssue[] = [];
    for (const m of await missingModules(ctx)) {
      const result = await ctx.host.proc.run(['modprobe', '--dry-run', '--', m.name], { timeoutMs: 60_000, allowFailure: true });
      const said = lastLine(result);
      if (result.exitCode !== 0 && /not found/i.test(said)) issues.push({ path: `spec.kernelModules[${m.index}]`, message: doesNotExist(ctx, m.name, said), hint: NOT_FOUND_HINT });
    }
    if (issues.length) throw new ConfigError(issues);
  },
  async check(ctx) {
    const skip = liveSkipReason(ctx.host);
    if (skip) return { done: false, skipReason: skip, changes: (ctx.config.spec.kernelModules ?? []).map((m) => ({ action: 'load', target: m, detail: 'modprobe, unless already in the kernel' })) };
    const missing = await missingModules(ctx);
    return { done: missing.length === 0, changes: missing.map((m) => ({ action: 'load', target: m.name, detail: `modprobe ${m.name}` })) };
  },
  async apply(ctx) {
    const missing = await missingModules(ctx);
    if (missing.length === 0) return;
    if (!(await ctx.host.proc.which('modprobe'))) {
      throw new MachineadmError(`modprobe is not installed, so ${missing.map((m) => m.name).join(', ')} cannot be loaded`, ExitCode.stepFailed, {
        hint: 'install the kmod package, or leave these modules out of spec.kernelModules',
      });
    }
    const loaded: string[] = [];
    for (const m of missing) {
      const result = await ctx.host.proc.run(['modprobe', '--', m.name], { timeoutMs: 60_000, allowFailure: true });
      if (result.exitCode !== 0) {
        const said = lastLine(result);
        const notFound = /not found/i.test(said);
        throw new MachineadmError(
          `spec.kernelModules[${m.index}]: ${notFound ? doesNotExist(ctx, m.name, said) : `loading kernel module "${m.name}" failed (${said || `modprobe exited ${result.exitCode}`})`}`,
          ExitCode.stepFailed,
          { hint: `${notFound ? NOT_FOUND_HINT : 'see the modprobe message'}; nothing was persisted` },
        );
      }
      loaded.push(m.name);
      ctx.log(`loaded kernel module ${m.name}`);
    }
    return { record: { loaded } };
  },
};
