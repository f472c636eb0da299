// The Windows recipes in docs/recipes/windows/: the answer file parsed by a real XML parser
// (Python's expat, the interpreter cloud-init brings) and each command line checked against the
// parameters the loader declares. With -File the command line is split by Windows, not parsed as
// PowerShell; the loader itself is parsed by the grammar in test/loaders/powershell-loader.test.ts.
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { missingRequirement } from '../support/environment.ts';
import { scratchDir } from '../support/tmp.ts';
import { findPowerShell } from '../support/pwsh.ts';
import { CLOUDBASE_INIT_REBOOT_AND_RERUN } from '../../src/phases/run.ts';

const REPO = resolve(import.meta.dirname, '../..');
const WINDOWS = join(REPO, 'docs/recipes/windows');
const LOADER = readFileSync(join(REPO, 'docs/loaders/machineadm-loader.ps1'), 'utf8');
const PYTHON = '/usr/bin/python3';
const skip = missingRequirement({ commands: [PYTHON] });
const dir = scratchDir('machineadm-win-recipes-');

// Prints the text of every CommandLine element, one JSON string per line; fails on malformed XML.
const COMMAND_LINES = `import json, sys, xml.etree.ElementTree as E
ns = {'u': 'urn:schemas-microsoft-com:unattend'}
for c in E.parse(sys.argv[1]).getroot().iterfind('.//u:FirstLogonCommands/u:SynchronousCommand/u:CommandLine', ns):
    print(json.dumps(c.text))`;

function commandLines(file: string) {
  return spawnSync(PYTHON, ['-c', COMMAND_LINES, file], { encoding: 'utf8' });
}

/** A Windows command line split as CommandLineToArgvW does for these (quotes group, no escapes used). */
function split(line: string): string[] {
  return [...line.matchAll(/"([^"]*)"|(\S+)/g)].map((m) => m[1] ?? m[2]!);
}

