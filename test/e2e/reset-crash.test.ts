// Crash consistency of reset: the built binary's `machineadm reset` (files given back, kubeadm
// reset through the strict stand-in, the state directory archived) is killed with SIGKILL at
// random moments, then run again, until one reset finishes; then init runs again and the next
// reset is killed in turn. After every kill each file is either as init left it or as it was
// before init (never torn), and after every finished reset the root is the one before init,
// byte for byte with modes and owners, with exactly one archive of the state directory more. The
// cycles take turns between examples/quickstart.yaml (files, sysctls, containerd, kubeadm) and
// examples/host-setup.yaml (a user and its group, home, sudo rule and keys, made with the real
// shadow tools, and time servers). The account files are rewritten by those tools one change at a
// time (userdel, then groupdel), each atomically: between two kills they may be in a state between
// the two; they are held to the same end state.
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { builtBinary } from '../support/binary.ts';
import { quiet, standinEnv } from '../support/machine-run.ts';
import { scratchDir } from '../support/tmp.ts';
import { REPO } from '../kubeadm/standin.ts';
import { ownReport, preparedMachine, snapshot } from '../reset/machine.ts';

const KILLS = Number(process.env.MACHINEADM_RESET_CRASH_KILLS ?? 100);
const BUDGET_MS = 900_000;
/** Kills in a row within one reset before it is let finish (each run gets further than the last). */
const IN_A_ROW = 6;
const EXAMPLES = [join(REPO, 'examples', 'quickstart.yaml'), join(REPO, 'examples', 'host-setup.yaml')];
/** Changed by the shadow tools in several atomic steps (see above). */
const ACCOUNT_FILE = /^etc\/(passwd|group|shadow|gshadow)-?$/;
const env = standinEnv();

/** Every file's bytes, by path under the root (the report folder left out). */
function contents(root: string): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (dir: string): void => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      const rel = relative(root, path);
      if (ownReport(rel)) continue;
      if (statSync(path).isDirectory()) walk(path);
      else out.set(rel, readFileSync(path, 'latin1'));
    }
  };
  walk(root);
  return out;
}

function run(binary: string, args: string[], killAfterMs?: number): Promise<{ status: number | null; signal: NodeJS.Signals | null; stderr: string; ms: number }> {
  const started = Date.now();
  const child = spawn(binary, args, { cwd: REPO, env, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  const timer = killAfterMs === undefined ? undefined : setTimeout(() => child.kill('SIGKILL'), killAfterMs);
  return new Promise((resolve) =>
    child.on('close', (status, signal) => {
      clearTimeout(timer);
      resolve({ status, signal, stderr, ms: Date.now() - started });
    }),
  );
}

describe('crash consistency of reset', () => {
  let binary = '';
  beforeAll(async () => {
    binary = await builtBinary();
  }, 600_000);

  it(`gives back the root as it was before init after ${KILLS} SIGKILLs during resets, each reset run again until it finishes`, async () => {
    const dir = scratchDir('machineadm-reset-crash-');
    const root = preparedMachine(dir);
    const state = join(dir, 'state');
    const before = snapshot(root);
    const beforeFiles = contents(root);
    const problems: string[] = [];
    let kills = 0;
    let cycles = 0;
    let runs = 0;
    // Kills are drawn over how long a whole reset takes: the first reset of all runs to its end.
    let window: number | undefined;
    const started = Date.now();
    while (kills < KILLS && Date.now() - started < BUDGET_MS) {
      const init = await run(binary, ['init', '-c', EXAMPLES[cycles % EXAMPLES.length]!, '--root', root, '--state-dir', state]);
      expect(init.status, init.stderr).toBe(0);
      await quiet(root);
      const initFiles = contents(root);
      cycles += 1;
      for (let inARow = 0; ; inARow++) {
        runs += 1;
        const killAfter = window === undefined || inARow >= IN_A_ROW ? undefined : Math.random() * window;
        const reset = await run(binary, ['reset', '--root', root, '--state-dir', state], killAfter);
        await quiet(root);
        if (reset.signal !== 'SIGKILL') {
          expect(reset.status, reset.stderr).toBe(0);
          if (inARow === 0) window = window === undefined ? reset.ms : Math.max(50, (window + reset.ms) / 2);
          break;
        }
        kills += 1;
        for (const [path, content] of contents(root)) {
          if (path.includes('.machineadm-tmp-') || ACCOUNT_FILE.test(path)) continue;
          if (content !== initFiles.get(path) && content !== beforeFiles.get(path)) problems.push(`cycle ${cycles}, kill ${kills}: ${path} is neither as init left it nor as before (${content.length} bytes)`);
        }
      }
      const after = snapshot(root, ownReport);
      if (JSON.stringify(after) !== JSON.stringify(before)) problems.push(`cycle ${cycles}: the root differs from the one before init: ${JSON.stringify(Object.keys({ ...after, ...before }).filter((k) => after[k] !== before[k]))}`);
      if (existsSync(state)) problems.push(`cycle ${cycles}: the state directory was not archived`);
      const archives = readdirSync(dir).filter((n) => n.startsWith('state.reset-')).length;
      if (archives !== cycles) problems.push(`cycle ${cycles}: ${archives} archives of the state directory`);
      const again = await run(binary, ['reset', '--root', root, '--state-dir', state]);
      if (again.status !== 0 || !again.stderr.startsWith('nothing to reset')) problems.push(`cycle ${cycles}: a second reset said ${again.stderr.trim()} (exit ${again.status})`);
    }
    console.log(`reset crash: ${kills} SIGKILLs over ${runs} resets in ${cycles} init/reset cycles, ${Math.round((Date.now() - started) / 1000)} s (a whole reset takes ~${Math.round(window ?? 0)} ms); ${problems.length} problems`);
    expect(problems).toEqual([]);
    expect(kills).toBeGreaterThanOrEqual(KILLS);
  }, BUDGET_MS + 120_000);
});
