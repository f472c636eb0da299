// A run of machineadm's command line (the source, under Node 24) killed with SIGKILL at a chosen
// moment: on entering the first rename after it (the state file's next write is a rename too).
// strace finds the moment: a traced run on one machine counts the renames of machineadm's process
// before then; a run on a machine made the same way is killed on entering that rename (strace's
// fault injection, counted per process; machineadm renames from its main thread).
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO } from '../kubeadm/standin.ts';

const NODE = join(REPO, 'node_modules/.bin/node');
const CLI = join(REPO, 'src/cli/bin.ts');

export interface TracedRun {
  /** Where the kill comes: on entering this rename of machineadm's process (1 for the first). */
  killAt: number;
  /** The traced run's rename at that place: what the kill keeps from happening. */
  next: string;
}

/**
 * Runs `args` to its end under strace and finds the first rename of machineadm's process after
 * the first traced line `moment` matches (a rename or an execve, with its arguments).
 */
export function traceUntil(args: string[], moment: (line: string) => boolean, traceFile: string, env: NodeJS.ProcessEnv = process.env): TracedRun {
  const traced = spawnSync('strace', ['-f', '-qq', '-s', '4096', '-o', traceFile, '-e', 'trace=rename,execve', NODE, CLI, ...args], { cwd: REPO, env, encoding: 'utf8' });
  if (traced.status !== 0) throw new Error(`the traced run failed (${traced.status}): ${traced.stdout}${traced.stderr}`);
  const lines = readFileSync(traceFile, 'utf8').split('\n');
  const pid = lines[0]!.split(' ')[0];
  const at = lines.findIndex(moment);
  if (at < 0) throw new Error(`nothing in the traced run matched: ${traceFile}`);
  const ours = (l: string) => l.startsWith(`${pid} `) && / rename\(/.test(l);
  const next = lines.findIndex((l, i) => i > at && ours(l));
  if (next < 0) throw new Error(`the traced run renamed nothing after the moment: ${traceFile}`);
  return { killAt: lines.slice(0, next + 1).filter(ours).length, next: lines[next]! };
}

/** Runs `args`, killed with SIGKILL on entering its `killAt`th rename. */
export function killedAtRename(args: string[], killAt: number, env: NodeJS.ProcessEnv = process.env): NodeJS.Signals | null {
  const killed = spawnSync('strace', ['-qq', '-o', '/dev/null', '-e', 'trace=rename', '-e', `inject=rename:signal=KILL:when=${killAt}`, NODE, CLI, ...args], { cwd: REPO, env, encoding: 'utf8' });
  return killed.signal;
}
