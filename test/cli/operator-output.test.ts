// What an operator sees of a run: errors said once, -o yaml beside -o json, --quiet, -v levels
// (kubeadm's --v passed on), --log-file, colours on a terminal only, output that stays whole
// through a pipe, and the refusal of a non-root run on the live machine. Real processes: the
// terminal is a pseudo-terminal from script(1), the unprivileged user is nobody via setpriv.
import { spawnSync } from 'node:child_process';
import { chmodSync, closeSync, copyFileSync, existsSync, mkdirSync, openSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { dump, loadAll, load } from 'js-yaml';
import { beforeAll, describe, expect, it } from 'vitest';
import { builtBinary } from '../support/binary.ts';
import { runCli } from '../support/cli.ts';
import { scratchDir } from '../support/tmp.ts';
import { isRoot, missingRequirement } from '../support/environment.ts';
import { NODE_BIN, REPO, TEST_PATH } from '../kubeadm/standin.ts';

const NODE = join(NODE_BIN, 'node');
const BIN = join(REPO, 'bin/machineadm.js');
const HEAD = { apiVersion: 'machineadm.cluster.x-k8s.io/v1alpha1', kind: 'MachineConfig' };
const FAILS = 'spec.commands.boot[0] (refuse) exited with code 3';
// The failing step's command runs in the scratch root, not on this machine.
const UNDER_ROOT = { ...process.env, MACHINEADM_COMMANDS_UNDER_ROOT: '1' };

function configFile(spec: Record<string, unknown>): string {
  const file = join(scratchDir(), 'node.yaml');
  writeFileSync(file, dump({ ...HEAD, spec }));
  return file;
}

/** A scratch root where the run fails in its first step: a boot command that exits with 3. */
function failingMachine(): { root: string; config: string } {
  const root = scratchDir();
  mkdirSync(join(root, 'etc'));
  return { root, config: configFile({ files: [{ path: '/etc/ok.conf', content: 'a' }], commands: { boot: [{ name: 'refuse', shell: 'echo not today >&2; exit 3' }] } }) };
}

function occurrences(text: string, part: string): number {
  return text.split(part).length - 1;
}

describe('an error that ends a run', () => {
  it('is printed once when standard output and standard error are one file (> log 2>&1)', () => {
    const m = failingMachine();
    const log = join(scratchDir(), 'all.log');
    const fd = openSync(log, 'w');
    const run = spawnSync(NODE, [BIN, 'init', '-c', m.config, '--root', m.root], { stdio: ['ignore', fd, fd], env: { ...UNDER_ROOT, PATH: TEST_PATH } });
    closeSync(fd);
    const all = readFileSync(log, 'utf8');
    expect(run.status, all).toBe(1);
    expect(occurrences(all, FAILS), all).toBe(1);
    expect(all).toMatch(/prepare\/commands\/boot failure \d+ms \(the summary below says why\)/);
  });

  it('is printed once on each when they are apart: in the summary on stdout, as error: on stderr', () => {
    const m = failingMachine();
    const run = spawnSync(NODE, [BIN, 'init', '-c', m.config, '--root', m.root], { encoding: 'utf8', env: { ...UNDER_ROOT, PATH: TEST_PATH } });
    expect(run.status).toBe(1);
    expect(occurrences(run.stdout, FAILS), run.stdout).toBe(1);
    expect(run.stderr).toMatch(new RegExp(`^error: step prepare/commands/boot failed: ${FAILS.replace(/[[\]()]/g, '\\$&')}`));
    expect(occurrences(run.stderr, FAILS)).toBe(1);
  });
});

describe('--quiet', () => {
  it('init prints nothing on stdout and the error once on stderr', async () => {
    const m = failingMachine();
    const { code, stdout, stderr } = await runCli(['init', '-c', m.config, '--root', m.root, '--quiet'], { env: UNDER_ROOT });
    expect(code).toBe(1);
    expect(stdout).toBe('');
    expect(occurrences(stderr, FAILS)).toBe(1);
  });

  it('init and plan print nothing when all is well, and exit 0', async () => {
    const root = scratchDir();
    const config = configFile({ files: [{ path: '/etc/ok.conf', content: 'a' }] });
    for (const command of ['plan', 'init']) {
      const { code, stdout, stderr } = await runCli([command, '-c', config, '--root', root, '-q']);
      expect([command, code, stdout, stderr]).toEqual([command, 0, '', '']);
    }
    expect(readFileSync(join(root, 'etc/ok.conf'), 'utf8')).toBe('a');
  });
});

describe('-o yaml', () => {
  it('prints the plan as the same data as -o json', async () => {
    const root = scratchDir();
    const config = configFile({ kernelModules: ['overlay'] });
    const json = JSON.parse((await runCli(['plan', '-c', config, '--root', root, '-o', 'json'])).stdout) as Record<string, unknown>;
    const yaml = load((await runCli(['plan', '-c', config, '--root', root, '-o', 'yaml'])).stdout) as Record<string, unknown>;
    expect(yaml).toEqual(json);
  });

  it('streams one YAML document per event from init, the same events as -o json', async () => {
    const root = scratchDir();
    const config = configFile({ kernelModules: ['overlay'] });
    const { code, stdout } = await runCli(['init', '-c', config, '--root', root, '--skip', 'provision', '-o', 'yaml']);
    expect(code).toBe(0);
    const events = loadAll(stdout) as { type: string }[];
    expect(events[0]!.type).toBe('run.started');
    expect(events.at(-1)!.type).toBe('run.finished');
    expect(events.map((e) => e.type)).toContain('step.finished');
  });

  it.each([
    [['version', '-o', 'yaml'], 'version'],
    [['status', '-o', 'yaml'], 'stateDir'],
    [['config', 'validate', '-o', 'yaml'], 'valid'],
  ])('%j prints YAML data', async (args, key) => {
    const root = scratchDir();
    const config = configFile({ kernelModules: ['overlay'] });
    const extra = args[0] === 'version' ? [] : args[0] === 'status' ? ['--root', root] : ['-c', config, '--root', root];
    const { code, stdout } = await runCli([...args, ...extra]);
    expect(code).toBe(0);
    expect(load(stdout)).toHaveProperty(key);
  });
});

describe('-v and --log-file', () => {
  function kubeadmRun(verbosity: string[], env: Record<string, string> = {}): { argv: string[][]; all: string } {
    const dir = scratchDir();
    const root = join(dir, 'root');
    mkdirSync(root);
    const log = join(dir, 'kubeadm.log');
    const config = configFile({ kubernetes: { controlPlaneEndpoint: '10.0.0.10:6443', token: 'q1w2e3.r4t5y6u7i8o9p0a1', caCertHashes: ['sha256:' + 'ab'.repeat(32)], retries: 0 } });
    const run = spawnSync(NODE, [BIN, 'init', ...verbosity, '-c', config, '--root', root], {
      encoding: 'utf8',
      timeout: 60_000,
      env: { ...process.env, PATH: TEST_PATH, KUBEADM_STANDIN_VERSION: 'v1.31.2', KUBEADM_STANDIN_LOG: log, MACHINEADM_KUBEADM_ROOTFS: '1', MACHINEADM_DEBUG: '', ...env },
    });
    expect(run.status, run.stdout + run.stderr).toBe(0);
    const calls = readFileSync(log, 'utf8').trim().split('\n').map((l) => (JSON.parse(l) as { argv: string[] }).argv);
    return { argv: calls.filter((a) => a[0] === 'join'), all: run.stdout + run.stderr };
  }

  it.each([
    [[], []],
    [['-v'], []],
    [['-vv'], ['--v=5']],
    [['-v', '-v', '-v'], ['--v=6']],
    [['-vvvvv'], ['--v=6']],
  ])('%j passes %j on to kubeadm join, and from -v on shows each step as it starts', (flags, passed) => {
    const { argv, all } = kubeadmRun(flags);
    expect(argv).toHaveLength(1);
    expect(argv[0]!.filter((a) => a.startsWith('--v'))).toEqual(passed);
    expect(/provision\/kubeadm\/join started:/.test(all)).toBe(flags.length > 0);
  });

  it('MACHINEADM_DEBUG=1 is -v', () => {
    const { argv, all } = kubeadmRun([], { MACHINEADM_DEBUG: '1' });
    expect(all).toMatch(/provision\/kubeadm\/join started:/);
    expect(argv[0]!.filter((a) => a.startsWith('--v'))).toEqual([]);
  });

  it('--log-file appends every event at full detail, the summary and the error, 0600, also with -o json', async () => {
    const m = failingMachine();
    const log = join(scratchDir(), 'machineadm.log');
    writeFileSync(log, 'earlier line\n');
    chmodSync(log, 0o600);
    const { code, stdout } = await runCli(['init', '-c', m.config, '--root', m.root, '-o', 'json', '--log-file', log], { env: UNDER_ROOT });
    expect(code).toBe(1);
    expect(stdout.split('\n').filter(Boolean).every((l) => JSON.parse(l))).toBe(true);
    const text = readFileSync(log, 'utf8');
    expect(text.startsWith('earlier line\n')).toBe(true);
    expect(text).toMatch(/prepare\/commands\/boot started: /);
    expect(text).toContain('machineadm init: failure in');
    expect(occurrences(text, FAILS)).toBe(1);
    expect(statSync(log).mode & 0o777).toBe(0o600);
  });

  it('--log-file in a directory that does not exist is a usage error (exit 2) before anything changes', async () => {
    const root = scratchDir();
    const config = configFile({ files: [{ path: '/etc/ok.conf', content: 'a' }] });
    const { code, stderr } = await runCli(['init', '-c', config, '--root', root, '--log-file', join(root, 'no/such/dir/log')]);
    expect(code).toBe(2);
    expect(stderr).toMatch(/^error: --log-file .*: cannot open .* to append to it \(ENOENT\)\nhint: /);
    expect(existsSync(join(root, 'etc/ok.conf'))).toBe(false);
  });
});

const noScript = missingRequirement({ commands: ['script'] });
describe.skipIf(noScript)('on a terminal (script(1) gives the run a pseudo-terminal)', () => {
  // An operator's terminal: ora draws no spinner where the environment says CI.
  const operator = Object.fromEntries(Object.entries(process.env).filter(([k]) => k !== 'CI' && k !== 'CONTINUOUS_INTEGRATION' && !k.startsWith('CI_')));
  function onTerminal(command: string, env: Record<string, string> = {}): string {
    const run = spawnSync('script', ['-qec', `stty cols 100; ${command}`, '/dev/null'], { encoding: 'utf8', timeout: 60_000, env: { ...operator, PATH: TEST_PATH, ...env } });
    return run.stdout;
  }

  function changedFileMachine(): { root: string; config: string } {
    const root = scratchDir();
    mkdirSync(join(root, 'etc'));
    writeFileSync(join(root, 'etc/ok.conf'), 'old\n');
    return { root, config: configFile({ files: [{ path: '/etc/ok.conf', content: 'new\n' }] }) };
  }

  it('plan shows its diffs in colour', () => {
    const m = changedFileMachine();
    const out = onTerminal(`'${NODE}' '${BIN}' plan -c '${m.config}' --root '${m.root}'`, { NO_COLOR: '' });
    expect(out).toContain('\x1b[31m-old\x1b[0m');
    expect(out).toContain('\x1b[32m+new\x1b[0m');
  });

  it('plan shows no colour with NO_COLOR set, nor through a pipe', () => {
    const m = changedFileMachine();
    const plain = onTerminal(`'${NODE}' '${BIN}' plan -c '${m.config}' --root '${m.root}'`, { NO_COLOR: '1' });
    expect(plain).toContain('-old');
    expect(plain).not.toContain('\x1b[');
    const piped = onTerminal(`'${NODE}' '${BIN}' plan -c '${m.config}' --root '${m.root}' | cat`, { NO_COLOR: '' });
    expect(piped).toContain('+new');
    expect(piped).not.toContain('\x1b[');
  });

  it('through | tee every step line reaches the pipe, and no spinner frame reaches the terminal', () => {
    const root = scratchDir();
    const teed = join(scratchDir(), 'teed.log');
    const out = onTerminal(`'${NODE}' '${BIN}' init -c '${join(REPO, 'examples/quickstart.yaml')}' --root '${root}' --skip provision | tee '${teed}'`);
    const log = readFileSync(teed, 'utf8');
    for (const step of ['prepare/kernel-modules/file success', 'prepare/sysctls/file success', 'prepare/files success', 'prepare/containerd/config success', 'machineadm init success']) expect(log).toContain(step);
    expect(log).toContain('machineadm init: success in');
    // ora draws with braille frames and hides the cursor (ESC[?25l); neither may show.
    expect(out + log).not.toMatch(/[\u2800-\u28ff]|\x1b\[\?25l/);
    // Every line is whole: a timestamp first, or the summary's own lines.
    for (const line of log.split('\n').filter(Boolean)) expect(line).toMatch(/^(\d{4}-\d\d-\d\dT|machineadm init: | {2}\S)/);
  });

  it('with both outputs on the terminal a step turns a spinner', () => {
    const root = scratchDir();
    const out = onTerminal(`'${NODE}' '${BIN}' init -c '${join(REPO, 'examples/quickstart.yaml')}' --root '${root}' --skip provision`);
    expect(out).toMatch(/\x1b\[\?25l/);
  });

  it('with NO_COLOR set the spinner turns without colour', () => {
    const root = scratchDir();
    const out = onTerminal(`'${NODE}' '${BIN}' init -c '${join(REPO, 'examples/quickstart.yaml')}' --root '${root}' --skip provision`, { NO_COLOR: '1' });
    expect(out).toMatch(/\x1b\[\?25l/);
    // Any SGR sequence (colour, bold, ...) is a colour the operator asked not to see.
    expect(out).not.toMatch(/\x1b\[[0-9;]*m/);
  });
});

const noSetpriv = !isRoot ? 'needs root to become nobody' : missingRequirement({ commands: ['setpriv'] });
describe.skipIf(noSetpriv)('a run by a user without root rights', () => {
  // nobody runs the packaged binary, copied beside its configuration into a folder anyone may read:
  // the checkout (its Node, its sources) may be in a folder only its owner enters, as under /root.
  let binary = '';
  beforeAll(async () => {
    const built = await builtBinary();
    const dir = scratchDir();
    chmodSync(dir, 0o755);
    binary = join(dir, 'machineadm');
    copyFileSync(built, binary);
    chmodSync(binary, 0o755);
  }, 600_000);

  function asNobody(args: string[]): { status: number | null; stdout: string; stderr: string } {
    const dir = scratchDir();
    chmodSync(dir, 0o755);
    const config = join(dir, 'node.yaml');
    writeFileSync(config, dump({ ...HEAD, spec: { files: [{ path: '/etc/machineadm-nobody-test.conf', content: 'a' }] } }));
    chmodSync(config, 0o644);
    const run = spawnSync('setpriv', ['--reuid=nobody', '--regid=nogroup', '--clear-groups', binary, ...args, '-c', config], { cwd: '/tmp', encoding: 'utf8', timeout: 60_000, env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin', HOME: '/nonexistent' } });
    return { status: run.status, stdout: run.stdout, stderr: run.stderr };
  }

  it.each(['init', 'prepare'])('%s on the live machine is refused with what to do (exit 2), nothing changed', (command) => {
    const run = asNobody([command]);
    expect(run.status, run.stderr).toBe(2);
    expect(run.stderr).toBe(
      `error: machineadm ${command} changes this machine and needs root; it runs as an unprivileged user: nothing was changed\n` +
        `hint: run it as root (sudo machineadm ${command} ...), give --root DIR to work on a scratch directory instead of /, or see what it would do with "machineadm plan"\n`,
    );
    expect(existsSync('/etc/machineadm-nobody-test.conf')).toBe(false);
  });

  it('plan on the live machine is allowed: it changes nothing', () => {
    const run = asNobody(['plan']);
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
    expect(run.stdout).toContain('/etc/machineadm-nobody-test.conf');
  });
});
