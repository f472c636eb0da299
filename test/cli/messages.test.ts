// What machineadm says is what happened: a step the configuration does not ask for is not
// "already done", a phase that wrote the result file is not "skipped", a plan does not list
// changes under a skipped step as if they would happen, a server error is not an invalid
// configuration, and a usage mistake is not "a bug in machineadm".
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeTestCa, startHttps, type RunningServer, type TestCa } from '../config/helpers/servers.ts';
import { missingRequirement } from '../support/environment.ts';
import { runCli } from '../support/cli.ts';
import { scratchDir } from '../support/tmp.ts';
import { processIdentity } from '../../src/host/run-lock.ts';

const QUICKSTART = join(import.meta.dirname, '..', '..', 'examples', 'quickstart.yaml');
const HEADER = 'apiVersion: machineadm.cluster.x-k8s.io/v1alpha1\nkind: MachineConfig\n';
const dir = scratchDir('machineadm-messages-');
let n = 0;
const fresh = (name = 'root'): string => {
  const path = join(dir, `${name}-${n++}`);
  mkdirSync(path);
  return path;
};

describe('a first run of the quickstart on a scratch root', () => {
  let root: string;
  let first: Awaited<ReturnType<typeof runCli>>;
  beforeAll(async () => {
    root = fresh();
    first = await runCli(['init', '-c', QUICKSTART, '--root', root]);
  });

  it('shows the proxy step, which the configuration does not ask for, as not applicable rather than already done', () => {
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toMatch(/ prepare\/containerd\/proxy skipped \d+ms \(not applicable: spec\.containerd\.proxy is not set\)\n/);
    expect(first.stdout).not.toMatch(/proxy skipped \d+ms \(already done\)/);
  });

  it('ends the report phase without calling it skipped, and says the result file comes at the end', () => {
    expect(first.stdout).toMatch(/ report done: no step changed anything \(the result file is written at the end of the run\) \d+ms\n/);
    expect(first.stdout).not.toMatch(/ report skipped \d+ms/);
  });

  it('gives the result file in the summary of a successful run', () => {
    expect(first.stdout).toContain(`machineadm init: success in `);
    expect(first.stdout).toContain(`\n  result: ${root}/run/machineadm/result.json ("machineadm status" shows this and earlier runs)\n`);
  });
});

describe('plan', () => {
  it('lists what a skipped step would do under a line that says it is not done in this run', async () => {
    const plan = await runCli(['plan', '-c', QUICKSTART, '--root', fresh()]);
    expect(plan.code, plan.stderr).toBe(0);
    expect(plan.stdout).toMatch(
      /  - prepare\/containerd\/restart: restart containerd when its configuration changed \[skipped: live change skipped under --root [^\]]+\]\n      not done in this run; where it runs, it would:\n        restart containerd \(to load \/etc\/containerd\/config\.toml\)\n/,
    );
    expect(plan.stdout).toContain('    prepare/containerd/proxy: write the proxy settings for containerd (/etc/systemd/system/containerd.service.d/machineadm-proxy.conf) [not applicable: spec.containerd.proxy is not set]\n');
  });
});

describe('status while a run goes on, and after one failed', () => {
  it('says a run is going (from the run lock), never that machineadm has not run', async () => {
    const root = fresh();
    const state = join(root, 'var/lib/machineadm');
    mkdirSync(state, { recursive: true });
    // This test's own process holds the lock, as a run in progress does.
    writeFileSync(join(state, 'run.lock'), JSON.stringify({ pid: process.pid, command: 'init', startedAt: '2026-12-07T01:00:00.000Z', identity: processIdentity(process.pid) }) + '\n');
    const status = await runCli(['status', '--root', root]);
    expect(status.code, status.stderr).toBe(0);
    expect(status.stdout).toContain(`running now: init (pid ${process.pid}, started 2026-12-07T01:00:00.000Z)`);
    expect(status.stdout).not.toContain('has not run');
    const json = JSON.parse((await runCli(['status', '--root', root, '-o', 'json'])).stdout) as { running: unknown };
    expect(json.running).toEqual({ command: 'init', pid: process.pid, startedAt: '2026-12-07T01:00:00.000Z' });
  });

  it('says why a step failed', async () => {
    const root = fresh();
    const config = join(root, 'bad.yaml');
    writeFileSync(config, 'apiVersion: machineadm.cluster.x-k8s.io/v1alpha1\nkind: MachineConfig\nspec:\n  commands:\n    boot:\n      - { name: check-disk, shell: "echo the disk is not there; exit 3" }\n');
    const failed = await runCli(['init', '-c', config, '--root', root], { env: { ...process.env, MACHINEADM_COMMANDS_UNDER_ROOT: '1' } });
    expect(failed.code).toBe(1);
    const status = await runCli(['status', '--root', root]);
    expect(status.stdout).toMatch(/ {2}failed prepare\/commands\/boot\n {2}error: step prepare\/commands\/boot failed: spec\.commands\.boot\[0\] \(check-disk\) exited with code 3/);
  });
});

