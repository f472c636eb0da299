// Gathering the machine's facts: the version probes of containerd and kubeadm run at once.
import { chmodSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { detectFacts } from '../../src/host/facts.ts';
import { ProcessRunner } from '../../src/host/exec.ts';
import { RootedFileSystem } from '../../src/host/fs.ts';
import { scratchDir } from '../support/tmp.ts';

/**
 * A tool that answers its version only while the other one runs too: each marks that it started,
 * then waits (at most 10 s) for the other's mark. Probed one after the other, the first one
 * never sees the second and fails.
 */
function rendezvousTool(bin: string, name: string, other: string, version: string): void {
  const path = join(bin, name);
  writeFileSync(
    path,
    `#!/bin/sh
touch "${bin}/started-${name}"
i=0
while [ ! -e "${bin}/started-${other}" ]; do
  i=$((i + 1))
  [ "$i" -gt 200 ] && { echo "${name}: ${other} did not start while I ran" >&2; exit 1; }
  sleep 0.05
done
echo "${version}"
`,
  );
  chmodSync(path, 0o755);
}

describe('detectFacts', () => {
  it('probes containerd and kubeadm at the same time', async () => {
    const bin = scratchDir();
    rendezvousTool(bin, 'containerd', 'kubeadm', 'containerd github.com/containerd/containerd 1.7.24 abc123');
    rendezvousTool(bin, 'kubeadm', 'containerd', 'v1.31.2');
    const facts = await detectFacts(new RootedFileSystem(scratchDir()), new ProcessRunner({ PATH: `${bin}:/usr/bin:/bin` }));
    expect(facts.containerdVersion).toBe('1.7.24');
    expect(facts.kubeadmVersion).toBe('v1.31.2');
  }, 30_000);
});
