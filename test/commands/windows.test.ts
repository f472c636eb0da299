// spec.commands on Windows: a shell line runs through PowerShell with -NoProfile -NonInteractive
// -Command; the plan shows it so, and the same arguments given to the real PowerShell 7 run the
// line and return its exit code (a thrown error: 1).
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { dump } from 'js-yaml';
import { describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.ts';
import { scratchDir } from '../support/tmp.ts';
import { findPowerShell } from '../support/pwsh.ts';
import { ProcessRunner } from '../../src/host/index.ts';
import { commandArgv } from '../../src/commands/run.ts';

const tools = findPowerShell();

describe('spec.commands on Windows', () => {
  it('plans a shell line as powershell.exe -NoProfile -NonInteractive -Command, and an argv as given', async () => {
    const dir = scratchDir('machineadm-win-commands-');
    const config = join(dir, 'machine.yaml');
    writeFileSync(config, dump({ apiVersion: 'machineadm.cluster.x-k8s.io/v1alpha1', kind: 'MachineConfig', spec: { commands: { boot: [{ name: 'defender', shell: "Set-MpPreference -DisableRealtimeMonitoring $true" }, { argv: ['C:\\Windows\\System32\\w32tm.exe', '/resync'] }] } } }));
    const out = await runCli(['plan', '-c', config, '--os', 'windows']);
    expect(out.code, out.stderr).toBe(0);
    expect(out.stdout).toContain('run spec.commands.boot[0] (defender) (powershell.exe -NoProfile -NonInteractive -Command "Set-MpPreference -DisableRealtimeMonitoring $true", timeout 300s)');
    expect(out.stdout).toContain('run spec.commands.boot[1] ("C:\\\\Windows\\\\System32\\\\w32tm.exe" /resync, timeout 300s)');
  });

  it('refuses before any change a line whose command line Windows would not start (over 32,766 characters), and takes one just under', async () => {
    const dir = scratchDir('machineadm-win-commands-');
    const config = join(dir, 'machine.yaml');
    const prefix = 'powershell.exe -NoProfile -NonInteractive -Command '.length + 2;
    const fits = `Write-Output '${'x'.repeat(32_766 - prefix - 'Write-Output \'\''.length)}'`;
    writeFileSync(config, dump({ apiVersion: 'machineadm.cluster.x-k8s.io/v1alpha1', kind: 'MachineConfig', spec: { commands: { boot: [{ shell: fits }, { name: 'long', shell: `${fits}x` }] } } }));
    const out = await runCli(['plan', '-c', config, '--os', 'windows']);
    expect(out.code, out.stderr).toBe(2);
    expect(out.stdout).toContain('run spec.commands.boot[0] (powershell.exe');
    expect(out.stdout).toContain('refuse spec.commands.boot[1] (long) (its command line would be 32767 characters, over the 32766 Windows allows: Windows would not start it');
    expect(out.stderr).toContain('spec.commands.boot[1] (long)');
  });

  it.skipIf('skip' in tools)('runs the line in PowerShell with those arguments and returns its exit code', async () => {
    const pwsh = (tools as { pwsh: string }).pwsh;
    const runner = new ProcessRunner();
    const run = async (line: string) => {
      const [, ...args] = commandArgv({ shell: line, timeoutSeconds: 60 }, 'windows');
      return runner.run([pwsh, ...args], { allowFailure: true, timeoutMs: 60_000 });
    };
    const ok = await run("Write-Output ('a' + 'b'); exit 3");
    expect(ok).toMatchObject({ exitCode: 3 });
    expect(ok.stdout.trim()).toBe('ab');
    const thrown = await run("throw 'boom'");
    expect(thrown.exitCode).toBe(1);
    expect(thrown.stderr).toContain('boom');
  });
});
