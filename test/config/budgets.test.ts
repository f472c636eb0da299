// Budgets on totals (src/config/budgets.ts, docs/contract/configuration.md 3.2): limits per piece
// do not bound their product (YAML aliases, MIME parts, drop-ins, endpoints multiply pieces), so
// each hostile input here is refused with exit 2 and a message naming what was too big and the
// limit, before anything changes; and the largest inputs the budgets let through are read. Every
// run is the CLI from source under GNU time, whose peak RSS must be 256 MiB or less, inside
// `prlimit --as` so that a regression dies at 2 GB instead of taking the shared machine's memory.
// The measurements themselves are scripts/hostile-inputs.mjs's.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { yamlPieces } from '../../src/config/document.ts';
import { unifiedDiff } from '../../src/engine/diff.ts';
import { missingRequirement } from '../support/environment.ts';
import { scratchDir } from '../support/tmp.ts';
import { snapshotTree } from '../support/tree.ts';

const REPO = join(import.meta.dirname, '../..');
const NODE = join(REPO, 'node_modules/.bin/node');
const CLI = join(REPO, 'bin/machineadm.js');
const TIME = '/usr/bin/time';
const skip = existsSync(TIME) ? missingRequirement({ commands: ['prlimit'] }) : missingRequirement({ commands: ['GNU time (/usr/bin/time)'] });
const PEAK_RSS_LIMIT_KIB = 256 * 1024;
const MiB = 1024 * 1024;
const HEAD = 'apiVersion: machineadm.cluster.x-k8s.io/v1alpha1\nkind: MachineConfig\n';
const base = scratchDir('machineadm-budgets-');
let n = 0;

// gzip+base64 of `size` bytes of one value: a few KiB that inflate to `size` (made once per size).
const bombs = new Map<string, string>();
const gzipBomb = (size: number, fill = 0): string => {
  const key = `${size}/${fill}`;
  if (!bombs.has(key)) bombs.set(key, gzipSync(Buffer.alloc(size, fill), { level: 9 }).toString('base64'));
  return bombs.get(key)!;
};
const write = (dir: string, name: string, text: string) => {
  writeFileSync(join(dir, name), text);
  return join(dir, name);
};
const mime = (parts: string[]) => `MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary="B"\n\n${parts.join('')}--B--\n`;
const machineConfigPart = (body: string) => `--B\nContent-Type: application/machineadm.cluster.x-k8s.io\n\n${HEAD}${body}`;
const aliasedFiles = (size: number) =>
  `${HEAD}spec:\n  files:\n    - path: /etc/bomb/0\n      encoding: gzip+base64\n      content: &bomb ${gzipBomb(size)}\n` +
  Array.from({ length: 299 }, (_, i) => `    - path: /etc/bomb/${i + 1}\n      encoding: gzip+base64\n      content: *bomb\n`).join('');
const dropIns = (dir: string, count: number, text: (i: number) => string) => {
  const d = join(dir, 'config.d');
  mkdirSync(d);
  for (let i = 0; i < count; i++) writeFileSync(join(d, `${String(i).padStart(5, '0')}.yaml`), text(i));
  return d;
};

interface Case {
  what: string;
  /** Writes the input into dir; returns the -c sources. */
  setup(dir: string): string | string[];
  command: 'plan' | 'init' | 'config validate';
}

