// The Linux domain join against a real Active Directory domain controller: Debian's Samba is
// provisioned as a DC inside a network namespace this test creates, and the built binary joins it
// with adcli. Each "machine" is the same namespace with a private /etc (an overlay whose changes
// land in a scratch folder, see fixtures/private-etc.sh) and a tmpfs /run, so machineadm runs with
// --root / and the host's /etc, /run and network stay as they were.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { builtBinary } from '../support/binary.ts';
import { missingRequirement } from '../support/environment.ts';
import { scratchDir } from '../support/tmp.ts';

const run = promisify(execFile);
const skip = missingRequirement({ root: true, commands: ['samba', 'samba-tool', 'adcli', 'klist', 'ip', 'unshare'] });
const PRIVATE_ETC = resolve(import.meta.dirname, 'fixtures', 'private-etc.sh');
const NS = `madm-dc-${process.pid}`;
const DC_IP = '10.99.0.1';
const NO_DC_IP = '10.99.0.9';
const DOMAIN = 'corp.test';
const ADMIN_PASSWORD = `Dj-${process.pid}-p4ss!`;
const HOST_FILES = ['/etc/krb5.conf', '/etc/krb5.keytab'];
// Where samba puts its pid files and sockets whatever its configuration says (built-in paths):
// removed after the test when they were not there before it.
const SAMBA_RUNTIME = ['/run/samba', '/var/lib/samba/ntp_signd'];
const runtimeBefore = SAMBA_RUNTIME.filter((path) => existsSync(path));

interface Outcome {
  exitCode: number;
  stdout: string;
  stderr: string;
}

