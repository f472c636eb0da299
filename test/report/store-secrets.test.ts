// A whole run with its secrets in the cloud's secret stores and in age envelopes: the join token
// and a secret file from each store (against the stand-ins of AWS, Azure and GCP over HTTPS with a
// test CA), through plan, plan -o json, init (kubeadm is the strict stand-in), status, config view
// and reset. Not a byte of the values, the credentials the stores were reached with, the age
// identity or the bearer token reaches stdout, stderr, the state directory, the result, the
// sentinel or an event; kubeadm gets the token, and the secret file holds its value.
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { join, relative } from 'node:path';
import { dump } from 'js-yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, type CliRun } from '../support/cli.ts';
import { scratchDir } from '../support/tmp.ts';
import { standinEnv } from '../support/machine-run.ts';
import { makeTestCa, type TestCa } from '../config/helpers/servers.ts';
import { startAwsStandIn, type AwsStandIn } from '../config/helpers/aws-stand-in.ts';
import { startAzureStandIn, type AzureStandIn } from '../config/helpers/azure-stand-in.ts';
import { startGcpStandIn, type GcpStandIn } from '../config/helpers/gcp-stand-in.ts';
import { startCollector, type Collector } from './collector.ts';

const TOKEN = 'q7w2ex.4k9m1n8b3v6c5x0z';
const FILE_SECRET = '{"aadClientSecret":"file-s3cret-8c1f6a2e9d"}\n';
const BEARER = 'bearer-8f3a1c77e0d94b2a';
const CA = '/etc/ssl/store-ca.pem';
let ca: TestCa;
let aws: AwsStandIn;
let azure: AzureStandIn;
let gcp: GcpStandIn;
let collector: Collector;
const idDir = scratchDir('machineadm-age-id-');
let identity: string;
let recipient: string;

beforeAll(async () => {
  ca = makeTestCa(scratchDir());
  [aws, azure, gcp, collector] = await Promise.all([startAwsStandIn(ca), startAzureStandIn(ca), startGcpStandIn(ca), startCollector()]);
  aws.secrets.set('cluster-a/join-token', TOKEN);
  aws.parameters.set('/cluster-a/azure-json', FILE_SECRET);
  azure.secrets.set('join-token', [{ version: '0123456789abcdef0123456789abcdef', value: TOKEN }]);
  azure.secrets.set('azure-json', [{ version: '0123456789abcdef0123456789abcdef', value: FILE_SECRET }]);
  gcp.secrets.set(`${gcp.project}/join-token`, [TOKEN]);
  gcp.secrets.set(`${gcp.project}/azure-json`, [FILE_SECRET]);
  execFileSync('age-keygen', ['-o', join(idDir, 'id.txt')], { stdio: 'pipe' });
  identity = readFileSync(join(idDir, 'id.txt'), 'utf8').split('\n').find((l) => l.startsWith('AGE-SECRET-KEY-'))!;
  recipient = execFileSync('age-keygen', ['-y', join(idDir, 'id.txt')], { encoding: 'utf8' }).trim();
});
afterAll(async () => Promise.all([aws?.close(), azure?.close(), gcp?.close(), collector?.close()]));

const seal = (value: string) => execFileSync('age', ['-e', '-a', '-r', recipient], { input: value, encoding: 'utf8' });

interface Store {
  imds: () => string;
  token: () => unknown;
  file: () => unknown;
  /** Every credential the store was reached with. */
  credentials: () => string[];
}

const STORES: Record<string, Store> = {
  aws: {
    imds: () => aws.imds.url,
    token: () => ({ awsSecretsManager: { secretId: 'cluster-a/join-token', endpoint: aws.service.url, caFile: CA } }),
    file: () => ({ awsParameterStore: { name: '/cluster-a/azure-json', endpoint: aws.service.url, caFile: CA } }),
    credentials: () => [...aws.issued.flatMap((c) => [c.secretAccessKey, c.sessionToken]), ...aws.sessions],
  },
  azure: {
    imds: () => azure.imds.url,
    token: () => ({ azureKeyVault: { vault: azure.vault.url, name: 'join-token', caFile: CA } }),
    file: () => ({ azureKeyVault: { vault: azure.vault.url, name: 'azure-json', caFile: CA } }),
    credentials: () => [...azure.issued.keys()],
  },
  gcp: {
    imds: () => gcp.metadata.url,
    token: () => ({ gcpSecretManager: { secret: 'join-token', project: gcp.project, endpoint: gcp.store.url, caFile: CA } }),
    file: () => ({ gcpSecretManager: { secret: 'azure-json', project: gcp.project, endpoint: gcp.store.url, caFile: CA } }),
    credentials: () => [...gcp.issued.keys()],
  },
  age: {
    imds: () => 'http://127.0.0.1:9',
    token: () => ({ age: { armor: seal(`${TOKEN}\n`) } }),
    file: () => ({ age: { file: '/etc/machineadm/azure-json.age' } }),
    credentials: () => [],
  },
};

