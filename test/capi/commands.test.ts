// Cluster API's bootCommands, preKubeadmCommands and postKubeadmCommands run as the bootstrap data
// runs them: each list one shell script, so that what one line sets (a variable, set -e, a cd)
// holds for the next. cloud-init's runcmd is a #!/bin/sh script without set -e; Ignition's
// kubeadm.sh begins with set -e. The imported scripts run here through /bin/sh as machineadm runs
// a spec.commands entry (commandArgv).
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { dump, load } from 'js-yaml';
import { describe, expect, it } from 'vitest';
import { writeFileSync } from 'node:fs';
import { commandArgv } from '../../src/commands/run.ts';
import { ProcessRunner } from '../../src/host/exec.ts';
import { runCli } from '../support/cli.ts';
import { scratchDir } from '../support/tmp.ts';

type Command = { name?: string; shell?: string; argv?: string[] };

// As a provider's install script has it: variables set in one line, used in the next ones.
const INSTALL = [
  'export CRICTL_VERSION=v1.31.1',
  'ARCH=amd64',
  'cd "$WORK"',
  'echo "https://github.com/kubernetes-sigs/cri-tools/releases/download/${CRICTL_VERSION}/crictl-${CRICTL_VERSION}-linux-${ARCH}.tar.gz" > url',
];

async function imported(spec: Record<string, unknown>, kind = 'KubeadmConfigTemplate'): Promise<{ commands: Record<string, Command[]>; stderr: string }> {
  const dir = scratchDir('machineadm-capi-commands-');
  const file = join(dir, 'input.yaml');
  const doc = kind === 'KubeadmConfigTemplate'
    ? { apiVersion: 'bootstrap.cluster.x-k8s.io/v1beta1', kind, metadata: { name: 'md-0' }, spec: { template: { spec: { joinConfiguration: { nodeRegistration: {} }, ...spec } } } }
    : spec;
  writeFileSync(file, dump(doc));
  const run = await runCli(['config', 'import', '-f', file]);
  expect(run.code, run.stderr).toBe(0);
  return { commands: (load(run.stdout) as { spec: { commands: Record<string, Command[]> } }).spec.commands, stderr: run.stderr };
}

async function runScript(command: Command): Promise<{ work: string; exitCode: number }> {
  const work = scratchDir('machineadm-capi-work-');
  const result = await new ProcessRunner().run(commandArgv({ ...command, timeoutSeconds: 30 }, 'linux'), { allowFailure: true, timeoutMs: 30_000, env: { ...process.env, WORK: work } });
  return { work, exitCode: result.exitCode };
}

describe('Cluster API commands', () => {
  it('run as one script, as cloud-init runs runcmd: a variable set by one line reaches the next', async () => {
    const { commands } = await imported({ preKubeadmCommands: INSTALL });
    expect(commands.beforeKubeadm).toEqual([{ name: "preKubeadmCommands, one script as cloud-init's runcmd runs it", shell: INSTALL.join('\n') }]);
    const run = await runScript(commands.beforeKubeadm![0]!);
    expect(run.exitCode).toBe(0);
    expect(readFileSync(join(run.work, 'url'), 'utf8')).toBe('https://github.com/kubernetes-sigs/cri-tools/releases/download/v1.31.1/crictl-v1.31.1-linux-amd64.tar.gz\n');
  });

  it('keep cloud-init\'s failure rule: a failed line does not stop the next, unless a line says set -e, which holds from there on', async () => {
    const { commands } = await imported({ bootCommands: ['cd "$WORK"', 'false', 'touch ran-after-false', 'set -e', 'false', 'touch ran-after-set-e'] });
    const run = await runScript(commands.boot![0]!);
    expect(existsSync(join(run.work, 'ran-after-false'))).toBe(true);
    expect(existsSync(join(run.work, 'ran-after-set-e'))).toBe(false);
    expect(run.exitCode).not.toBe(0);
  });

  it('run with set -e from the first line when the bootstrap data is Ignition (kubeadm.sh)', async () => {
    const { commands } = await imported({ format: 'ignition', preKubeadmCommands: ['cd "$WORK"', 'false', 'touch ran-after-false'] });
    expect(commands.beforeKubeadm![0]).toEqual({ name: "preKubeadmCommands, one script as Ignition's kubeadm.sh runs it (set -e)", shell: 'set -e\ncd "$WORK"\nfalse\ntouch ran-after-false' });
    const run = await runScript(commands.beforeKubeadm![0]!);
    expect(run.exitCode).not.toBe(0);
    expect(existsSync(join(run.work, 'ran-after-false'))).toBe(false);
  });

  it('say when postKubeadmCommands use a variable preKubeadmCommands set (kubeadm runs between the two scripts)', async () => {
    const { commands, stderr } = await imported({ preKubeadmCommands: INSTALL, postKubeadmCommands: ['echo "installed crictl ${CRICTL_VERSION} for $ARCH"', 'echo $HOME'] });
    expect(commands.afterKubeadm).toHaveLength(1);
    expect(stderr).toContain('note: spec.template.spec.postKubeadmCommands: uses $CRICTL_VERSION, $ARCH, set by preKubeadmCommands: machineadm runs kubeadm between the two scripts, so set them again in postKubeadmCommands');
  });

  it('keep the lines that hold no template, and refuse the ones that do, naming each', async () => {
    const dir = scratchDir('machineadm-capi-commands-');
    const file = join(dir, 'input.yaml');
    writeFileSync(file, dump({ apiVersion: 'bootstrap.cluster.x-k8s.io/v1beta1', kind: 'KubeadmConfigTemplate', metadata: { name: 'md-0' }, spec: { template: { spec: { preKubeadmCommands: ['echo a', 'hostnamectl set-hostname {{ ds.meta_data.hostname }}'] } } } }));
    const run = await runCli(['config', 'import', '-f', file]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('spec.template.spec.preKubeadmCommands[1]: holds a cloud-init template');
  });
});
