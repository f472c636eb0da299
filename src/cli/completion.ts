// Shell completion scripts for bash, zsh, fish and PowerShell, made from the command tree
// (command-tree.ts): the words each command takes, its options, which options take a value and
// the values they allow. The scripts hold that data; completing runs no machineadm.
import { flattenCommands, type CommandInfo, type OptionInfo } from './command-tree.ts';

export const SHELLS = ['bash', 'zsh', 'fish', 'powershell'] as const;
export type Shell = (typeof SHELLS)[number];

/** Values an argument takes beyond its choices, by command path (explain: the field paths). */
export type ArgumentValues = Record<string, readonly string[]>;

interface Table {
  key: string;
  subcommands: string[];
  options: string[];
  valued: string[];
  /** "option" -> its choices */
  choices: [string, readonly string[]][];
  args: string[];
}

function flagsOf(o: OptionInfo): string[] {
  return [o.short, o.long].filter((f): f is string => f !== undefined);
}

function tables(root: CommandInfo, extra: ArgumentValues): Table[] {
  return flattenCommands(root).map((c) => {
    const key = c.path.join('/');
    return {
      key,
      subcommands: c.subcommands.map((s) => s.path.at(-1)!),
      options: c.options.flatMap(flagsOf),
      valued: c.options.filter((o) => o.takesValue).flatMap(flagsOf),
      choices: c.options.filter((o) => o.choices).flatMap((o) => flagsOf(o).map((f): [string, readonly string[]] => [f, o.choices!])),
      args: [...c.args.flatMap((a) => a.choices ?? []), ...(extra[key] ?? [])],
    };
  });
}

// Words put in a shell's single quotes: only characters that mean nothing there are used.
function words(list: readonly string[]): string {
  for (const w of list) if (!/^[A-Za-z0-9_./:@+=-]+$/.test(w)) throw new Error(`"${w}" cannot be a completion word`);
  return list.join(' ');
}

// The lookup functions bash and zsh share: POSIX case statements, one line per command.
function shellLookups(all: Table[]): string {
  const fn = (name: string, pick: (t: Table) => string[]) =>
    [`_machineadm_${name}() {`, '  case "$1" in', ...all.filter((t) => pick(t).length).map((t) => `    '${t.key}') echo '${words(pick(t))}' ;;`), '  esac', '}'].join('\n');
  const choices = ['_machineadm_choices() {', '  case "$1" in', ...all.flatMap((t) => t.choices.map(([flag, values]) => `    '${t.key} ${flag}') echo '${words(values)}' ;;`)), '  esac', '}'].join('\n');
  // The command the words typed so far name (config/validate): options and their values are passed over.
  const walk = `_machineadm_command() {
  local key="" skip="" w
  for w in "$@"; do
    if [ -n "$skip" ]; then skip=""; continue; fi
    if [[ " $(_machineadm_valued "$key") " == *" $w "* ]]; then skip=1; continue; fi
    [[ "$w" == -* ]] && continue
    [[ " $(_machineadm_subcommands "$key") " == *" $w "* ]] && key="\${key:+$key/}$w"
  done
  echo "$key"
}`;
  return [fn('subcommands', (t) => t.subcommands), fn('options', (t) => t.options), fn('valued', (t) => t.valued), fn('args', (t) => t.args), choices, walk].join('\n');
}

function bash(all: Table[]): string {
  return `# machineadm completion for bash. Load it with
#   source <(machineadm completion bash)
# or install it: machineadm completion bash > /etc/bash_completion.d/machineadm
${shellLookups(all)}
# File names one per line, never split at spaces or expanded as globs; readline quotes them.
_machineadm_files() {
  mapfile -t COMPREPLY < <(compgen -f -- "$1")
  compopt -o filenames 2>/dev/null
}
_machineadm() {
  local cur="\${COMP_WORDS[COMP_CWORD]}" prev="" key
  [ "$COMP_CWORD" -gt 1 ] && prev="\${COMP_WORDS[COMP_CWORD-1]}"
  COMPREPLY=()
  key="$(_machineadm_command "\${COMP_WORDS[@]:1:COMP_CWORD-1}")"
  if [[ "$prev" == -* && " $(_machineadm_valued "$key") " == *" $prev "* ]]; then
    local values; values="$(_machineadm_choices "$key $prev")"
    if [ -n "$values" ]; then COMPREPLY=($(compgen -W "$values" -- "$cur")); else _machineadm_files "$cur"; fi
    return 0
  fi
  if [[ "$cur" == -* ]]; then COMPREPLY=($(compgen -W "$(_machineadm_options "$key")" -- "$cur")); return 0; fi
  local candidates; candidates="$(_machineadm_subcommands "$key") $(_machineadm_args "$key")"
  if [ -n "\${candidates// /}" ]; then COMPREPLY=($(compgen -W "$candidates" -- "$cur")); else _machineadm_files "$cur"; fi
  return 0
}
complete -F _machineadm machineadm
`;
}

