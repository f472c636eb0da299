// prepare/windows/containerd-service: containerd registered as a Windows service and running.
// `containerd.exe --register-service` creates it (with --config and --log-file baked in: without
// a log file its output is discarded) but does not start it; machineadm starts it, and restarts
// it when config.toml's content changed since containerd last started for it (see loaded.ts).
import type { Change, Step, StepContext } from '../../engine/step.ts';
import { MachineadmError, ExitCode } from '../../errors.ts';
import { containerdPaths } from '../../containerd/paths.ts';
import { CONTAINERD_LOG, containerdNeeded, containerdPath } from '../paths.ts';
import { changedSince, digestsOf, type Digests } from '../../containerd/loaded.ts';
import { noSeamSkip, requireSeam, seamOf } from './seam.ts';
import { recordExisting, removeCreated } from './undo.ts';

const SERVICE = 'containerd';

/** config.toml's digest now, and whether containerd has not been started for it yet. */
async function loaded(ctx: StepContext): Promise<{ seen: Digests; changed: boolean }> {
  const seen = await digestsOf(ctx.host.fs, [containerdPaths('windows').config]);
  return { seen, changed: changedSince(ctx.previous?.data?.seen, seen).length > 0 };
}

async function plan(ctx: StepContext): Promise<Change[]> {
  const exe = containerdPath(ctx.config);
  const service = await seamOf(ctx)?.service(SERVICE);
  const config = containerdPaths('windows').config;
  if (!service) {
    return [
      { action: 'register', target: `service ${SERVICE}`, detail: `${exe} --register-service --config "${config}" --log-file ${CONTAINERD_LOG}` },
      { action: 'start', target: `service ${SERVICE}` },
    ];
  }
  if ((await loaded(ctx)).changed && service.state === 'Running') return [{ action: 'restart', target: `service ${SERVICE}`, detail: `to load ${config}, changed since it last started` }];
  if (service.state !== 'Running') return [{ action: 'start', target: `service ${SERVICE}`, detail: `it is ${service.state}` }];
  return [];
}

export const windowsContainerdServiceStep: Step = {
  id: 'windows/containerd-service',
  summary: 'register containerd as a Windows service and start it',
  platforms: ['windows'],
  applies: containerdNeeded,
  // reset deletes the service only if machineadm registered it.
  undoRecord: recordExisting('services', () => [SERVICE]),
  undo: removeCreated('services', 'delete the containerd service, if machineadm registered it (stopped, then deleted)'),
  async check(ctx) {
    const changes = await plan(ctx);
    const skip = noSeamSkip(ctx);
    return { done: changes.length === 0, changes, ...(skip && changes.length ? { skipReason: skip } : {}) };
  },
  async apply(ctx) {
    const windows = requireSeam(ctx);
    const exe = containerdPath(ctx.config);
    const { seen, changed } = await loaded(ctx);
    let service = await windows.service(SERVICE);
    if (!service) {
      if (!(await ctx.host.fs.exists(exe))) {
        throw new MachineadmError(`containerd is not installed: ${exe} does not exist`, ExitCode.stepFailed, { hint: 'install containerd (its bin\\ folder from the containerd-<version>-windows-amd64.tar.gz release) there, or set spec.windows.containerdPath' });
      }
      await windows.registerContainerdService({ executable: exe, config: containerdPaths('windows').config, logFile: CONTAINERD_LOG });
      ctx.log(`registered service ${SERVICE}`);
      service = await windows.service(SERVICE);
    } else if (changed && service.state === 'Running') {
      await windows.restartService(SERVICE);
      ctx.log(`restarted service ${SERVICE}`);
      return { record: { seen } };
    }
    if (service?.state !== 'Running') {
      await windows.startService(SERVICE);
      ctx.log(`started service ${SERVICE}`);
    }
    return { record: { seen } };
  },
};