/** Every file under a folder with its bytes as text. */
function texts(dir: string): { path: string; text: string }[] {
  if (!existsSync(dir)) return [];
  return (readdirSync(dir, { recursive: true }) as string[])
    .map((name) => join(dir, name))
    .filter((p) => statSync(p).isFile())
    .map((p) => ({ path: p, text: readFileSync(p, 'latin1') }));
}

describe.each(Object.keys(STORES))('secrets from %s', (name) => {
  it('never show up outside the files that are to hold them', async () => {
    const store = STORES[name]!;
    const dir = scratchDir('machineadm-store-secrets-');
    const root = join(dir, 'root');
    const state = join(dir, 'state');
    const config = join(dir, 'machine.yaml');
    mkdirSync(join(root, 'etc/machineadm'), { recursive: true });
    mkdirSync(join(root, 'etc/ssl'), { recursive: true });
    writeFileSync(join(root, 'etc/hostname'), 'node-1\n');
    writeFileSync(join(root, CA), ca.caPem);
    writeFileSync(join(root, 'etc/machineadm/age-identity.txt'), readFileSync(join(idDir, 'id.txt')), { mode: 0o600 });
    chmodSync(join(root, 'etc/machineadm/age-identity.txt'), 0o600);
    writeFileSync(join(root, 'etc/machineadm/azure-json.age'), seal(FILE_SECRET));
    const spec = {
      kubernetes: { controlPlaneEndpoint: '10.0.0.10:6443', token: { valueFrom: store.token() }, caCertHashes: ['sha256:' + 'ab'.repeat(32)] },
      files: [{ path: '/etc/kubernetes/azure.json', content: { valueFrom: store.file() } }],
      report: { clusterAPISentinel: true, endpoints: [{ url: `${collector.url}/events`, bearerToken: BEARER }] },
    };
    writeFileSync(config, dump({ apiVersion: 'machineadm.cluster.x-k8s.io/v1alpha1', kind: 'MachineConfig', spec }, { lineWidth: -1 }));
    const env = standinEnv({ MACHINEADM_IMDS_ENDPOINT: store.imds() });
    const runs: Array<{ what: string } & CliRun> = [];
    const run = async (...args: string[]) => {
      const r = await runCli(args, { env });
      runs.push({ what: args.join(' '), ...r });
      return r;
    };
    const common = ['--root', root, '--state-dir', state];
    const before = collector.requests.length;

    const plan = await run('plan', '-c', config, ...common);
    expect(plan.code, plan.stderr).toBe(0);
    expect(plan.stdout).toContain('spec.kubernetes.token:');
    const planJson = await run('plan', '-c', config, ...common, '-o', 'json');
    const listed = (JSON.parse(planJson.stdout).secrets as Array<{ field: string; from: string }>).filter((s) => !s.from.startsWith('written in the configuration'));
    expect(listed.map((s) => s.field)).toEqual(['spec.kubernetes.token', 'spec.files[0].content']);
    const view = await run('config', 'view', '-c', config);
    expect(view.code, view.stderr).toBe(0);
    const init = await run('init', '-c', config, ...common, '-o', 'json');
    expect(init.code, init.stdout + init.stderr).toBe(0);
    // The secrets did their job: the file holds the value, kubeadm joined with the token.
    expect(readFileSync(join(root, 'etc/kubernetes/azure.json'), 'utf8')).toBe(FILE_SECRET);
    expect(statSync(join(root, 'etc/kubernetes/azure.json')).mode & 0o777).toBe(0o600);
    expect(existsSync(join(root, 'etc/kubernetes/kubelet.conf'))).toBe(true);
    const status = await run('status', ...common, '-o', 'json');
    expect(status.code, status.stderr).toBe(0);
    const events = collector.requests.slice(before);
    expect(events.length).toBeGreaterThan(0);
    const reset = await run('reset', ...common);
    expect(reset.code, reset.stderr).toBe(0);

    const secrets = [TOKEN, TOKEN.split('.')[1]!, 'file-s3cret-8c1f6a2e9d', BEARER, identity, ...store.credentials()];
    expect(store.credentials().length > 0 || name === 'age').toBe(true);
    const outputs = [
      ...runs.flatMap((r) => [{ path: `${r.what}: stdout`, text: r.stdout }, { path: `${r.what}: stderr`, text: r.stderr }]),
      ...events.map((e, i) => ({ path: `event request ${i}`, text: e.body.toString('latin1') + JSON.stringify(e.headers).replace(`Bearer ${BEARER}`, '') })),
      ...texts(state),
      ...texts(join(root, 'run')),
      ...texts(join(root, 'var')),
      ...readdirSync(dir).filter((n) => n.startsWith('state.reset-')).flatMap((n) => texts(join(dir, n))),
    ];
    const leaks = outputs.flatMap((o) => secrets.filter((s) => o.text.includes(s)).map((s) => `${s.slice(0, 12)}… in ${relative(dir, o.path) || o.path}`));
    expect(leaks).toEqual([]);
    expect(outputs.length).toBeGreaterThan(12);
  });
});

