// Cluster API's bootCommands, preKubeadmCommands and postKubeadmCommands run as the bootstrap data
// runs them: each list one shell script, so that what one line sets (a variable, set -e, a cd)
// holds for the next. cloud-init's runcmd is a #!/bin/sh script without set -e; Ignition's
// kubeadm.sh begins with set -e. The imported scripts run here through /bin/sh as machineadm runs
// a spec.commands entry (commandArgv).
import { chmodSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { dump, load } from 'js-yaml';
import { describe, expect, it } from 'vitest';
import { writeFileSync } from 'node:fs';
import { commandArgv } from '../../src/commands/run.ts';
import { newHereDocuments, shellTemplates } from '../../src/capi/templates.ts';
import { referenceName } from '../../src/config/schema/machine.ts';
import { machineConfigJsonSchema } from '../../src/config/schema/index.ts';
import { CAPI_ENV } from '../../src/capi/kubeadm.ts';
import { ProcessRunner } from '../../src/host/exec.ts';
import { runCli } from '../support/cli.ts';
import { scratchDir } from '../support/tmp.ts';

type Command = { name?: string; shell?: string; argv?: string[]; env?: Record<string, unknown>; timeoutSeconds?: number };

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

async function importFails(spec: Record<string, unknown>): Promise<string> {
  const dir = scratchDir('machineadm-capi-commands-');
  const file = join(dir, 'input.yaml');
  writeFileSync(file, dump({ apiVersion: 'bootstrap.cluster.x-k8s.io/v1beta1', kind: 'KubeadmConfigTemplate', metadata: { name: 'md-0' }, spec: { template: { spec: { joinConfiguration: { nodeRegistration: {} }, ...spec } } } }));
  const run = await runCli(['config', 'import', '-f', file]);
  expect(run.code, run.stderr).toBe(2);
  return run.stderr;
}

async function runScript(command: Command, env: Record<string, string> = {}): Promise<{ work: string; exitCode: number }> {
  const work = scratchDir('machineadm-capi-work-');
  // The script alone: its env's machine references are given as values by the caller.
  const script = { ...(command.name ? { name: command.name } : {}), ...(command.shell ? { shell: command.shell } : {}), ...(command.argv ? { argv: command.argv } : {}), timeoutSeconds: 30 };
  const result = await new ProcessRunner().run(commandArgv(script, 'linux'), { allowFailure: true, timeoutMs: 30_000, env: { ...process.env, ...env, WORK: work } });
  return { work, exitCode: result.exitCode };
}

describe('Cluster API commands', () => {
  it('run as one script, as cloud-init runs runcmd: a variable set by one line reaches the next', async () => {
    const { commands } = await imported({ preKubeadmCommands: INSTALL });
    expect(commands.beforeKubeadm).toEqual([{ name: "preKubeadmCommands, one script as cloud-init's runcmd runs it", shell: [...INSTALL, 'exit 0'].join('\n'), timeoutSeconds: 86_400 }]);
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
    expect(commands.beforeKubeadm![0]).toEqual({ name: "preKubeadmCommands, one script as Ignition's kubeadm.sh runs it (set -e)", shell: 'set -e\ncd "$WORK"\nfalse\ntouch ran-after-false', timeoutSeconds: 86_400 });
    const run = await runScript(commands.beforeKubeadm![0]!);
    expect(run.exitCode).not.toBe(0);
    expect(existsSync(join(run.work, 'ran-after-false'))).toBe(false);
  });

  it('say when postKubeadmCommands use a variable preKubeadmCommands set (kubeadm runs between the two scripts)', async () => {
    const { commands, stderr } = await imported({ preKubeadmCommands: INSTALL, postKubeadmCommands: ['echo "installed crictl ${CRICTL_VERSION} for $ARCH"', 'echo $HOME'] });
    expect(commands.afterKubeadm).toHaveLength(1);
    expect(stderr).toContain('note: spec.template.spec.postKubeadmCommands: uses $CRICTL_VERSION, $ARCH, set by preKubeadmCommands: machineadm runs kubeadm between the two scripts, so set them again in postKubeadmCommands');
  });

  it('say nothing of a variable postKubeadmCommands set again before using it, as Nutanix\'s templates do', async () => {
    const post = ['KUBERNETES_VERSION_NO_V=1.31.2', 'if [ "$KUBERNETES_VERSION_NO_V" != 1.29.0 ]; then echo "$ARCH"; fi'];
    const { stderr } = await imported({ preKubeadmCommands: ['KUBERNETES_VERSION_NO_V=1.31.2', ...INSTALL], postKubeadmCommands: post });
    expect(stderr).toContain('note: spec.template.spec.postKubeadmCommands: uses $ARCH, set by preKubeadmCommands');
    expect(stderr).not.toContain('$KUBERNETES_VERSION_NO_V');
    // Used before it is set again: the first use still needs the value of preKubeadmCommands.
    const late = await imported({ preKubeadmCommands: INSTALL, postKubeadmCommands: ['echo "$ARCH"', 'ARCH=arm64'] });
    expect(late.stderr).toContain('uses $ARCH, set by preKubeadmCommands');
  });

  it("take the machine's values where cloud-init's templates put them, as variables the script gets: the real shell reads them", async () => {
    const line = 'echo "name={{ ds.meta_data.local_hostname }} zone={{ v1.availability_zone }}" > "$MACHINEADM_ROOT/host"; echo {{v1.instance_id}} >> "$MACHINEADM_ROOT/host"';
    const { commands } = await imported({ bootCommands: [line] });
    expect(commands.boot).toEqual([{
      name: "bootCommands, one script as cloud-init's bootcmd runs it",
      shell: 'echo "name=${MACHINE_LOCAL_HOSTNAME} zone=${MACHINE_ZONE}" > "$MACHINEADM_ROOT/host"; echo ${MACHINE_INSTANCE_ID} >> "$MACHINEADM_ROOT/host"\nexit 0',
      env: { MACHINE_LOCAL_HOSTNAME: { fromMachine: 'localHostname' }, MACHINE_ZONE: { fromMachine: 'zone' }, MACHINE_INSTANCE_ID: { fromMachine: 'instanceId' } },
      timeoutSeconds: 86_400,
    }]);
    // machineadm prepare runs it (under --root, where commands run when asked to) with the values given.
    const dir = scratchDir('machineadm-capi-commands-');
    const config = join(dir, 'machine.yaml');
    writeFileSync(config, dump({ apiVersion: 'machineadm.cluster.x-k8s.io/v1alpha1', kind: 'MachineConfig', spec: { commands } }));
    const root = join(dir, 'root');
    const plan = await runCli(['plan', '-c', config, '--root', root, '--set', 'localHostname=ip-10-0-1-5.ec2.internal', '--set', 'zone=us-east-1a', '--set', 'instanceId=i-0abc'], { env: { ...process.env, MACHINEADM_COMMANDS_UNDER_ROOT: '1' } });
    expect(plan.stdout).toContain('MACHINE_LOCAL_HOSTNAME=ip-10-0-1-5.ec2.internal MACHINE_ZONE=us-east-1a MACHINE_INSTANCE_ID=i-0abc /bin/sh -c');
    const run = await runCli(['prepare', '-c', config, '--root', root, '--set', 'localHostname=ip-10-0-1-5.ec2.internal', '--set', 'zone=us-east-1a', '--set', 'instanceId=i-0abc'], { env: { ...process.env, MACHINEADM_COMMANDS_UNDER_ROOT: '1' } });
    expect(run.code, run.stderr).toBe(0);
    expect(readFileSync(join(root, 'host'), 'utf8')).toBe('name=ip-10-0-1-5.ec2.internal zone=us-east-1a\ni-0abc\n');
  });

  it.each([
    ['a template that is more than one key', 'echo {{ ds.meta_data.tags.role | upper }}', 'holds a cloud-init template machineadm does not know ({{ ds.meta_data.tags.role | upper }})'],
    ['a template of a name outside the instance data (a stale clusterctl variable)', 'curl https://{{ CLUSTER_APIENDPOINT_HOST }}:6443', 'holds a cloud-init template machineadm does not know ({{ CLUSTER_APIENDPOINT_HOST }})'],
    ['a template statement', '{% if v1.region %}echo x{% endif %}', 'holds a cloud-init template'],
    ["an infrastructure provider's Go template (Equinix's)", 'kubeadm config images pull --kubernetes-version {{ .kubernetesVersion }}', "holds an infrastructure provider's template ({{ .kubernetesVersion }}, Go's text/template, filled in by that provider's controller before the machine boots)"],
  ])('refuse %s, naming the line, and keep the others', async (_what, bad, message) => {
    const dir = scratchDir('machineadm-capi-commands-');
    const file = join(dir, 'input.yaml');
    writeFileSync(file, dump({ apiVersion: 'bootstrap.cluster.x-k8s.io/v1beta1', kind: 'KubeadmConfigTemplate', metadata: { name: 'md-0' }, spec: { template: { spec: { preKubeadmCommands: ['echo a', bad] } } } }));
    const run = await runCli(['config', 'import', '-f', file]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(`spec.template.spec.preKubeadmCommands[1]: ${message}`);
  });

  // cloud-init puts the value into the line before the shell reads it; machineadm gives it as a
  // variable, which the shell puts in only outside single quotes: within them the quote is ended
  // around the variable. Both forms run through the real shell and print the same words.
  it("put a template in where cloud-init did, also within single quotes: the real shell prints the same as cloud-init's rendering", async () => {
    const values: Record<string, string> = { 'ds.meta_data.label': 'web 1', 'v1.local_hostname': 'ip-10-0-1-5', 'ds["id"]': "ocid1.x" };
    const lines = [
      `hostname_of '{{ ds.meta_data.label }}' && printf '<%s>\\n' '{{ ds.meta_data.label }}'`,
      `printf '<%s>\\n' 'a {{ ds.meta_data.label }} b' 'x{{ v1.local_hostname }}' '{{ v1.local_hostname }}y' "{{ ds.meta_data.label }}"`,
      `printf '<%s>\\n' 'it'\\''s {{ ds["id"] }}'{{ v1.local_hostname }} {{ ds.meta_data.label }} '{{ds.meta_data.label}}{{ v1.local_hostname }}'`,
    ];
    const script = (text: string) => `hostname_of() { :; }\n${text}`;
    const rendered = lines.map((l) => l.replace(/\{\{\s*(.*?)\s*\}\}/g, (_, key: string) => values[key]!));
    const machineadm = lines.map((l) => shellTemplates(l));
    const env: Record<string, string> = {};
    for (const m of machineadm) {
      if ('problem' in m) throw new Error(m.problem);
      // v1.local_hostname is a value machineadm reads itself (localHostname).
      for (const [name, reference] of Object.entries(m.env)) env[name] = { ...values, localHostname: values['v1.local_hostname']! }[referenceName(reference)]!;
    }
    expect(machineadm[0]).toEqual({ text: `hostname_of "\${INSTANCE_DATA_DS_META_DATA_LABEL}" && printf '<%s>\\n' "\${INSTANCE_DATA_DS_META_DATA_LABEL}"`, env: { INSTANCE_DATA_DS_META_DATA_LABEL: { fromInstanceData: 'ds.meta_data.label' } } });
    const runner = new ProcessRunner();
    const cloudInit = await runner.run(['/bin/sh', '-c', script(rendered.join('\n'))], { timeoutMs: 10_000 });
    const ours = await runner.run(['/bin/sh', '-c', script(machineadm.map((m) => ('text' in m ? m.text : '')).join('\n'))], { timeoutMs: 10_000, env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...env } });
    expect(cloudInit.stdout.split("\n").length).toBe(10);
    expect(ours.stdout).toBe(cloudInit.stdout);
  });

  it('read a quote that a backslash escapes, or one within the other kind of quotes, as the shell does', async () => {
    const { commands } = await imported({ bootCommands: [`echo "it's {{ v1.region }}" \\' {{ v1.region }}`] });
    expect(commands.boot![0]!.shell).toBe(`echo "it's \${MACHINE_REGION}" \\' \${MACHINE_REGION}\nexit 0`);
  });
  // cloud-init's bootcmd and runcmd, and Ignition's units and kubeadm.sh, have no time limit: a
  // provider's install script (packages, downloads, image pulls) must not be stopped at 300 s.
  it('give every imported command the longest timeout machineadm allows, as the bootstrap data runs them without a limit', async () => {
    const schema = machineConfigJsonSchema() as any;
    const longest = schema.properties.spec.properties.commands.properties.beforeKubeadm.items.properties.timeoutSeconds.maximum;
    expect(longest).toBe(86_400);
    const unit = 'systemd:\n  units:\n  - name: hello.service\n    enabled: true\n    contents: "[Service]\\nExecStart=/bin/true\\n"\n';
    const lists = { bootCommands: ['swapoff -a'], preKubeadmCommands: ['apt-get install -y socat'], postKubeadmCommands: ['echo done'] };
    const cloudConfig = await imported(lists);
    const ignition = await imported({ ...lists, format: 'ignition', ignition: { containerLinuxConfig: { additionalConfig: unit } } });
    // A Windows template's bootCommands are not carried (cloudbase-init has no bootcmd).
    const windows = await imported({ ...lists, joinConfiguration: { nodeRegistration: { criSocket: 'npipe:////./pipe/containerd-containerd' } } });
    for (const [{ commands }, least] of [[cloudConfig, 3], [ignition, 3], [windows, 2]] as const) {
      const all = Object.values(commands).flat();
      expect(all.length).toBeGreaterThanOrEqual(least);
      for (const command of all) expect(command.timeoutSeconds, JSON.stringify(command)).toBe(longest);
    }
    expect(ignition.commands.beforeKubeadm![0]!.argv).toEqual(['systemctl', 'enable', '--now', 'hello.service']);
  });

  // The real run: `systemctl` (a stand-in on PATH) fails as systemd's does when the unit file is
  // not there yet. Ignition has the unit written and enabled before systemd starts anything.
  it("enable and start Ignition's enabled units after prepare/files wrote them, first of the commands before kubeadm", async () => {
    const dir = scratchDir('machineadm-capi-units-');
    const bin = join(dir, 'bin');
    mkdirSync(bin);
    writeFileSync(join(bin, 'systemctl'), '#!/bin/sh\necho "systemctl $*" >> "$MACHINEADM_ROOT/ran"\n[ -f "$MACHINEADM_ROOT/etc/systemd/system/$3" ] || { echo "Failed to enable unit: Unit file $3 does not exist." >&2; exit 1; }\n');
    chmodSync(join(bin, 'systemctl'), 0o755);
    const unit = 'systemd:\n  units:\n  - name: hello.service\n    enabled: true\n    contents: "[Service]\\nType=oneshot\\nExecStart=/bin/true\\n[Install]\\nWantedBy=multi-user.target\\n"\n';
    const { commands } = await imported({ format: 'ignition', preKubeadmCommands: ['echo "pre-kubeadm" >> "$MACHINEADM_ROOT/ran"'], ignition: { containerLinuxConfig: { additionalConfig: unit } } });
    const config = join(dir, 'machine.yaml');
    writeFileSync(config, dump({ apiVersion: 'machineadm.cluster.x-k8s.io/v1alpha1', kind: 'MachineConfig', spec: { commands, files: [{ path: '/etc/systemd/system/hello.service', content: '[Service]\n' }], kubernetes: { role: 'worker', bootstrap: 'join', controlPlaneEndpoint: 'cp.example:6443', token: { valueFrom: { env: CAPI_ENV.token } }, caCertHashes: [`sha256:${'a'.repeat(64)}`] } } }));
    const root = join(dir, 'root');
    const run = await runCli(['init', '-c', config, '--root', root, '--state-dir', join(dir, 'state')], { env: { ...process.env, PATH: `${bin}:${process.env.PATH}`, MACHINEADM_COMMANDS_UNDER_ROOT: '1', [CAPI_ENV.token]: 'abcdef.0123456789abcdef' } });
    expect(run.code, run.stdout + run.stderr).toBe(0);
    expect(readFileSync(join(root, 'ran'), 'utf8')).toBe('systemctl enable --now hello.service\npre-kubeadm\n');
    expect(commands.boot).toBeUndefined();
    expect(commands.beforeKubeadm!.map((c) => c.argv ?? c.shell)).toEqual([['systemctl', 'enable', '--now', 'hello.service'], 'set -e\necho "pre-kubeadm" >> "$MACHINEADM_ROOT/ran"']);
  });

  // cloud-init runs bootcmd as one script with INSTANCE_ID in its environment; when it fails, only
  // its module fails, and cloud-init goes on to runcmd (kubeadm included).
  it('run bootCommands as cloud-init\'s bootcmd: a failing script does not stop the run, and $INSTANCE_ID is the instance id', async () => {
    const { commands } = await imported({ bootCommands: ['cd "$WORK"', 'echo "$INSTANCE_ID" > id', 'false'] });
    const boot = commands.boot![0]!;
    expect(boot.env).toEqual({ INSTANCE_ID: { fromInstanceData: 'v1.instance_id' } });
    const run = await runScript(boot, { INSTANCE_ID: 'i-0abc' });
    expect(run.exitCode).toBe(0);
    expect(readFileSync(join(run.work, 'id'), 'utf8')).toBe('i-0abc\n');
    // Ignition has no bootcmd: its list keeps set -e and stops.
    const ignition = await imported({ format: 'ignition', bootCommands: ['false'] });
    expect(ignition.commands.boot![0]!.shell).toBe('set -e\nfalse');
    expect(ignition.commands.boot![0]!.env).toBeUndefined();
  });

  // cloud-init's runcmd is one script without set -e, with kubeadm after the pre lines: it runs
  // kubeadm whatever the last pre line returned, and stops before it only under a set -e of the
  // template's own. The imported script, run by the real /bin/sh, ends the same way.
  it.each([
    ['a last line that fails', ['cd "$WORK"', 'false && echo "first control plane"'], 0, undefined],
    ['a failing line before the last', ['cd "$WORK"', 'false', 'touch ran'], 0, 'ran'],
    ['a set -e, then a failing line', ['cd "$WORK"', 'set -e', 'false', 'touch ran'], 'not 0', undefined],
    ['a set -e and a failing last line it does not stop at', ['cd "$WORK"', 'set -eu', 'false && echo x'], 0, undefined],
  ])('let kubeadm run after preKubeadmCommands with %s as cloud-init does', async (_what, lines, status, made) => {
    const { commands } = await imported({ preKubeadmCommands: lines });
    const run = await runScript(commands.beforeKubeadm![0]!);
    if (status === 0) expect(run.exitCode).toBe(0);
    else expect(run.exitCode).not.toBe(0);
    expect(existsSync(join(run.work, 'ran'))).toBe(made === 'ran');
    expect(commands.beforeKubeadm![0]!.shell).toBe([...lines, 'exit 0'].join('\n'));
  });

  it('say when postKubeadmCommands would run under a set -e, cd or umask of preKubeadmCommands (one script in CABPK, two in machineadm)', async () => {
    const { stderr } = await imported({ preKubeadmCommands: ['set -euo pipefail', 'mkdir -p /opt/x && cd /opt/x', 'umask 077', '(cd /tmp && ls)'], postKubeadmCommands: ['./label-node.sh'] });
    expect(stderr).toContain("note: spec.template.spec.postKubeadmCommands: preKubeadmCommands say set -e, cd, umask, which in CABPK's one script hold for these lines too: machineadm runs kubeadm between the two scripts, and this one starts without them");
    // In Ignition both scripts begin with set -e; a cd in a subshell holds only there.
    const ignition = await imported({ format: 'ignition', preKubeadmCommands: ['set -e', '(cd /tmp && ls)'], postKubeadmCommands: ['./label-node.sh'] });
    expect(ignition.stderr).not.toContain('preKubeadmCommands say');
    const sub = await imported({ preKubeadmCommands: ['(cd /tmp && ls)', 'umask'], postKubeadmCommands: ['./label-node.sh'] });
    expect(sub.stderr).not.toContain('preKubeadmCommands say');
  });

  // The shell puts nothing into the body of a here-document whose delimiter is quoted: a template
  // there, which cloud-init filled in, would stay ${NAME} in the file.
  it.each([
    ["<<'EOF'", "cat > /etc/node-name <<'EOF'\n{{ v1.local_hostname }}\nEOF\n"],
    ['<<"EOF"', 'cat > /etc/node-name <<"EOF"\n{{ v1.local_hostname }}\nEOF\n'],
    ['<<\\EOF', 'cat > /etc/node-name <<\\EOF\n{{ v1.local_hostname }}\nEOF\n'],
    ["<<-'EOF'", "cat > /etc/node-name <<-'EOF'\n\t{{ v1.local_hostname }}\n\tEOF\n"],
    ["<< 'E_1' after a here-document", "cat <<A > /a <<'E_1'\n{{ v1.region }}\nA\nname={{ v1.local_hostname }}\nE_1\n"],
  ])('refuse a template in the body of a here-document %s, naming the command, and read the next commands as commands', async (operator, script) => {
    const stderr = await importFails({ preKubeadmCommands: ['echo a', script, "echo '{{ v1.instance_id }}'"] });
    expect(stderr).toContain(`spec.template.spec.preKubeadmCommands[1]: holds a template in the body of a here-document whose delimiter is quoted (${operator.replace(/ after.*/, '').replace(' ', '')}), where the shell puts in no variable`);
    expect(stderr).not.toContain('preKubeadmCommands[2]');
    expect(stderr).toMatch(/\(1 problem\)/);
  });

  it('refuse a template in a quoted here-document whose body is in the commands after the one that opens it', async () => {
    const stderr = await importFails({ preKubeadmCommands: ["cat > /etc/node-name <<'EOF'", '{{ v1.local_hostname }}', 'EOF', 'echo {{ v1.region }}'] });
    expect(stderr).toContain('spec.template.spec.preKubeadmCommands[1]: holds a template in the body of a here-document whose delimiter is quoted');
    expect(stderr).toMatch(/\(1 problem\)/);
  });

  // In an unquoted here-document's body the shell puts variables in, and quotes are text: the
  // real shell writes what cloud-init's rendering writes.
  it("put a template into an unquoted here-document's body as a variable, quotes there being text: the real shell writes the same as cloud-init's rendering", async () => {
    const values: Record<string, string> = { 'ds.meta_data.label': "web 1", 'v1.local_hostname': 'ip-10-0-1-5' };
    const lines = [
      `cat <<EOF\nname: '{{ ds.meta_data.label }}'\nhost="{{ v1.local_hostname }}" it's\nEOF`,
      `cat <<-END; echo '{{ v1.local_hostname }}'\n\tx {{ ds.meta_data.label }}\n\tEND`,
      `cat <<EOF`,
      `'{{ v1.local_hostname }}'`,
      `EOF`,
      `echo "{{ ds.meta_data.label }}"`,
      `echo $((1 << 2)) '{{ ds.meta_data.label }}'`,
    ];
    const heredocs = newHereDocuments();
    const machineadm = lines.map((l) => shellTemplates(l, heredocs));
    const env: Record<string, string> = {};
    for (const m of machineadm) {
      if ('problem' in m) throw new Error(m.problem);
      for (const [name, reference] of Object.entries(m.env)) env[name] = { ...values, localHostname: values['v1.local_hostname']! }[referenceName(reference)]!;
    }
    const rendered = lines.map((l) => l.replace(/\{\{\s*(.*?)\s*\}\}/g, (_, key: string) => values[key]!));
    const runner = new ProcessRunner();
    const cloudInit = await runner.run(['/bin/sh', '-c', rendered.join('\n')], { timeoutMs: 10_000 });
    const ours = await runner.run(['/bin/sh', '-c', machineadm.map((m) => ('text' in m ? m.text : '')).join('\n')], { timeoutMs: 10_000, env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...env } });
    expect(cloudInit.stdout).toBe("name: 'web 1'\nhost=\"ip-10-0-1-5\" it's\nx web 1\nip-10-0-1-5\n'ip-10-0-1-5'\nweb 1\n4 web 1\n");
    expect(ours.stdout).toBe(cloudInit.stdout);
  });
});
