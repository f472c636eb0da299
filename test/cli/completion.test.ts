// The completion scripts load in real shells and complete machineadm's subcommands, flags and
// flag values, as the command tree defines them.
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.ts';
import { missingRequirement } from '../support/environment.ts';
import { findPowerShell } from '../support/pwsh.ts';
import { scratchDir } from '../support/tmp.ts';
import { commandPaths } from '../support/contract-reference.ts';

const dir = scratchDir();

async function script(shell: string): Promise<string> {
  const { code, stdout, stderr } = await runCli(['completion', shell]);
  expect(stderr).toBe('');
  expect(code).toBe(0);
  const file = join(dir, `machineadm.${shell === 'powershell' ? 'ps1' : shell}`);
  writeFileSync(file, stdout);
  return file;
}

// Each case: the words typed so far (the last one being completed) and what must be offered.
const CASES: [string, string[], string[]][] = [
  ['a subcommand', ['machineadm', 'con'], ['config']],
  ['a subcommand of config', ['machineadm', 'config', 'v'], ['validate', 'view']],
  ['a flag of init', ['machineadm', 'init', '--o'], ['--offline', '--output', '--only', '--os']],
  ['the values of -o', ['machineadm', 'init', '-c', 'node.yaml', '-o', ''], ['text', 'json', 'yaml']],
  ['a field path for explain', ['machineadm', 'explain', 'spec.kubernetes.node.ta'], ['spec.kubernetes.node.taints', 'spec.kubernetes.node.taints.key', 'spec.kubernetes.node.taints.value', 'spec.kubernetes.node.taints.effect']],
];

// One shell process runs every case (a zsh compinit is slow on a busy machine); each case's
// candidates are printed after a line "== N".
function runCases(shell: 'bash' | 'zsh', file: string): { registration: string; candidates: string[][] } {
  const lines = shell === 'bash'
    ? [`source '${file}'`, 'complete -p machineadm']
    : [
        // compinit registers the function for machineadm; compadd (zsh filters by the typed prefix
        // itself) and the fall back to file names are recorded.
        'autoload -U compinit && compinit -u -D',
        `source '${file}'`,
        'print -r -- "registered: $_comps[machineadm]"',
        'compadd() { [[ $1 == -a ]] && print -rl -- ${(P)2}; }',
        '_files() { print -r -- "(files)"; }',
      ];
  CASES.forEach(([, typed], n) => {
    const words = typed.map((w) => `'${w}'`).join(' ');
    lines.push(`echo '== ${n}'`);
    if (shell === 'bash') lines.push(`COMP_WORDS=(${words}); COMP_CWORD=${typed.length - 1}; _machineadm; printf '%s\n' "\${COMPREPLY[@]}"`);
    else lines.push(`words=(${words}); CURRENT=${typed.length}; _machineadm`);
  });
  const out = execFileSync(shell, shell === 'bash' ? ['--norc', '--noprofile', '-c', lines.join('\n')] : ['-f', '-c', lines.join('\n')], { encoding: 'utf8' });
  const [head = '', ...parts] = out.split(/^== \d+\n/m);
  return { registration: head.trim(), candidates: parts.map((p) => p.split('\n').filter(Boolean)) };
}

describe.each([
  ['bash', 'complete -F _machineadm machineadm'],
  ['zsh', 'registered: _machineadm'],
] as const)('%s completion', (shell, registration) => {
  const skip = missingRequirement({ commands: [shell] });
  let results: { registration: string; candidates: string[][] } | undefined;
  const results_ = async () => (results ??= runCases(shell, await script(shell)));

  it.skipIf(skip)('loads and registers itself for machineadm', async () => {
    expect((await results_()).registration).toBe(registration);
  });

  it.skipIf(skip).each(CASES.map((c, n) => [c[0], n, c[1], c[2]] as const))('completes %s', async (_what, n, typed, offered) => {
    const current = typed.at(-1)!;
    expect((await results_()).candidates[n]!.filter((c) => c.startsWith(current)).sort()).toEqual([...offered].sort());
  });
});

describe.skipIf(missingRequirement({ commands: ['bash'] }))('bash completion of file names', () => {
  it.each([
    ['the value of -c', ['machineadm', 'init', '-c', 'my']],
    ["verify's file", ['machineadm', 'verify', 'my']],
  ])('offers a name with a space or a glob character as one word, for %s', async (_what, typed) => {
    const file = await script('bash');
    const files = join(dir, 'files');
    mkdirSync(files, { recursive: true });
    for (const name of ['my node.yaml', 'my*.yaml', 'other.yaml']) writeFileSync(join(files, name), '');
    const words = typed.map((w) => `'${w}'`).join(' ');
    const out = execFileSync('bash', ['--norc', '--noprofile', '-c', `source '${file}'; COMP_WORDS=(${words}); COMP_CWORD=${typed.length - 1}; _machineadm; printf '%s\\n' "\${COMPREPLY[@]}"`], { cwd: files, encoding: 'utf8' });
    expect(out.split('\n').filter(Boolean).sort()).toEqual(['my node.yaml', 'my*.yaml']);
  });

  it.skipIf(missingRequirement({ commands: ['zsh'] }))('puts the name in with its space quoted when Tab is pressed', async () => {
    const file = await script('bash');
    const files = join(dir, 'tab-files');
    mkdirSync(files, { recursive: true });
    for (const name of ['my node.yaml', 'my notes.txt']) writeFileSync(join(files, name), '');
    const ran = join(dir, 'ran-file-name');
    const driver = [
      'zmodload zsh/zpty',
      "zpty sh 'bash --norc --noprofile -i'",
      `zpty -w sh 'cd ${files}; RAN=${ran}; machineadm() { printf "%s\\n" "$@" > "$RAN"; }; source ${file}'`,
      "zpty -w -n sh $'machineadm verify my\\\\ nod\\t'",
      'sleep 0.5',
      "zpty -w -n sh $'\\r'",
      `for i in {1..150}; do [[ -s '${ran}' ]] && break; sleep 0.2; done`,
      'zpty -d sh',
    ].join('\n');
    execFileSync('zsh', ['-f', '-c', driver], { timeout: 60_000 });
    expect(readFileSync(ran, 'utf8')).toBe('verify\nmy node.yaml\n');
  }, 60_000);
});