describe.skipIf(skip)('joining a Samba AD domain controller with the built binary', () => {
  const dir = scratchDir('machineadm-samba-');
  const times: Record<string, number> = {};
  const hostBefore = HOST_FILES.map((p) => existsSync(p));
  let samba: ChildProcess | undefined;
  let binary: string;
  const started = Date.now();

  async function timed<T>(name: string, work: () => Promise<T>): Promise<T> {
    const t = Date.now();
    try {
      return await work();
    } finally {
      times[name] = (times[name] ?? 0) + (Date.now() - t);
    }
  }

  /** A machine of its own: a private /etc whose changes land in <dir>/<name>/upper. */
  function machine(name: string): { upper: string; work: string; state: string } {
    const base = join(dir, name);
    const m = { upper: join(base, 'upper'), work: join(base, 'work'), state: join(base, 'state') };
    if (!existsSync(base)) {
      for (const d of Object.values(m)) mkdirSync(d, { recursive: true });
      // The DC's DNS is this namespace's resolver, as on a machine in the domain.
      writeFileSync(join(m.upper, 'resolv.conf'), `nameserver ${DC_IP}\n`);
    }
    return m;
  }

  async function onMachine(m: { upper: string; work: string }, argv: string[], timeout = 120_000): Promise<Outcome> {
    const result = await run('ip', ['netns', 'exec', NS, 'unshare', '-m', '--propagation', 'private', PRIVATE_ETC, m.upper, m.work, ...argv], { timeout, encoding: 'utf8' }).then(
      (r) => ({ exitCode: 0, stdout: r.stdout, stderr: r.stderr }),
      (e: { code?: number; stdout?: string; stderr?: string }) => ({ exitCode: typeof e.code === 'number' ? e.code : -1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' }),
    );
    return result;
  }

  function config(name: string, options: { passwordFile: string; domainController?: string }): string {
    const path = join(dir, `${name}.yaml`);
    writeFileSync(
      path,
      [
        'apiVersion: machineadm.cluster.x-k8s.io/v1alpha1',
        'kind: MachineConfig',
        'spec:',
        '  domainJoin:',
        `    domain: ${DOMAIN}`,
        '    computerName: NODE-01',
        ...(options.domainController ? [`    domainController: ${options.domainController}`] : []),
        '    credentials:',
        '      username: Administrator',
        `      password: { valueFrom: { file: ${options.passwordFile} } }`,
        '',
      ].join('\n'),
    );
    return path;
  }

  function machineadm(m: { upper: string; work: string; state: string }, configPath: string): Promise<Outcome> {
    return timed('machineadm runs', () => onMachine(m, [binary, 'provision', '-c', configPath, '--root', '/', '--state-dir', m.state]));
  }

  function filesUnder(folder: string): string[] {
    return readdirSync(folder, { recursive: true, withFileTypes: true }).filter((e) => e.isFile()).map((e) => join(e.parentPath, e.name));
  }

  const passwordFile = join(dir, 'join-password');
  const wrongPasswordFile = join(dir, 'wrong-password');

  beforeAll(async () => {
    binary = await builtBinary();
    writeFileSync(passwordFile, `${ADMIN_PASSWORD}\n`, { mode: 0o600 });
    writeFileSync(wrongPasswordFile, 'Not-the-Passw0rd\n', { mode: 0o600 });
    const dc = join(dir, 'dc');
    mkdirSync(dc);
    await run('ip', ['netns', 'add', NS]);
    await run('ip', ['-n', NS, 'link', 'set', 'lo', 'up']);
    await run('ip', ['-n', NS, 'addr', 'add', `${DC_IP}/32`, 'dev', 'lo']);
    writeFileSync(join(dc, 'empty.conf'), '');
    await timed('provision the DC', () =>
      run('ip', ['netns', 'exec', NS, 'samba-tool', 'domain', 'provision', '-s', join(dc, 'empty.conf'), `--targetdir=${dc}`, '--realm=CORP.TEST', '--domain=CORP', `--adminpass=${ADMIN_PASSWORD}`, '--host-name=dc1', `--host-ip=${DC_IP}`, '--server-role=dc', '--dns-backend=SAMBA_INTERNAL', '-q'], { timeout: 120_000 }),
    );
    // The DC's DNS answers for its own zone only: provision's default forwarder (the host's
    // resolver, unreachable from this namespace) would stall every query it does not know.
    const smbConf = join(dc, 'etc', 'smb.conf');
    writeFileSync(smbConf, readFileSync(smbConf, 'utf8').replace(/^\s*dns forwarder = .*\n/m, ''));
    samba = spawn('ip', ['netns', 'exec', NS, 'samba', '--foreground', '--no-process-group', '-s', smbConf], { detached: true, stdio: 'ignore' });
    await timed('start the DC', async () => {
      const probe = machine('probe');
      for (let i = 0; ; i++) {
        if ((await onMachine(probe, ['adcli', 'info', '--domain-controller', DC_IP, DOMAIN], 20_000)).exitCode === 0) return;
        if (i > 120) throw new Error('the Samba DC did not answer adcli info within 60 s');
        await new Promise((r) => setTimeout(r, 500));
      }
    });
  }, 300_000);

  afterAll(async () => {
    // samba and its workers share the process group spawn() gave it.
    if (samba?.pid !== undefined) {
      try {
        process.kill(-samba.pid, 'SIGTERM');
      } catch {
        // gone already
      }
      await new Promise((r) => setTimeout(r, 1000));
      try {
        process.kill(-samba.pid, 'SIGKILL');
      } catch {
        // gone already
      }
    }
    await run('ip', ['netns', 'del', NS]).catch(() => undefined);
    for (const path of SAMBA_RUNTIME.filter((p) => !runtimeBefore.includes(p))) rmSync(path, { recursive: true, force: true });
    console.log(`samba domain join test: ${((Date.now() - started) / 1000).toFixed(1)} s in all; ${Object.entries(times).map(([k, v]) => `${k} ${(v / 1000).toFixed(1)} s`).join(', ')}`);
  });

  it('joins: the keytab (0600) holds the machine principal, adcli testjoin succeeds, krb5.conf is written, the report names domain and computer', async () => {
    const m = machine('node-01');
    const out = await machineadm(m, config('good', { passwordFile }));
    expect(out.stderr + out.stdout).not.toContain(ADMIN_PASSWORD);
    expect(out.exitCode, out.stderr).toBe(0);
    const keytab = join(m.upper, 'krb5.keytab');
    expect(statSync(keytab).mode & 0o777).toBe(0o600);
    const klist = await run('klist', ['-k', keytab], { encoding: 'utf8' });
    expect(klist.stdout).toContain('NODE-01$@CORP.TEST');
    expect(readFileSync(join(m.upper, 'krb5.conf'), 'utf8')).toMatch(/default_realm = CORP\.TEST/);
    const test = await onMachine(m, ['adcli', 'testjoin', '--domain', DOMAIN]);
    expect(test.exitCode, test.stderr).toBe(0);
    const state = filesUnder(m.state).map((f) => readFileSync(f, 'utf8')).join('\n');
    expect(state).toContain('"computerName": "NODE-01"');
    expect(state).toContain(`"domain": "${DOMAIN}"`);
    expect(state).not.toContain(ADMIN_PASSWORD);
  });

  it('a second run on the joined machine changes nothing, even without the state of the first', async () => {
    // A fresh state folder: the machine's keytab and adcli testjoin decide, not machineadm's records.
    const m = { ...machine('node-01'), state: join(dir, 'node-01', 'state-again') };
    const keytab = join(m.upper, 'krb5.keytab');
    const before = readFileSync(keytab);
    const krb5 = readFileSync(join(m.upper, 'krb5.conf'), 'utf8');
    const out = await machineadm(m, config('good', { passwordFile }));
    expect(out.exitCode, out.stderr).toBe(0);
    expect(out.stdout).toMatch(/provision\/domain\/join skipped .*\(already done\)/);
    expect(readFileSync(keytab).equals(before)).toBe(true);
    expect(readFileSync(join(m.upper, 'krb5.conf'), 'utf8')).toBe(krb5);
  });

  it("reset leaves the domain with the join's credentials: the computer account is deleted (adcli testjoin with the old keytab fails), the keytab and krb5.conf are gone as before the join, and a second reset does nothing", async () => {
    const m = machine('node-01');
    const keytab = join(m.upper, 'krb5.keytab');
    const oldKeytab = join(dir, 'node-01-keytab-before-reset');
    copyFileSync(keytab, oldKeytab);
    const configPath = config('good', { passwordFile });
    const reset = (extra: string[] = []): Promise<Outcome> => timed('machineadm runs', () => onMachine(m, [binary, 'reset', '-c', configPath, '--root', '/', '--state-dir', m.state, ...extra]));
    const plan = await reset(['--dry-run']);
    expect(plan.exitCode, plan.stderr).toBe(0);
    expect(plan.stdout).toMatch(/leave corp\.test \(adcli delete-computer NODE-01 as Administrator@CORP\.TEST, password on standard input\)/);
    expect(plan.stdout).toMatch(/delete \/etc\/krb5\.keytab/);
    const out = await reset();
    expect(out.stderr + out.stdout).not.toContain(ADMIN_PASSWORD);
    expect(out.exitCode, out.stderr + out.stdout).toBe(0);
    expect(existsSync(keytab)).toBe(false);
    expect(existsSync(join(m.upper, 'krb5.conf'))).toBe(false);
    const test = await onMachine(m, ['adcli', 'testjoin', '--domain', DOMAIN, '--domain-controller', DC_IP, '--host-keytab', oldKeytab]);
    expect(test.exitCode, test.stdout + test.stderr).not.toBe(0);
    const again = await reset();
    expect(again.exitCode).toBe(0);
    expect(again.stderr).toMatch(/^nothing to reset/);
  });

  it('reset --keep-domain keeps the membership: the account, keytab and krb5.conf stay and adcli testjoin still succeeds', async () => {
    const m = machine('node-02');
    const joined = await machineadm(m, config('good', { passwordFile }));
    expect(joined.exitCode, joined.stderr).toBe(0);
    const keytab = readFileSync(join(m.upper, 'krb5.keytab'));
    const out = await timed('machineadm runs', () => onMachine(m, [binary, 'reset', '--keep-domain', '--root', '/', '--state-dir', m.state]));
    expect(out.exitCode, out.stderr + out.stdout).toBe(0);
    expect(out.stdout).toMatch(/--keep-domain: the machine stays NODE-01 in corp\.test/);
    expect(readFileSync(join(m.upper, 'krb5.keytab')).equals(keytab)).toBe(true);
    expect(existsSync(join(m.upper, 'krb5.conf'))).toBe(true);
    const test = await onMachine(m, ['adcli', 'testjoin', '--domain', DOMAIN]);
    expect(test.exitCode, test.stderr).toBe(0);
  });

  it.each([
    ['a wrong password', () => config('wrong', { passwordFile: wrongPasswordFile }), /the domain rejected the credentials of Administrator@CORP\.TEST/],
    ['an unreachable domain controller', () => config('unreachable', { passwordFile, domainController: NO_DC_IP }), new RegExp(`no domain controller of corp\\.test could be reached at ${NO_DC_IP.replace(/\./g, '\\.')}`)],
  ])('%s fails with exit 1 and a clear message, leaving no keytab and no krb5.conf', async (name, makeConfig, message) => {
    const m = machine(`node-${name.replace(/\W+/g, '-')}`);
    const out = await machineadm(m, makeConfig());
    expect(out.exitCode).toBe(1);
    expect(out.stderr).toMatch(message);
    expect(out.stderr + out.stdout).not.toContain(ADMIN_PASSWORD);
    expect(readdirSync(m.upper).sort()).toEqual(['resolv.conf']);
  });

  it('leaves the host as it was: no krb5.conf or keytab in its /etc', () => {
    expect(HOST_FILES.map((p) => existsSync(p))).toEqual(hostBefore);
  });
});
