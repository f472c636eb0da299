// Off Windows machineadm writes its console output to the descriptor directly, and tells a
// terminal without opening Node's stream. A descriptor its reader made non-blocking fills and
// answers EAGAIN: the rest must still arrive, whole and in order, through Node's stream. On a
// terminal, the help still fits its width.
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const REPO = join(import.meta.dirname, '..', '..');
const PINNED = join(REPO, 'node_modules', 'node', 'bin', 'node');
const COMMAND = [PINNED, 'bin/machineadm.js', 'config', 'schema'];

// A pipe of 4 KiB, non-blocking on the writer's side, read only after the writer has filled it.
const SLOW_NON_BLOCKING_READER = `
import fcntl, os, subprocess, sys, time
r, w = os.pipe()
fcntl.fcntl(w, 1031, 4096)  # F_SETPIPE_SZ
fcntl.fcntl(w, fcntl.F_SETFL, fcntl.fcntl(w, fcntl.F_GETFL) | os.O_NONBLOCK)
child = subprocess.Popen(sys.argv[1:], stdout=w)
os.close(w)
time.sleep(0.5)
data = b''
while True:
    chunk = os.read(r, 65536)
    if not chunk:
        break
    data += chunk
sys.stdout.buffer.write(data)
sys.exit(child.wait())
`;

function env(): NodeJS.ProcessEnv {
  const e: NodeJS.ProcessEnv = { ...process.env };
  delete e.NODE_OPTIONS;
  return e;
}

describe('console output', () => {
  it('arrives whole through a non-blocking pipe that fills up (EAGAIN)', () => {
    const expected = spawnSync(COMMAND[0]!, COMMAND.slice(1), { cwd: REPO, env: env(), encoding: 'utf8', timeout: 60_000 });
    expect(expected.status).toBe(0);
    // Larger than the pipe, so the writer meets a full pipe.
    expect(expected.stdout.length).toBeGreaterThan(8 * 4096);
    const slow = spawnSync('python3', ['-c', SLOW_NON_BLOCKING_READER, ...COMMAND], { cwd: REPO, env: env(), encoding: 'utf8', timeout: 60_000 });
    expect(slow.stderr).not.toMatch(/EAGAIN|\n\s+at /);
    expect(slow.status).toBe(0);
    expect(slow.stdout).toBe(expected.stdout);
  });

  it.each([60, 120])('wraps the help at the width of a terminal of %i columns, and at 80 off a terminal', (columns) => {
    // script(1) runs the command on a pseudo-terminal of the width stty sets.
    const onTerminal = spawnSync('script', ['-qfec', `stty cols ${columns}; ${COMMAND.slice(0, 2).join(' ')} --help`, '/dev/null'], { cwd: REPO, env: env(), encoding: 'utf8', timeout: 60_000 });
    expect(onTerminal.status).toBe(0);
    const intro = 'Turns a freshly booted Linux or Windows machine into a Kubernetes node.';
    if (columns < intro.length) expect(onTerminal.stdout).toContain('Turns a freshly booted Linux or Windows machine into a\r\nKubernetes node.');
    else expect(onTerminal.stdout).toContain(intro);
    const offTerminal = spawnSync(COMMAND[0]!, [COMMAND[1]!, '--help'], { cwd: REPO, env: env(), encoding: 'utf8', timeout: 60_000 });
    expect(offTerminal.stdout).toContain(intro);
    expect(Math.max(...offTerminal.stdout.split('\n').filter((line) => line.startsWith('  ') && !line.startsWith('  $')).map((line) => line.length))).toBeLessThanOrEqual(80);
  });
});
