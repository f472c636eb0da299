// The reset phase: what `machineadm reset` runs, built from the init phases' own steps. Each step
// that changes more than files declares its undo (Step.undo); the files every step wrote are given
// back by one step from the file system's records (./files.ts). Order: undos that need the
// machine as init left it (kubeadm reset, leaving the domain) in the reverse of init's order, then
// the files, then undos that need the files back (containerd restarted on its old configuration,
// sysctls set back), then the resume registration.
import type { Phase, Step, StepContext, Undo, UndoContext } from '../phases/step.ts';
import { ALL_PHASES } from '../phases/registry.ts';
import { resetFilesStep } from './files.ts';
import { resetResumeStep } from './resume.ts';

function undoStep(original: Step, fullId: string, undo: Undo): Step {
  const context = (ctx: StepContext): UndoContext => ({
    ...ctx,
    done: ctx.recordOf(fullId),
    undoRecord: ctx.undoRecordOf(fullId),
    filesToGiveBack: async () => (await resetFilesStep.check(ctx)).changes.filter((c) => c.action !== 'refuse' && c.action !== 'keep').map((c) => c.target),
  });
  return {
    id: original.id,
    summary: undo.summary,
    ...(original.platforms ? { platforms: original.platforms } : {}),
    check: (ctx) => undo.check(context(ctx)),
    apply: (ctx, check) => undo.apply(context(ctx), check),
  };
}

export function resetSteps(phases: readonly Phase[] = ALL_PHASES): Step[] {
  const undos = phases.flatMap((phase) => phase.steps.filter((s) => s.undo).map((s) => ({ step: s, fullId: `${phase.name}/${s.id}`, undo: s.undo! })));
  const before = undos.filter((u) => (u.undo.when ?? 'before-files') === 'before-files').reverse();
  const after = undos.filter((u) => u.undo.when === 'after-files');
  return [...before.map((u) => undoStep(u.step, u.fullId, u.undo)), resetFilesStep, ...after.map((u) => undoStep(u.step, u.fullId, u.undo)), resetResumeStep];
}

export const resetPhase: Phase = {
  name: 'reset',
  summary: "undo what machineadm's runs did on this machine, from its own records",
  steps: resetSteps(),
};
