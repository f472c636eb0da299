// The phase commands probe the machine (containerd --version, kubeadm version) while the
// configuration loads, instead of after it: the probes mostly wait for a process to start.
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.ts';
import type { Io } from '../../src/cli/io.ts';
import { scratchDir } from '../support/tmp.ts';

const REPO = join(import.meta.dirname, '../..');

describe('plan', () => {
  it('has started probing containerd before the configuration has been read', async () => {
    const bin = scratchDir();
    const started = join(bin, 'containerd-started');
    writeFileSync(join(bin, 'containerd'), `#!/bin/sh\ntouch "${started}"\necho "containerd github.com/containerd/containerd 1.7.24 abc123"\n`);
    chmodSync(join(bin, 'containerd'), 0o755);
    let probeRunningWhileReading = false;
    let out = '';
    let err = '';
    const io: Io = {
      stdout: (text) => void (out += text),
      stderr: (text) => void (err += text),
      // Standard input is the configuration; it arrives only once the probe has started (or
      // after 10 s, when a run that probes only after reading its configuration would be stuck).
      readStdin: async () => {
        for (let i = 0; i < 200 && !probeRunningWhileReading; i++) {
          probeRunningWhileReading = existsSync(started);
          if (!probeRunningWhileReading) await sleep(50);
        }
        return readFileSync(join(REPO, 'examples', 'quickstart.yaml'));
      },
      env: { PATH: `${bin}:/usr/bin:/bin` },
      cwd: REPO,
      interactive: false,
    };
    const code = await main(['plan', '-c', '-', '--root', scratchDir()], io);
    expect(code, err).toBe(0);
    expect(probeRunningWhileReading).toBe(true);
    // And the plan is for the containerd found.
    expect(out).toContain('containerd 1.7.24');
  }, 30_000);
});