// The scripts in the shells' own line editors (readline, ZLE): a pseudo-terminal from zsh's zpty
// module, Tab pressed where an operator would press it, and the command line that runs recorded.
describe.skipIf(missingRequirement({ commands: ['zsh', 'bash'] }))('typing with Tab in an interactive shell', () => {
  it.each([
    ['bash', "bash --norc --noprofile -i", `machineadm() { printf '%s\\n' "$*" > "$RAN"; }`],
    ['zsh', 'zsh -f -i', `autoload -U compinit; compinit -u -D; machineadm() { print -r -- "$*" > "$RAN"; }`],
  ])('%s completes machineadm con<Tab>vali<Tab>--out<Tab>yaml to config validate --output yaml', async (shell, start, setup) => {
    const file = await script(shell);
    const ran = join(dir, `ran-${shell}`);
    const driver = [
      'zmodload zsh/zpty',
      `zpty sh '${start}'`,
      `zpty -w sh 'RAN=${ran}; ${setup.replace(/'/g, "'\\''")}; source ${file}'`,
      "zpty -w -n sh $'machineadm con\\t'",
      "zpty -w -n sh $'vali\\t'",
      "zpty -w -n sh $'--out\\t'",
      "zpty -w sh 'yaml'",
      `for i in {1..150}; do [[ -s '${ran}' ]] && break; sleep 0.2; done`,
      'zpty -d sh',
    ].join('\n');
    execFileSync('zsh', ['-f', '-c', driver], { timeout: 60_000 });
    expect(readFileSync(ran, 'utf8')).toBe('config validate --output yaml\n');
  }, 60_000);
});

// fish answers `complete -C LINE` with what it would offer, one "candidate<TAB>description" a line.
describe.skipIf(missingRequirement({ commands: ['fish'] }))('fish completion', () => {
  it.each(CASES)('completes %s', async (_what, typed, offered) => {
    const file = await script('fish');
    const out = execFileSync('fish', ['--no-config', '-c', `source '${file}'; complete -C '${typed.slice(0, -1).join(' ')} ${typed.at(-1)}'`], { encoding: 'utf8' });
    expect(out.split('\n').filter(Boolean).map((l) => l.split('\t')[0]).sort()).toEqual([...offered].sort());
  });
});

describe.skipIf(missingRequirement({ commands: ['zsh'] }))('zsh completion loaded without compinit', () => {
  it('says to run compinit first', async () => {
    const file = await script('zsh');
    const run = spawnSync('zsh', ['-f', '-c', `source '${file}'`], { encoding: 'utf8' });
    expect(run.stderr).toBe('machineadm completion: run "autoload -U compinit && compinit" before loading it\n');
  });
});

const pwsh = findPowerShell();
describe.skipIf('skip' in pwsh)('PowerShell completion', () => {
  it('completes a subcommand, a flag and its values through TabExpansion2', async () => {
    const file = await script('powershell');
    const lines = ['machineadm con', 'machineadm init --o', 'machineadm init -o '];
    const command = `. '${file}'; foreach ($line in @(${lines.map((l) => `'${l}'`).join(', ')})) { $r = TabExpansion2 -inputScript $line -cursorColumn $line.Length; ($r.CompletionMatches | ForEach-Object CompletionText) -join ' ' }`;
    const out = execFileSync((pwsh as { pwsh: string }).pwsh, ['-NoProfile', '-NonInteractive', '-Command', command], { encoding: 'utf8' });
    expect(out.trim().split(/\r?\n/)).toEqual(['config', '--offline --output --only --os', 'text json yaml']);
  }, 60_000);
});

describe('the completion scripts', () => {
  it.each(['bash', 'zsh', 'fish', 'powershell'])('for %s name every command of the command line', async (shell) => {
    const { stdout } = await runCli(['completion', shell]);
    for (const path of commandPaths()) expect(stdout, path.join(' ')).toMatch(new RegExp(`\\b${path.at(-1)}\\b`));
  });

  it('refuses a shell it does not know (exit 2)', async () => {
    const { code, stderr } = await runCli(['completion', 'tcsh']);
    expect(code).toBe(2);
    expect(stderr).toContain("'tcsh' is invalid for argument 'shell'. Allowed choices are bash, zsh, fish, powershell.");
  });
});
