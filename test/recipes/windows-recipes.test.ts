// The Windows recipes in docs/recipes/windows/: the answer file parsed by a real XML parser
// (Python's expat, the interpreter cloud-init brings) and each command line checked against the
// parameters the loader declares. With -File the command line is split by Windows, not parsed as
// PowerShell; the loader itself is parsed by the grammar in test/loaders/powershell-loader.test.ts.
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { missingRequirement } from '../support/environment.ts';
import { scratchDir } from '../support/tmp.ts';
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

  it('SetupComplete.cmd runs init with --no-reboot and hands the restart to Windows after it ends (never restarts inside it), logs, CRLF', () => {
    const text = readFileSync(join(WINDOWS, 'SetupComplete.cmd'), 'utf8');
    expect(text.split('\r\n').at(-1)).toBe('');
    expect(text.replace(/\r\n/g, '')).not.toContain('\n');
    const lines = text.split('\r\n').filter((l) => l && !/^(@echo off|rem )/.test(l));
    expect(lines).toHaveLength(5);
    // machineadm itself never restarts here: with --no-reboot a step that needs one ends the run with exit 4.
    checkLoaderCall(lines[0]!, '%WINDIR%\\Setup\\Scripts\\machineadm-loader.ps1', 'init -c C:\\ProgramData\\machineadm\\config.yaml --no-reboot');
    expect(lines[0]).toMatch(/ >> "%WINDIR%\\Setup\\Scripts\\machineadm\.log" 2>&1$/);
    expect(lines[1]).toBe('set MACHINEADM_EXIT=%ERRORLEVEL%');
    expect(lines[2]).toContain('%MACHINEADM_EXIT%');
    // Only on exit 4, and with a delay: shutdown.exe returns at once, the script ends, then Windows restarts.
    expect(split(lines[3]!)).toEqual(['if', '%MACHINEADM_EXIT%', 'EQU', '4', 'shutdown.exe', '/r', '/t', '60', '/d', 'p:4:1', '/c', 'machineadm: restart to finish preparing this node; it resumes at boot', '>>', '%WINDIR%\\Setup\\Scripts\\machineadm.log', '2>&1']);
    expect(lines[4]).toBe('exit /b 0');
    expect(text).not.toMatch(/Restart-Computer|shutdown(\.exe)? \/r \/t 0\b/i);
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
