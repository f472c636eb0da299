// The report phase's step: the Cluster API bootstrap sentinel. Cluster API providers read this file
// to mark the machine bootstrapped, so it is written on success and only on success. The other
// outputs (result files, CloudEvents) are sinks on the event bus, attached by the CLI, because they
// must also carry the run's last events and run for every phase command.
import type { Step, StepContext } from '../phases/step.ts';
import { RESULT_FILE, type RunResultDocument } from './outcome.ts';

export const SENTINEL_LINUX = '/run/cluster-api/bootstrap-success.complete';
export const SENTINEL_WINDOWS = 'C:\\run\\cluster-api\\bootstrap-success.complete';
export const SENTINEL_CONTENT = 'success\n';

export function sentinelPath(os: 'linux' | 'windows'): string {
  return os === 'windows' ? SENTINEL_WINDOWS : SENTINEL_LINUX;
}

/**
 * Why the sentinel must not be written, or undefined when provisioning succeeded: in this run, or
 * (for `machineadm report` on its own) in the last run recorded in result.json.
 */
async function notSucceeded(ctx: StepContext): Promise<string | undefined> {
  const run = ctx.run;
  if (run.failed || run.phases.some((p) => p.result === 'failure')) return 'the run failed: the sentinel is written only on success';
  const provisioned = run.phases.find((p) => p.name === 'provision');
  if (provisioned) {
    if (provisioned.steps.length === 0) {
      return ctx.config.spec.kubernetes === undefined
        ? 'the configuration has no spec.kubernetes: nothing joins a cluster, so there is no bootstrap to report'
        : 'no provisioning step ran in this run (left out by --only/--skip)';
    }
    // A step skipped because it could not run here (e.g. kubeadm under a scratch --root) did not provision anything.
    const notRun = provisioned.steps.find((s) => s.result === 'skipped' && !s.upToDate);
    if (notRun) return `${notRun.id} did not run, so the machine is not provisioned`;
    // Cluster API marks the machine ready on this file: anything short of a clean success is no.
    const warned = provisioned.steps.find((s) => s.result === 'warning');
    return warned ? `${warned.id} finished with a warning: the sentinel is written only when provisioning succeeded cleanly` : undefined;
  }
  if (ctx.options.dryRun && run.command === 'init') return undefined;
  if (ctx.host.fs.platform !== ctx.facts.os) return 'provisioning has not run in this run';
  const last = await ctx.host.fs
    .readText(RESULT_FILE)
    .then((t) => (t ? (JSON.parse(t) as RunResultDocument) : undefined))
    .catch(() => undefined);
  const provision = last?.phases?.findLast((p) => p.name === 'provision');
  if (last && provision && provision.steps.length > 0 && (provision.result === 'success' || provision.result === 'skipped') && last.result !== 'failure' && last.state === 'finished') return undefined;
  return 'no successful provisioning in this run or the last one (see machineadm status)';
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
    const reason = await notSucceeded(ctx);
    if (reason) return { done: false, changes: [], skipReason: reason };
    // A plan for another operating system cannot look at this machine's files.
    if (ctx.host.fs.platform !== ctx.facts.os) return { done: false, changes: [change] };
    const current = await ctx.host.fs.readText(path);
    return { done: current === SENTINEL_CONTENT, changes: current === SENTINEL_CONTENT ? [] : [change], record: { path } };
  },
  async apply(ctx) {
    const path = sentinelPath(ctx.facts.os);
    await ctx.host.fs.mkdirp(path.slice(0, Math.max(path.lastIndexOf('/'), path.lastIndexOf('\\'))));
    // /run is cleared at boot: the Linux sentinel needs no flush to disk.
    await ctx.host.fs.writeFile(path, SENTINEL_CONTENT, { mode: 0o644, backup: false, durable: ctx.facts.os === 'windows' });
    return { record: { path } };
  },
};
