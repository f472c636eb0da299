// The reset phase: what `machineadm reset` runs, built from the init phases' own steps, after the
// operator's spec.commands.beforeReset. Each step
// that changes more than files declares its undo (Step.undo); the files every step wrote are given
// back by one step from the file system's records (./files.ts). Order: undos that need the
// machine as init left it (kubeadm reset, leaving the domain) in the reverse of init's order, then
// the files, then undos that need the files back (containerd restarted on its old configuration,
// sysctls set back), then the resume registration, and last (Windows) the restart that finishes
// leaving the domain.
import type { Phase, Step, StepContext, Undo, UndoContext } from '../engine/step.ts';
import { ALL_PHASES } from './registry.ts';
import { resetFilesStep } from '../reset/files.ts';
import { resetResumeStep } from '../reset/resume.ts';
import { beforeResetCommandsStep } from '../commands/steps.ts';
import { resetRestartStep } from '../reset/restart.ts';

interface Declared {
  step: Step;
  fullId: string;
  undo: Undo;
}

export function resetSteps(phases: readonly Phase[] = ALL_PHASES): Step[] {
  const undos: Declared[] = phases.flatMap((phase) => phase.steps.filter((s) => s.undo).map((s) => ({ step: s, fullId: `${phase.name}/${s.id}`, undo: s.undo! })));
  const context = (ctx: StepContext, u: Declared): UndoContext => {
    const undoCtx: UndoContext = {
      ...ctx,
      done: ctx.recordOf(u.fullId),
      undoRecord: ctx.undoRecordOf(u.fullId),
      filesToGiveBack: async () => (await files.check(ctx)).changes.filter((c) => c.action !== 'refuse' && c.action !== 'keep').map((c) => c.target),
    };
    return undoCtx;
  };
  // What the undos keep in this reset (--keep-domain: the keytab) is not given back.
  const files = resetFilesStep(async (ctx) => undos.flatMap((u) => u.undo.keeps?.(context(ctx, u)) ?? []));
  const undoStep = (u: Declared): Step => ({
    id: u.step.id,
    summary: u.undo.summary,
    ...((u.undo.platforms ?? u.step.platforms) ? { platforms: u.undo.platforms ?? u.step.platforms } : {}),
    ...(u.undo.preflight ? { preflight: (ctx: StepContext) => u.undo.preflight!(context(ctx, u)) } : {}),
    check: (ctx) => u.undo.check(context(ctx, u)),
    apply: (ctx, check) => u.undo.apply(context(ctx, u), check),
  });
  const before = undos.filter((u) => (u.undo.when ?? 'before-files') === 'before-files').reverse();
  const after = undos.filter((u) => u.undo.when === 'after-files');
  // The operator's own undo first, while the machine is still as machineadm left it.
  return [beforeResetCommandsStep, ...before.map(undoStep), files, ...after.map(undoStep), resetResumeStep, resetRestartStep];
}

export const resetPhase: Phase = {
  name: 'reset',
  summary: "undo what machineadm's runs did on this machine, from its own records",
  steps: resetSteps(),
};
