// A state directory machineadm cannot write: read-only or full is refused before anything changes
// (exit 2), by plan and config validate --on-machine as by init; one that fills up during the run
// stops it (exit 1) saying why, with status.json finished and no temporary file left. Never "a
// bug". Each case mounts a small tmpfs in a mount namespace of its own.
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { missingRequirement } from '../support/environment.ts';
import { scratchDir } from '../support/tmp.ts';
import { snapshotTree } from '../support/tree.ts';

const REPO = join(import.meta.dirname, '../..');
const NODE = join(REPO, 'node_modules/.bin/node');
const skip = missingRequirement({ root: true, commands: ['unshare', 'mount'] });

/** `argv` (machineadm's arguments; ROOT and STATE replaced) with the state directory on a tmpfs mounted with `options`. */
function withStateDir(options: string, argv: string[], prepare?: (root: string) => void): { status: number | null; stdout: string; stderr: string; root: string; state: TreeAfter } {
  const dir = scratchDir('machineadm-state-dir-');
  const root = join(dir, 'root');
  mkdirSync(root);
  prepare?.(root);
  const state = join(dir, 'state');
  mkdirSync(state);
  const args = argv.map((a) => (a === 'ROOT' ? root : a === 'STATE' ? state : a));
  // The tree of the tmpfs is taken inside the namespace, before it goes with it.
  const script = 'mount -t tmpfs -o "$1" tmpfs "$2" && shift 2 && "$@"; code=$?; find "$STATE_DIR" -mindepth 1 -printf "%y %s %P\\n" >&3; exit $code';
  const run = spawnSync('unshare', ['-m', 'sh', '-c', script, 'sh', options, state, NODE, 'bin/machineadm.js', ...args], {
    cwd: REPO,
    encoding: 'utf8',
    timeout: 60_000,
    env: { ...process.env, NODE_OPTIONS: '', STATE_DIR: state },
    stdio: ['ignore', 'pipe', 'pipe', 'pipe'],
  });
  const listing = (run.output[3] ?? '').toString().split('\n').filter(Boolean);
  return { status: run.status, stdout: run.stdout, stderr: run.stderr, root, state: listing };
}
type TreeAfter = string[];

const INIT = ['init', '-c', 'examples/quickstart.yaml', '--root', 'ROOT', '--state-dir', 'STATE'];
const REFUSING = [
  ['init', INIT],
  ['plan', ['plan', '-c', 'examples/quickstart.yaml', '--root', 'ROOT', '--state-dir', 'STATE']],
  ['config validate --on-machine', ['config', 'validate', '--on-machine', '-c', 'examples/quickstart.yaml', '--root', 'ROOT', '--state-dir', 'STATE']],
] as const;

