// What a run would do and what it refuses, before anything changes: the plan (every step's
// check as data, for plan and --dry-run), the preflight (every refusal at once, exit 2), and the
// leftovers of a killed run removed before the next one starts.
import type { Host, Facts } from '../host/index.ts';
import { worstResult, type Result } from './events.ts';
import { ConfigError, ExitCode, MachineadmError, StepError, UsageError, type ConfigIssue } from '../errors.ts';
import type { Phase, PhaseName } from './step.ts';
import { selectSteps } from './select.ts';
import type { Plan, PlannedStatus, RunnerInput } from './runner-input.ts';
import { applicability, checkStep, contextFor, leftOutOf, runnable } from './step-context.ts';
import { secretFields } from '../config/redact.ts';
import { describeSecretSource } from '../config/secret-description.ts';

/** Every action the run would take, in order; touches nothing. `plan` and `--dry-run` both use it. */
export async function computePlan(input: RunnerInput): Promise<Plan> {
  const selected = selectSteps(input.phases, input.selection);
  const state = await input.state.load();
  const phases: Plan['phases'] = input.phases.map((p) => ({ name: p.name, summary: p.summary, steps: [] }));
  // What the run would have been through when it reaches each step, so that a step that depends
  // on earlier ones (the sentinel after provisioning) plans what the run would then do.
  const planned: { name: PhaseName; result: Result; steps: { id: string; result: Result; upToDate?: boolean }[]; leftOut?: string[] }[] = [];
  for (const s of selected) {
    const target = phases.find((p) => p.name === s.phase.name)!;
    // As in a run, every phase up to this one has been entered, also those without steps.
    for (const phase of input.phases.slice(0, input.phases.indexOf(s.phase) + 1)) {
      if (planned.some((p) => p.name === phase.name)) continue;
      const leftOut = leftOutOf(selected, phase, input);
      planned.push({ name: phase.name, result: 'skipped', steps: [], ...(leftOut.length ? { leftOut } : {}) });
    }
    const soFar = planned.find((p) => p.name === s.phase.name)!;
    const base = { id: s.fullId, phase: s.phase.name, summary: s.step.summary };
    const notApplicable = applicability(s.step, input, state.steps[s.fullId]);
    if (notApplicable) {
      target.steps.push({ ...base, status: 'not-applicable', reason: notApplicable, changes: [] });
      continue;
    }
    if (!s.selected) {
      target.steps.push({ ...base, status: 'not-selected', reason: 'left out by --only/--skip', changes: [] });
      continue;
    }
    const check = await checkStep(s.step, contextFor(input, state, s.fullId, true, { failed: false, phases: planned }), s.fullId);
    const status: PlannedStatus = check.skipReason ? 'skipped' : check.done ? 'up-to-date' : 'change';
    const network = status === 'change' && check.network?.length ? { network: check.network } : {};
    const reason = check.skipReason ?? (check.done ? check.note : undefined);
    target.steps.push({ ...base, status, ...(reason ? { reason } : {}), changes: check.changes, ...network });
    soFar.steps.push({ id: s.fullId, result: status === 'change' ? 'success' : 'skipped', ...(status === 'up-to-date' ? { upToDate: true } : {}) });
    soFar.result = worstResult(soFar.steps.map((x) => x.result));
  }
  const secrets = secretFields(input.config).map(({ field, source }) => ({ field, from: describeSecretSource(source, input.facts.os) }));
  return { command: input.command, os: input.facts.os, facts: input.facts, phases, secrets };
}

/**
 * Everything that can be found wrong before the first change, found at once: each step's own
 * preflight (secrets read and checked, files it needs), every refusal a step's check shows (a
 * "refuse" change: the plan shows it, the run would stop there), and, under --offline, every
 * network use a step would make. Throws a ConfigError (exit 2) listing all, or a UsageError for
 * --offline.
 */
