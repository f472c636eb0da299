// prepare/windows/containerd-config: config.toml, certs.d\<registry>\hosts.toml and the CA bundle
// under C:\Program Files\containerd, from spec.containerd through the same renderer as on Linux
// (with Windows facts: runhcs runtime, named pipe, C:\opt\cni\bin and C:\etc\cni\net.d).
// Nothing under spec.containerd is dropped without a word: `proxy` (a systemd drop-in on Linux)
// is refused on Windows, `cgroupDriver` has no meaning there and the plan says it is ignored.
import type { Change, Step, StepContext } from '../../engine/step.ts';
import { containerdNeeded } from '../paths.ts';
import { ConfigError, type ConfigIssue } from '../../errors.ts';
import { describeTarget } from '../../containerd/target.ts';
import { renderFor } from '../../containerd/steps/render.ts';
import type { RenderedFile } from '../../containerd/files.ts';

function wanted(ctx: StepContext): { files: RenderedFile[]; target: string } {
  const rendered = renderFor(ctx);
  return { files: [rendered.config, ...(rendered.caBundle ? [rendered.caBundle] : []), ...rendered.hosts], target: describeTarget(rendered.target) };
}

async function differing(ctx: StepContext, files: readonly RenderedFile[]): Promise<RenderedFile[]> {
  // A plan made elsewhere cannot read the Windows machine's files.
  if (ctx.host.fs.platform !== 'windows') return [...files];
  const out: RenderedFile[] = [];
  for (const file of files) if ((await ctx.host.fs.readText(file.path)) !== file.content) out.push(file);
  return out;
}

export const IGNORED_ON_WINDOWS = 'spec.containerd.cgroupDriver is ignored on Windows (there are no cgroups)';

function proxyRefusal(ctx: StepContext): ConfigIssue | undefined {
  const proxy = ctx.config.spec.containerd?.proxy;
  if (!proxy || Object.keys(proxy).length === 0) return undefined;
  return { path: 'spec.containerd.proxy', message: 'is not supported on Windows (on Linux it is a systemd drop-in)', hint: 'set HTTP_PROXY/HTTPS_PROXY/NO_PROXY as machine environment variables on the Windows machine, and remove spec.containerd.proxy from its configuration' };
}

export const windowsContainerdConfigStep: Step = {
  id: 'windows/containerd-config',
  summary: 'write containerd config.toml and certs.d for Windows (runhcs, named pipe, Windows CNI paths)',
  platforms: ['windows'],
  applies: containerdNeeded,
  // check() returns the same record when the files already match.
  recordCanWait: true,
  async preflight(ctx) {
    const refused = proxyRefusal(ctx);
    if (refused) throw new ConfigError([refused]);
    wanted(ctx);
  },
  async check(ctx) {
    // Shown in a plan for another machine (--os windows) too, which runs no preflight.
    const refused = proxyRefusal(ctx);
    if (refused) return { done: false, changes: [{ action: 'refuse', target: refused.path, detail: `${refused.message} (${refused.hint})` }] };
    const { files, target } = wanted(ctx);
    const changes: Change[] = (await differing(ctx, files)).map((f, i) => ({
      action: 'write',
      target: f.path,
      detail: i === 0 && f === files[0] ? `${target}${ctx.config.spec.containerd?.cgroupDriver ? `; ${IGNORED_ON_WINDOWS}` : ''}` : f.field,
      ...(f.sensitive ? {} : { diff: f.content }),
    }));
    return { done: changes.length === 0, changes, record: { paths: files.map((f) => f.path) } };
  },
  async apply(ctx) {
    const { files } = wanted(ctx);
    const changed = await differing(ctx, files);
    for (const file of changed) await ctx.host.fs.writeFile(file.path, file.content);
    if (ctx.config.spec.containerd?.cgroupDriver) ctx.log(IGNORED_ON_WINDOWS);
    return { record: { paths: files.map((f) => f.path) } };
  },
};
