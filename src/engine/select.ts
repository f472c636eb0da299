// Step selection by slash ids: a parent id selects its children, skip beats only, and an id that
// names no step is an error (a typo must not silently run everything).
import { UsageError } from '../errors.ts';
import type { Phase, Step } from './step.ts';

export interface Selection {
  only?: readonly string[];
  skip?: readonly string[];
}

export interface SelectedStep {
  phase: Phase;
  step: Step;
  /** "prepare/containerd/config" */
  fullId: string;
  selected: boolean;
}

function matches(selector: string, fullId: string, stepId: string): boolean {
  const s = selector.replace(/^\/+|\/+$/g, '');
  return [fullId, stepId].some((id) => id === s || id.startsWith(s + '/'));
}

export function selectSteps(phases: readonly Phase[], selection: Selection): SelectedStep[] {
  const all = phases.flatMap((phase) => phase.steps.map((step) => ({ phase, step, fullId: `${phase.name}/${step.id}` })));
  const only = selection.only ?? [];
  const skip = selection.skip ?? [];
  for (const selector of [...only, ...skip]) {
    if (!all.some((s) => matches(selector, s.fullId, s.step.id))) {
      throw new UsageError(`no step has the id "${selector}"`, {
        hint: `known ids: ${[...new Set(all.flatMap((s) => [s.phase.name, s.fullId]))].join(', ') || '(none)'}`,
      });
    }
  }
  return all.map((s) => {
    const included = only.length === 0 || only.some((sel) => matches(sel, s.fullId, s.step.id));
    const excluded = skip.some((sel) => matches(sel, s.fullId, s.step.id));
    return { ...s, selected: included && !excluded };
  });
}
