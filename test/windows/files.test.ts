// spec.files on a Windows machine (the simulated one, files under a scratch root): drive paths are
// written, a second run finds nothing to do (no Unix mode to compare), and what has no meaning on
// Windows (an owner, a private mode, a Linux path) is refused before any change.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { createHost, RootedFileSystem, type Facts, type Host } from '../../src/host/index.ts';
import { ALL_PHASES } from '../../src/phases/registry.ts';
import { computePlan, preflightRun, runPhases, type RunnerInput } from '../../src/engine/runner.ts';
import { StateStore } from '../../src/engine/state.ts';
import { EventBus } from '../../src/engine/events.ts';
import { SecretScrubber } from '../../src/config/secrets.ts';
import { configFrom } from '../report/harness.ts';
import { scratchDir } from '../support/tmp.ts';
import { realPath, SimulatedWindows, windowsFiles } from './simulated-windows.ts';

async function inputFor(root: string, files: unknown[]): Promise<RunnerInput> {
  const sim = new SimulatedWindows('20348');
  const facts: Facts = { os: 'windows', arch: 'x64', hostname: 'WIN-NODE1', privileged: true, liveRoot: true, windowsBuild: '20348', bootId: await sim.bootId() };
  const host: Host = { ...createHost({ root, facts, env: {}, windows: sim }), fs: windowsFiles(root) };
  return { command: 'prepare', phases: ALL_PHASES.filter((p) => p.name === 'prepare'), selection: { only: ['prepare/files'] }, config: configFrom({ files }), facts, host, events: new EventBus(), state: new StateStore(new RootedFileSystem(`${root}/state`)), force: false, secrets: new SecretScrubber() };
}

describe('spec.files on Windows', () => {
  it('writes a file by its drive path, and a second run has nothing to do', async () => {
    const root = scratchDir('machineadm-windows-files-');
    const files = [{ path: 'C:\\defender-exclude-calico.ps1', content: 'Add-MpPreference -ExclusionProcess C:/opt/cni/bin/calico.exe\n', mode: '0744' }];
    const first = await runPhases(await inputFor(root, files));
    expect(first.result).toBe('success');
    expect(readFileSync(realPath(root, 'C:\\defender-exclude-calico.ps1'), 'utf8')).toBe(files[0]!.content);
    const plan = await computePlan(await inputFor(root, files));
    const step = plan.phases.flatMap((p) => p.steps).find((s) => s.id === 'prepare/files')!;
    expect(step.status).toBe('up-to-date');
  });

  it.each([
    ['a Linux path', { path: '/etc/x.conf', content: 'x' }, 'spec.files[0].path: "/etc/x.conf" is not a Windows path and this is a Windows machine'],
    ['an owner', { path: 'C:\\k\\x.conf', content: 'x', owner: 'root:root' }, 'spec.files[0].owner: is a Linux user and group'],
    ['a private mode', { path: 'C:\\k\\x.conf', content: 'x', mode: '0600' }, "spec.files[0].mode: 0600 keeps the file from other users on Linux; Windows has no such mode"],
  ])('refuses %s before any change', async (_what, file, message) => {
    const root = scratchDir('machineadm-windows-files-');
    const input = await inputFor(root, [file]);
    await expect(preflightRun(input)).rejects.toThrow(message);
  });
});
