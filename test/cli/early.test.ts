// The version probes a phase command starts as the process starts (src/cli/early.ts): taken by
// the run's facts instead of probing again, and not started for what needs none.
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { startEarly } from '../../src/cli/early.ts';
import { PHASE_COMMANDS } from '../../src/cli/commands/phase-options.ts';
import type { Io } from '../../src/cli/io.ts';
import { runCli } from '../support/cli.ts';
import { scratchDir } from '../support/tmp.ts';

/** A containerd that answers --version and counts how often it was asked. */
function countingContainerd(): { bin: string; calls: () => number } {
  const bin = scratchDir();
  const count = join(bin, 'calls');
  writeFileSync(join(bin, 'containerd'), `#!/bin/sh\necho x >> "${count}"\necho "containerd github.com/containerd/containerd v1.7.24 abc123"\n`);
  chmodSync(join(bin, 'containerd'), 0o755);
  return { bin, calls: () => (existsSync(count) ? readFileSync(count, 'utf8').split('\n').filter(Boolean).length : 0) };
}

function ioWith(env: NodeJS.ProcessEnv): Io {
  return { stdout: () => undefined, stderr: () => undefined, readStdin: async () => Buffer.alloc(0), env, cwd: process.cwd(), interactive: false };
}

describe('the version probes started as the process starts', () => {
  it('are the run\'s own: a plan runs containerd --version once, and its plan names the version it printed', async () => {
    const { bin, calls } = countingContainerd();
    const root = scratchDir();
    mkdirSync(join(root, 'etc/machineadm'), { recursive: true });
    writeFileSync(join(root, 'etc/machineadm/bootstrap-token'), 'abcdef.0123456789abcdef\n', { mode: 0o600 });
    const run = await runCli(['plan', '-c', 'examples/linux-worker.yaml', '--root', root, '-o', 'json'], { env: { PATH: `${bin}:/usr/bin:/bin` } });
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(calls()).toBe(1);
    expect(JSON.stringify(JSON.parse(run.stdout))).toContain('1.7.24');
  });

  it('are started for the phase commands only, and not for a plan of another machine or a help', async () => {
    const { bin, calls } = countingContainerd();
    const env = { PATH: `${bin}:/usr/bin:/bin` };
    for (const args of [['version'], ['config', 'validate'], ['plan', '--facts', 'f.json'], ['plan', '--os=windows'], ['init', '--help'], []]) {
      expect(startEarly(args, ioWith(env), PHASE_COMMANDS).versions, args.join(' ')).toBeUndefined();
    }
    expect(calls()).toBe(0);
    const early = startEarly(['init', '-c', 'x.yaml'], ioWith(env), PHASE_COMMANDS);
    await expect(early.versions).resolves.toEqual(['containerd github.com/containerd/containerd v1.7.24 abc123\n', undefined]);
    expect(calls()).toBe(1);
  });
});
