// machineadm config import on the command line: what it prints, where, and with which exit code;
// every refusal names the field and why; with Cluster API's variables set, every imported example
// validates and plans with exit 0.
import { describe, expect, it } from 'vitest';
import { mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { load, dump } from 'js-yaml';
import { runCli } from '../support/cli.ts';
import { scratchDir } from '../support/tmp.ts';
import { REPO } from '../kubeadm/standin.ts';

const FIXTURES = join(REPO, 'test/capi/fixtures');
const fixtures = readdirSync(FIXTURES).filter((f) => f.endsWith('.yaml')).sort();

const WORKER = {
  apiVersion: 'bootstrap.cluster.x-k8s.io/v1beta1',
  kind: 'KubeadmConfigTemplate',
  metadata: { name: 'md-0' },
  spec: { template: { spec: { joinConfiguration: { nodeRegistration: { kubeletExtraArgs: { 'cloud-provider': 'external' } } } } } },
};

function write(doc: unknown): string {
  const dir = scratchDir('machineadm-import-');
  const file = join(dir, 'input.yaml');
  writeFileSync(file, dump(doc));
  return file;
}

function worker(spec: Record<string, unknown>): unknown {
  return { ...WORKER, spec: { template: { spec: { ...WORKER.spec.template.spec, ...spec } } } };
}

describe('machineadm config import', () => {
  it('prints the MachineConfig on stdout and the notes on stderr, exit 0', async () => {
    const run = await runCli(['config', 'import', '-f', join(FIXTURES, '01-capd-quickstart-kcp.yaml')]);
    expect(run.code).toBe(0);
    const config = load(run.stdout) as Record<string, any>;
    expect(config.apiVersion).toBe('machineadm.cluster.x-k8s.io/v1alpha1');
    expect(config.spec.kubernetes).toMatchObject({ role: 'control-plane', bootstrap: 'init', version: 'v1.31.2', controlPlaneEndpoint: { valueFrom: { env: 'MACHINEADM_CAPI_ENDPOINT' } } });
    expect(run.stderr).toContain('note: spec.replicas: Cluster API manages');
    expect(run.stderr).toContain('note: spec.kubeadmConfigSpec.joinConfiguration.nodeRegistration: used only by joining machines');
  });

  it('imports a joining control-plane member with --join, as JSON with -o json', async () => {
    const run = await runCli(['config', 'import', '-f', join(FIXTURES, '02-capd-quickstart-kcp-join.yaml'), '--join', '-o', 'json']);
    expect(run.code).toBe(0);
    const k = JSON.parse(run.stdout).spec.kubernetes;
    expect(k).toMatchObject({ role: 'control-plane', bootstrap: 'join', certificateKey: { valueFrom: { env: 'MACHINEADM_CAPI_CERTIFICATE_KEY' } }, token: { valueFrom: { env: 'MACHINEADM_CAPI_TOKEN' } }, caCertHashes: [{ valueFrom: { env: 'MACHINEADM_CAPI_CA_CERT_HASH' } }] });
    expect(k.controlPlane).toEqual({ localAPIEndpoint: { advertiseAddress: '10.0.0.12', bindPort: 6443 } });
    expect(run.stderr).toContain("note: spec.kubeadmConfigSpec.clusterConfiguration.apiServer: a joining machine takes the cluster's setting");
  });

  it.each([
    ['a Secret reference without a key', worker({ files: [{ path: '/etc/x', contentFrom: { secret: { name: 's' } } }] }), 'spec.template.spec.files[0].contentFrom: names no Secret'],
    ['cloud-init replacing a filesystem', worker({ diskSetup: { filesystems: [{ device: '/dev/sdc', filesystem: 'ext4', replaceFS: 'ntfs' }] } }), 'spec.template.spec.diskSetup.filesystems[0].replaceFS: replacing one filesystem type'],
    ['a mount of the ephemeral disk by its cloud-init name', worker({ mounts: [['ephemeral0.1', '/mnt/resource']] }), 'spec.template.spec.mounts[0]: ephemeral0.1 is a disk only cloud-init names'],
    ['a mount by the label of an entry left to cloud-init', worker({ diskSetup: { filesystems: [{ device: 'ephemeral0.1', filesystem: 'ext4', label: 'ephemeral0', replaceFS: 'ntfs' }] }, mounts: [['LABEL=ephemeral0', '/var/lib/scratch']] }), 'spec.template.spec.mounts[0]: LABEL=ephemeral0 is a disk only cloud-init names'],
    ['partitioning the ephemeral disk by its cloud-init name', worker({ diskSetup: { partitions: [{ device: 'ephemeral0', layout: true, tableType: 'gpt' }] } }), 'spec.template.spec.diskSetup.partitions[0].device: ephemeral0 is a disk only cloud-init names'],
    ['a partition that is no number, any, auto or none', worker({ diskSetup: { filesystems: [{ device: '/dev/sdb', filesystem: 'ext4', partition: 'first' }] } }), 'spec.template.spec.diskSetup.filesystems[0].partition: "first" is not a partition number, any, auto or none'],
    ['skipping CA verification', worker({ joinConfiguration: { discovery: { bootstrapToken: { unsafeSkipCAVerification: true } } } }), 'unsafeSkipCAVerification: machineadm never joins without checking the cluster CA'],
    ['a template machineadm does not know in a command', worker({ preKubeadmCommands: ['hostnamectl set-hostname {{ ds.meta_data.tags.name | lower }}'] }), 'spec.template.spec.preKubeadmCommands[0]: holds a cloud-init template machineadm does not know'],
    ['a flag twice in a v1beta2 list', { ...(worker({ joinConfiguration: { nodeRegistration: { kubeletExtraArgs: [{ name: 'v', value: '1' }, { name: 'v', value: '2' }] } } }) as object), apiVersion: 'bootstrap.cluster.x-k8s.io/v1beta2' }, 'kubeletExtraArgs[1]: flag v is given twice'],
    ['another container runtime', worker({ joinConfiguration: { nodeRegistration: { criSocket: 'unix:///var/run/crio/crio.sock' } } }), "criSocket: unix:///var/run/crio/crio.sock is not containerd's socket"],
    ['a field machineadm does not know', worker({ joinConfiguration: { dryRun: true } }), 'spec.template.spec.joinConfiguration.dryRun: has no machineadm equivalent'],
    ['a swap mount', worker({ mounts: [['swap', 'none', 'swap', 'sw', '0', '0']] }), 'spec.template.spec.mounts[0]: a swap entry: machineadm makes swap areas but never turns them on'],
    ['a raw gzip file', worker({ files: [{ path: '/etc/x', content: 'H4sI', encoding: 'gzip' }] }), 'encoding: gzip: machineadm takes content as plain, base64 or gzip+base64'],
    ['an unknown Ignition section', worker({ format: 'ignition', ignition: { containerLinuxConfig: { additionalConfig: 'networkd:\n  units: []\n' } } }), 'additionalConfig: networkd: has no machineadm equivalent'],
    ['init bootstrap tokens', { apiVersion: 'bootstrap.cluster.x-k8s.io/v1beta1', kind: 'KubeadmConfig', metadata: { name: 'cp' }, spec: { initConfiguration: { bootstrapTokens: [{ token: 'abcdef.0123456789abcdef' }] } } }, 'spec.initConfiguration.bootstrapTokens: machineadm makes the init machine'],
    ['an alpha object', { apiVersion: 'bootstrap.cluster.x-k8s.io/v1alpha3', kind: 'KubeadmConfig', spec: {} }, 'kind: bootstrap.cluster.x-k8s.io/v1alpha3 KubeadmConfig is not a Cluster API kubeadm object machineadm imports'],
    ['a Machine', { apiVersion: 'cluster.x-k8s.io/v1beta1', kind: 'Machine', spec: {} }, 'is not a Cluster API kubeadm object machineadm imports'],
  ])('refuses %s with exit 2, naming the field and why, printing no configuration', async (_, doc, message) => {
    const run = await runCli(['config', 'import', '-f', write(doc)]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(message);
    expect(run.stdout).toBe('');
  });

  it('reads cloud-init\'s default partition (any) on a disk it partitions as its first partition, and says so', async () => {
    const run = await runCli(['config', 'import', '-f', write(worker({ diskSetup: { partitions: [{ device: '/dev/sdc', layout: true }], filesystems: [{ device: '/dev/sdc', filesystem: 'ext4', label: 'data' }, { device: '/dev/sdd', filesystem: 'xfs', partition: 'auto' }] } }))]);
    expect(run.code, run.stderr).toBe(0);
    const storage = (load(run.stdout) as Record<string, any>).spec.storage;
    expect(storage.filesystems).toEqual([{ device: '/dev/sdc', partition: 1, format: 'ext4', label: 'data' }, { device: '/dev/sdd', format: 'xfs' }]);
    expect(run.stderr).toContain("note: spec.template.spec.diskSetup.filesystems[0].partition: cloud-init's default (any) picks the first partition");
  });

  // Every Azure control plane template in the wild formats the resource disk this way; cloud-init's
  // Azure datasource formats a fresh one itself before machineadm runs (and it was refused).
  it("leaves an entry on cloud-init's ephemeral disk (ephemeral0.1, replaceFS: ntfs) to cloud-init, with a note, and keeps the others", async () => {
    const run = await runCli(['config', 'import', '-f', write(worker({ diskSetup: { partitions: [{ device: '/dev/disk/azure/scsi1/lun0', layout: true, overwrite: false, tableType: 'gpt' }], filesystems: [{ device: '/dev/disk/azure/scsi1/lun0', filesystem: 'ext4', label: 'etcd_disk', extraOpts: ['-E', 'lazy_itable_init=1,lazy_journal_init=1'] }, { device: 'ephemeral0.1', filesystem: 'ext4', label: 'ephemeral0', replaceFS: 'ntfs' }] }, mounts: [['LABEL=etcd_disk', '/var/lib/etcddisk']] }))]);
    expect(run.code, run.stderr).toBe(0);
    const storage = (load(run.stdout) as Record<string, any>).spec.storage;
    expect(storage.filesystems).toEqual([{ device: '/dev/disk/azure/scsi1/lun0', partition: 1, format: 'ext4', label: 'etcd_disk', options: ['-E', 'lazy_itable_init=1,lazy_journal_init=1'] }]);
    expect(storage.mounts).toEqual([expect.objectContaining({ device: 'LABEL=etcd_disk', path: '/var/lib/etcddisk' })]);
    expect(run.stderr).toContain("note: spec.template.spec.diskSetup.filesystems[1]: ephemeral0.1 is cloud-init's name for a datasource's ephemeral disk's partition, Azure's resource disk on CAPZ");
    expect(run.stderr).toContain('(without the label "ephemeral0")');
  });

  it("reads the node IP of a template ({{ ds.meta_data.local_ipv4 }}) from the machine, another key from the instance data, and refuses an expression", async () => {
    const ok = await runCli(['config', 'import', '-f', write(worker({ joinConfiguration: { nodeRegistration: { kubeletExtraArgs: { 'node-ip': '{{ ds.meta_data.local_ipv4 }}' } } } }))]);
    expect(ok.code, ok.stderr).toBe(0);
    expect((load(ok.stdout) as Record<string, any>).spec.kubernetes.node.ip).toEqual([{ fromMachine: 'privateIP' }]);
    const key = await runCli(['config', 'import', '-f', write(worker({ joinConfiguration: { nodeRegistration: { kubeletExtraArgs: { 'node-ip': '{{ ds.meta_data.public_ipv4 }}' } } } }))]);
    expect(key.code, key.stderr).toBe(0);
    expect((load(key.stdout) as Record<string, any>).spec.kubernetes.node.ip).toEqual([{ fromInstanceData: 'ds.meta_data.public_ipv4' }]);
    const unknown = await runCli(['config', 'import', '-f', write(worker({ joinConfiguration: { nodeRegistration: { kubeletExtraArgs: { 'node-ip': '{{ ds.meta_data.public_ipv4 | trim }}' } } } }))]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('kubeletExtraArgs["node-ip"]: template {{ ds.meta_data.public_ipv4 | trim }} is not a value machineadm reads from the machine');
  });

  // cloud-init renders CABPK's user data (## template: jinja) before it writes files: plain content
  // held the machine's values, written by machineadm from spec.files values.
  it("reads a file's templates ({{ ds.meta_data.local_hostname }}) from the machine; encoded content is left as it is, an unknown template refused", async () => {
    const ok = await runCli(['config', 'import', '-f', write(worker({ files: [{ path: '/etc/hosts', content: '127.0.1.1 {{ ds.meta_data.local_hostname }} {{ v1.local_hostname }}\nzone={{ v1.availability_zone }} ip={{ ds.meta_data.public_ipv4 }}\n', append: true }, { path: '/etc/b64', content: 'e3sgeCB9fQ==', encoding: 'base64' }] }))]);
    expect(ok.code, ok.stderr).toBe(0);
    expect((load(ok.stdout) as Record<string, any>).spec.files).toEqual([
      { path: '/etc/hosts', content: '127.0.1.1 ${MACHINE_LOCAL_HOSTNAME} ${MACHINE_LOCAL_HOSTNAME}\nzone=${MACHINE_ZONE} ip=${INSTANCE_DATA_DS_META_DATA_PUBLIC_IPV4}\n', append: true, values: { MACHINE_LOCAL_HOSTNAME: { fromMachine: 'localHostname' }, MACHINE_ZONE: { fromMachine: 'zone' }, INSTANCE_DATA_DS_META_DATA_PUBLIC_IPV4: { fromInstanceData: 'ds.meta_data.public_ipv4' } } },
      { path: '/etc/b64', content: 'e3sgeCB9fQ==', encoding: 'base64' },
    ]);
    for (const [files, message] of [
      [[{ path: '/etc/x', content: 'ip={{ public_ipv4 }}\n' }], 'spec.template.spec.files[0].content: holds a cloud-init template machineadm does not know ({{ public_ipv4 }})'],
      [[{ path: '/etc/x', content: 'h={{ v1.local_hostname }} ${MACHINE_LOCAL_HOSTNAME}\n' }], 'spec.template.spec.files[0].content: says ${MACHINE_LOCAL_HOSTNAME} already'],
    ] as const) {
      const refused = await runCli(['config', 'import', '-f', write(worker({ files }))]);
      expect(refused.code).toBe(2);
      expect(refused.stderr).toContain(message);
    }
  });

  it('explains a template\'s own metadata and a control-plane template\'s rollout settings once each', async () => {
    const kcpt = { apiVersion: 'controlplane.cluster.x-k8s.io/v1beta1', kind: 'KubeadmControlPlaneTemplate', metadata: { name: 't' }, spec: { template: { metadata: { labels: { a: 'b' } }, spec: { rolloutStrategy: { type: 'RollingUpdate' }, kubeadmConfigSpec: { clusterConfiguration: { clusterName: 'c1' } } } } } };
    const run = await runCli(['config', 'import', '-f', write(kcpt)]);
    expect(run.code, run.stderr).toBe(0);
    const notes = run.stderr.split('\n').filter((l) => l.startsWith('note: spec.template.'));
    expect(notes.filter((l) => l.startsWith('note: spec.template.metadata:'))).toHaveLength(1);
    expect(notes.filter((l) => l.startsWith('note: spec.template.spec.rolloutStrategy:'))).toHaveLength(1);
  });

  it('lists every refused field at once', async () => {
    const run = await runCli(['config', 'import', '-f', write(worker({ files: [{ path: '/a', contentFrom: { secret: { name: 's' } } }], joinConfiguration: { dryRun: true, caCertPath: '/other/ca.crt' } }))]);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/invalid configuration \(3 problems\)/);
  });

  const fromSecrets = worker({ files: [{ path: '/etc/kubernetes/azure.json', contentFrom: { secret: { name: 'capz-a-md-0-azure-json', key: 'worker-node-azure.json' } }, permissions: '0644' }], users: [{ name: 'ops', lockPassword: false, passwdFrom: { secret: { name: 'ops-password', key: 'hash' } } }] });
  it.each([
    [[], { file: '/etc/machineadm/capi-secrets/capz-a-md-0-azure-json/worker-node-azure.json' }, { file: '/etc/machineadm/capi-secrets/ops-password/hash' }, 'write its value to /etc/machineadm/capi-secrets/capz-a-md-0-azure-json/worker-node-azure.json on the machine'],
    [['--secrets-dir', '/run/secrets'], { file: '/run/secrets/capz-a-md-0-azure-json/worker-node-azure.json' }, { file: '/run/secrets/ops-password/hash' }, 'write its value to /run/secrets/'],
    [['--secrets', 'aws'], { awsSecretsManager: { secretId: 'capz-a-md-0-azure-json', jsonKey: 'worker-node-azure.json' } }, { awsSecretsManager: { secretId: 'ops-password', jsonKey: 'hash' } }, 'store it in AWS Secrets Manager as secret capz-a-md-0-azure-json'],
    [['--secrets', 'azure'], { azureKeyVault: { name: 'capz-a-md-0-azure-json--worker-node-azure-json' } }, { azureKeyVault: { name: 'ops-password--hash' } }, 'store it in Azure Key Vault as secret capz-a-md-0-azure-json--worker-node-azure-json'],
    [['--secrets', 'gcp'], { gcpSecretManager: { secret: 'capz-a-md-0-azure-json__worker-node-azure_json' } }, { gcpSecretManager: { secret: 'ops-password__hash' } }, 'store it in Google Secret Manager as secret capz-a-md-0-azure-json__worker-node-azure_json'],
  ])('maps a file and a password from a Secret, %j, to a value read on the machine, with a note saying where it goes', async (flags, file, password, note) => {
    const run = await runCli(['config', 'import', '-f', write(fromSecrets), ...flags]);
    expect(run.code, run.stderr).toBe(0);
    const spec = (load(run.stdout) as { spec: { files: Array<{ content: unknown; mode: string }>; users: Array<{ passwordHash: unknown }> } }).spec;
    expect(spec.files[0]).toMatchObject({ content: { valueFrom: file }, mode: '0644' });
    expect(spec.users[0]!.passwordHash).toEqual({ valueFrom: password });
    expect(run.stderr).toContain(`note: spec.template.spec.files[0].contentFrom: Secret capz-a-md-0-azure-json, key worker-node-azure.json: ${note}`);
    expect(run.stderr).toContain('note: spec.template.spec.users[0].passwdFrom: Secret ops-password, key hash');
  });

  it('refuses --secrets-dir that is not absolute, or with a cloud store, exit 2', async () => {
    for (const flags of [['--secrets-dir', 'relative/dir'], ['--secrets', 'aws', '--secrets-dir', '/x']]) {
      const run = await runCli(['config', 'import', '-f', write(fromSecrets), ...flags]);
      expect(run.code, flags.join(' ')).toBe(2);
      expect(run.stdout).toBe('');
    }
  });

  it('reads a missing file as a clear error, exit 2', async () => {
    const run = await runCli(['config', 'import', '-f', '/nonexistent/kcp.yaml']);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('/nonexistent/kcp.yaml: does not exist');
  });
});

describe('imported examples on a machine with Cluster API\'s values', () => {
  const env = {
    ...process.env,
    MACHINEADM_CAPI_ENDPOINT: 'cp.cluster.example:6443',
    MACHINEADM_CAPI_TOKEN: 'abcdef.0123456789abcdef',
    MACHINEADM_CAPI_CA_CERT_HASH: `sha256:${'a'.repeat(64)}`,
    MACHINEADM_CAPI_CERTIFICATE_KEY: 'b'.repeat(64),
  };
  const values = ['--set', 'cloud=aws', '--set', 'localHostname=ip-10-0-1-5.ec2.internal', '--set', 'instanceName=node-0', '--set', 'instanceId=i-0a1b2c3d4e5f67890', '--set', 'zone=us-east-1a', '--set', 'region=us-east-1', '--set', 'providerID=aws:///us-east-1a/i-0a1b2c3d4e5f67890'];

  it.each(fixtures)('%s validates and plans with exit 0', async (file) => {
    const text = readFileSync(join(FIXTURES, file), 'utf8');
    const joining = /^# import: --join$/m.test(text) ? ['--join'] : [];
    const imported = await runCli(['config', 'import', '-f', join(FIXTURES, file), ...joining]);
    expect(imported.code, imported.stderr).toBe(0);
    const dir = scratchDir('machineadm-imported-');
    const config = join(dir, 'config.yaml');
    writeFileSync(config, imported.stdout);
    const validated = await runCli(['config', 'validate', '-c', config], { env });
    expect(validated.code, validated.stderr).toBe(0);
    const root = join(dir, 'root');
    mkdirSync(root);
    // The values of the Kubernetes Secrets the object reads, where the import says they go.
    const secretFiles = [...imported.stdout.matchAll(/file: (\/etc\/machineadm\/capi-secrets\/\S+)/g)].map((m) => m[1]!);
    for (const [i, path] of secretFiles.entries()) {
      mkdirSync(join(root, dirname(path)), { recursive: true });
      writeFileSync(join(root, path), JSON.stringify({ cloud: 'AzurePublicCloud', aadClientSecret: `capz-secret-value-${i}` }), { mode: 0o600 });
    }
    const os = /npipe:/.test(text) ? ['--os', 'windows'] : [];
    const planned = await runCli(['plan', '-c', config, '--root', root, ...values, ...os, '-o', 'json'], { env });
    expect(planned.code, planned.stderr).toBe(0);
    const plan = JSON.parse(planned.stdout);
    const shown = JSON.stringify(plan);
    expect(shown).not.toContain('abcdef.0123456789abcdef');
    expect(shown).not.toContain('capz-secret-value');
    for (const path of secretFiles) expect(plan.secrets.map((s: { from: string }) => s.from)).toContain(`file ${path}`);
    // The whole machine before it exists: every command, user, disk, mount and file, and kubeadm's configuration.
    const spec = (load(imported.stdout) as Record<string, any>).spec;
    const lines = (plan.phases as Array<{ steps: Array<{ changes: Array<{ target: string; detail?: string; diff?: string }> }> }>).flatMap((p) => p.steps.flatMap((st) => st.changes.map((c) => [c.target, c.detail ?? '', c.diff ?? ''].join('\n')))).join('\n');
    // A command is shown as its argv, or its shell line quoted for the shell that runs it.
    const expectShown = (what: string, value: string) => expect(lines.includes(value) || lines.includes(JSON.stringify(value)), `${file}: ${what} ${value} is not in the plan`).toBe(true);
    for (const list of Object.values(spec.commands ?? {}) as Array<Array<{ shell?: string; argv?: string[] }>>) for (const c of list) expectShown('command', c.shell ?? c.argv!.join(' '));
    for (const u of spec.users ?? []) expectShown('user', `user ${u.name}`);
    for (const d of spec.storage?.disks ?? []) expectShown('disk', d.device);
    for (const m of spec.storage?.mounts ?? []) expectShown('mount', m.path);
    for (const f of spec.files ?? []) expectShown('file', f.path);
    for (const server of spec.timeServers?.servers ?? []) expectShown('time server', server);
    const kubeadm = (plan.phases as Array<{ steps: Array<{ id: string; changes: Array<{ target: string; diff?: string }> }> }>).flatMap((p) => p.steps).find((st) => /kubeadm\/(init|join)$/.test(st.id) && st.changes.length > 0)!;
    const rendered = kubeadm.changes.find((c) => c.target.startsWith('/run/machineadm/kubeadm-') || c.target.includes('kubeadm-join.yaml') || c.target.includes('kubeadm-init.yaml'))!;
    expect(rendered.diff).toMatch(/kind: (Init|Join)Configuration/);
  });
});
