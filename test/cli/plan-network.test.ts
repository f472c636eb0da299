// The text plan lists, under each step, what it would fetch over the network (as the contract
// says: `network:`), with every URL shown as URLs are shown.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.ts';
import { scratchDir } from '../support/tmp.ts';

describe('plan', () => {
  it('lists each download of a step as "network:", its password and query hidden', async () => {
    const dir = scratchDir();
    const config = join(dir, 'c.json');
    writeFileSync(config, JSON.stringify({ apiVersion: 'machineadm.cluster.x-k8s.io/v1alpha1', kind: 'MachineConfig', spec: { files: [{ path: '/opt/tool.bin', source: { url: 'https://puller:plan-pw-3@files.example/tool.bin?sig=plan-sig-4', sha256: 'a'.repeat(64) } }] } }));
    const out = await runCli(['plan', '-c', config, '--root', join(dir, 'root')]);
    expect(out.code, out.stderr).toBe(0);
    expect(out.stdout).toContain('      network: download https://puller:<redacted>@files.example/tool.bin?sig=<redacted> for spec.files[0]');
    expect(out.stdout).not.toMatch(/plan-pw-3|plan-sig-4/);
  });
});
