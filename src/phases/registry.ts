// The phases as explicit, ordered lists of steps. No auto-discovery: adding a step means adding
// it here, in the order it must run.
import type { Phase, PhaseName } from './step.ts';

export const preparePhase: Phase = {
  name: 'prepare',
  summary: 'kernel modules, sysctls, files, containerd',
  steps: [],
};

export const provisionPhase: Phase = {
  name: 'provision',
  summary: 'domain join, kubeadm init or join',
  steps: [],
};

export const reportPhase: Phase = {
  name: 'report',
  summary: 'result file, Cluster API sentinel, events to endpoints',
  steps: [],
  runsAfterFailure: true,
};

export const ALL_PHASES: readonly Phase[] = [preparePhase, provisionPhase, reportPhase];

export function phasesNamed(names: readonly PhaseName[]): Phase[] {
  return ALL_PHASES.filter((p) => names.includes(p.name));
}
