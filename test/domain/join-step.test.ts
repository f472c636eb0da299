// The domain/join step run by machineadm (from source) on a machine of its own: a private /etc
// (fixtures/private-etc.sh) in a mount namespace, with a stand-in adcli first on PATH that records
// what it was given. What the real adcli does is proven against Samba in samba-join.test.ts.
import { execFile } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { missingRequirement } from '../support/environment.ts';
import { scratchDir } from '../support/tmp.ts';

const run = promisify(execFile);
const skip = missingRequirement({ root: true, commands: ['unshare', 'mount'] });
const REPO = resolve(import.meta.dirname, '..', '..');
const FIXTURES = join(REPO, 'test', 'domain', 'fixtures');
const NODE = join(REPO, 'node_modules', '.bin', 'node');
const PASSWORD = 'J0in-p4ss word with spaces';
const dir = scratchDir('machineadm-join-step-');
let n = 0;

interface Machine {
  upper: string;
  work: string;
  state: string;
  log: string;
}

function machine(): Machine {
  const base = join(dir, `m${++n}`);
  const m = { upper: join(base, 'upper'), work: join(base, 'work'), state: join(base, 'state'), log: join(base, 'adcli') };
  for (const d of [m.upper, m.work, m.state]) mkdirSync(d, { recursive: true });
  return m;
}

function config(password: string, extra = ''): string {
  const path = join(dir, `c${++n}.yaml`);
  writeFileSync(path, `apiVersion: machineadm.cluster.x-k8s.io/v1alpha1\nkind: MachineConfig\nspec:\n  domainJoin:\n    domain: corp.test\n    organizationalUnit: OU=Nodes,DC=corp,DC=test\n    computerName: NODE-01\n    credentials: { username: joiner, password: ${password} }\n${extra}`);
  return path;
}

async function provision(m: Machine, configPath: string, env: Record<string, string> = {}, hostname?: string): Promise<{ exitCode: number; output: string }> {
  return machineadm('provision', m, configPath, env, hostname);
}

async function machineadm(command: 'provision' | 'reset', m: Machine, configPath: string, env: Record<string, string> = {}, hostname?: string): Promise<{ exitCode: number; output: string }> {
  // A host name of its own needs a UTS namespace too.
  const named = hostname === undefined ? [] : ['-u', 'sh', '-c', 'hostname "$0" && exec "$@"', hostname];
  const argv = ['-m', '--propagation', 'private', ...named, join(FIXTURES, 'private-etc.sh'), m.upper, m.work, NODE, join(REPO, 'bin', 'machineadm.js'), command, '-c', configPath, '--root', '/', '--state-dir', m.state];
  const childEnv = { ...process.env, PATH: `${join(FIXTURES, 'bin')}:${process.env.PATH}`, FAKE_ADCLI_LOG: m.log, FAKE_ADCLI_KEYTAB: join(FIXTURES, 'corp-node-01.keytab'), ...env };
  return run('unshare', argv, { env: childEnv, encoding: 'utf8', timeout: 60_000 }).then(
    (r) => ({ exitCode: 0, output: r.stdout + r.stderr }),
    (e: { code?: number; stdout?: string; stderr?: string }) => ({ exitCode: typeof e.code === 'number' ? e.code : -1, output: (e.stdout ?? '') + (e.stderr ?? '') }),
  );
}

function stateText(m: Machine): string {
  return readdirSync(m.state, { recursive: true, withFileTypes: true }).filter((e) => e.isFile()).map((e) => readFileSync(join(e.parentPath, e.name), 'utf8')).join('\n');
}

