// -c - reads standard input from a real process: a configuration arrives whole, and an endless or
// huge stream is cut at the source size limit instead of being read into memory.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const REPO = join(import.meta.dirname, '../..');
const NODE = join(REPO, 'node_modules/.bin/node');

function validateFromStdin(feed: (stdin: NodeJS.WritableStream) => void): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(NODE, ['bin/machineadm.js', 'config', 'validate', '-c', '-'], { cwd: REPO, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.stdin.on('error', () => {}); // machineadm stops reading: the pipe breaks, as it should
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    feed(child.stdin);
  });
}

describe('configuration from standard input', () => {
  it('is read whole when it is a MachineConfig', async () => {
    const run = await validateFromStdin((stdin) => stdin.end('apiVersion: machineadm.cluster.x-k8s.io/v1alpha1\nkind: MachineConfig\nspec:\n  kernelModules: [overlay]\n'));
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain('configuration is valid');
  });

  it('stops at the size limit of a stream that never ends, with exit 2', async () => {
    let sent = 0;
    const run = await validateFromStdin((stdin) => {
      const chunk = Buffer.alloc(1 << 20, 0x61);
      // Far more than the limit; machineadm must give up long before the end.
      const pump = (): void => {
        while (sent < 512 << 20) {
          sent += chunk.length;
          if (!stdin.write(chunk)) return void stdin.once('drain', pump);
        }
        stdin.end();
      };
      pump();
    });
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/stdin.*larger than the limit of 8 MiB/);
    expect(sent).toBeLessThan(512 << 20);
  });
});
