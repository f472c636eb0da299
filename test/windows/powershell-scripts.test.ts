// The PowerShell of every Windows action: the exact text (golden files under test/golden/windows,
// UPDATE_GOLDEN=1 rewrites them), a parse by the real PowerShell grammar (tree-sitter-powershell)
// with no ERROR or MISSING node, and a syntax-tree check that every user value, hostile ones
// included, lands inside exactly one single-quoted (verbatim) string node and nowhere else.
// The grammar also reads a literal closed early by U+2019 without an error, so it cannot judge
// quoting alone: powershell-ast.property.test.ts has PowerShell's own parser do that.
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { psLiteral, windowsScripts, type WindowsScript } from '../../src/host/windows/index.ts';
import { scratchDir } from '../support/tmp.ts';

const ROOT = resolve(import.meta.dirname, '../..');
const GOLDEN = join(ROOT, 'test/golden/windows');
const update = process.env.UPDATE_GOLDEN === '1';
const dir = scratchDir('machineadm-ps-scripts-');

type Leaf = { type: string; text: string };
type Parsed = Record<string, { root: string; problems: string[]; leaves: Leaf[] }>;

function parse(scripts: readonly WindowsScript[]): Parsed[string][] {
  const files = scripts.map((s, i) => {
    const file = join(dir, `${i}-${s.action}.ps1`);
    writeFileSync(file, s.text);
    return file;
  });
  const out = execFileSync(process.execPath, ['--liftoff-only', join(ROOT, 'test/loaders/parse-powershell.mjs'), '--leaves', ...files], { encoding: 'utf8', cwd: ROOT, maxBuffer: 256 * 1024 * 1024 });
  const parsed = JSON.parse(out) as Parsed;
  return files.map((f) => parsed[f]!);
}

/** Every action with ordinary values (the golden files). */
/** `join` gives the domain join realistic values of its own (the golden files). */
function typical(v: { name: string; path: string; text: string; join?: { domain: string; user: string; ou: string; computer: string; server: string; blob: string } }): WindowsScript[] {
  return [
    windowsScripts.featureQuery('Containers'),
    windowsScripts.featureInstall('Containers'),
    windowsScripts.serviceQuery(v.name),
    windowsScripts.serviceCreate({ name: v.name, displayName: v.text, commandLine: `"${v.path}" --windows-service`, dependsOn: ['containerd', v.name] }),
    windowsScripts.serviceConfigure({ name: v.name, displayName: v.text, commandLine: `"${v.path}" --windows-service`, dependsOn: [v.name] }),
    windowsScripts.serviceStart(v.name),
    windowsScripts.serviceStop(v.name),
    windowsScripts.serviceRestart(v.name),
    windowsScripts.containerdRegister({ executable: v.path, config: `${v.path}.toml`, logFile: `${v.path}.log` }),
    windowsScripts.firewallQuery(v.name),
    windowsScripts.firewallAdd({ name: v.name, displayName: v.text, protocol: 'TCP', localPort: 10250 }),
    windowsScripts.privateDirectory(v.path),
    windowsScripts.aclQuery(v.path),
    windowsScripts.computerSystem(),
    windowsScripts.bootIdentity(),
    windowsScripts.resumeRegister({ taskName: v.name, taskPath: '\\machineadm\\', execute: v.path, argument: v.text, description: JSON.stringify([v.path, v.text]) }),
    windowsScripts.resumeQuery({ taskName: v.name, taskPath: '\\machineadm\\' }),
    windowsScripts.resumeRemove({ taskName: v.name, taskPath: '\\machineadm\\' }),
    windowsScripts.restart(v.text),
    windowsScripts.domainJoin({ domain: v.join?.domain ?? v.text, user: v.join?.user ?? v.text, ouPath: v.join?.ou ?? v.text, newName: v.join?.computer ?? v.name, server: v.join?.server ?? v.name }),
    windowsScripts.domainJoinOffline(v.join?.blob ?? v.path),
    windowsScripts.serviceRemove(v.name),
    windowsScripts.aclRestore({ path: v.path, sddl: 'O:BAG:SYD:AI(A;OICIID;FA;;;SY)' }),
    windowsScripts.firewallRemove(v.name),
    windowsScripts.domainLeave({ user: v.join?.user ?? v.text, workgroup: v.join ? 'WORKGROUP' : v.text, server: v.join?.server ?? v.name }),
    windowsScripts.domainLeaveLocal(v.join ? 'WORKGROUP' : v.text),
  ];
}