export async function preflightRun(input: RunnerInput): Promise<void> {
  const steps = runnable(input);
  const state = await input.state.load();
  const issues: ConfigIssue[] = sharedWrites(input);
  const refusedBy = new Set<string>();
  for (const s of steps) {
    if (!s.step.preflight) continue;
    try {
      await s.step.preflight(contextFor(input, state, s.fullId, true, { failed: false, phases: [] }));
    } catch (error) {
      if (!(error instanceof ConfigError)) throw new StepError(s.fullId, error);
      issues.push(...error.issues);
      refusedBy.add(s.fullId);
    }
  }
  const needs: string[] = [];
  for (const s of steps) {
    // A check that refuses its input or the machine as it is (a link where a folder must be, a
    // version kubeadm no longer knows) refuses the run before its first change, as plan does.
    // Any other failure happens again, with its own message, when the step runs.
    const check = await s.step.check(contextFor(input, state, s.fullId, true, { failed: false, phases: [] })).catch((error: unknown) => {
      if (refusedBy.has(s.fullId)) return undefined;
      if (error instanceof ConfigError) issues.push(...error.issues);
      else if (error instanceof MachineadmError && error.exitCode === ExitCode.usage) issues.push({ path: '', message: `step ${s.fullId} would refuse: ${error.message}`, ...(error.hint ? { hint: error.hint } : {}), refused: true });
      return undefined;
    });
    if (!check || check.done || check.skipReason) continue;
    if (!refusedBy.has(s.fullId)) {
      for (const c of check.changes.filter((c) => c.action === 'refuse')) issues.push({ path: '', message: `step ${s.fullId} would refuse ${c.target}${c.detail ? `: ${c.detail}` : ''}`, refused: true });
    }
    if (input.host.offline) needs.push(...(check.network ?? []).map((n) => `${s.fullId}: ${n}`));
  }
  // Steps that render the same file (containerd's) find the same problem in it: said once.
  if (issues.length) throw new ConfigError(issues.filter((issue, i) => issues.findIndex((o) => o.path === issue.path && o.message === issue.message) === i));
  if (needs.length) {
    throw new UsageError(`--offline: this run would use the network, so nothing was changed:\n${needs.map((n) => `  ${n}`).join('\n')}`, {
      hint: 'put those files on the machine beforehand (their sha256 is checked), or run without --offline',
    });
  }
}

/**
 * A file two steps of the configuration write whole (a spec.files entry for the file spec.sysctls
 * makes): each would rewrite it on every run, and the run never converges. Every step that
 * applies counts, selected or not: a later run without --only writes both.
 */
function sharedWrites(input: RunnerInput): ConfigIssue[] {
  const writer = new Map<string, string>();
  const issues: ConfigIssue[] = [];
  for (const s of selectSteps(input.phases, { only: [], skip: [] })) {
    if (applicability(s.step, input)) continue;
    // A path one step names twice (two spec.files entries) is that step's own refusal.
    for (const path of new Set(s.step.writes?.(input.config) ?? [])) {
      const other = writer.get(path);
      if (other === undefined) writer.set(path, s.fullId);
      else issues.push({ path: '', message: `${path} is written by both ${other} and ${s.fullId}: each would rewrite it on every run`, hint: 'leave the file to one of them (a file machineadm makes from spec.sysctls, spec.kernelModules, spec.containerd or spec.storage is not a spec.files entry too)' });
    }
  }
  return issues;
}

/**
 * Refuses, as a step's check would, a path the run itself writes outside every step (the run
 * directory, what a killed run left) that leads out of the root through a link: found before the
 * first change, by plan as by the run.
 */
export async function refuseRunPaths(host: Host, facts: Facts, phases: readonly Phase[], runDir: string): Promise<ConfigIssue[]> {
  if (host.fs.platform !== facts.os) return [];
  const paths = [runDir, ...phases.flatMap((p) => p.steps).flatMap((step) => step.leftovers?.(facts) ?? [])];
  const issues: ConfigIssue[] = [];
  const refused: string[] = [];
  // Shortest first: one link refused once, not once for every path below it.
  for (const path of [...new Set(paths)].sort((a, b) => a.length - b.length)) {
    if (refused.some((r) => path.startsWith(r + (facts.os === 'windows' ? '\\' : '/')))) continue;
    await host.fs.resolve(path).catch((error: unknown) => {
      if (!(error instanceof UsageError)) throw error;
      refused.push(path);
      issues.push({ path: '', message: error.message, ...(error.hint ? { hint: error.hint } : {}), refused: true });
    });
  }
  return issues;
}

/**
 * Removes what steps of a run that was killed left behind (files holding secrets), for every step
 * that could have run: a killed `init` leaves files that a later `prepare` must not keep.
 */
export async function removeLeftovers(host: Host, facts: Facts, phases: readonly Phase[]): Promise<void> {
  if (host.fs.platform !== facts.os) return;
  for (const step of phases.flatMap((p) => p.steps)) {
    for (const path of step.leftovers?.(facts) ?? []) await host.fs.remove(path);
  }
}
