// Whether a run's provision phase left the machine provisioned: the one rule behind the Cluster API
// sentinel, whether `init` writes it at its end or `machineadm report` writes it later from the
// state file's record of the last provisioning.

/** What the state file keeps of the last run that went through the provision phase. */
export interface ProvisionRecord {
  runId: string;
  at: string;
  provisioned: boolean;
  /** Why not, when not provisioned. */
  reason?: string;
}

/** A provision phase as far as the rule needs it (what RunSoFar and PhaseOutcome both hold). */
interface PhaseSoFar {
  readonly steps: readonly { readonly id: string; readonly result: string; readonly upToDate?: boolean }[];
  /** Steps the configuration asks for that --only/--skip left out: they did not run either. */
  readonly leftOut?: readonly string[];
}

/**
 * Why the provision phase did not provision the machine, or undefined when it did: at least one
 * step ran or was found done, none failed, none was left out by --only/--skip or skipped for another
 * reason than being done (kubeadm under a scratch --root), none ended with a warning. Cluster API
 * marks the machine ready on the sentinel, so anything short of a clean success is a no.
 */
export function provisionShortfall(phase: PhaseSoFar, hasKubernetes: boolean): string | undefined {
  if (phase.steps.length === 0) {
    return hasKubernetes ? 'no provisioning step ran in this run (left out by --only/--skip)' : 'the configuration has no spec.kubernetes: nothing joins a cluster, so there is no bootstrap to report';
  }
  const failed = phase.steps.find((s) => s.result === 'failure');
  if (failed) return `${failed.id} failed`;
  const leftOut = phase.leftOut?.[0];
  if (leftOut) return `${leftOut} was left out by --only/--skip, so the machine is not provisioned`;
  const notRun = phase.steps.find((s) => s.result === 'skipped' && !s.upToDate);
  if (notRun) return `${notRun.id} did not run, so the machine is not provisioned`;
  const warned = phase.steps.find((s) => s.result === 'warning');
  return warned ? `${warned.id} finished with a warning: the sentinel is written only when provisioning succeeded cleanly` : undefined;
}
