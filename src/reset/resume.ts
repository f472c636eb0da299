// reset/resume: removes the registration that resumes a run after a reboot (the systemd unit, or
// the Windows startup task), if one is left: the run it would resume is being undone.
import type { Step } from '../engine/step.ts';

export const resetResumeStep: Step = {
  id: 'resume',
  summary: 'remove the registration that resumes a run after a reboot',
  async check(ctx) {
    const argv = await ctx.host.resume.registered();
    if (argv === undefined) return { done: true, changes: [] };
    return { done: false, changes: [{ action: 'delete', target: 'resume registration', detail: argv.join(' ') }] };
  },
  async apply(ctx) {
    await ctx.host.resume.remove();
  },
};
