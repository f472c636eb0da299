// The packaged executable, as an operator runs it: no Node installed, an empty environment, any
// working directory.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { builtBinary } from '../support/binary.ts';
import { scratchDir } from '../support/tmp.ts';
import { missingRequirement } from '../support/environment.ts';

const QUICKSTART = fileURLToPath(new URL('../../examples/quickstart.yaml', import.meta.url));

const COMMANDS = ['init', 'prepare', 'provision', 'report', 'plan', 'config', 'verify', 'keygen', 'sign', 'fetch', 'status', 'version'];

describe('the packaged linux-x64 binary', () => {
  let binary: string;
  const elsewhere = scratchDir();
  beforeAll(async () => {
    binary = await builtBinary();
  });

  it('prints valid version JSON with an empty environment from another directory, without warnings', () => {
    const result = spawnSync('env', ['-i', binary, 'version', '-o', 'json'], { cwd: elsewhere, encoding: 'utf8' });
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
    const info = JSON.parse(result.stdout) as Record<string, string>;
    expect(info).toMatchObject({ version: expect.stringMatching(/^\d+\.\d+\.\d+/), node: 'v24.21.0', platform: 'linux-x64' });
    expect(info.commit).toMatch(/^([0-9a-f]{40}(-dirty)?|unknown)$/);
  });

  it('lists every command in --help', () => {
    const result = spawnSync(binary, ['--help'], { cwd: elsewhere, encoding: 'utf8', env: {} });
    expect(result.status).toBe(0);
    const listed = [...result.stdout.matchAll(/^ {2}(\S+)/gm)].map((m) => m[1]);
    for (const command of COMMANDS) expect(listed).toContain(command);
  });

  it('runs init on the quickstart example from a scratch root, twice, converging', () => {
    const root = scratchDir('machineadm-binary-root-');
    const run = () => spawnSync(binary, ['init', '-c', QUICKSTART, '--root', root, '-o', 'json'], { cwd: elsewhere, encoding: 'utf8', env: {} });
    const first = run();
    expect(first.stderr).toBe('');
    expect(first.status).toBe(0);
    const results = (stdout: string) =>
      stdout
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as { type: string; step?: string; result?: string })
        .filter((e) => e.type === 'step.finished');
    expect(results(first.stdout).length).toBeGreaterThan(0);
    expect(results(first.stdout).filter((e) => e.result === 'failure')).toEqual([]);
    const second = run();
    expect(second.status).toBe(0);
    expect(results(second.stdout).filter((e) => e.result !== 'skipped').map((e) => `${e.step}=${e.result}`)).toEqual([]);
  });

  it('shows spinners on a terminal (ora, loaded lazily inside the bundle) and finishes', (context) => {
    const missing = missingRequirement({ commands: ['script', 'stty'] });
    if (missing) return context.skip(missing);
    const root = scratchDir('machineadm-binary-tty-');
    // script(1) gives the binary a terminal; stty gives it a width, without which no spinner is shown.
    const command = `stty cols 100 rows 30; "$0" init -c "$1" --root "$2"; echo "exit=$?"`;
    const result = spawnSync('script', ['-qec', `sh -c '${command}' '${binary}' '${QUICKSTART}' '${root}'`, '/dev/null'], { cwd: elsewhere, encoding: 'utf8', env: { TERM: 'xterm' }, timeout: 30_000 });
    expect(result.stdout).toMatch(/exit=0/);
    expect(result.stdout).toMatch(/machineadm init: \w+ in/);
    // ora hides the cursor while it spins and shows it again at the end.
    expect(result.stdout).toContain('\u001b[?25l');
  });

  it('ignores NODE_OPTIONS, so the environment cannot inject code into it', () => {
    const result = spawnSync(binary, ['version'], { cwd: elsewhere, encoding: 'utf8', env: { NODE_OPTIONS: '--require /nonexistent/inject.js' } });
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
  });

  it('runs no Node script given as an argument', () => {
    const result = spawnSync(binary, ['-e', 'console.log("injected")'], { cwd: elsewhere, encoding: 'utf8', env: {} });
    expect(result.stdout).not.toContain('injected');
    expect(result.status).toBe(2);
  });
});
