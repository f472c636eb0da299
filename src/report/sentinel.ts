// The report phase's step: the Cluster API bootstrap sentinel. Cluster API providers read this file
// to mark the machine bootstrapped, so it is written on success and only on success. The other
// outputs (result files, CloudEvents) are sinks on the event bus, attached by the CLI, because they
// must also carry the run's last events and run for every phase command.
import type { Step, StepContext } from '../engine/step.ts';
import { provisionShortfall } from '../engine/provisioned.ts';

export const SENTINEL_LINUX = '/run/cluster-api/bootstrap-success.complete';
export const SENTINEL_WINDOWS = 'C:\\run\\cluster-api\\bootstrap-success.complete';
export const SENTINEL_CONTENT = 'success\n';

export function sentinelPath(os: 'linux' | 'windows'): string {
  return os === 'windows' ? SENTINEL_WINDOWS : SENTINEL_LINUX;
}

/**
 * Why the sentinel must not be written, or undefined when provisioning succeeded: in this run, or
 * (for `machineadm report` on its own) in the last run that provisioned, as the state file keeps it.
 */
function notSucceeded(ctx: StepContext): string | undefined {
  const run = ctx.run;
  if (run.failed || run.phases.some((p) => p.result === 'failure')) return 'the run failed: the sentinel is written only on success';
  const provisioned = run.phases.find((p) => p.name === 'provision');
  if (provisioned) return provisionShortfall(provisioned, ctx.config.spec.kubernetes !== undefined);
  if (ctx.options.dryRun && run.command === 'init') return undefined;
  const last = run.lastProvision;
  if (!last) return 'no provisioning is recorded on this machine (see machineadm status)';
  return last.provisioned ? undefined : `the last provisioning (run ${last.runId}) did not succeed: ${last.reason ?? 'see machineadm status'}`;
}

export const sentinelStep: Step = {
  id: 'sentinel',
  summary: 'write the Cluster API bootstrap sentinel on success',
  applies: (config) => config.spec.report.clusterAPISentinel,
  // check() returns the same record when the sentinel is already there.
  recordCanWait: true,
  async check(ctx) {
    const path = sentinelPath(ctx.facts.os);
    const change = { action: 'create', target: path, detail: 'only after a successful provisioning' };
    const reason = notSucceeded(ctx);
    if (reason) return { done: false, changes: [], skipReason: reason };
    // A plan for another operating system cannot look at this machine's files.
    if (ctx.host.fs.platform !== ctx.facts.os) return { done: false, changes: [change] };
    const current = await ctx.host.fs.readText(path);
    return { done: current === SENTINEL_CONTENT, changes: current === SENTINEL_CONTENT ? [] : [change], record: { path } };
  },
  async apply(ctx) {
    const path = sentinelPath(ctx.facts.os);
    // /run is cleared at boot: the Linux sentinel needs no flush to disk. Recorded as any file
    // machineadm writes (with the folders made for it), so that reset removes it.
    await ctx.host.fs.writeFile(path, SENTINEL_CONTENT, { mode: 0o644, durable: ctx.facts.os === 'windows' });
    return { record: { path } };
  },
};
