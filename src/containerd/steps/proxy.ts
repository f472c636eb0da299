// prepare/containerd/proxy: the systemd drop-in that gives containerd HTTP(S)_PROXY and NO_PROXY.
// When the proxy is taken out of the configuration, the drop-in machineadm wrote is removed.
import type { Step, StepContext } from '../../engine/step.ts';
import { inspectFile, writeFiles } from '../../engine/managed-file.ts';
import { PROXY_DROPIN } from '../paths.ts';
import { desiredFile, renderFor, WRITTEN_BY_MACHINEADM } from './render.ts';

async function leftover(ctx: StepContext): Promise<boolean> {
  const info = await ctx.host.fs.stat(PROXY_DROPIN);
  if (info?.kind !== 'file') return false;
  return ((await ctx.host.fs.readText(PROXY_DROPIN)) ?? '').startsWith(WRITTEN_BY_MACHINEADM);
}

// Without a proxy in the configuration there is nothing to do: the step is not applicable, which
// must not read as "already done".
const NOT_ASKED = 'not applicable: spec.containerd.proxy is not set';

export const containerdProxyStep: Step = {
  id: 'containerd/proxy',
  // containerd's own files and service: a download begun before it fetches the same bytes.
  overtakable: true,
  summary: `write the proxy settings for containerd (${PROXY_DROPIN})`,
  platforms: ['linux'],
  applies: (config) => config.spec.containerd !== undefined,
  writes: (config) => (config.spec.containerd?.proxy ? [PROXY_DROPIN] : []),
  async check(ctx) {
    const { proxy } = renderFor(ctx);
    if (!proxy) {
      return (await leftover(ctx)) ? { done: false, changes: [{ action: 'delete', target: PROXY_DROPIN, detail: 'spec.containerd.proxy is no longer set' }] } : { done: true, changes: [], skipReason: NOT_ASKED };
    }
    const state = await inspectFile(ctx.host.fs, desiredFile(proxy), ctx.facts.privileged);
    return { done: !state.change, changes: state.change ? [state.change] : [] };
  },
  async apply(ctx) {
    const { proxy } = renderFor(ctx);
    if (proxy) await writeFiles(ctx.host.fs, [desiredFile(proxy)], ctx.facts.privileged);
    else await ctx.host.fs.remove(PROXY_DROPIN);
  },
};
