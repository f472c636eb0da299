// prepare/containerd/restart: restarts containerd when its config.toml or proxy drop-in was written
// and containerd has not been restarted since (containerd reads both only at start). hosts.toml
// changes need no restart. Without systemd as init, nothing is restarted and the step says so.
import type { Step, StepContext } from '../../phases/step.ts';
import { MachineadmError, ExitCode } from '../../errors.ts';
import { liveSkipReason } from '../../linux/live.ts';
import { containerdConfigStep } from './config.ts';
import { containerdProxyStep } from './proxy.ts';

const WATCHED = [containerdConfigStep, containerdProxyStep];

function writes(ctx: StepContext): Record<string, string> {
  const out: Record<string, string> = {};
  for (const step of WATCHED) {
    const written = ctx.recordOf(step.id)?.data?.writtenInRun;
    if (typeof written === 'string') out[step.id] = written;
  }
  return out;
}

/** The watched steps whose latest write containerd has not been restarted for. */
async function pending(ctx: StepContext): Promise<string[]> {
  const seen = (ctx.previous?.data?.seen ?? {}) as Record<string, unknown>;
  const out = Object.entries(writes(ctx))
    .filter(([id, run]) => seen[id] !== run)
    .map(([id]) => id);
  // A plan runs no step, so it asks the watched steps whether they would write.
  if (ctx.options.dryRun) {
    for (const step of WATCHED) {
      if (out.includes(step.id) || (step.applies && !step.applies(ctx.config, ctx.facts))) continue;
      if (!(await step.check(ctx)).done) out.push(step.id);
    }
  }
  return out;
}

export const containerdRestartStep: Step = {
  id: 'containerd/restart',
  summary: 'restart containerd when its configuration changed',
  platforms: ['linux'],
  applies: (config) => config.spec.containerd !== undefined,
  async check(ctx) {
    const changed = await pending(ctx);
    if (changed.length === 0) return { done: true, changes: [] };
    const changes = [{ action: 'restart', target: 'containerd', detail: `to load what ${changed.join(' and ')} wrote` }];
    const skip = liveSkipReason(ctx.host);
    if (skip) return { done: false, changes, skipReason: skip };
    if (!ctx.facts.containerdVersion) return { done: false, changes, skipReason: 'containerd is not installed; it reads the new configuration when it first starts' };
    return { done: false, changes };
  },
  async apply(ctx) {
    const seen = writes(ctx);
    if (!(await ctx.host.fs.exists('/run/systemd/system'))) {
      return {
        warning: 'containerd was not restarted: systemd is not running on this machine (no /run/systemd/system); restart containerd yourself so it loads the new configuration',
        record: { seen, restarted: false },
      };
    }
    const proxyChanged = seen[containerdProxyStep.id] !== undefined && (ctx.previous?.data?.seen as Record<string, unknown> | undefined)?.[containerdProxyStep.id] !== seen[containerdProxyStep.id];
    if (proxyChanged) await ctx.host.proc.run(['systemctl', 'daemon-reload'], { timeoutMs: 60_000 });
    await ctx.host.proc.run(['systemctl', 'restart', 'containerd'], { timeoutMs: 120_000 });
    const active = await ctx.host.proc.run(['systemctl', 'is-active', 'containerd'], { timeoutMs: 30_000, allowFailure: true });
    if (active.stdout.trim() !== 'active') {
      throw new MachineadmError(`containerd is ${active.stdout.trim() || 'not active'} after the restart`, ExitCode.stepFailed, {
        hint: 'see "journalctl -u containerd -n 50": a configuration containerd cannot load stops it at start',
      });
    }
    ctx.log('restarted containerd');
    return { record: { seen, restarted: true } };
  },
};