describe.skipIf(skip)('the domain/join step on Linux', () => {
  it.each([
    ['a file', () => { const f = join(dir, 'pw'); writeFileSync(f, `${PASSWORD}\n`); return `{ valueFrom: { file: ${f} } }`; }, {}],
    ['an environment variable', () => '{ valueFrom: { env: DJ_PASSWORD } }', { DJ_PASSWORD: PASSWORD }],
  ])('hands adcli the password from %s on standard input only: not in its arguments or environment', async (_name, source, env) => {
    const m = machine();
    const out = await provision(m, config(source()), env);
    expect(out.exitCode, out.output).toBe(0);
    expect(readFileSync(`${m.log}.stdin`, 'utf8')).toBe(PASSWORD);
    const argv = readFileSync(`${m.log}.argv`, 'utf8').split('\n');
    expect(argv).toEqual(expect.arrayContaining(['--domain', 'corp.test', '--domain-ou', 'OU=Nodes,DC=corp,DC=test', '--computer-name', 'NODE-01', '--login-user', 'joiner', '--stdin-password', '--host-keytab', '/etc/krb5.keytab']));
    expect(argv.join('\n')).not.toContain(PASSWORD);
    expect(readFileSync(`${m.log}.env`, 'utf8')).not.toContain(PASSWORD);
    expect(out.output).not.toContain(PASSWORD);
    expect(statSync(join(m.upper, 'krb5.keytab')).mode & 0o777).toBe(0o600);
    expect(readFileSync(join(m.upper, 'krb5.conf'), 'utf8')).toContain('default_realm = CORP.TEST');
    expect(stateText(m)).toContain('"computerName": "NODE-01"');
    // The join is part of the run's result, as the domain, the realm and the computer name.
    const result = JSON.parse(readFileSync(join(m.state, 'result.json'), 'utf8')) as { domainJoin?: unknown };
    expect(result.domainJoin).toEqual({ domain: 'corp.test', method: 'adcli', realm: 'CORP.TEST', computerName: 'NODE-01', organizationalUnit: 'OU=Nodes,DC=corp,DC=test', keytab: '/etc/krb5.keytab', krb5Conf: 'written' });
  });

  it("keeps the operator's /etc/krb5.conf byte for byte", async () => {
    const m = machine();
    const mine = '[libdefaults]\n  default_realm = OPERATOR.EXAMPLE\n';
    writeFileSync(join(m.upper, 'krb5.conf'), mine);
    const out = await provision(m, config(`"${PASSWORD}"`));
    expect(out.exitCode, out.output).toBe(0);
    expect(readFileSync(join(m.upper, 'krb5.conf'), 'utf8')).toBe(mine);
  });

  it('refuses a machine joined to another domain without running adcli join', async () => {
    const m = machine();
    copyFileSync(join(FIXTURES, 'other-web-7.keytab'), join(m.upper, 'krb5.keytab'));
    const out = await provision(m, config(`"${PASSWORD}"`));
    expect(out.exitCode).toBe(2);
    expect(out.output).toMatch(/joined to OTHER\.TEST as WEB-7 \(\/etc\/krb5\.keytab\), not to CORP\.TEST/);
    expect(existsSync(`${m.log}.argv`)).toBe(false);
    expect(readFileSync(join(m.upper, 'krb5.keytab'))).toEqual(readFileSync(join(FIXTURES, 'other-web-7.keytab')));
  });

  it('leaves a machine already joined to this domain alone', async () => {
    const m = machine();
    copyFileSync(join(FIXTURES, 'corp-node-01.keytab'), join(m.upper, 'krb5.keytab'));
    const out = await provision(m, config(`"${PASSWORD}"`));
    expect(out.exitCode, out.output).toBe(0);
    expect(out.output).toMatch(/provision\/domain\/join skipped .*\(already done\)/);
    expect(existsSync(`${m.log}.argv`)).toBe(false);
  });

  it.each([
    ['a rerun of provision', 'provision'],
    ['reset', 'reset'],
  ] as const)('keeps a password read from an environment variable out of the environment of adcli testjoin in %s', async (_name, command) => {
    const m = machine();
    const path = config('{ valueFrom: { env: DJ_PASSWORD } }');
    const env = { DJ_PASSWORD: PASSWORD };
    expect((await provision(m, path, env)).exitCode).toBe(0);
    const out = await machineadm(command, m, path, env);
    expect(out.exitCode, out.output).toBe(0);
    expect(readFileSync(`${m.log}.testjoin-env`, 'utf8')).not.toContain(PASSWORD);
  });

  it('refuses a keytab in a folder that does not exist before adcli join creates the computer account it could not keep', async () => {
    const m = machine();
    const out = await provision(m, config(`"${PASSWORD}"`, '    linux: { keytab: /etc/krb5/keytabs/host.keytab }\n'));
    expect(out.exitCode, out.output).not.toBe(0);
    expect(out.output).toMatch(/spec\.domainJoin\.linux\.keytab: the folder \/etc\/krb5\/keytabs does not exist/);
    expect(existsSync(`${m.log}.argv`)).toBe(false);
    expect(readdirSync(m.upper)).toEqual([]);
  });

  it('refuses a host name longer than 15 characters without computerName before running adcli, which would cut the name short', async () => {
    const m = machine();
    const path = join(dir, `c${++n}.yaml`);
    writeFileSync(path, `apiVersion: machineadm.cluster.x-k8s.io/v1alpha1\nkind: MachineConfig\nspec:\n  domainJoin:\n    domain: corp.test\n    credentials: { username: joiner, password: "${PASSWORD}" }\n`);
    const out = await provision(m, path, {}, 'kubernetes-worker-0001');
    expect(out.exitCode, out.output).toBe(2);
    expect(out.output).toMatch(/spec\.domainJoin\.computerName: is not given, and this machine's host name kubernetes-worker-0001 is longer than 15 characters/);
    expect(existsSync(`${m.log}.argv`)).toBe(false);
    expect(readdirSync(m.upper)).toEqual([]);
  });

  it('reset with no domain controller answering fails and keeps the keytab, and a later reset deletes the computer account', async () => {
    const m = machine();
    const path = config(`"${PASSWORD}"`);
    expect((await provision(m, path)).exitCode).toBe(0);
    const down = await machineadm('reset', m, path, { FAKE_ADCLI_DC: 'down' });
    expect(down.exitCode, down.output).toBe(1);
    expect(down.output).toMatch(/could not delete the computer account NODE-01 in corp\.test: no domain controller of corp\.test could be reached/);
    expect(readdirSync(m.upper).sort()).toEqual(['krb5.conf', 'krb5.keytab']);
    const up = await machineadm('reset', m, path);
    expect(up.exitCode, up.output).toBe(0);
    expect(readFileSync(`${m.log}.delete-argv`, 'utf8').split('\n')).toEqual(expect.arrayContaining(['--domain', 'corp.test', '--login-user', 'joiner', '--stdin-password', 'NODE-01']));
    expect(readFileSync(`${m.log}.delete-stdin`, 'utf8')).toBe(PASSWORD);
    expect(readdirSync(m.upper)).toEqual([]);
  });

  it("reset deletes the computer account with the join's credentials also when the keytab was removed from the machine", async () => {
    const m = machine();
    const path = config(`"${PASSWORD}"`);
    expect((await provision(m, path)).exitCode).toBe(0);
    rmSync(join(m.upper, 'krb5.keytab'));
    const out = await machineadm('reset', m, path);
    expect(out.exitCode, out.output).toBe(0);
    expect(readFileSync(`${m.log}.delete-argv`, 'utf8').split('\n')).toEqual(expect.arrayContaining(['--domain', 'corp.test', '--login-user', 'joiner', '--stdin-password', 'NODE-01']));
    expect(readFileSync(`${m.log}.delete-stdin`, 'utf8')).toBe(PASSWORD);
  });

  it.each([
    ['clock-skew', /this machine's clock differs from the domain controller's by more than Kerberos allows/],
    ['account-exists', /the computer account NODE-01 exists in corp\.test and may not be reused by joiner/],
  ])('names adcli failure %s, reports its output tail scrubbed, and leaves no keytab or krb5.conf', async (mode, message) => {
    const m = machine();
    const out = await provision(m, config(`"${PASSWORD}"`), { FAKE_ADCLI_MODE: mode });
    expect(out.exitCode).toBe(1);
    expect(out.output).toMatch(message);
    expect(out.output).not.toContain(PASSWORD);
    expect(readdirSync(m.upper)).toEqual([]);
    const state = stateText(m);
    expect(state).toContain('Using password: <redacted>');
    expect(state).not.toContain(PASSWORD);
  });
});