describe.skipIf(skip)('a state directory machineadm cannot write', () => {
  it.each(REFUSING)('read-only: %s refuses before anything changes (exit 2), saying so', (_name, argv) => {
    const run = withStateDir('size=64k,ro', [...argv]);
    expect(run.status, run.stderr).toBe(2);
    expect(run.stderr).toMatch(/cannot use the state directory .*: it is on a read-only file system \(EROFS\)/);
    expect(run.stderr).toContain('hint: give a writable state directory (--state-dir DIR), or run as root');
    expect(run.stderr).not.toContain('this is a bug');
    expect(snapshotTree(run.root)).toEqual({ '.': expect.stringMatching(/^dir /) });
  });

  it.each(REFUSING)('a file in its place: %s refuses before anything changes (exit 2), saying so', (_name, argv) => {
    const dir = scratchDir('machineadm-state-file-');
    const root = join(dir, 'root');
    mkdirSync(root);
    const state = join(dir, 'state');
    writeFileSync(state, 'not a directory\n');
    const run = spawnSync(NODE, ['bin/machineadm.js', ...argv.map((a) => (a === 'ROOT' ? root : a === 'STATE' ? state : a))], { cwd: REPO, encoding: 'utf8', timeout: 60_000, env: { ...process.env, NODE_OPTIONS: '' } });
    expect(run.status, run.stderr).toBe(2);
    expect(run.stderr).toContain(`cannot use the state directory ${state}: it is not a directory (ENOTDIR)`);
    expect(run.stderr).toContain('hint: move what is in its place away, or give another state directory (--state-dir DIR)');
    expect(run.stderr).not.toContain('this is a bug');
    expect(snapshotTree(root)).toEqual({ '.': expect.stringMatching(/^dir /) });
    expect(readFileSync(state, 'utf8')).toBe('not a directory\n');
  });

  it.each(REFUSING)('full: %s refuses before anything changes (exit 2), saying how much room there is, and leaves no file there', (_name, argv) => {
    const run = withStateDir('size=4k', [...argv]);
    expect(run.status, run.stderr).toBe(2);
    expect(run.stderr).toMatch(/cannot use the state directory .*: its file system is full \(4096 bytes free, a run needs 1048576\)/);
    expect(run.stderr).toContain('hint: free some space there, or give another state directory (--state-dir DIR)');
    expect(snapshotTree(run.root)).toEqual({ '.': expect.stringMatching(/^dir /) });
    expect(run.state).toEqual([]);
  });

  it('filling up during the run: exit 1 naming the file it could not keep and what to do; status.json and result.json say it finished and failed; no temporary file left', () => {
    // Room for the run's records, not for the copy of a 1.2 MB file that spec.files replaces.
    const run = withStateDir('size=1100k', [...INIT], (root) => {
      mkdirSync(join(root, 'etc/machineadm'), { recursive: true });
      writeFileSync(join(root, 'etc/machineadm/motd'), Buffer.alloc(1_200_000, 'x'));
    });
    expect(run.status, run.stderr).toBe(1);
    expect(run.stdout).toMatch(/cannot keep the copy of .*motd that reset gives back in .*: its file system is full \(ENOSPC\); .*motd was not changed/);
    expect(run.stdout).toContain('free some space in the state directory');
    expect(run.stdout + run.stderr).not.toContain('this is a bug');
    expect(readFileSync(join(run.root, 'etc/machineadm/motd'))).toEqual(Buffer.alloc(1_200_000, 'x'));
    for (const file of ['status.json', 'result.json']) {
      const doc = JSON.parse(readFileSync(join(run.root, 'run/machineadm', file), 'utf8'));
      expect(doc, file).toMatchObject({ state: 'finished', result: 'failure', exitCode: 1, error: { message: expect.stringContaining('cannot keep the copy') } });
    }
    expect(run.state.filter((line) => /machineadm-tmp|^f 0 /.test(line))).toEqual([]);
  });

  it('a record of a written file that does not fit is not left behind as an empty temporary file', () => {
    // written.ts directly: the file system fills between making the temporary file and writing it.
    const dir = scratchDir('machineadm-state-dir-');
    const script = `
      import { WrittenRecords } from './src/host/written.ts';
      import * as path from 'node:path';
      import { writeFileSync } from 'node:fs';
      const dir = process.argv[1];
      // Every block taken but the few the empty folder and the temporary file's inode need.
      try { writeFileSync(path.join(dir, 'filler'), Buffer.alloc(8192)); } catch {}
      const records = new WrittenRecords(path.join(dir, 'written'), path.posix, async () => {});
      const error = await records.write({ path: '/etc/x.conf', before: null, dirs: [], written: [] }).then(() => undefined, (e) => e.code);
      const { readdirSync } = await import('node:fs');
      console.log(JSON.stringify({ error, left: readdirSync(path.join(dir, 'written')) }));
    `;
    const run = spawnSync('unshare', ['-m', 'sh', '-c', 'mount -t tmpfs -o size=8k tmpfs "$1" && shift && exec "$@"', 'sh', dir, NODE, '--input-type=module', '-e', script, dir], { cwd: REPO, encoding: 'utf8', timeout: 30_000, env: { ...process.env, NODE_OPTIONS: '' } });
    expect(run.status, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toEqual({ error: 'ENOSPC', left: [] });
  });
});
