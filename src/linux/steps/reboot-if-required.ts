// prepare/reboot-if-required: Debian and Ubuntu packages that need a reboot to take effect (a new
// kernel, libc) write /run/reboot-required, and the package names to /run/reboot-required.pkgs.
// A node that joins before that reboot joins with the old kernel and goes down soon after; with
// spec.rebootWhenRequired the run reboots at the end of prepare and resumes after it.
import type { Step } from '../../engine/step.ts';

const MARKER = '/run/reboot-required';
const PACKAGES = '/run/reboot-required.pkgs';

async function pendingReason(read: (path: string) => Promise<string | undefined>): Promise<string | undefined> {
  if ((await read(MARKER)) === undefined) return undefined;
  const packages = [...new Set((await read(PACKAGES))?.split('\n').map((l) => l.trim()).filter(Boolean) ?? [])];
  return `${MARKER} says a reboot is pending${packages.length ? ` (for ${packages.slice(0, 5).join(', ')}${packages.length > 5 ? ', ...' : ''})` : ''}`;
}

export const rebootIfRequiredStep: Step = {
  id: 'reboot-if-required',
  summary: 'reboot when the OS says a reboot is pending, and resume after it',
  platforms: ['linux'],
  applies: (config) => config.spec.rebootWhenRequired === true,
  async check(ctx) {
    const reason = await pendingReason((path) => ctx.host.fs.readText(path));
    return reason ? { done: false, changes: [{ action: 'reboot', target: 'the machine', detail: reason }] } : { done: true, changes: [] };
  },
  async apply(ctx) {
    const reason = await pendingReason((path) => ctx.host.fs.readText(path));
    return reason ? { rebootRequired: reason } : {};
  },
};