const ordinary = typical({ name: 'kubelet', path: 'C:\\Program Files\\containerd\\containerd.exe', text: 'machineadm: kubelet',
  join: { domain: 'corp.example', user: 'CORP\\k8s-joiner', ou: 'OU=Nodes,DC=corp,DC=example', computer: 'NODE-01', server: 'dc1.corp.example', blob: 'C:\\machineadm\\odj.txt' },
});

// Each carries a marker, so its pieces can be found wherever the parser put them.
const HOSTILE = [
  "O'Brien",
  'O’Brien',
  'x‘y‚z‛end',
  "'; Restart-Computer -Force; '",
  '’; Restart-Computer -Force; ‘',
  '$(Remove-Item -Recurse C:\\)',
  '${env:PATH} $env:USERNAME',
  'back`tick`n and `$',
  'a; Stop-Computer',
  'line one\nline two\r\nline three',
  '--% %PATH% | more',
  '–Force —Confirm ―WhatIf',
  '"double" “curly” „low” ‟',
  "@'\nhere\n'@",
  "ends with a quote'",
  "'",
  '',
];

const marked = HOSTILE.map((value, i) => (value === '' ? value : `MK${i}Q ${value}`));

describe('the PowerShell of each Windows action', () => {
  it.each(ordinary.map((s) => [s.action, s] as const))('%s is exactly its golden file', (action, script) => {
    const path = join(GOLDEN, `${action}.ps1`);
    if (update) writeFileSync(path, script.text);
    expect(existsSync(path), `${path} is missing (run with UPDATE_GOLDEN=1 and review the diff)`).toBe(true);
    expect(script.text).toBe(readFileSync(path, 'utf8'));
  });

  it('parses with the PowerShell grammar without ERROR or MISSING nodes, and a broken copy does not', () => {
    const parsed = parse([...ordinary, { action: 'broken', text: ordinary[0]!.text.replace('} else {', '} else {{'), values: {} }]);
    expect(parsed.slice(0, -1).map((p) => p.problems)).toEqual(ordinary.map(() => []));
    expect(parsed.at(-1)!.problems.length).toBeGreaterThan(0);
  });

  it('puts every hostile value into exactly one single-quoted string node and nowhere else', () => {
    // Every action with every string parameter (and list element) set to every hostile value.
    const cases: { script: WindowsScript; value: string }[] = [];
    for (const value of marked) {
      for (const script of typical({ name: value, path: value, text: value })) {
        if (Object.values(script.values).some((v) => v === value || (Array.isArray(v) && v.includes(value)))) cases.push({ script, value });
      }
      cases.push({ script: windowsScripts.serviceCreate({ name: 'n', displayName: 'd', commandLine: 'c', dependsOn: [value] }), value });
    }
    const parsed = parse(cases.map((c) => c.script));
    const failures: string[] = [];
    cases.forEach(({ script, value }, i) => {
      const { problems, leaves } = parsed[i]!;
      const label = `${script.action} with ${JSON.stringify(value)}`;
      if (problems.length) failures.push(`${label}: ${problems.join('; ')}`);
      const literal = psLiteral(value);
      const occurrences = Object.values(script.values).flat().filter((v) => v === value).length;
      const exact = leaves.filter((l) => l.type === 'verbatim_string_characters' && l.text === literal).length;
      if (exact < occurrences) failures.push(`${label}: ${literal} is not a whole single-quoted string node`);
      if (value === '') return;
      const marker = value.slice(0, value.indexOf(' '));
      // Values built from this one (a command line, a file next to it) are literals of their own.
      const literals = new Set(Object.values(script.values).flat().filter((v): v is string => typeof v === 'string').map(psLiteral));
      const elsewhere = leaves.filter((l) => l.text.includes(marker) && !(l.type === 'verbatim_string_characters' && literals.has(l.text)));
      if (elsewhere.length) failures.push(`${label}: also in ${elsewhere.map((l) => `${l.type} ${JSON.stringify(l.text)}`).join(', ')}`);
    });
    expect(cases.length).toBeGreaterThan(200);
    expect(failures).toEqual([]);
  });

  it.each([
    ["a'b", "'a''b'"],
    ['O’Brien', "'O’’Brien'"],
    ['x‚y‛', "'x‚‚y‛‛'"],
    ['‘’', "'‘‘’’'"],
    ['$(x) `n', "'$(x) `n'"],
  ])('writes %j as the literal %s', (value, literal) => {
    expect(psLiteral(value)).toBe(literal);
  });

  it('refuses a value with a NUL character', () => {
    expect(() => psLiteral('a\0b')).toThrow(/NUL/);
  });
});
