// The Windows seam for a step. A plan made elsewhere (--os windows on Linux) has none: the step
// then shows everything it would do, as for a machine where nothing is there yet.
import type { StepContext } from '../../engine/step.ts';
import type { WindowsHost } from '../../host/index.ts';
import { MachineadmError, ExitCode } from '../../errors.ts';

export function seamOf(ctx: StepContext): WindowsHost | undefined {
  return ctx.host.windows;
}

export function requireSeam(ctx: StepContext): WindowsHost {
  const windows = ctx.host.windows;
  if (!windows) {
    throw new MachineadmError('Windows steps need Windows: this machine has no Windows seam', ExitCode.stepFailed, { hint: 'run machineadm on the Windows machine itself; plan --os windows shows what it would do' });
  }
  return windows;
}

/** A real run on a machine without the seam skips the step (plans show it). */
export function noSeamSkip(ctx: StepContext): string | undefined {
  return ctx.host.windows || ctx.options.dryRun ? undefined : 'Windows actions change the live Windows machine: not run here (another operating system, or --root other than the live root)';
}