// [what is refused, the command, what stderr says]
const refused: [string, Case['command'], (dir: string) => string | string[], RegExp][] = [
  ['300 YAML aliases of a gzip+base64 content that inflates to 15 MiB', 'plan', (d) => write(d, 'config.yaml', aliasedFiles(15 * MiB)), /config\.yaml:10:7: spec\.files\[1\]\.content: with this file, the inline contents of spec\.files are more than 16 MiB together, decoded \(a YAML alias counts each time it is used\)\n\s+hint: give large files as source: \{ url, sha256 \}/],
  ['300 YAML aliases of a gzip+base64 content that inflates to 31 MiB (the review\'s 7 GiB plan)', 'plan', (d) => write(d, 'config.yaml', aliasedFiles(31 * MiB)), /spec\.files\[0\]\.content: expands to more than 16 MiB once decompressed/],
  [
    'a 5.7 MB configuration of 270 gzip+base64 contents of 15 MiB each, without aliases',
    'plan',
    (d) => write(d, 'config.yaml', `${HEAD}spec:\n  files:\n${Array.from({ length: 270 }, (_, i) => `    - path: /etc/bomb/${i}\n      encoding: gzip+base64\n      content: ${gzipBomb(15 * MiB)}\n`).join('')}`),
    /spec\.files\[1\]\.content: with this file, the inline contents of spec\.files are more than 16 MiB together/,
  ],
  [
    'MIME user data of 10,000 MachineConfig parts',
    'plan',
    (d) => write(d, 'user-data', mime(Array.from({ length: 10_000 }, (_, i) => machineConfigPart(`spec:\n  sysctls:\n    net.ipv4.conf.eth${i}.rp_filter: "1"\n`)))),
    /user-data: user data with more than 1000 MIME parts\n\s+hint: cloud-init user data has a few parts/,
  ],
  [
    'MIME user data of 10,000 shell scripts and one MachineConfig',
    'plan',
    (d) => write(d, 'user-data', mime([machineConfigPart('spec: {}\n'), ...Array.from({ length: 10_000 }, (_, i) => `--B\nContent-Type: text/x-shellscript\n\n#!/bin/sh\necho ${i}\n`)])),
    /user data with more than 1000 MIME parts/,
  ],
  [
    'MIME user data of 600 gzip parts that inflate to 8 MiB each',
    'plan',
    (d) => write(d, 'user-data', mime([...Array.from({ length: 600 }, () => `--B\nContent-Type: text/x-shellscript\nContent-Transfer-Encoding: base64\n\n${gzipBomb(8 * MiB - 1024, 0x20)}\n`), machineConfigPart('spec: {}\n')])),
    /user-data:\d+: MIME user data: part \d+ \(text\/x-shellscript\): gzip content expands beyond the 8 MiB all sources may hold together \(as read, gzip undone\)/,
  ],
  ['a config directory of 10,000 drop-ins', 'plan', (d) => dropIns(d, 10_000, (i) => `${HEAD}spec:\n  sysctls:\n    net.k${i}: "1"\n`), /config\.d: more than 1000 configuration files, all sources together \(this directory holds 10000\)\n\s+hint: a machine needs a handful of drop-ins/],
  [
    'a config directory of 4 drop-ins of 7 MiB each',
    'plan',
    (d) => dropIns(d, 4, () => `${HEAD}spec:\n  files:\n    - path: /etc/big\n      encoding: base64\n      content: ${'QUJD'.repeat((7 * MiB) / 4)}\n`),
    /config\.d: the sources hold more than 8 MiB together \(as read, gzip undone\)/,
  ],
  [
    '5,000 report endpoints',
    'init',
    (d) => write(d, 'config.yaml', `${HEAD}spec:\n  report:\n    deadlineSeconds: 1\n    endpoints:\n${Array.from({ length: 5000 }, (_, i) => `      - url: http://127.0.0.1:9/events/${i}\n`).join('')}`),
    /config\.yaml:6:5: spec\.report\.endpoints: takes at most 16 items\n\s+hint: a run reports to one collector, or a few/,
  ],
  [
    'a flat 7 MB map of 460,000 keys',
    'plan',
    (d) => write(d, 'config.yaml', `${HEAD}spec:\n  sysctls:\n${Array.from({ length: 460_000 }, (_, i) => `    k.${i}: 1\n`).join('')}`),
    /config\.yaml: holds more than 100000 line breaks, escapes \(\\ or ''\) and characters that start a YAML value \(- \? : , \[ \{\), more than any configuration/,
  ],
  ['a flat 3 MB flow list', 'plan', (d) => write(d, 'config.yaml', `${HEAD}spec:\n  kernelModules: [${'a,'.repeat(1.5e6)}a]\n`), /holds more than 100000 line breaks, escapes/],
  ['a 7 MB double-quoted string of escapes', 'plan', (d) => write(d, 'config.yaml', `${HEAD}spec:\n  files:\n    - path: /etc/d\n      content: "${'\\t'.repeat(3.5e6)}"\n`), /holds more than 100000 line breaks, escapes/],
  ['a 7 MB block scalar of 700,000 lines', 'plan', (d) => write(d, 'config.yaml', `${HEAD}spec:\n  files:\n    - path: /etc/d\n      content: |\n${'        a\n'.repeat(700_000)}`), /holds more than 100000 line breaks, escapes/],
  [
    '80 drop-ins of 100 KB of escapes each',
    'plan',
    (d) => dropIns(d, 80, () => `${HEAD}spec:\n  files:\n    - path: /etc/d\n      content: "${'\\t'.repeat(50_000)}"\n`),
    /config\.d\/00001\.yaml: with this document, the sources hold more than 100000 line breaks, escapes/,
  ],
  [
    'a flow map of 99,990 keys without values (the most YAML pieces, in the shape that makes the most values)',
    'plan',
    (d) => write(d, 'config.yaml', `${HEAD}metadata: {${Array.from({ length: 99_990 }, (_, i) => `k${i}`).join(',')}}\n`),
    /config\.yaml: holds more than 20000 values, more than any configuration/,
  ],
];

// [what is read, the command]: inputs that were costly for no budget's sake, and the largest ones the budgets accept.
const bounded: [string, Case['command'], (dir: string) => string | string[]][] = [
  ['MIME user data with a part of 7 MiB of empty lines', 'plan', (d) => write(d, 'user-data', mime([machineConfigPart('spec: {}\n'), `--B\nContent-Type: text/plain\n\n${'\n'.repeat(7 * MiB)}`]))],
  ['MIME user data with a quoted-printable part of 7 MiB', 'plan', (d) => write(d, 'user-data', mime([machineConfigPart('spec: {}\n'), `--B\nContent-Type: text/plain\nContent-Transfer-Encoding: quoted-printable\n\n${'a=20'.repeat((7 * MiB) / 4)}\n`]))],
  [
    'a gzip+base64 text file of 15.9 MiB, whose diff the plan shows',
    'plan',
    (d) => write(d, 'config.yaml', `${HEAD}spec:\n  files:\n    - path: /etc/big.txt\n      encoding: gzip+base64\n      content: ${gzipSync(Buffer.from('a line of some text in a file\n'.repeat(Math.floor((15.9 * MiB) / 30)))).toString('base64')}\n`),
  ],
  ['two sources of 3.9 MiB each', 'plan', (d) => ['a', 'b'].map((s) => write(d, `${s}.yaml`, `${HEAD}spec:\n  files:\n    - path: /etc/${s}\n      encoding: base64\n      content: ${'QUJD'.repeat(Math.floor((3.9 * MiB) / 4))}\n`))],
  ['a document of 19,500 values', 'plan', (d) => write(d, 'config.yaml', `${HEAD}spec:\n  sysctls:\n${Array.from({ length: 19_500 }, (_, i) => `    net.k${i}: "1"\n`).join('')}`)],
  ['a block scalar of 99,900 lines', 'plan', (d) => write(d, 'config.yaml', `${HEAD}spec:\n  files:\n    - path: /etc/d\n      content: |\n${'        a line of text here\n'.repeat(99_900)}`)],
  ['16 report endpoints', 'init', (d) => write(d, 'config.yaml', `${HEAD}spec:\n  files:\n    - { path: /etc/motd, content: hi }\n  report:\n    deadlineSeconds: 1\n    endpoints:\n${Array.from({ length: 16 }, (_, i) => `      - url: http://127.0.0.1:9/events/${i}\n`).join('')}`)],
];

/** A scratch machine with a file of its own, and the input written beside it. */
function machine(setup: (dir: string) => string | string[]): { dir: string; sources: string[] } {
  const dir = join(base, `case-${n++}`);
  mkdirSync(join(dir, 'root/etc'), { recursive: true });
  writeFileSync(join(dir, 'root/etc/hostname'), 'node-1\n');
  return { dir, sources: [setup(dir)].flat() };
}

function run(command: Case['command'], sources: string[], dir: string): { status: number | null; stderr: string; peakKiB: number; root: string; state: string } {
  const root = join(dir, 'root');
  const state = join(dir, 'state');
  const rss = join(dir, 'rss');
  const config = sources.flatMap((s) => ['-c', s]);
  const args = command === 'config validate' ? ['config', 'validate', ...config] : [command, ...config, '--root', root, '--state-dir', state];
  const result = spawnSync('prlimit', ['--as=2000000000', TIME, '-f', '%M', '-o', rss, NODE, CLI, ...args], { encoding: 'utf8', timeout: 90_000, maxBuffer: 64 * MiB });
  const peakKiB = Number(readFileSync(rss, 'utf8').trim().split('\n').at(-1));
  return { status: result.status, stderr: result.stderr, peakKiB, root, state };
}

describe.skipIf(skip)('budgets on totals, from the command line', () => {
  it.each(refused)('refuses %s: %s exits 2 naming the budget, peak RSS <= 256 MiB, nothing changed', (_what, command, setup, message) => {
    const { dir, sources } = machine(setup);
    const before = snapshotTree(join(dir, 'root'));
    const r = run(command, sources, dir);
    expect(r.status, r.stderr.slice(0, 2000)).toBe(2);
    expect(r.stderr).toMatch(message);
    expect(r.peakKiB).toBeLessThanOrEqual(PEAK_RSS_LIMIT_KIB);
    expect(snapshotTree(r.root)).toEqual(before);
    expect(existsSync(r.state)).toBe(false);
  });

  it.each(bounded)('reads %s: %s exits 0 with peak RSS <= 256 MiB', (_what, command, setup) => {
    const { dir, sources } = machine(setup);
    const r = run(command, sources, dir);
    expect(r.status, r.stderr.slice(0, 2000)).toBe(0);
    expect(r.peakKiB).toBeLessThanOrEqual(PEAK_RSS_LIMIT_KIB);
  });
});

describe('what the budgets count', () => {
  it('counts YAML pieces inside strings too, so that the count never falls short of the parser', () => {
    // Two indicators (: :), a comma, two line breaks, a backslash and a quote pair.
    expect(yamlPieces('a: "x, y\\n"\nb: \'it\'\'s\'\n')).toBe(2 + 1 + 2 + 1 + 4);
  });

  it('shows the diff of a new file of 600,000 lines as the line-by-line one, reading only the lines shown', () => {
    const text = Array.from({ length: 600_000 }, (_, i) => `line ${i}`).join('\n') + '\n';
    const diff = unifiedDiff('', text, { label: '/etc/big', maxLines: 6 });
    expect(diff).toBe(['--- /dev/null', '+++ /etc/big', '@@ -0,0 +1,600000 @@', '+line 0', '+line 1', '+line 2', '... 599997 more diff lines', ''].join('\n'));
    expect(unifiedDiff('a\nb', '', { label: '/etc/x' })).toBe(['--- /etc/x', '+++ /etc/x', '@@ -1,2 +0,0 @@', '-a', '-b', '\\ No newline at end of file (before)', ''].join('\n'));
  });
});
