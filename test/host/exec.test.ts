// ProcessRunner: argv arrays reach the program as they are (no shell ever sees them), timeouts
// kill, failures carry what happened.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { MAX_LINE_CHARS, ProcessRunner } from '../../src/host/exec.ts';
import { CommandError } from '../../src/errors.ts';
import { scratchDir } from '../support/tmp.ts';
import { processRuns } from '../support/machine-run.ts';

const env = { PATH: process.env.PATH ?? '/usr/bin:/bin' };

describe('ProcessRunner.run', () => {
  it.each([
    ['a command separator', 'x; rm -rf victim'],
    ['a command substitution', '$(rm -rf victim)'],
    ['backticks', '`rm -rf victim`'],
    ['a pipe and a redirection', 'x | rm -rf victim > out'],
    ['quotes and a newline', `"'\nrm -rf victim`],
    ['a glob', '*'],
  ])('passes an argument with %s to the program as one argument', async (_name, argument) => {
    const dir = scratchDir();
    writeFileSync(join(dir, 'victim'), 'still here');
    const result = await new ProcessRunner(env).run(['printf', '[%s]', argument], { cwd: dir });
    expect(result.stdout).toBe(`[${argument}]`);
    expect(existsSync(join(dir, 'victim'))).toBe(true);
  });

  it('returns exit code, output and duration of a successful command', async () => {
    const result = await new ProcessRunner(env).run(['sh', '-c', 'echo out; echo err >&2']);
    expect(result).toMatchObject({ argv: ['sh', '-c', 'echo out; echo err >&2'], exitCode: 0, stdout: 'out\n', stderr: 'err\n' });
    expect(result.durationMs).toBeGreaterThanOrEqual(0);
  });

  it('throws a CommandError with the exit code and the tail of stderr when a command fails', async () => {
    const run = new ProcessRunner(env).run(['sh', '-c', 'for i in $(seq 1 80); do echo "line $i" >&2; done; exit 3']);
    const error = (await run.catch((e: unknown) => e)) as CommandError;
    expect(error).toBeInstanceOf(CommandError);
    expect(error.exitCode).toBe(1);
    expect(error.commandExitCode).toBe(3);
    expect(error.message).toMatch(/exited with code 3: line 76\nline 77\nline 78\nline 79\nline 80$/);
    expect(error.stderrTail.split('\n')).toHaveLength(50);
    expect(error.stderrTail.split('\n').at(-1)).toBe('line 80');
    expect(error.timedOut).toBe(false);
  });

  it('returns a failing result instead of throwing with allowFailure', async () => {
    const result = await new ProcessRunner(env).run(['sh', '-c', 'echo partial; exit 7'], { allowFailure: true });
    expect(result).toMatchObject({ exitCode: 7, stdout: 'partial\n' });
  });

  it('kills a command that runs past its timeout, also with allowFailure', async () => {
    const started = Date.now();
    const error = (await new ProcessRunner(env).run(['sleep', '30'], { timeoutMs: 300, allowFailure: true }).catch((e: unknown) => e)) as CommandError;
    expect(error).toBeInstanceOf(CommandError);
    expect(error.timedOut).toBe(true);
    expect(error.message).toContain('timed out after 300 ms');
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it('reports a program that does not exist as a command error, also with allowFailure', async () => {
    const error = await new ProcessRunner(env).run(['machineadm-no-such-program'], { allowFailure: true }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CommandError);
    expect((error as CommandError).message).toMatch(/machineadm-no-such-program could not run \(ENOENT\)/);
  });

  it('feeds input on stdin', async () => {
    const result = await new ProcessRunner(env).run(['cat'], { input: 'from stdin' });
    expect(result.stdout).toBe('from stdin');
  });

  it('gives the program only its own environment plus the extra variables', async () => {
    const result = await new ProcessRunner({ ...env, BASE: 'base' }).run(['sh', '-c', 'echo "$BASE/$EXTRA/${HOME:-no-home}"'], { env: { EXTRA: 'extra' } });
    expect(result.stdout).toBe('base/extra/no-home\n');
  });

  it('streams every line to onLine as it arrives, the last one also without a newline', async () => {
    const lines: string[] = [];
    await new ProcessRunner(env).run(['sh', '-c', 'echo one; echo two >&2; printf three'], { onLine: (line, stream) => lines.push(`${stream}:${line}`) });
    expect(lines.sort()).toEqual(['stderr:two', 'stdout:one', 'stdout:three']);
  });

  it('hands onLine a line ended by CR LF without its CR, also when the two arrive apart', async () => {
    const lines: [string, number][] = [];
    await new ProcessRunner(env).run(['sh', '-c', "printf 'disk missing\\r\\nit\\rs ok\\r'; sleep 0.2; printf '\\n\\r\\n'"], { onLine: (line, _stream, chars) => lines.push([line, chars]) });
    expect(lines).toEqual([['disk missing', 12], ['it\rs ok', 7], ['', 0]]);
  });

  it('keeps exactly the last 4 MiB of each stream of a command that prints more', async () => {
    const result = await new ProcessRunner(env).run(['sh', '-c', 'seq 1 2000000; seq 1 3 >&2']);
    const all = `${Array.from({ length: 2_000_000 }, (_, i) => i + 1).join('\n')}\n`;
    expect(result.stdout.length).toBe(4 * 1024 * 1024);
    expect(result.stdout).toBe(all.slice(-4 * 1024 * 1024));
    expect(result.stderr).toBe('1\n2\n3\n');
  });

  it('hands onLine the head of a line without a newline and its whole length, never the whole line', async () => {
    const size = 8 * 1024 * 1024;
    const lines: { head: string; chars: number }[] = [];
    await new ProcessRunner(env).run(['sh', '-c', `head -c ${size} /dev/zero | tr '\\0' x; echo; printf end`], { onLine: (head, _stream, chars) => lines.push({ head, chars }) });
    expect(lines.map((l) => [l.head.length, l.chars])).toEqual([[MAX_LINE_CHARS, size], [3, 3]]);
    expect(lines[0]!.head).toBe('x'.repeat(MAX_LINE_CHARS));
    expect(lines[1]!.head).toBe('end');
  });
});

// A command whose child outlives it would keep the pipes open: the grandchild writes its pid to a
// file so the test can check that it was stopped too.
function treeScript(dir: string, leader: 'exits' | 'waits' | 'ignores TERM'): [string, ...string[]] {
  const pidFile = join(dir, 'grandchild.pid');
  const trap = leader === 'ignores TERM' ? "trap '' TERM; " : '';
  const end = leader === 'exits' ? 'exit 0' : 'wait';
  return ['sh', '-c', `${trap}sh -c '${trap}echo $$ > "$1"; exec sleep 300' child ${pidFile} & while [ ! -s ${pidFile} ]; do sleep 0.01; done; echo started; ${end}`];
}

describe('ProcessRunner stops whole process trees', () => {
  it.each([
    ['a command whose child keeps the output pipe open after it exited', 'exits' as const],
    ['a command that waits for its child', 'waits' as const],
    ['a command tree that ignores SIGTERM', 'ignores TERM' as const],
  ])('times out %s at the timeout, kills the whole tree and stops waiting', async (_name, leader) => {
    const dir = scratchDir();
    const started = Date.now();
    const lines: string[] = [];
    const error = (await new ProcessRunner(env)
      .run(treeScript(dir, leader), { timeoutMs: 700, killGraceMs: 300, allowFailure: true, onLine: (l) => lines.push(l) })
      .catch((e: unknown) => e)) as CommandError;
    const elapsed = Date.now() - started;
    expect(error).toBeInstanceOf(CommandError);
    expect(error.timedOut).toBe(true);
    expect(error.message).toContain('timed out after 700 ms');
    expect(lines).toContain('started');
    // timeout + grace + the pipe grace at most, with room for a loaded machine; never the 300 s sleep.
    expect(elapsed).toBeGreaterThanOrEqual(700);
    expect(elapsed).toBeLessThan(4_000);
    const grandchild = Number(readFileSync(join(dir, 'grandchild.pid'), 'utf8'));
    await new Promise((r) => setTimeout(r, 100));
    expect(processRuns(grandchild)).toBe(false);
  });

  it('stops a running command tree when the run is interrupted, and starts no new command after it', async () => {
    const dir = scratchDir();
    const controller = new AbortController();
    const runner = new ProcessRunner(env, controller.signal);
    const running = runner.run(treeScript(dir, 'waits'), { killGraceMs: 300, onLine: (l) => l === 'started' && controller.abort('SIGTERM') });
    const error = (await running.catch((e: unknown) => e)) as CommandError;
    expect(error).toBeInstanceOf(CommandError);
    expect(error.interrupted).toBe(true);
    expect(error.timedOut).toBe(false);
    expect(error.message).toContain('interrupted (SIGTERM)');
    const grandchild = Number(readFileSync(join(dir, 'grandchild.pid'), 'utf8'));
    await new Promise((r) => setTimeout(r, 100));
    expect(processRuns(grandchild)).toBe(false);
    const next = (await runner.run(['true']).catch((e: unknown) => e)) as CommandError;
    expect(next.interrupted).toBe(true);
    expect(next.message).toBe('true not started: machineadm was interrupted (SIGTERM)');
  });

  it('reports a command killed by a signal from outside with the signal', async () => {
    const error = (await new ProcessRunner(env).run(['sh', '-c', 'kill -KILL $$']).catch((e: unknown) => e)) as CommandError;
    expect(error.message).toMatch(/was killed by SIGKILL/);
    expect(error.commandExitCode).toBeUndefined();
  });
});

describe('ProcessRunner.which', () => {
  it('finds an executable on PATH and nothing for a missing one', async () => {
    const dir = scratchDir();
    writeFileSync(join(dir, 'tool'), '#!/bin/sh\n', { mode: 0o755 });
    writeFileSync(join(dir, 'not-executable'), '', { mode: 0o644 });
    const runner = new ProcessRunner({ PATH: `/nonexistent:${dir}` });
    expect(await runner.which('tool')).toBe(join(dir, 'tool'));
    expect(await runner.which('missing')).toBeUndefined();
    // Even root cannot execute a file without any x bit.
    expect(await runner.which('not-executable')).toBeUndefined();
  });
});
