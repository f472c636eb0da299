// A state directory machineadm cannot write: read-only (refused before anything changes, exit 2)
// or full (the run stops with exit 1 and says why). Never "a bug", and status.json never stays
// "running". Each case mounts a small tmpfs in a mount namespace of its own.
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { missingRequirement } from '../support/environment.ts';
import { scratchDir } from '../support/tmp.ts';
import { snapshotTree } from '../support/tree.ts';

const REPO = join(import.meta.dirname, '../..');
const skip = missingRequirement({ root: true, commands: ['unshare', 'mount'] });

/** init of examples/quickstart.yaml with the state directory on a tmpfs mounted with `options`. */
function initWithStateDir(options: string): { status: number | null; stderr: string; root: string } {
  const dir = scratchDir('machineadm-state-dir-');
  const root = join(dir, 'root');
  const state = join(dir, 'state');
  mkdirSync(root);
  mkdirSync(state);
  const run = spawnSync(
    'unshare',
    ['-m', 'sh', '-c', 'mount -t tmpfs -o "$1" tmpfs "$2" && shift 2 && exec "$@"', 'sh', options, state, join(REPO, 'node_modules/.bin/node'), 'bin/machineadm.js', 'init', '-c', 'examples/quickstart.yaml', '--root', root, '--state-dir', state],
    { cwd: REPO, encoding: 'utf8', timeout: 60_000, env: { ...process.env, NODE_OPTIONS: '' } },
  );
  return { status: run.status, stderr: run.stderr, root };
}

describe.skipIf(skip)('a state directory machineadm cannot write', () => {
  it('read-only: refused before anything changes (exit 2), saying so', () => {
    const run = initWithStateDir('size=64k,ro');
    expect(run.status, run.stderr).toBe(2);
    expect(run.stderr).toMatch(/error: cannot use the state directory .*: it is on a read-only file system \(EROFS\); nothing was changed/);
    expect(run.stderr).not.toContain('this is a bug');
    expect(snapshotTree(run.root)).toEqual({ '.': expect.stringMatching(/^dir /) });
  });

  it('full: the run stops with exit 1 naming the state file and what to do; status.json and result.json say it finished and failed', () => {
    // One page: the lock fits, the state file does not.
    const run = initWithStateDir('size=4k');
    expect(run.status, run.stderr).toBe(1);
    expect(run.stderr).toMatch(/error: cannot write the state file .*state\.json: its file system is full \(ENOSPC\)/);
    expect(run.stderr).not.toContain('this is a bug');
    for (const file of ['status.json', 'result.json']) {
      const doc = JSON.parse(readFileSync(join(run.root, 'run/machineadm', file), 'utf8'));
      expect(doc, file).toMatchObject({ state: 'finished', result: 'failure', exitCode: 1, error: { message: expect.stringContaining('cannot write the state file') } });
    }
  });
});
