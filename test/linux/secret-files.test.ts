// Files whose content is a secret ({ valueFrom: ... }) on a scratch root: written 0600 unless a mode
// is given, never shown by a plan, a diff, an event, the result or reset (only that they change),
// and given back by reset as they were.
import { describe, expect, it } from 'vitest';
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { gzipSync } from 'node:zlib';
import { dump } from 'js-yaml';
import { scratchDir } from '../support/tmp.ts';
import { runCli, type CliRun } from '../support/cli.ts';

const AZURE_JSON = '{"cloud":"AzurePublicCloud","aadClientSecret":"az-s3cret-5f1c9e27"}\n';
const REGISTRY = 'robot:reg-s3cret-0d8a4b';
const PLANTED = ['az-s3cret-5f1c9e27', 'reg-s3cret-0d8a4b', Buffer.from(REGISTRY).toString('base64')];

function machine(files: unknown[]): { dir: string; root: string; state: string; config: string } {
  const dir = scratchDir('machineadm-secret-files-');
  const root = join(dir, 'root');
  mkdirSync(join(root, 'etc/kubernetes'), { recursive: true });
  mkdirSync(join(root, 'etc/machineadm'), { recursive: true });
  writeFileSync(join(root, 'etc/kubernetes/azure.json'), '{"image":"default"}\n', { mode: 0o644 });
  writeFileSync(join(root, 'etc/machineadm/azure.json'), AZURE_JSON, { mode: 0o600 });
  const config = join(dir, 'machine.yaml');
  writeFileSync(config, dump({ apiVersion: 'machineadm.cluster.x-k8s.io/v1alpha1', kind: 'MachineConfig', spec: { files } }));
  return { dir, root, state: join(dir, 'state'), config };
}

const SECRET_FILES = [
  { path: '/etc/kubernetes/azure.json', content: { valueFrom: { file: '/etc/machineadm/azure.json' } } },
  { path: '/etc/registry/credentials', content: { valueFrom: { env: 'REGISTRY_CREDENTIALS' } }, encoding: 'base64', mode: '0644' },
];
const env = { REGISTRY_CREDENTIALS: Buffer.from(REGISTRY).toString('base64') };

/** Every file under a folder with its text (the state directory, the run's files). */
function texts(dir: string): { path: string; text: string }[] {
  if (!existsSync(dir)) return [];
  return (readdirSync(dir, { recursive: true }) as string[]).map((name) => join(dir, name)).filter((p) => statSync(p).isFile()).map((p) => ({ path: relative(dir, p), text: readFileSync(p, 'latin1') }));
}

function leaks(runs: CliRun[], dirs: string[], skip: string[]): string[] {
  const outputs = [...runs.flatMap((r, i) => [{ path: `run ${i} stdout`, text: r.stdout }, { path: `run ${i} stderr`, text: r.stderr }]), ...dirs.flatMap((d) => texts(d).map((t) => ({ ...t, path: join(d, t.path) })))];
  return outputs.filter((o) => !skip.includes(o.path)).flatMap((o) => PLANTED.filter((s) => o.text.includes(s)).map((s) => `${s} in ${o.path}`));
}

