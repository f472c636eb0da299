// status after what a run cannot record itself: a run killed before its end (SIGKILL leaves its
// status.json saying "running" and no entry in the history), and a state directory status cannot read.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.ts';
import { scratchDir } from '../support/tmp.ts';
import { configFrom, runWithReporting, step } from '../report/harness.ts';

const REPO = join(import.meta.dirname, '..', '..');
const NODE = join(REPO, 'node_modules', 'node', 'bin', 'node');
const QUICKSTART = join(REPO, 'examples', 'quickstart.yaml');
const dir = scratchDir('machineadm-status-');
let n = 0;
const fresh = (): string => {
  const path = join(dir, `root-${n++}`);
  mkdirSync(path);
  return path;
};

const leftovers: number[] = [];
afterAll(() => {
  for (const pid of leftovers) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone already
    }
  }
});

async function until(what: () => boolean, ms = 20_000): Promise<void> {
  const end = Date.now() + ms;
  while (!what()) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Starts prepare with a boot command that waits, and kills machineadm with SIGKILL in that step. */
async function killedMidRun(root: string): Promise<{ runId: string }> {
  const config = join(root, 'slow.yaml');
  // The command writes its pid first, so that the test can end it: it outlives the killed run.
  writeFileSync(config, 'apiVersion: machineadm.cluster.x-k8s.io/v1alpha1\nkind: MachineConfig\nspec:\n  commands:\n    boot:\n      - { name: wait, shell: "echo $$ > waiting.pid; exec sleep 60" }\n');
  const child = spawn(NODE, ['src/cli/bin.ts', 'prepare', '-c', config, '--root', root], { cwd: REPO, env: { ...process.env, MACHINEADM_COMMANDS_UNDER_ROOT: '1' }, stdio: 'ignore' });
  const pidFile = join(root, 'waiting.pid');
  const statusFile = join(root, 'run/machineadm/status.json');
  // status.json shows a step within 250 ms of its start.
  await until(() => existsSync(pidFile) && readFileSync(pidFile, 'utf8').endsWith('\n') && existsSync(statusFile) && readFileSync(statusFile, 'utf8').includes('"prepare/commands/boot"'));
  leftovers.push(Number(readFileSync(pidFile, 'utf8').trim()));
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGKILL');
  await exited;
  const progress = JSON.parse(readFileSync(statusFile, 'utf8')) as { runId: string; state: string };
  expect(progress.state).toBe('running');
  return { runId: progress.runId };
}

describe('status after a run killed with SIGKILL', () => {
  it('names the killed run after the last finished one, and gives it with -o json', async () => {
    const root = fresh();
    expect((await runCli(['init', '-c', QUICKSTART, '--root', root])).code).toBe(0);
    const { runId } = await killedMidRun(root);
    const status = await runCli(['status', '--root', root]);
    expect(status.code, status.stderr).toBe(0);
    expect(status.stdout).toContain('last run: init success');
    expect(status.stdout).toMatch(new RegExp(`a later run did not finish: prepare \\(started [^,]+, run ${runId}\\): it stopped during prepare/commands/boot without recording its end \\(killed, or the machine went down\\)`));
    const json = JSON.parse((await runCli(['status', '--root', root, '-o', 'json'])).stdout) as { unfinished: unknown };
    expect(json.unfinished).toMatchObject({ command: 'prepare', runId, stepId: 'prepare/commands/boot' });
  }, 60_000);

  it('names a killed first run, never that machineadm has not run', async () => {
    const root = fresh();
    const { runId } = await killedMidRun(root);
    const status = await runCli(['status', '--root', root]);
    expect(status.code, status.stderr).toBe(0);
    expect(status.stdout).not.toContain('has not run');
    expect(status.stdout).toContain(`last run: prepare did not finish (started`);
    expect(status.stdout).toContain(`run ${runId}): it stopped during prepare/commands/boot`);
  }, 60_000);

  it('gives no unfinished run when every run recorded its end', async () => {
    const root = fresh();
    await runCli(['init', '-c', QUICKSTART, '--root', root]);
    const json = JSON.parse((await runCli(['status', '--root', root, '-o', 'json'])).stdout) as { unfinished: unknown };
    expect(json.unfinished).toBeNull();
    expect((await runCli(['status', '--root', root])).stdout).not.toContain('did not finish');
  });
});

describe('status with a state directory it cannot read', () => {
  it('names the directory and what to do (exit 2), never calling it a bug', async () => {
    const root = fresh();
    const notADirectory = join(root, 'state');
    writeFileSync(notADirectory, 'a file\n');
    for (const output of ['text', 'json']) {
      const status = await runCli(['status', '--root', root, '--state-dir', notADirectory, '-o', output]);
      expect(status.code).toBe(2);
      expect(status.stdout).toBe('');
      expect(status.stderr).toBe(`error: cannot read the state directory ${notADirectory}: it is not a directory (ENOTDIR)\nhint: give the directory machineadm keeps its state in with --state-dir DIR, or leave --state-dir out for the default\n`);
    }
  });
});

describe('status with a damaged status.json or result.json', () => {
  it.each([
    ['status.json', 'phases that are not a list', '{"kind":"MachineadmRunResult","state":"running","runId":"r1","command":"prepare","startedAt":"T","updatedAt":"T","phases":"x"}'],
    ['status.json', 'a phase that is null', '{"kind":"MachineadmRunResult","state":"running","runId":"r1","command":"prepare","startedAt":"T","updatedAt":"T","phases":[null]}'],
    ['status.json', 'steps that are null', '{"kind":"MachineadmRunResult","state":"running","runId":"r1","command":"prepare","startedAt":"T","updatedAt":"T","phases":[{"steps":null}]}'],
    ['status.json', 'no run id, command or times', '{"state":"running"}'],
    ['result.json', 'a command and state of the wrong types', '{"state":5,"command":{}}'],
  ])('leaves out a %s with %s, and shows the rest (exit 0)', async (file, _what, content) => {
    const root = fresh();
    expect((await runCli(['init', '-c', QUICKSTART, '--root', root])).code).toBe(0);
    writeFileSync(join(root, 'run/machineadm', file), content);
    const status = await runCli(['status', '--root', root]);
    expect(status.code, status.stderr).toBe(0);
    expect(status.stdout).toContain('last run: init success');
    expect(status.stdout).not.toMatch(/undefined|\[object Object\]/);
    const json = await runCli(['status', '--root', root, '-o', 'json']);
    expect(json.code, json.stderr).toBe(0);
    const data = JSON.parse(json.stdout) as { unfinished: unknown; lastResult: { runId?: unknown } | null };
    expect(data.unfinished).toBeNull();
    if (data.lastResult !== null) expect(typeof data.lastResult.runId).toBe('string');
  });
});

describe('status with a damaged state file', () => {
  it.each([
    ['cut short', '{"version":1,"runs":[', 'is not valid JSON'],
    ['holding null', 'null', 'holds null, not a machineadm state'],
    ['with runs that are not a list', '{"version":1,"steps":{},"runs":"x"}', 'has "runs" that is not a list of run records'],
    ['with a run that is null', '{"version":1,"steps":{},"runs":[null]}', 'has "runs" that is not a list of run records'],
  ])('%s: names it and what to do, and shows the run history (exit 0)', async (_what, content, why) => {
    const root = fresh();
    expect((await runCli(['init', '-c', QUICKSTART, '--root', root])).code).toBe(0);
    const stateFile = join(root, 'var/lib/machineadm/state.json');
    writeFileSync(stateFile, content);
    const status = await runCli(['status', '--root', root]);
    expect(status.code, status.stderr).toBe(0);
    expect(status.stdout).toContain('last run: init success');
    expect(status.stdout).toContain(`problem: state file ${stateFile} ${why}\n  hint: move it away to start over`);
    const json = await runCli(['status', '--root', root, '-o', 'json']);
    expect(json.code, json.stderr).toBe(0);
    const data = JSON.parse(json.stdout) as { stateFileProblem: { message: string; hint: string }; history: unknown[]; runs: unknown[] };
    expect(data.stateFileProblem.message).toBe(`state file ${stateFile} ${why}`);
    expect(data.history).toHaveLength(1);
    expect(data.runs).toEqual([]);
    expect(readFileSync(stateFile, 'utf8')).toBe(content);
  });

  it('gives no problem with -o json when the state file is sound', async () => {
    const root = fresh();
    await runCli(['init', '-c', QUICKSTART, '--root', root]);
    expect((JSON.parse((await runCli(['status', '--root', root, '-o', 'json'])).stdout) as { stateFileProblem: unknown }).stateFileProblem).toBeNull();
  });
});

describe('status while a run goes on', () => {
  it.each([
    ['after a finished run', true],
    ['in the first run', false],
  ])('says the run that holds the lock runs now, never that it did not finish (%s)', async (_name, earlier) => {
    const root = fresh();
    if (earlier) await runWithReporting({ root, config: configFrom({}), prepare: [step('files')] });
    let shown = '';
    // A step that records its start, as kubeadm's do: the running run's record is in the state file when status reads it.
    const join = step('join', {
      recordsStart: true,
      apply: async () => {
        shown = (await runCli(['status', '--root', root])).stdout;
        return {};
      },
    });
    const run = await runWithReporting({ root, config: configFrom({}), provision: [join] });
    expect(shown).toMatch(/^running now: init \(pid \d+, started \S+\)$/m);
    expect(shown).not.toContain(run.outcome.runId);
    expect(shown).not.toContain('did not finish');
    expect(shown).not.toContain('unfinished');
    if (earlier) expect(shown).toMatch(/^last run: init success/m);
  });

  it('gives with -o json the run id of the run that holds the lock', async () => {
    const root = fresh();
    let running: unknown;
    const files = step('files', {
      apply: async () => {
        running = (JSON.parse((await runCli(['status', '--root', root, '-o', 'json'])).stdout) as { running: unknown }).running;
        return {};
      },
    });
    const run = await runWithReporting({ root, config: configFrom({}), prepare: [files] });
    expect(running).toEqual({ command: 'init', pid: process.pid, startedAt: expect.any(String), runId: run.outcome.runId });
  });
});
