// bin/machineadm.js runs from a checkout on any Node the README allows: a Node that cannot strip
// TypeScript types hands the run to the Node 24 that `npm ci` put in node_modules, and its output
// and exit code come through unchanged.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const REPO = join(import.meta.dirname, '..', '..');
const PINNED = join(REPO, 'node_modules', 'node', 'bin', 'node');
// Node 24 without type stripping is what an older Node is to this file; the machine's own Node
// (Debian's, 20 here) is tried as well when there is one.
const SYSTEM_NODE = ['/usr/bin/node', '/usr/local/bin/node'].find((p) => existsSync(p) && !spawnSync(p, ['-p', 'process.features.typescript'], { encoding: 'utf8' }).stdout.trim().match(/strip|transform|true/));

const runners: [string, string, string[]][] = [
  ['Node 24 with type stripping turned off', PINNED, ['--no-experimental-strip-types']],
  ...(SYSTEM_NODE ? [[`the machine's own Node (${SYSTEM_NODE})`, SYSTEM_NODE, []] as [string, string, string[]]] : []),
];

function run(node: string, flags: string[], args: string[]) {
  const env: NodeJS.ProcessEnv = { ...process.env, PATH: '/usr/bin:/bin' };
  delete env.NODE_OPTIONS;
  return spawnSync(node, [...flags, 'bin/machineadm.js', ...args], { cwd: REPO, encoding: 'utf8', env, timeout: 60_000 });
}

describe('bin/machineadm.js on a Node that cannot strip types', () => {
  it.each(runners)('prints the help with %s', (_name, node, flags) => {
    const r = run(node, flags, ['--help']);
    expect(r.stderr).not.toContain('ERR_UNKNOWN_FILE_EXTENSION');
    expect(r.stdout).toContain('Usage: machineadm [options] [command]');
    expect(r.status).toBe(0);
  });

  it.each(runners)('passes the exit code and the error of a bad command through with %s', (_name, node, flags) => {
    const r = run(node, flags, ['no-such-command']);
    expect(r.stderr).toContain("error: unknown command 'no-such-command'");
    expect(r.status).toBe(2);
  });

  it.each(runners)('runs a command on the pinned Node 24 with %s', (_name, node, flags) => {
    const r = run(node, flags, ['version']);
    expect(r.stdout).toMatch(/^machineadm \S+ \(commit \S+, node v24\./);
    expect(r.status).toBe(0);
  });
});