describe('status after a run that changed things and a rerun that did not', () => {
  let root: string;
  let rerun: Awaited<ReturnType<typeof runCli>>;
  beforeAll(async () => {
    root = fresh();
    expect((await runCli(['init', '-c', QUICKSTART, '--root', root])).code).toBe(0);
    rerun = await runCli(['init', '-c', QUICKSTART, '--root', root]);
    expect(rerun.code).toBe(0);
  });

  it('says the rerun had nothing to do, not that the run was skipped', () => {
    expect(rerun.stdout).toMatch(/ machineadm init done: nothing to do \d+ms\nmachineadm init: nothing to do in \d+ms \(11 steps: 0 changed, 11 skipped, 0 warnings, 0 failed\)\n/);
  });

  it('shows the last run and the last run that changed something, with what it changed', async () => {
    const status = await runCli(['status', '--root', root]);
    expect(status.code, status.stderr).toBe(0);
    expect(status.stdout).toMatch(/^state: .*\nlast run: init had nothing to do, exit code 0 \(started [^)]+\)\nlast run that did something: init success, exit code 0, 5 steps changed something \(started [^)]+\)\n/);
    expect(status.stdout).toContain('  changed prepare/files: create /etc/machineadm/motd\n');
    expect(status.stdout).toContain('  changed prepare/containerd/config: create /etc/containerd/config.toml\n');
    expect(status.stdout).toContain('2 runs kept ("machineadm status --all" lists them)\n');
    expect(status.stdout).not.toMatch(/: skipped at /);
  });

  it('lists every kept run with --all, oldest first', async () => {
    const status = await runCli(['status', '--root', root, '--all']);
    expect(status.code, status.stderr).toBe(0);
    expect(status.stdout).toMatch(/runs kept \(oldest first; at most 20\):\n- init success, exit code 0, 5 steps changed something [^\n]+\n(  changed [^\n]+\n){5}- init had nothing to do, exit code 0 /);
  });

  it('gives every kept run with -o json: what it changed, its result and its exit code', async () => {
    const status = await runCli(['status', '--root', root, '-o', 'json']);
    const history = (JSON.parse(status.stdout) as { history: { command: string; result: string; exitCode: number; changed: { step: string }[] }[] }).history;
    expect(history.map((r) => [r.command, r.result, r.exitCode, r.changed.length])).toEqual([
      ['init', 'success', 0, 5],
      ['init', 'skipped', 0, 0],
    ]);
    expect(history[0]!.changed.map((c) => c.step)).toContain('prepare/files');
  });

  it('keeps only the last 20 runs', async () => {
    const bounded = fresh();
    for (let i = 0; i < 22; i++) expect((await runCli(['prepare', '-c', QUICKSTART, '--root', bounded, '--only', 'prepare/files'])).code).toBe(0);
    const history = (JSON.parse((await runCli(['status', '--root', bounded, '-o', 'json'])).stdout) as { history: { changed: unknown[] }[] }).history;
    expect(history).toHaveLength(20);
    // The first run, the only one that changed something, was dropped with the second.
    expect(history.every((r) => r.changed.length === 0)).toBe(true);
  });
});

