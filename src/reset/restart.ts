// reset/restart: the last step of a reset on Windows. Windows finishes leaving a domain at the next
// boot (Remove-Computer and the leave on this machine only are done without -Restart), so a reset
// that left the domain ends with "restart required" (exit 4), as init ends with it after a join.
// reset does not restart the machine itself: the operator (or whatever ran reset) restarts it and
// runs reset again, which finds everything undone and archives the state directory. A reset run
// again in the same boot ends the same way, changing nothing.
import type { Step, StepContext } from '../engine/step.ts';
import { windowsJoinedOf } from '../domain/windows-leave.ts';

const LEAVE_STEP = 'reset/domain/join';

/** The domain this reset left in the current boot, or would leave (a plan). */
function pendingLeave(ctx: StepContext): string | undefined {
  const left = ctx.recordOf(LEAVE_STEP)?.data;
  if (typeof left?.left === 'string') return left.bootId !== undefined && left.bootId === ctx.facts.bootId ? left.left : undefined;
  // A plan runs nothing: the leave it shows is followed by the restart.
  const joined = windowsJoinedOf(ctx.recordOf('provision/domain/join')?.data);
  return ctx.options.dryRun && joined && !ctx.options.keepDomain ? joined.domain : undefined;
}

export const resetRestartStep: Step = {
  id: 'restart',
  summary: 'say that Windows needs a restart to finish leaving the domain',
  platforms: ['windows'],
  async check(ctx) {
    const domain = pendingLeave(ctx);
    if (domain === undefined) return { done: true, changes: [] };
    return { done: false, changes: [{ action: 'restart', target: 'the machine', detail: `Windows finishes leaving ${domain} at the next boot; restart it, then run machineadm reset again to finish (it archives the state directory)` }] };
  },
  async apply(ctx) {
    return { rebootRequired: `left ${pendingLeave(ctx)}: Windows finishes leaving the domain at the next boot; restart the machine, then run machineadm reset again` };
  },
};