describe('prepare/files with secret content', () => {
  it('plans where each comes from and nothing of it, writes it 0600 unless a mode is given, converges, hides a change, and reset gives back what was there', async () => {
    const m = machine(SECRET_FILES);
    const common = ['-c', m.config, '--root', m.root, '--state-dir', m.state];
    const runs: CliRun[] = [];
    const run = async (...args: string[]) => {
      const r = await runCli(args, { env });
      runs.push(r);
      return r;
    };

    const plan = await run('plan', ...common, '--only', 'prepare/files');
    expect(plan.code, plan.stderr).toBe(0);
    expect(plan.stdout).toContain('spec.files[0].content: file /etc/machineadm/azure.json');
    expect(plan.stdout).toContain('spec.files[1].content: environment variable REGISTRY_CREDENTIALS');
    expect(plan.stdout).toMatch(/update \/etc\/kubernetes\/azure\.json \(20 -> \d+ bytes, mode 0644 -> 0600\)/);
    expect(plan.stdout).toContain('create /etc/registry/credentials (23 bytes, mode 0644)');
    const planJson = await run('plan', ...common, '--only', 'prepare/files', '-o', 'json');
    expect(JSON.parse(planJson.stdout).secrets).toEqual([
      { field: 'spec.files[0].content', from: 'file /etc/machineadm/azure.json' },
      { field: 'spec.files[1].content', from: 'environment variable REGISTRY_CREDENTIALS' },
    ]);

    const first = await run('prepare', ...common, '--only', 'prepare/files', '-o', 'json');
    expect(first.code, first.stderr).toBe(0);
    expect(readFileSync(join(m.root, 'etc/kubernetes/azure.json'), 'utf8')).toBe(AZURE_JSON);
    expect(statSync(join(m.root, 'etc/kubernetes/azure.json')).mode & 0o777).toBe(0o600);
    expect(readFileSync(join(m.root, 'etc/registry/credentials'), 'utf8')).toBe(REGISTRY);
    expect(statSync(join(m.root, 'etc/registry/credentials')).mode & 0o777).toBe(0o644);

    const again = await run('plan', ...common, '--only', 'prepare/files');
    expect(again.stdout).toContain('= prepare/files: write the files listed in spec.files [up to date]');

    // The secret changes at its source: the plan says the file changes, never how.
    writeFileSync(join(m.root, 'etc/machineadm/azure.json'), AZURE_JSON.replace('az-s3cret-5f1c9e27', 'az-s3cret-rotated'), { mode: 0o600 });
    const rotated = await run('plan', ...common, '--only', 'prepare/files');
    expect(rotated.stdout).toMatch(/update \/etc\/kubernetes\/azure\.json \(\d+ -> \d+ bytes\)/);
    expect(rotated.stdout).not.toMatch(/^\s+[-+]\{/m);
    expect(rotated.stdout).not.toContain('rotated');

    const resetPlan = await run('plan', 'reset', '--root', m.root, '--state-dir', m.state);
    expect(resetPlan.stdout).toContain('restore /etc/kubernetes/azure.json (as before machineadm\'s first run');
    expect(resetPlan.stdout).toContain('delete /etc/registry/credentials (created by machineadm)');
    expect(resetPlan.stdout).not.toContain('+++ /etc/registry/credentials');
    const reset = await run('reset', '--root', m.root, '--state-dir', m.state);
    expect(reset.code, reset.stderr).toBe(0);
    expect(readFileSync(join(m.root, 'etc/kubernetes/azure.json'), 'utf8')).toBe('{"image":"default"}\n');
    expect(statSync(join(m.root, 'etc/kubernetes/azure.json')).mode & 0o777).toBe(0o644);
    expect(existsSync(join(m.root, 'etc/registry'))).toBe(false);

    // The secret's sources, and the files whose job is to hold it (before reset), aside.
    const archived = readdirSync(m.dir).filter((n) => n.startsWith('state.reset-')).map((n) => join(m.dir, n));
    const found = leaks(runs, [m.state, join(m.root, 'run'), join(m.root, 'var'), ...archived], []);
    expect(found).toEqual([]);
    expect(runs.length).toBe(7);
  });

  it.each([
    ['plain', REGISTRY, {}],
    ['base64', Buffer.from(REGISTRY).toString('base64'), { encoding: 'base64' }],
    ['gzip+base64', gzipSync(REGISTRY).toString('base64'), { encoding: 'gzip+base64' }],
  ])('scrubs what a secret file holds (given %s) from the output of a command that prints it', async (_, value, encoding) => {
    const m = machine([{ path: '/etc/registry/credentials', content: { valueFrom: { env: 'REGISTRY_CREDENTIALS' } }, ...encoding }]);
    const config = readFileSync(m.config, 'utf8').replace('spec:\n', 'spec:\n  commands:\n    boot:\n      - shell: cat etc/registry/credentials 2>/dev/null || true\n');
    writeFileSync(m.config, config);
    const env = { REGISTRY_CREDENTIALS: value, PATH: process.env.PATH ?? '/usr/bin:/bin', MACHINEADM_COMMANDS_UNDER_ROOT: '1' };
    const runs: CliRun[] = [];
    // The second run's boot command finds the file the first one wrote.
    for (let i = 0; i < 2; i++) runs.push(await runCli(['prepare', '-c', m.config, '--root', m.root, '--state-dir', m.state, '-v'], { env }));
    expect(runs.map((r) => r.code)).toEqual([0, 0]);
    expect(readFileSync(join(m.root, 'etc/registry/credentials'), 'utf8')).toBe(REGISTRY);
    expect(runs[1]!.stdout).toContain('spec.commands.boot[0]: <redacted>');
    expect(leaks(runs, [m.state, join(m.root, 'run')], [])).toEqual([]);
  });

  // cloud-init writes a contentFrom Secret's empty value as an empty file (CABPK checks only that
  // the key is there); an empty file is a file, where an empty token is no credential.
  it('writes an empty secret as an empty file, and still refuses an empty credential', async () => {
    const m = machine([{ path: '/etc/app/empty.conf', content: { valueFrom: { file: '/etc/machineadm/empty' } } }]);
    writeFileSync(join(m.root, 'etc/machineadm/empty'), '', { mode: 0o600 });
    const common = ['-c', m.config, '--root', m.root, '--state-dir', m.state, '--only', 'prepare/files'];
    const first = await runCli(['prepare', ...common]);
    expect(first.code, first.stderr).toBe(0);
    expect(readFileSync(join(m.root, 'etc/app/empty.conf'))).toHaveLength(0);
    expect(statSync(join(m.root, 'etc/app/empty.conf')).mode & 0o777).toBe(0o600);
    const again = await runCli(['plan', ...common]);
    expect(again.stdout).toContain('= prepare/files: write the files listed in spec.files [up to date]');

    writeFileSync(join(m.root, 'etc/machineadm/bootstrap-token'), '', { mode: 0o600 });
    const token = await runCli(['plan', '-c', 'examples/linux-worker.yaml', '--root', m.root]);
    expect(token.code).toBe(2);
    expect(token.stderr).toContain('spec.kubernetes.token: the secret is empty');
  });

  it('refuses append with a secret at validation (exit 2), writing nothing', async () => {
    const m = machine([{ path: '/etc/environment', content: { valueFrom: { file: '/etc/machineadm/azure.json' } }, append: true }]);
    const run = await runCli(['prepare', '-c', m.config, '--root', m.root, '--state-dir', m.state, '--only', 'prepare/files']);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('spec.files[0].append: applies only to content given inline, not to a secret');
    expect(existsSync(m.state)).toBe(false);
  });

  it('refuses a secret that does not decode as its encoding says, naming the field and not the value, before any change', async () => {
    const m = machine([{ path: '/etc/first.conf', content: 'x\n' }, { path: '/etc/second', content: { valueFrom: { file: '/etc/machineadm/azure.json' } }, encoding: 'base64' }]);
    const run = await runCli(['prepare', '-c', m.config, '--root', m.root, '--state-dir', m.state, '--only', 'prepare/files']);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('spec.files[1].content (the secret read) is not valid base64');
    expect(run.stderr + run.stdout).not.toContain('az-s3cret');
    expect(existsSync(join(m.root, 'etc/first.conf'))).toBe(false);
  });
});
