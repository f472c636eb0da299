// reset and spec.commands, on a scratch root with MACHINEADM_COMMANDS_UNDER_ROOT=1 (the commands
// really run, in the root's directory): what the other lists did is not undone and the plan names
// each command that ran; spec.commands.beforeReset runs first, scrubbed like every command list,
// and a failing one stops the reset before anything is undone.
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { dump } from 'js-yaml';
import { describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.ts';
import { scratchDir } from '../support/tmp.ts';
import { standinEnv } from '../support/machine-run.ts';
import { ownReport, snapshot } from './machine.ts';

const TOKEN = 'abcdef.0123456789abcdef';

function machine(commands: Record<string, unknown>, more: Record<string, unknown> = {}) {
  const dir = scratchDir('machineadm-reset-commands-');
  const m = { dir, root: join(dir, 'root'), state: join(dir, 'state'), config: join(dir, 'machine.yaml') };
  for (const d of ['etc', 'run']) mkdirSync(join(m.root, d), { recursive: true });
  // A secret of the configuration: scrubbed from every command's output.
  const spec = { commands, files: [{ path: '/etc/node-role', content: 'worker\n' }], report: { endpoints: [{ url: 'https://127.0.0.1:9/events', bearerToken: TOKEN }] }, ...more };
  writeFileSync(m.config, dump({ apiVersion: 'machineadm.cluster.x-k8s.io/v1alpha1', kind: 'MachineConfig', spec }));
  return m;
}

const env = standinEnv({ MACHINEADM_COMMANDS_UNDER_ROOT: '1' });
const run = (m: ReturnType<typeof machine>, args: string[]) => runCli([...args, '-c', m.config, '--root', m.root, '--state-dir', m.state, '--offline'], { env });

describe('reset and spec.commands', () => {
  it('runs spec.commands.beforeReset first (secrets scrubbed), and names the commands that ran as not undone', async () => {
    const m = machine({
      boot: [{ name: 'mark the boot', shell: 'echo booted > booted' }],
      beforeReset: [{ name: 'undo the boot mark', shell: `test -f booted && rm booted && echo "removed with ${TOKEN}"` }],
    });
    const before = snapshot(m.root);
    const init = await run(m, ['init']);
    expect(init.code, init.stdout + init.stderr).toBe(0);
    expect(existsSync(join(m.root, 'booted'))).toBe(true);

    const plan = await run(m, ['reset', '--dry-run']);
    expect(plan.code, plan.stderr).toBe(0);
    expect(plan.stdout).toContain('reset/commands/before-reset: run spec.commands.beforeReset (before reset undoes anything) [will change]');
    expect(plan.stdout).toContain('run spec.commands.beforeReset[0] (undo the boot mark) (/bin/sh -c');
    expect(plan.stdout).toMatch(/reset\/commands\/boot: .*\[skipped: not undone: machineadm cannot know what a command changed; put what undoes it in spec.commands.beforeReset, which reset runs first\]\n {6}keep spec.commands.boot\[0\] \(mark the boot\) \(ran with exit code 0, last at [^)]+: what it changed stays\)/);
    expect(plan.stdout).not.toContain('not done in this run');
    // The hook is first: before any undo.
    expect(plan.stdout.indexOf('reset/commands/before-reset')).toBeLessThan(plan.stdout.indexOf('reset/files'));

    const reset = await run(m, ['reset', '-o', 'json']);
    expect(reset.code, reset.stderr).toBe(0);
    expect(reset.stdout).toContain('spec.commands.beforeReset[0]: removed with <redacted>');
    expect(reset.stdout + reset.stderr).not.toContain(TOKEN);
    expect(snapshot(m.root, ownReport)).toEqual(before);
  });

  // An imported Cluster API configuration takes the endpoint from the launcher's environment,
  // which a reset by hand lacks: the beforeReset command still gets the value the run recorded.
  it('gives a beforeReset command the value the run recorded, without the endpoint variable; refuses one it cannot know, and a bad --set, before anything is undone', async () => {
    const m = machine(
      { beforeReset: [{ name: 'note the node', shell: 'echo "node=[$NODE]" >> node-at-reset', env: { NODE: { fromInstanceData: 'ds.meta_data.label' } } }] },
      { kubernetes: { controlPlaneEndpoint: { valueFrom: { env: 'MACHINEADM_CAPI_ENDPOINT' } }, token: TOKEN, caCertHashes: ['sha256:' + 'ab'.repeat(32)], retries: 0, backoffSeconds: 0 } },
    );
    mkdirSync(join(m.root, 'run/cloud-init'), { recursive: true });
    writeFileSync(join(m.root, 'run/cloud-init/instance-data.json'), JSON.stringify({ ds: { meta_data: { label: 'web-1' } } }));
    const init = await runCli(['init', '-c', m.config, '--root', m.root, '--state-dir', m.state, '--offline'], { env: { ...env, MACHINEADM_CAPI_ENDPOINT: '10.0.0.10:6443' } });
    expect(init.code, init.stdout + init.stderr).toBe(0);
    // A reboot: /run is empty, cloud-init's file with it.
    rmSync(join(m.root, 'run/cloud-init'), { recursive: true });
    const stateBefore = readdirSync(m.state, { recursive: true }).sort();

    const unfit = await run(m, ['reset', '--set', 'ds.meta_data.label=-rf']);
    expect(unfit.stderr).toContain('spec.commands.beforeReset[0].env.NODE: ds.meta_data.label from --set "-rf" starts with "-"');
    expect(unfit.code).toBe(2);
    const other = join(m.dir, 'other.yaml');
    writeFileSync(other, readFileSync(m.config, 'utf8').replace('ds.meta_data.label', 'ds.meta_data.rack'));
    const unknown = await runCli(['reset', '-c', other, '--root', m.root, '--state-dir', m.state, '--offline'], { env });
    expect(unknown.stderr).toContain('spec.commands.beforeReset[0].env.NODE: { fromInstanceData: ds.meta_data.rack }: the run being reset recorded no ds.meta_data.rack, and reset reads nothing of the machine');
    expect(unknown.code).toBe(2);
    expect(existsSync(join(m.root, 'node-at-reset'))).toBe(false);
    expect(readdirSync(m.state, { recursive: true }).sort()).toEqual(stateBefore);

    const reset = await run(m, ['reset']);
    expect(reset.code, reset.stdout + reset.stderr).toBe(0);
    expect(readFileSync(join(m.root, 'node-at-reset'), 'utf8')).toBe('node=[web-1]\n');
  });

  it('stops the reset before anything is undone when a beforeReset command fails (exit 1, the state directory stays)', async () => {
    const m = machine({ beforeReset: [{ name: 'refuse', argv: ['/bin/sh', '-c', 'echo not yet; exit 3'] }] });
    const init = await run(m, ['init']);
    expect(init.code, init.stdout + init.stderr).toBe(0);
    const reset = await run(m, ['reset']);
    expect(reset.code).toBe(1);
    expect(reset.stdout + reset.stderr).toContain('spec.commands.beforeReset[0] (refuse) exited with code 3; its last output line: not yet');
    expect(existsSync(join(m.root, 'etc/node-role'))).toBe(true);
    expect(readdirSync(m.dir)).toContain('state');
  });
});
