// examples/windows-worker.yaml, the complete Windows worker the documentation points to: it plans
// with exit 0 for a Windows Server 2022 machine (from this Linux machine, with --os and --facts,
// as an operator plans a Windows node from a workstation), shows every Windows step, and is
// refused on a build below the minimum before anything would change.
import { writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.ts';
import { scratchDir } from '../support/tmp.ts';

const EXAMPLE = resolve(import.meta.dirname, '..', '..', 'examples', 'windows-worker.yaml');
const dir = scratchDir('machineadm-windows-example-');
const TOKEN = 'abcdef.0123456789abcdef';

function facts(build: string): string {
  const file = join(dir, `facts-${build}.json`);
  writeFileSync(file, JSON.stringify({ os: 'windows', arch: 'x64', hostname: 'WIN-NODE7', privileged: true, liveRoot: true, windowsBuild: build }));
  return file;
}

describe('examples/windows-worker.yaml', () => {
  it('plans with exit 0 for a Windows Server 2022 machine, every Windows step in order, the token never shown', async () => {
    const run = await runCli(['plan', '-c', EXAMPLE, '--os', 'windows', '--facts', facts('20348'), '--root', join(dir, 'root'), '-o', 'json'], { env: { ...process.env, MACHINEADM_JOIN_TOKEN: TOKEN } });
    expect(run.code, run.stderr).toBe(0);
    const plan = JSON.parse(run.stdout) as { phases: { steps: { id: string; status: string }[] }[] };
    const changing = plan.phases.flatMap((p) => p.steps.filter((s) => s.status === 'change').map((s) => s.id));
    expect(changing).toEqual([
      'prepare/windows/private-paths',
      'prepare/windows/containers-feature',
      'prepare/windows/containerd-config',
      'prepare/windows/containerd-service',
      'prepare/windows/host-agents',
      'prepare/windows/kubelet-service',
      'prepare/windows/firewall',
      'provision/domain/join',
      'provision/kubeadm/join',
      'report/sentinel',
    ]);
    expect(run.stdout).not.toContain(TOKEN);
  });

  it('shows the refusal of Windows Server 2019 (build 17763), naming the minimum build, in a plan for such a machine', async () => {
    // A plan for another machine shows what its run would refuse; the run itself exits 2 before any
    // change (test/windows/windows-run.test.ts).
    const run = await runCli(['plan', '-c', EXAMPLE, '--os', 'windows', '--facts', facts('17763'), '--root', join(dir, 'root')], { env: { ...process.env, MACHINEADM_JOIN_TOKEN: TOKEN } });
    expect(run.stdout).toContain('refuse Windows build 17763 (ltsc2019) (this machine is Windows build 17763 (ltsc2019); machineadm needs Windows build 20348 (Windows Server 2022, ltsc2022) or later)');
  });
});
