// The spec.commands steps. When each list runs again:
// - boot: on every run (plan shows it every time), like cloud-init's bootcmd.
// - beforeKubeadm: until the kubeadm init/join of this machine has succeeded; once it has, a rerun
//   skips them with kubeadm (with --force, kubeadm runs again and so do they).
// - afterKubeadm: once after each successful kubeadm init/join. A failure (or a kill) runs them all
//   again on the next run, whose kubeadm step is then already done.
import type { CheckResult, Step, StepContext, Undo } from '../engine/step.ts';
import type { CommandSpec, MachineConfig } from '../config/schema/index.ts';
import { kubeadmPaths } from '../kubeadm/paths.ts';
import { commandsSkipReason, plannedChanges, runCommands, type CommandList, type CommandOutcome } from './run.ts';

function listOf(config: MachineConfig, list: CommandList): readonly CommandSpec[] {
  return config.spec.commands?.[list] ?? [];
}

function kubeadmStepId(config: MachineConfig): string | undefined {
  const bootstrap = config.spec.kubernetes?.bootstrap;
  return bootstrap ? `kubeadm/${bootstrap}` : undefined;
}

/** The kubeadm record of this machine's successful init/join, when the kubelet still has its credentials. */
async function joinedRecord(ctx: StepContext): Promise<{ joinedAt: string } | undefined> {
  const id = kubeadmStepId(ctx.config);
  const record = id ? ctx.recordOf(id) : undefined;
  if (record?.data?.joined !== true) return undefined;
  if (ctx.host.fs.platform !== ctx.facts.os || !(await ctx.host.fs.exists(kubeadmPaths(ctx.facts.os).kubeletConf))) return undefined;
  // Records from before joinedAt was kept: one join, whenever it was.
  return { joinedAt: typeof record.data.joinedAt === 'string' ? record.data.joinedAt : 'before-joinedAt' };
}

/** In a plan: what the run would have done with kubeadm by now ('run', 'done', or 'not here'). */
function plannedKubeadm(ctx: StepContext): 'run' | 'done' | 'not here' | undefined {
  const id = kubeadmStepId(ctx.config);
  const planned = ctx.run.phases.flatMap((p) => p.steps).find((s) => id !== undefined && s.id.endsWith(`/${id}`));
  if (!planned) return undefined;
  if (planned.result === 'success' || planned.result === 'warning') return 'run';
  return planned.upToDate ? 'done' : 'not here';
}

/** Said by reset of commands that ran: a reason starting "not undone:" makes the plan list them as left as they are. */
export const COMMANDS_NOT_UNDONE = 'not undone: machineadm cannot know what a command changed; put what undoes it in spec.commands.beforeReset, which reset runs first';

/**
 * reset's word on a list of commands that ran: nothing is undone, and the plan names each command
 * the last run ran, so the operator sees what is left to them.
 */
function notUndone(list: CommandList): Undo {
  return {
    summary: `spec.commands.${list} ran: not undone (spec.commands.beforeReset is where an undo goes)`,
    async check(ctx) {
      const ran = (ctx.done?.data?.commands ?? []) as CommandOutcome[];
      if (ran.length === 0) return { done: true, changes: [] };
      const changes = ran.map((o) => ({ action: 'keep', target: `${o.field}${o.name ? ` (${o.name})` : ''}`, detail: `ran${o.exitCode !== undefined ? ` with exit code ${o.exitCode}` : ''}, last at ${ctx.done!.at}: what it changed stays` }));
      return { done: false, changes, skipReason: COMMANDS_NOT_UNDONE };
    },
    async apply() {
      // Never reached: check() skips.
    },
  };
}

function commandsStep(list: CommandList, id: string, summary: string, upToDate: (ctx: StepContext) => Promise<{ done: boolean; reason?: string; record?: Record<string, unknown> }>): Step {
  return {
    ...(list === 'beforeReset' ? {} : { undo: notUndone(list) }),
    id,
    summary,
    applies: (config) => listOf(config, list).length > 0,
    async check(ctx): Promise<CheckResult> {
      const changes = plannedChanges(list, listOf(ctx.config, list), ctx.facts.os);
      const state = await upToDate(ctx);
      if (state.done) return { done: true, changes: [], ...(state.record ? { record: state.record } : {}) };
      if (state.reason) return { done: false, changes, skipReason: state.reason };
      const skip = commandsSkipReason(ctx);
      return { done: false, changes, ...(skip ? { skipReason: skip } : {}) };
    },
    async apply(ctx) {
      const { outcomes, changes } = await runCommands(ctx, list, listOf(ctx.config, list));
      const joined = list === 'afterKubeadm' ? await joinedRecord(ctx) : undefined;
      return { changes, record: { commands: outcomes, ...(joined ? { afterJoinAt: joined.joinedAt } : {}) } };
    },
  };
}

export const bootCommandsStep = commandsStep('boot', 'commands/boot', 'run spec.commands.boot (on every run)', async () => ({ done: false }));

export const beforeKubeadmCommandsStep = commandsStep('beforeKubeadm', 'commands/before-kubeadm', 'run spec.commands.beforeKubeadm (until kubeadm has succeeded)', async (ctx) => {
  if (ctx.options.force) return { done: false };
  return { done: (await joinedRecord(ctx)) !== undefined };
});

export const afterKubeadmCommandsStep = commandsStep('afterKubeadm', 'commands/after-kubeadm', 'run spec.commands.afterKubeadm (once after each successful kubeadm)', async (ctx) => {
  if (ctx.options.dryRun) {
    const planned = plannedKubeadm(ctx);
    if (planned === 'run') return { done: false };
    if (planned === 'not here') return { done: false, reason: 'kubeadm does not run here, so there is nothing to run after' };
  }
  const joined = await joinedRecord(ctx);
  if (!joined) return { done: false, reason: 'kubeadm has not joined this machine: nothing to run after' };
  const done = ctx.previous?.data?.afterJoinAt === joined.joinedAt;
  return { done };
});

/** reset's first step: the operator's own undo of what the other lists did (on every reset run). */
export const beforeResetCommandsStep = commandsStep('beforeReset', 'commands/before-reset', 'run spec.commands.beforeReset (before reset undoes anything)', async () => ({ done: false }));