describe('options that mean one thing', () => {
  it.each([
    ['status', ['status', '--offline'], "error: unknown option '--offline'"],
    ['status', ['status', '-c', 'x.yaml'], "error: unknown option '-c'"],
    ['config validate', ['config', 'validate', '-c', QUICKSTART, '--state-dir', '/tmp/x'], '--state-dir, --set and --devices go with --on-machine'],
  ])('%s refuses an option it has no use for (%j)', async (_name, args, message) => {
    const run = await runCli(args);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(message);
  });

  it.each([['init'], ['plan'], ['status'], ['config', 'validate'], ['fetch']])('machineadm %s --help shows no empty default', async (...command) => {
    const help = await runCli([...command, '--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('Usage: machineadm');
    expect(help.stdout).not.toMatch(/\(default: (\[\]|false)\)/);
  });

  it('plans init for Windows with --dry-run --os windows', async () => {
    const run = await runCli(['init', '--dry-run', '--os', 'windows', '-c', QUICKSTART, '--root', fresh()]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/^plan for "machineadm init" on windows\//);
  });

  it('refuses --os without --dry-run, since nothing can be applied to another machine', async () => {
    const run = await runCli(['init', '--os', 'windows', '-c', QUICKSTART, '--root', fresh()]);
    expect(run.code).toBe(2);
    expect(run.stderr).toBe('error: --facts and --os only go with plan or --dry-run\nhint: facts describe another machine; nothing can be applied to it from here\n');
  });

  it('prints the help and exits 2 when no command is given', async () => {
    const run = await runCli([]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('Usage: machineadm [options] [command]');
    expect(run.stderr).toContain('Commands:');
    expect(run.stdout).toBe('');
  });

  it('fetch names its destination --destination, and its help no longer offers -o for it', async () => {
    const help = await runCli(['fetch', '--help']);
    expect(help.stdout).toContain('-d, --destination <path>');
    expect(help.stdout).not.toContain('-o, --output');
  });
});

describe('--root that is a regular file', () => {
  const file = join(dir, 'not-a-directory');
  writeFileSync(file, 'x');
  it.each([
    ['plan', ['plan', '-c', QUICKSTART]],
    ['init', ['init', '-c', QUICKSTART]],
    ['status', ['status']],
    ['config validate', ['config', 'validate', '-c', QUICKSTART]],
  ])('is a usage error for %s, not a bug', async (_name, args) => {
    const run = await runCli([...args, '--root', file]);
    expect(run.code).toBe(2);
    expect(run.stderr).toBe(`error: --root ${file}: is a regular file, not a directory\nhint: give the directory the machine is under: / for this machine, or a scratch directory\n`);
  });
});

describe('registry mirrors with overridePath', () => {
  const config = (url: string): string => {
    const path = join(dir, `mirror-${n++}.yaml`);
    writeFileSync(path, `${HEADER}spec:\n  containerd:\n    registries:\n      quay.io:\n        mirrors:\n          - url: ${url}\n            overridePath: true\n`);
    return path;
  };

  it('refuses a mirror URL without the /v2 API root, naming the field and the fix', async () => {
    const path = config('https://mirror.internal.example:5000/quay');
    const run = await runCli(['config', 'validate', '-c', path]);
    expect(run.code).toBe(2);
    expect(run.stderr).toBe(
      'error: invalid configuration (1 problem):\n' +
        `  ${path}:8:13: spec.containerd.registries["quay.io"].mirrors[0].url: overridePath: true needs the registry API root in the URL, including its /v2 part (containerd would request <url>/<repository>/manifests/<tag>, get 404 and fall back to upstream)\n` +
        '    hint: e.g. https://mirror.internal.example:5000/quay/v2, or leave overridePath out for a mirror that serves /v2/ at its root\n',
    );
  });

  it('accepts a mirror URL that includes the API root', async () => {
    const run = await runCli(['config', 'validate', '-c', config('https://harbor.internal.example/v2/quay-proxy')]);
    expect(run.code, run.stderr).toBe(0);
  });
});

const skipTls = missingRequirement({ commands: ['openssl'] });

describe.skipIf(skipTls)('a configuration server that answers with an error', () => {
  let ca: TestCa;
  let server: RunningServer;
  const payload = Buffer.from('a file to fetch\n');
  beforeAll(async () => {
    ca = makeTestCa(scratchDir());
    server = await startHttps(ca, (req, res) => {
      if (req.url === '/file') return res.end(payload);
      res.writeHead(501);
      res.end();
    });
  });
  afterAll(() => server?.close());

  it('is reported as a source that could not be read, not as invalid configuration (exit 2)', async () => {
    const run = await runCli(['config', 'validate', '-c', `${server.url}/node.yaml#ca=${ca.caFile}`]);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/^error: could not read the configuration \(1 problem\):\n  https:\/\/127\.0\.0\.1:\d+\/node\.yaml: .*the server answered 501\n    hint: the server does not serve this request: check that the URL names a file the server hands out\n$/);
    expect(run.stderr).not.toContain('invalid configuration');
  });

  it.each([
    ['without spec.files[].source.caFile, refuses it and names the field that fixes it', false],
    ['with spec.files[].source.caFile, trusts the CA for that download', true],
  ])('a file downloaded from a server whose CA the machine does not know: %s', async (_name, withCa) => {
    const root = fresh();
    mkdirSync(join(root, 'etc/pki'), { recursive: true });
    writeFileSync(join(root, 'etc/pki/site-ca.pem'), ca.caPem);
    const sha = createHash('sha256').update(payload).digest('hex');
    const path = join(dir, `files-${n++}.yaml`);
    writeFileSync(path, `${HEADER}spec:\n  files:\n    - path: /opt/payload.txt\n      source: { url: "${server.url}/file", sha256: ${sha}${withCa ? ', caFile: /etc/pki/site-ca.pem' : ''} }\n`);
    const run = await runCli(['prepare', '-c', path, '--root', root, '--only', 'prepare/files']);
    if (withCa) {
      expect(run.code, run.stderr).toBe(0);
      expect(readFileSync(join(root, 'opt/payload.txt'))).toEqual(payload);
    } else {
      expect(run.code).toBe(1);
      expect(run.stderr).toContain('TLS error: ');
      expect(run.stderr).not.toContain('--use-system-ca');
      expect(run.stderr).toContain("hint: the server's certificate is not trusted: give the CA that signed it (machineadm fetch --ca-file PEM; in the configuration spec.files[].source.caFile)");
      expect(existsSync(join(root, 'opt/payload.txt'))).toBe(false);
    }
  });

  it('fetch still takes -o for the destination, with a deprecation warning', async () => {
    const dest = join(dir, 'fetched');
    const sha = createHash('sha256').update(payload).digest('hex');
    const run = await runCli(['fetch', `${server.url}/file`, '-o', dest, '--sha256', sha, '--ca-file', ca.caFile]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toBe('warning: fetch -o/--output is deprecated (-o is the output format in every other command); use -d/--destination\n');
    expect(run.stdout).toContain(` -> ${dest} (`);
  });
});

describe('a run that stops for a planned reboot', () => {
  // Contract §4: exit 4 and one "reboot:" line on standard error, which is not an "error:"; also
  // when standard output is not where standard error goes (cloud-init's runcmd with -o json).
  it.each(['text', 'json'])('says it as one reboot: line and no error: line (-o %s)', async (output) => {
    const root = fresh();
    mkdirSync(join(root, 'run'));
    writeFileSync(join(root, 'run/reboot-required'), '*** System restart required ***\n');
    mkdirSync(join(root, 'proc/sys/kernel/random'), { recursive: true });
    writeFileSync(join(root, 'proc/sys/kernel/random/boot_id'), 'first-boot\n');
    const config = join(root, 'reboot.yaml');
    writeFileSync(config, `${HEADER}spec:\n  rebootWhenRequired: true\n`);
    const run = await runCli(['init', '-c', config, '--root', root, '-o', output]);
    expect(run.code, run.stderr).toBe(4);
    expect(run.stderr).toBe('reboot: step prepare/reboot-if-required requires a reboot: /run/reboot-required says a reboot is pending; machineadm resumes after it\n');
    expect(run.stdout).not.toMatch(/^\s*error:/m);
  });
});

describe('resume with no command left to resume', () => {
  const UNIT = 'etc/systemd/system/machineadm-resume.service';
  it.each([
    ['nothing is registered', false],
    ['a resume unit is still registered', true],
  ])('says only what it did when %s (exit 1)', async (_name, registered) => {
    const root = fresh();
    if (registered) {
      mkdirSync(join(root, 'etc/systemd/system'), { recursive: true });
      writeFileSync(join(root, UNIT), '[Service]\nExecStart="/usr/local/bin/machineadm" "resume"\n');
    }
    const run = await runCli(['resume', '--root', root, '--state-dir', join(root, 'state')]);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/^error: machineadm resume: there is no command to resume in \S+resume\.json/);
    expect(run.stderr.includes('the resume registration is removed')).toBe(registered);
    expect(existsSync(join(root, UNIT))).toBe(false);
  });
});
