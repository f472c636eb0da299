// prepare/containerd/config: /etc/containerd/config.toml, in the format of the containerd version
// found (or configured). prepare/containerd/restart restarts containerd when the file's content changed.
import type { Step } from '../../engine/step.ts';
import { describeTarget } from '../target.ts';
import { CONTAINERD_CONFIG } from '../paths.ts';
import { inspectFileOrRefusal, inspectFileOrRefuse, writeFiles } from '../../engine/managed-file.ts';
import { desiredFile, renderFor } from './render.ts';

export const containerdConfigStep: Step = {
  id: 'containerd/config',
  // containerd's own files and service: a download begun before it fetches the same bytes.
  overtakable: true,
  summary: 'write containerd config.toml (CRI: sandbox image, cgroup driver, registry hosts directory)',
  platforms: ['linux'],
  applies: (config) => config.spec.containerd !== undefined,
  writes: () => [CONTAINERD_CONFIG],
  // check() returns the same record when config.toml already matches.
  recordCanWait: true,
  // A link or a folder at config.toml is refused before the run's first change.
  async preflight(ctx) {
    await inspectFileOrRefuse(ctx.host.fs, desiredFile(renderFor(ctx).config), ctx.facts.privileged);
  },
  async check(ctx) {
    const files = renderFor(ctx);
    const state = await inspectFileOrRefusal(ctx.host.fs, desiredFile(files.config), ctx.facts.privileged);
    if ('refused' in state) return { done: false, changes: state.refused };
    const record = { configVersion: files.target.configVersion, containerdVersion: files.target.containerdVersion };
    if (!state.change) return { done: true, changes: [], record };
    const target = describeTarget(files.target);
    return { done: false, changes: [{ ...state.change, detail: `${target}; ${state.change.detail ?? ''}` }] };
  },
  async apply(ctx) {
    const files = renderFor(ctx);
    await writeFiles(ctx.host.fs, [desiredFile(files.config)], ctx.facts.privileged);
    ctx.log(`wrote ${files.config.path}: ${describeTarget(files.target)}`);
    return { record: { configVersion: files.target.configVersion, containerdVersion: files.target.containerdVersion } };
  },
};
