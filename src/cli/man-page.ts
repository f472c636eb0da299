// machineadm(1), made from the command tree (command-tree.ts): the same commands, options and
// descriptions as --help. scripts/man-page.mjs writes docs/machineadm.1; a test keeps it current.
import { flattenCommands, type CommandInfo, type OptionInfo } from './command-tree.ts';

/** Text as roff reads it: backslashes, dashes and a leading dot or quote escaped. */
function roff(text: string): string {
  return text
    .replace(/\\/g, '\\e')
    .replace(/-/g, '\\-')
    .split('\n')
    .map((line) => (/^[.']/.test(line) ? `\\&${line}` : line))
    .join('\n');
}

function optionLine(o: OptionInfo): string {
  const flags = [o.short, o.long].filter(Boolean).map((f) => `\\fB${roff(f!)}\\fR`).join(', ');
  return o.takesValue ? `${flags} \\fI${roff(o.valueName ?? 'value')}\\fR` : flags;
}

function commandSection(c: CommandInfo): string[] {
  const name = ['machineadm', ...c.path].join(' ');
  const lines = ['.SS "' + roff(`${name} ${c.usage}`).replace(/"/g, '""') + '"', roff(c.description)];
  for (const a of c.args) {
    lines.push('.TP', `\\fI${roff(a.name)}\\fR${a.required ? '' : ' (optional)'}`, roff([a.description, a.choices ? `one of: ${a.choices.join(', ')}` : ''].filter(Boolean).join('; ') || 'see the description above'));
  }
  for (const o of c.options) {
    const extra = [o.choices ? `one of: ${o.choices.join(', ')}` : '', o.defaultValue !== undefined ? `default: ${String(o.defaultValue)}` : ''].filter(Boolean).join('; ');
    lines.push('.TP', optionLine(o), roff(o.description + (extra ? ` (${extra})` : '')));
  }
  return lines;
}

const EXIT_STATUS: [string, string][] = [
  ['0', 'everything asked for is done (or was already)'],
  ['1', 'a step failed; the error names the step'],
  ['2', 'bad usage or configuration: nothing was changed'],
  ['3', 'verification failed (signature or checksum)'],
  ['4', 'a step needs a reboot; machineadm continues after it'],
  ['5', 'another run holds the state directory: nothing was changed'],
  ['6', 'a value the configuration takes from the machine could not be read (the metadata service did not answer): nothing was changed; the same run may succeed once it answers'],
  ['129, 130, 143', 'interrupted by SIGHUP, SIGINT or SIGTERM'],
];

export function renderManPage(root: CommandInfo, version: string): string {
  const commands = flattenCommands(root).slice(1);
  const lines = [
    `.TH MACHINEADM 1 "" "machineadm ${roff(version)}" "User Commands"`,
    '.SH NAME',
    `machineadm \\- ${roff(root.description.replace(/\.$/, '').replace(/^./, (c) => c.toLowerCase()))}`,
    '.SH SYNOPSIS',
    '.B machineadm',
    '.I command',
    '.RI [ options ]',
    '.SH DESCRIPTION',
    roff('machineadm is one executable that runs on a freshly booted Linux or Windows machine and makes it a Kubernetes node: it prepares the machine (kernel modules, sysctls, files, containerd), provisions it (domain join, then kubeadm init or join) and reports the outcome (a result file, the Cluster API sentinel, CloudEvents).'),
    '.PP',
    roff('Its configuration is a MachineConfig; "machineadm explain FIELD" describes each field and "machineadm config print-defaults" prints one with every default.'),
    '.SH OPTIONS',
    ...root.options.flatMap((o) => ['.TP', optionLine(o), roff(o.description)]),
    '.SH COMMANDS',
    ...commands.flatMap(commandSection),
    '.SH EXIT STATUS',
    ...EXIT_STATUS.flatMap(([code, meaning]) => ['.TP', `\\fB${code}\\fR`, roff(meaning)]),
    '.SH ENVIRONMENT',
    '.TP',
    '\\fBMACHINEADM_DEBUG\\fR',
    roff('when set (to anything but an empty string), the same as -v on the commands that take it, and an unexpected error prints its stack trace.'),
    '.TP',
    '\\fBNO_COLOR\\fR',
    roff('when set (to anything but an empty string), output on a terminal has no colours.'),
    '.SH FILES',
    '.TP',
    '\\fI/etc/machineadm/config.yaml\\fR, \\fI/etc/machineadm/config.d/*.yaml\\fR',
    roff('the default configuration sources'),
    '.TP',
    '\\fI/var/lib/machineadm/\\fR',
    roff('state, run history and the spool of undelivered events'),
    '.TP',
    '\\fI/run/machineadm/result.json\\fR',
    roff('the outcome of the last run'),
    '.SH SEE ALSO',
    roff('kubeadm(1), minisign(1); the contract: docs/contract.md; the API reference: docs/api-reference.md'),
  ];
  return lines.join('\n') + '\n';
}
