// prepare/windows/containers-feature: the Containers feature, installed only when missing, and
// the Windows build checked against spec.windows.supportedBuilds before anything changes.
// Server: Install-WindowsFeature; client SKUs: Enable-WindowsOptionalFeature (the seam picks).
// When Windows says a restart is needed, the step asks the runner for one (exit 4, resume after).
import type { Step, StepContext } from '../../engine/step.ts';
import { ConfigError, NotAvailableError } from '../../errors.ts';
import { CONTAINERS_FEATURE, containerdNeeded } from '../paths.ts';
import { buildLacks, buildTooOld, describeBuild, LISTED_ONLY_BUILD, MINIMUM_BUILD, unsupportedBuild, windowsRelease } from '../build.ts';
import { noSeamSkip, requireSeam, seamOf } from './seam.ts';

function checkBuild(ctx: StepContext): void {
  const tooOld = buildTooOld(ctx.facts.windowsBuild, ctx.config.spec.windows?.supportedBuilds);
  const orList = ctx.facts.windowsBuild === String(LISTED_ONLY_BUILD) ? `, or list ${LISTED_ONLY_BUILD} in spec.windows.supportedBuilds to make a node of Windows Server 2019 with images of its build` : '';
  if (tooOld) throw new NotAvailableError(tooOld, { hint: `install Windows Server 2022 (build ${MINIMUM_BUILD}) or later on this machine${orList}; nothing was changed` });
  const problem = unsupportedBuild(ctx.facts.windowsBuild, ctx.config.spec.windows?.supportedBuilds);
  if (problem) {
    throw new ConfigError([{ path: 'spec.windows.supportedBuilds', message: problem, hint: 'run this configuration on a supported build, or add builds whose images this node can run (from 20348 a host runs images from 20348 up to its own build; below it only its own)' }]);
  }
}

export const containersFeatureStep: Step = {
  id: 'windows/containers-feature',
  summary: 'install the Windows Containers feature (restart when Windows asks for one)',
  platforms: ['windows'],
  // The feature is for containers: a machine with neither containerd nor Kubernetes goes without it
  // (and without the restart it asks for).
  applies: containerdNeeded,
  async preflight(ctx) {
    checkBuild(ctx);
  },
  // reset leaves the feature: other software may use it, and removing it needs a restart of its own.
  undo: {
    summary: `leave the ${CONTAINERS_FEATURE} feature installed`,
    async check(ctx) {
      if (ctx.done === undefined) return { done: true, changes: [] };
      return { done: false, changes: [], skipReason: `the ${CONTAINERS_FEATURE} feature stays installed (other software may use it; Uninstall-WindowsFeature ${CONTAINERS_FEATURE} removes it, with a restart)` };
    },
    async apply() {
      // Never applied: check() always skips.
    },
  },
  async check(ctx) {
    const build = describeBuild(ctx.facts.windowsBuild);
    const tooOld = buildTooOld(ctx.facts.windowsBuild, ctx.config.spec.windows?.supportedBuilds);
    if (tooOld) return { done: false, changes: [{ action: 'refuse', target: `Windows ${build}`, detail: tooOld }] };
    const unsupported = unsupportedBuild(ctx.facts.windowsBuild, ctx.config.spec.windows?.supportedBuilds);
    if (unsupported) return { done: false, changes: [{ action: 'refuse', target: 'spec.windows.supportedBuilds', detail: unsupported }] };
    const windows = seamOf(ctx);
    const state = windows ? await windows.feature(CONTAINERS_FEATURE) : 'available';
    if (state === 'installed') return { done: true, changes: [] };
    if (state === 'absent') {
      return { done: false, changes: [{ action: 'refuse', target: `feature ${CONTAINERS_FEATURE}`, detail: `Windows ${build} does not offer it` }] };
    }
    const lacks = buildLacks(ctx.facts.windowsBuild);
    const change = state === 'pending'
      ? { action: 'restart', target: `feature ${CONTAINERS_FEATURE}`, detail: `installed, waiting for a restart (Windows ${build}${lacks ? `; ${lacks}` : ''})` }
      : { action: 'install', target: `feature ${CONTAINERS_FEATURE}`, detail: `Windows ${build}${lacks ? ` (${lacks})` : ''}; a restart follows when Windows asks for one` };
    const skip = noSeamSkip(ctx);
    return { done: false, changes: [change], ...(skip ? { skipReason: skip } : {}) };
  },
  async apply(ctx, check) {
    const windows = requireSeam(ctx);
    const record = { windowsBuild: ctx.facts.windowsBuild, windowsRelease: windowsRelease(ctx.facts.windowsBuild) };
    checkBuild(ctx);
    if (check.changes[0]?.action === 'refuse') {
      throw new ConfigError([{ path: 'spec.windows', message: `Windows ${describeBuild(ctx.facts.windowsBuild)} does not offer the ${CONTAINERS_FEATURE} feature`, hint: 'use Windows Server 2019 or later, or Windows 10/11 Pro or Enterprise' }]);
    }
    if (check.changes[0]?.action === 'restart') return { rebootRequired: `the ${CONTAINERS_FEATURE} feature is installed and needs a restart`, record };
    const { restartNeeded } = await windows.installFeature(CONTAINERS_FEATURE);
    ctx.log(`installed the ${CONTAINERS_FEATURE} feature${restartNeeded ? '; Windows needs a restart' : ''}`);
    return restartNeeded ? { rebootRequired: `Windows needs a restart to finish installing the ${CONTAINERS_FEATURE} feature`, record } : { record };
  },
};