function checkLoaderCall(line: string, loaderPath: string, args = 'init -c C:\\ProgramData\\machineadm\\config.yaml') {
  const argv = split(line);
  expect(argv.slice(0, 7)).toEqual(['powershell.exe', '-NoProfile', '-NonInteractive', '-ExecutionPolicy', 'Bypass', '-File', loaderPath]);
  const declared = new Set([...LOADER.matchAll(/^\s*\[(?:string|int)\] \$(\w+)/gm)].map((m) => m[1]));
  const given: Record<string, string> = {};
  for (let i = 7; i < argv.length && !argv[i]!.startsWith('>'); i += 2) given[argv[i]!.replace(/^-/, '')] = argv[i + 1]!;
  for (const name of Object.keys(given)) expect(declared, `-${name} is not a parameter of the loader`).toContain(name);
  expect(given.BaseUrl).toMatch(/^https:\/\//);
  expect(given.Sha256).toMatch(/^[0-9a-f]{64}$/);
  expect(given.Arguments).toBe(args);
}

describe.skipIf(skip)('the Windows recipes', () => {
  it('unattend.xml is well-formed XML with one FirstLogonCommands entry that runs the loader with init, and a broken copy is refused', () => {
    const parsed = commandLines(join(WINDOWS, 'unattend.xml'));
    expect(parsed.stderr).toBe('');
    const lines = parsed.stdout.trim().split('\n').map((l) => JSON.parse(l) as string);
    expect(lines).toHaveLength(1);
    checkLoaderCall(lines[0]!, 'C:\\machineadm\\machineadm-loader.ps1');
    const broken = join(dir, 'broken.xml');
    writeFileSync(broken, readFileSync(join(WINDOWS, 'unattend.xml'), 'utf8').replace('</FirstLogonCommands>', ''));
    expect(commandLines(broken).status).not.toBe(0);
  });

  it('SetupComplete.cmd only registers and starts the task that runs machineadm after Setup: no restart and no machineadm inside it, logs, CRLF', () => {
    const text = readFileSync(join(WINDOWS, 'SetupComplete.cmd'), 'utf8');
    expect(text.split('\r\n').at(-1)).toBe('');
    expect(text.replace(/\r\n/g, '')).not.toContain('\n');
    const lines = text.split('\r\n').filter((l) => l && !/^(@echo off|rem )/.test(l));
    const log = ['>>', '%WINDIR%\\Setup\\Scripts\\machineadm.log', '2>&1'];
    const action = 'powershell.exe -NoProfile -NonInteractive -ExecutionPolicy Bypass -File %WINDIR%\\Setup\\Scripts\\machineadm-after-setup.ps1';
    expect(lines.map(split)).toEqual([
      ['schtasks.exe', '/Create', '/F', '/TN', 'machineadm-after-setup', '/RU', 'SYSTEM', '/RL', 'HIGHEST', '/SC', 'ONSTART', '/TR', action, ...log],
      ['schtasks.exe', '/Run', '/TN', 'machineadm-after-setup', ...log],
      ['exit', '/b', '0'],
    ]);
    // schtasks takes at most 261 characters of /TR, %WINDIR% expanded.
    expect(action.replace('%WINDIR%', 'C:\\Windows').length).toBeLessThanOrEqual(261);
    expect(text.split('\r\n').filter((l) => !l.startsWith('rem ')).join('\n')).not.toMatch(/shutdown|Restart-Computer|machineadm-loader/i);
  });

  it('machineadm-after-setup.ps1 parses, and calls the loader with init (machineadm restarts the machine itself), with parameters the loader declares', () => {
    const file = join(WINDOWS, 'machineadm-after-setup.ps1');
    const parsed = JSON.parse(execFileSync(process.execPath, ['--liftoff-only', join(REPO, 'test/loaders/parse-powershell.mjs'), file], { encoding: 'utf8', cwd: REPO })) as Record<string, { problems: string[] }>;
    expect(Object.values(parsed)[0]!.problems).toEqual([]);
    const text = readFileSync(file, 'utf8');
    expect(text).toMatch(/^\$argv = @\('-NoProfile', '-NonInteractive', '-ExecutionPolicy', 'Bypass', '-File', \(Join-Path \$PSScriptRoot 'machineadm-loader\.ps1'\)\)$/m);
    expect(text).toMatch(/^foreach \(\$name in @\('BaseUrl', 'Sha256', 'Arguments'\)\) \{ \$argv \+= @\("-\$name", \$loader\[\$name\]\) \}$/m);
    expect(text).toMatch(/^& powershell\.exe @argv 2>&1 \| ForEach-Object \{ \[string\]\$_ \} \| Add-Content -LiteralPath \$log$/m);
    const splat = /^\$loader = @\{\n([\s\S]*?)\n\}$/m.exec(text)![1]!;
    const given = Object.fromEntries([...splat.matchAll(/^\s+(\w+) = '([^']*)'$/gm)].map((m) => [m[1]!, m[2]!]));
    const declared = new Set([...LOADER.matchAll(/^\s*\[(?:string|int)\] \$(\w+)/gm)].map((m) => m[1]));
    for (const name of Object.keys(given)) expect(declared, `-${name} is not a parameter of the loader`).toContain(name);
    expect(given).toMatchObject({ BaseUrl: expect.stringMatching(/^https:\/\//), Sha256: expect.stringMatching(/^[0-9a-f]{64}$/), Arguments: 'init -c C:\\ProgramData\\machineadm\\config.yaml' });
  });

  const tools = findPowerShell();
  /** A folder for PATH with powershell.exe, as Windows has it there: here PowerShell 7. */
  const powershellExe = (work: string, pwsh: string) => {
    const bin = join(work, 'bin');
    mkdirSync(bin);
    writeFileSync(join(bin, 'powershell.exe'), `#!/bin/sh\nexec '${pwsh}' "$@"\n`, { mode: 0o755 });
    return bin;
  };
  it.skipIf('skip' in tools)('machineadm-after-setup.ps1 waits until Setup is complete, runs the loader once, removes its task and ends with machineadm\'s exit code; gives up after its wait, running nothing', () => {
    const pwsh = (tools as { pwsh: string }).pwsh;
    const run = (states: string[], waitMinutes: number) => {
      const work = scratchDir('machineadm-after-setup-');
      writeFileSync(join(work, 'machineadm-after-setup.ps1'), readFileSync(join(WINDOWS, 'machineadm-after-setup.ps1')));
      // The loader beside it: records what it was given, says something, exits 4 (a restart is coming).
      writeFileSync(join(work, 'machineadm-loader.ps1'), "param([string]$BaseUrl, [string]$Sha256, [string]$Arguments)\nAdd-Content -LiteralPath (Join-Path $PSScriptRoot 'calls') -Value \"loader $Arguments\"\nWrite-Output 'machineadm: restart to finish'\nexit 4\n");
      const bin = powershellExe(work, pwsh);
      const stubs = `
        $global:states = [System.Collections.Generic.Queue[string]]::new([string[]]@(${states.map((st) => `'${st}'`).join(', ')}))
        function Get-ItemProperty { param([string]$LiteralPath, [string]$Name, $ErrorAction)
          Add-Content -LiteralPath '${work}/calls' -Value "state $LiteralPath $Name"
          $s = if ($global:states.Count -gt 1) { $global:states.Dequeue() } else { $global:states.Peek() }
          [pscustomobject]@{ ImageState = $s } }
        function Start-Sleep { param([int]$Seconds) Add-Content -LiteralPath '${work}/calls' -Value "sleep $Seconds" }
        function Unregister-ScheduledTask { param([string]$TaskName, [switch]$Confirm) Add-Content -LiteralPath '${work}/calls' -Value "unregister $TaskName confirm=$Confirm" }
        & '${work}/machineadm-after-setup.ps1' -WaitMinutes ${waitMinutes}
        exit $LASTEXITCODE`;
      const result = spawnSync(pwsh, ['-NoLogo', '-NoProfile', '-NonInteractive', '-Command', stubs], { encoding: 'utf8', timeout: 60_000, env: { ...process.env, PATH: `${bin}:${process.env.PATH}` } });
      const read = (name: string) => { try { return readFileSync(join(work, name), 'utf8'); } catch { return ''; } };
      return { status: result.status, calls: read('calls').trim().split('\n'), log: read('machineadm.log') };
    };
    const state = 'state HKLM:\\SOFTWARE\\Microsoft\\Windows\\CurrentVersion\\Setup\\State ImageState';
    const done = run(['IMAGE_STATE_UNDEPLOYABLE', 'IMAGE_STATE_UNDEPLOYABLE', 'IMAGE_STATE_COMPLETE'], 60);
    expect(done.calls).toEqual([state, 'sleep 5', state, 'sleep 5', state, 'loader init -c C:\\ProgramData\\machineadm\\config.yaml', 'unregister machineadm-after-setup confirm=False']);
    expect(done.status).toBe(4);
    expect(done.log).toContain('machineadm: restart to finish');
    expect(done.log).toContain('machineadm exit code 4');
    const never = run(['IMAGE_STATE_UNDEPLOYABLE'], 0);
    expect(never.status).toBe(1);
    expect(never.calls.filter((c) => c.startsWith('loader') || c.startsWith('unregister'))).toEqual([]);
    expect(never.log).toContain('Windows Setup did not finish within 0 minutes: machineadm did not run (the task runs again at the next boot)');
  });

  it.skipIf('skip' in tools)('machineadm-after-setup.ps1 keeps in machineadm.log the messages the loader writes to standard error itself, such as why it ran no machineadm', () => {
    const pwsh = (tools as { pwsh: string }).pwsh;
    const work = scratchDir('machineadm-after-setup-');
    writeFileSync(join(work, 'machineadm-after-setup.ps1'), readFileSync(join(WINDOWS, 'machineadm-after-setup.ps1')));
    // As the loader's Stop-Loader does: straight to the process's standard error, then its exit code.
    writeFileSync(join(work, 'machineadm-loader.ps1'), "param([string]$BaseUrl, [string]$Sha256, [string]$Arguments)\n[Console]::Error.WriteLine(\"machineadm-loader: error: SHA-256 of $BaseUrl/machineadm-windows-x64.exe is 00, expected ${Sha256}: not installing or running it\")\nexit 3\n");
    const bin = powershellExe(work, pwsh);
    const stubs = `
      function Get-ItemProperty { param([string]$LiteralPath, [string]$Name, $ErrorAction) [pscustomobject]@{ ImageState = 'IMAGE_STATE_COMPLETE' } }
      function Unregister-ScheduledTask { param([string]$TaskName, [switch]$Confirm) }
      & '${work}/machineadm-after-setup.ps1'
      exit $LASTEXITCODE`;
    const result = spawnSync(pwsh, ['-NoLogo', '-NoProfile', '-NonInteractive', '-Command', stubs], { encoding: 'utf8', timeout: 60_000, env: { ...process.env, PATH: `${bin}:${process.env.PATH}` } });
    expect(result.status, result.stderr).toBe(3);
    const log = readFileSync(join(work, 'machineadm.log'), 'utf8');
    expect(log).toContain('machineadm-loader: error: SHA-256 of https://bucket.example/machineadm/v0.1.0/machineadm-windows-x64.exe is 00, expected 0123456789abcdef');
    expect(log).toContain('machineadm exit code 3');
  });

  it('cloudbase-init-user-data.ps1 is a #ps1_sysnative script that parses, writes a valid MachineConfig and hands machineadm\'s exit code (1003 for a restart) to cloudbase-init', () => {
    const file = join(WINDOWS, 'cloudbase-init-user-data.ps1');
    const text = readFileSync(file, 'utf8');
    expect(text.split('\n')[0]).toBe('#ps1_sysnative');
    const parsed = JSON.parse(execFileSync(process.execPath, ['--liftoff-only', join(REPO, 'test/loaders/parse-powershell.mjs'), file], { encoding: 'utf8', cwd: REPO })) as Record<string, { problems: string[] }>;
    expect(Object.values(parsed)[0]!.problems).toEqual([]);
    const lines = text.split('\n').filter((l) => l && !l.startsWith('#'));
    expect(lines.at(-3)).toBe("$ErrorActionPreference = 'Continue'");
    expect(lines.at(-2)).toBe("& (Join-Path $env:ProgramFiles 'machineadm\\machineadm.exe') init -c $config --cloudbase-init");
    expect(lines.at(-1)).toBe('exit $LASTEXITCODE');
    const yaml = /@'\n([\s\S]*?)\n'@/.exec(text)![1]!;
    const config = join(dir, 'cloudbase-init.yaml');
    writeFileSync(config, yaml);
    const validated = spawnSync(process.execPath, [join(REPO, 'bin/machineadm.js'), 'config', 'validate', '-c', config], { encoding: 'utf8', cwd: REPO });
    expect(validated.status, validated.stderr).toBe(0);
    // The code machineadm ends with for cloudbase-init, as the contract gives it.
    expect(readFileSync(join(REPO, 'docs/contract/cli.md'), 'utf8')).toContain('`--cloudbase-init`');
    expect(CLOUDBASE_INIT_REBOOT_AND_RERUN).toBe(1003);
  });
});
