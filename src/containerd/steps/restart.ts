// prepare/containerd/restart: restarts containerd when its config.toml or proxy drop-in changed
// since containerd was last restarted for them (containerd reads both only at start), judged by
// the files' content (see ../loaded.ts). hosts.toml changes need no restart. Without systemd as
// init, nothing is restarted and the step says so.
import type { Step, StepContext } from '../../engine/step.ts';
import { MachineadmError, ExitCode } from '../../errors.ts';
import { liveSkipReason } from '../../linux/live.ts';
import { CONTAINERD_CONFIG, PROXY_DROPIN } from '../paths.ts';
import { changedSince, digestsOf } from '../loaded.ts';
import { containerdConfigStep } from './config.ts';
import { containerdProxyStep } from './proxy.ts';

const WATCHED = [
  { step: containerdConfigStep, path: CONTAINERD_CONFIG },
  { step: containerdProxyStep, path: PROXY_DROPIN },
];

/**
 * The watched files changed since containerd's last restart, in WATCHED order. A plan runs no
 * step, so it asks the watched steps whether they would write: a file its step would rewrite has
 * changed whatever it holds now, and is not hashed (a digest loads node:crypto: ~8 ms of a plan).
 */
async function changedFiles(ctx: StepContext): Promise<string[]> {
  const rewritten: string[] = [];
  if (ctx.options.dryRun) {
    for (const { step, path } of WATCHED) {
      const earlier = ctx.recordOf(step.id);
      if (step.applies && !step.applies(ctx.config, ctx.facts) && !(earlier && step.leftBehind?.(earlier.data))) continue;
      if (!(await step.check(ctx)).done) rewritten.push(path);
    }
  }
  const now = await digestsOf(ctx.host.fs, WATCHED.map((w) => w.path).filter((path) => !rewritten.includes(path)));
  const changed = changedSince(ctx.previous?.data?.seen, now);
  return WATCHED.map((w) => w.path).filter((path) => rewritten.includes(path) || changed.includes(path));
}

export const containerdRestartStep: Step = {
  id: 'containerd/restart',
  // containerd's own files and service: a download begun before it fetches the same bytes.
  overtakable: true,
  summary: 'restart containerd when its configuration changed',
  platforms: ['linux'],
  applies: (config) => config.spec.containerd !== undefined,
  // Without spec.containerd too, while containerd runs with a proxy drop-in that
  // prepare/containerd/proxy then takes away: containerd keeps the proxy until it restarts.
  leftBehind: (earlier) => typeof (earlier?.seen as Record<string, unknown> | undefined)?.[PROXY_DROPIN] === 'string',
  async check(ctx) {
    const changed = await changedFiles(ctx);
    if (changed.length === 0) return { done: true, changes: [] };
    const changes = [{ action: 'restart', target: 'containerd', detail: `to load ${changed.join(' and ')}` }];
    const skip = liveSkipReason(ctx.host);
    if (skip) return { done: false, changes, skipReason: skip };
    if (!ctx.facts.containerdVersion) return { done: false, changes, skipReason: 'containerd is not installed; it reads the new configuration when it first starts' };
    return { done: false, changes };
  },
  async apply(ctx) {
    const now = await digestsOf(ctx.host.fs, WATCHED.map((w) => w.path));
    return restartFor(ctx, changedSince(ctx.previous?.data?.seen, now), now);
  },
  undo: {
    summary: 'restart containerd when reset gave back its configuration',
    when: 'after-files',
    async check(ctx) {
      // Only a containerd machineadm restarted for its files runs with them now.
      if (ctx.done?.data?.seen === undefined) return { done: true, changes: [] };
      const now = await digestsOf(ctx.host.fs, WATCHED.map((w) => w.path));
      const changed = changedSince(ctx.previous?.data?.seen ?? ctx.done.data.seen, now);
      // A plan restores no file: it asks reset/files which of the watched ones it would give back.
      if (ctx.options.dryRun) {
        const restored = await ctx.filesToGiveBack();
        for (const { path } of WATCHED) if (restored.includes(path) && !changed.includes(path)) changed.push(path);
      }
      if (changed.length === 0) return { done: true, changes: [] };
      const changes = [{ action: 'restart', target: 'containerd', detail: `to load ${changed.join(' and ')} as given back` }];
      const skip = liveSkipReason(ctx.host);
      if (skip) return { done: false, changes, skipReason: skip };
      if (!ctx.facts.containerdVersion) return { done: false, changes, skipReason: 'containerd is not installed' };
      return { done: false, changes };
    },
    async apply(ctx) {
      const now = await digestsOf(ctx.host.fs, WATCHED.map((w) => w.path));
      return restartFor(ctx, changedSince(ctx.previous?.data?.seen ?? ctx.done?.data?.seen, now), now);
    },
  },
};

/** Restarts containerd so it loads `changed`; records the digests it now runs with. */
async function restartFor(ctx: StepContext, changed: string[], seen: Record<string, string | null>) {
  if (!(await ctx.host.fs.exists('/run/systemd/system'))) {
    return {
      warning: 'containerd was not restarted: systemd is not running on this machine (no /run/systemd/system); restart containerd yourself so it loads the new configuration',
      record: { seen, restarted: false },
    };
  }
  // systemd reads drop-ins only on daemon-reload; a first restart has no record to tell, so it reloads too.
  if (changed.includes(PROXY_DROPIN)) await ctx.host.proc.run(['systemctl', 'daemon-reload'], { timeoutMs: 60_000 });
  await ctx.host.proc.run(['systemctl', 'restart', 'containerd'], { timeoutMs: 120_000 });
  const active = await ctx.host.proc.run(['systemctl', 'is-active', 'containerd'], { timeoutMs: 30_000, allowFailure: true });
  if (active.stdout.trim() !== 'active') {
    throw new MachineadmError(`containerd is ${active.stdout.trim() || 'not active'} after the restart`, ExitCode.stepFailed, {
      hint: 'see "journalctl -u containerd -n 50": a configuration containerd cannot load stops it at start',
    });
  }
  ctx.log('restarted containerd');
  return { record: { seen, restarted: true } };
}