function zsh(all: Table[]): string {
  return `#compdef machineadm
# machineadm completion for zsh. Load it with
#   source <(machineadm completion zsh)
# after compinit, or install it as _machineadm in a directory of $fpath.
${shellLookups(all)}
_machineadm() {
  local cur="\${words[CURRENT]}" prev="\${words[CURRENT-1]}" key
  local -a candidates
  key="$(_machineadm_command "\${(@)words[2,CURRENT-1]}")"
  if (( CURRENT > 2 )) && [[ "$prev" == -* && " $(_machineadm_valued "$key") " == *" $prev "* ]]; then
    candidates=(\${=$(_machineadm_choices "$key $prev")})
    if (( \${#candidates} )); then compadd -a candidates; else _files; fi
    return
  fi
  if [[ "$cur" == -* ]]; then candidates=(\${=$(_machineadm_options "$key")}); compadd -a candidates; return; fi
  candidates=(\${=$(_machineadm_subcommands "$key")} \${=$(_machineadm_args "$key")})
  if (( \${#candidates} )); then compadd -a candidates; else _files; fi
}
if (( \${+functions[compdef]} )); then
  compdef _machineadm machineadm
else
  print -u2 'machineadm completion: run "autoload -U compinit && compinit" before loading it'
fi
`;
}

function fishQuote(text: string): string {
  return `'${text.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
}

function fish(root: CommandInfo, extra: ArgumentValues): string {
  const lines = ['# machineadm completion for fish. Install it with', '#   machineadm completion fish > ~/.config/fish/completions/machineadm.fish', 'complete -c machineadm -f'];
  for (const c of flattenCommands(root)) {
    const subs = c.subcommands.map((s) => s.path.at(-1)!);
    // The condition under which this command's words apply: its own name was seen, and none of its subcommands.
    const own = c.path.length === 0 ? '__fish_use_subcommand' : `__fish_seen_subcommand_from ${c.path.at(-1)}`;
    const here = subs.length ? `${own}; and not __fish_seen_subcommand_from ${subs.join(' ')}` : own;
    for (const s of c.subcommands) lines.push(`complete -c machineadm -n ${fishQuote(here)} -a ${s.path.at(-1)} -d ${fishQuote(s.description)}`);
    for (const o of c.options) {
      const flags = [o.short ? `-s ${o.short.slice(1)}` : '', o.long ? `-l ${o.long.slice(2)}` : ''].filter(Boolean).join(' ');
      const value = o.choices ? `-x -a ${fishQuote(o.choices.join(' '))}` : o.takesValue ? '-r -F' : '';
      lines.push(`complete -c machineadm -n ${fishQuote(here)} ${flags} ${value}${value ? ' ' : ''}-d ${fishQuote(o.description)}`);
    }
    const args = [...c.args.flatMap((a) => a.choices ?? []), ...(extra[c.path.join('/')] ?? [])];
    if (args.length) lines.push(`complete -c machineadm -n ${fishQuote(here)} -a ${fishQuote(args.join(' '))}`);
    else if (c.args.length) lines.push(`complete -c machineadm -n ${fishQuote(here)} -F`);
  }
  return lines.join('\n') + '\n';
}

function psList(list: readonly string[]): string {
  return `@(${list.map((w) => `'${w.replace(/'/g, "''")}'`).join(', ')})`;
}

function powershell(all: Table[]): string {
  const map = (pick: (t: Table) => readonly string[]) => all.filter((t) => pick(t).length).map((t) => `  '${t.key}' = ${psList(pick(t))}`).join('\n');
  const choices = all.flatMap((t) => t.choices.map(([flag, values]) => `  '${t.key} ${flag}' = ${psList(values)}`)).join('\n');
  return `# machineadm completion for PowerShell. Load it with
#   machineadm completion powershell | Out-String | Invoke-Expression
# or add that line to $PROFILE.
Register-ArgumentCompleter -Native -CommandName machineadm, machineadm.exe -ScriptBlock {
  param($wordToComplete, $commandAst, $cursorPosition)
  $subcommands = @{
${map((t) => t.subcommands)}
  }
  $options = @{
${map((t) => t.options)}
  }
  $valued = @{
${map((t) => t.valued)}
  }
  $arguments = @{
${map((t) => t.args)}
  }
  $choices = @{
${choices}
  }
  $key = ''
  $before = @($commandAst.CommandElements | Where-Object { $_.Extent.EndOffset -lt $cursorPosition -or ($_.Extent.EndOffset -eq $cursorPosition -and $wordToComplete -eq '') } | ForEach-Object { $_.Extent.Text })
  if ($before.Count -gt 0 -and $before[-1] -eq $wordToComplete -and $wordToComplete -ne '') { $before = @($before | Select-Object -SkipLast 1) }
  $prev = ''
  for ($i = 1; $i -lt $before.Count; $i++) {
    $w = $before[$i]
    if ($valued[$key] -contains $w) { $i++; if ($i -ge $before.Count) { $prev = $w }; continue }
    if ($w.StartsWith('-')) { continue }
    if ($subcommands[$key] -contains $w) { $key = if ($key) { "$key/$w" } else { $w } }
  }
  if ($prev) {
    $candidates = $choices["$key $prev"]
    if (-not $candidates) { return }
  } elseif ($wordToComplete.StartsWith('-')) {
    $candidates = $options[$key]
  } else {
    $candidates = @($subcommands[$key]) + @($arguments[$key]) | Where-Object { $_ }
  }
  $candidates | Where-Object { $_ -like "$wordToComplete*" } | ForEach-Object {
    [System.Management.Automation.CompletionResult]::new($_, $_, 'ParameterValue', $_)
  }
}
`;
}

export function renderCompletion(shell: Shell, root: CommandInfo, extra: ArgumentValues = {}): string {
  switch (shell) {
    case 'bash':
      return bash(tables(root, extra));
    case 'zsh':
      return zsh(tables(root, extra));
    case 'fish':
      return fish(root, extra);
    case 'powershell':
      return powershell(tables(root, extra));
  }
}