/** A machine whose token (AWS) and second file's content (from `file`) are in a store, with one plain file beside. */
function offlineMachine(file: unknown): { dir: string; root: string; config: string } {
  const dir = scratchDir('machineadm-store-offline-');
  const root = join(dir, 'root');
  const config = join(dir, 'machine.yaml');
  mkdirSync(join(root, 'etc'), { recursive: true });
  const spec = {
    kubernetes: { controlPlaneEndpoint: '10.0.0.10:6443', token: { valueFrom: STORES.aws!.token() }, caCertHashes: ['sha256:' + 'ab'.repeat(32)] },
    files: [
      { path: '/etc/first.conf', content: 'x\n' },
      { path: '/etc/kubernetes/azure.json', content: { valueFrom: file } },
    ],
  };
  writeFileSync(config, dump({ apiVersion: 'machineadm.cluster.x-k8s.io/v1alpha1', kind: 'MachineConfig', spec }, { lineWidth: -1 }));
  return { dir, root, config };
}

describe('an offline run with secrets in a store', () => {
  it('is refused before anything changes (exit 2), each network secret named, the store never asked', async () => {
    const { dir, root, config } = offlineMachine(STORES.gcp!.file());
    const asked = aws.imds.requests.length + gcp.metadata.requests.length;
    const run = await runCli(['init', '-c', config, '--root', root, '--state-dir', join(dir, 'state'), '--offline'], { env: standinEnv({ MACHINEADM_IMDS_ENDPOINT: aws.imds.url }) });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('spec.kubernetes.token: is read from AWS Secrets Manager secret cluster-a/join-token');
    expect(run.stderr).toContain('spec.files[1].content: is read from Google Secret Manager');
    expect(run.stderr).toContain('refused with --offline');
    // Each secret is one problem, however many checks refuse it.
    expect(run.stderr).toContain('invalid configuration (2 problems)');
    for (const field of ['spec.kubernetes.token:', 'spec.files[1].content:']) expect(run.stderr.split(field)).toHaveLength(2);
    expect(existsSync(join(root, 'etc/first.conf'))).toBe(false);
    expect(aws.imds.requests.length + gcp.metadata.requests.length).toBe(asked);
  });

  it('is planned in full, then refused (exit 2), each network secret named once, the store never asked', async () => {
    const { dir, root, config } = offlineMachine(STORES.aws!.file());
    const asked = aws.imds.requests.length;
    const plan = await runCli(['plan', '-c', config, '--root', root, '--state-dir', join(dir, 'state'), '--offline'], { env: standinEnv({ MACHINEADM_IMDS_ENDPOINT: aws.imds.url }) });
    expect(plan.code).toBe(2);
    // The whole plan, the file whose content the store holds among the rest.
    for (const shown of ['prepare/files', '/etc/first.conf', '/etc/kubernetes/azure.json', 'provision/kubeadm']) expect(plan.stdout).toContain(shown);
    expect(plan.stderr).toContain('spec.kubernetes.token: is read from AWS Secrets Manager secret cluster-a/join-token');
    expect(plan.stderr).toContain('spec.files[1].content: is read from AWS SSM parameter /cluster-a/azure-json');
    expect(plan.stderr).toContain('invalid configuration (2 problems)');
    for (const field of ['spec.kubernetes.token:', 'spec.files[1].content:']) expect(plan.stderr.split(field)).toHaveLength(2);
    expect(existsSync(join(root, 'etc/first.conf'))).toBe(false);
    expect(aws.imds.requests.length).toBe(asked);
  });
});

describe('an age envelope the machine cannot open', () => {
  it.each([
    ['no identity on the machine', false, 'the age identity /etc/machineadm/age-identity.txt does not exist'],
    ['an envelope sealed for another machine', true, 'the age envelope (inline armor) is not encrypted to this machine\'s identity'],
  ])('refuses the run before any change (exit 2) when there is %s, and so does the plan', async (_, withIdentity, message) => {
    const dir = scratchDir('machineadm-age-refused-');
    const root = join(dir, 'root');
    const config = join(dir, 'machine.yaml');
    mkdirSync(join(root, 'etc/machineadm'), { recursive: true });
    if (withIdentity) {
      execFileSync('age-keygen', ['-o', join(root, 'etc/machineadm/age-identity.txt')], { stdio: 'pipe' });
      chmodSync(join(root, 'etc/machineadm/age-identity.txt'), 0o600);
    }
    const spec = { files: [{ path: '/etc/first.conf', content: 'x\n' }, { path: '/etc/kubernetes/azure.json', content: { valueFrom: { age: { armor: seal(FILE_SECRET) } } } }] };
    writeFileSync(config, dump({ apiVersion: 'machineadm.cluster.x-k8s.io/v1alpha1', kind: 'MachineConfig', spec }, { lineWidth: -1 }));
    const plan = await runCli(['plan', '-c', config, '--root', root, '--state-dir', join(dir, 'state')]);
    // The file's plan needs its size: the plan stops there, naming the field and the identity.
    expect(plan.code).toBe(2);
    expect(plan.stderr).toContain(`spec.files[1].content: ${message}`);
    const run = await runCli(['prepare', '-c', config, '--root', root, '--state-dir', join(dir, 'state')]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(`spec.files[1].content: ${message}`);
    expect(existsSync(join(root, 'etc/first.conf'))).toBe(false);
  });
});
