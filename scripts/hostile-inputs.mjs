#!/usr/bin/env node
// Hostile inputs against the memory promise (docs/contract/configuration.md 3.2: peak RSS at most
// 256 MiB for any input): each case writes its input to a scratch folder, runs the CLI from source
// under /usr/bin/time, and prints peak RSS, exit code and time. A run that passes --cap (default
// 2048 MiB) is killed, so a regression cannot take the shared machine down.
//
//   node scripts/hostile-inputs.mjs [--cap MiB] [--json] [hostile | at-budget | CASE ...]
//
// The tests of the refusals are test/config/budgets.test.ts; this script is the measurement.
import { spawn } from 'node:child_process';
import { mkdtempSync, mkdirSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const NODE = join(ROOT, 'node_modules/.bin/node');
const CLI = join(ROOT, 'bin/machineadm.js');
const HEAD = 'apiVersion: machineadm.cluster.x-k8s.io/v1alpha1\nkind: MachineConfig\n';
const MiB = 1024 * 1024;

const args = process.argv.slice(2);
const option = (name, fallback) => {
  const i = args.indexOf(name);
  if (i < 0) return fallback;
  const [, value] = args.splice(i, 2);
  return value;
};
const capMiB = Number(option('--cap', '2048'));
const json = args.includes('--json') ? (args.splice(args.indexOf('--json'), 1), true) : false;

// gzip of `size` bytes of one repeated byte: a few KiB that inflate to `size`.
const gzipBomb = (size, fill = 0) => gzipSync(Buffer.alloc(size, fill), { level: 9 }).toString('base64');

/**
 * Each case: name, what it is, and a function that writes its input into dir and returns the -c
 * argument (or several). The hostile ones are refused; the `atBudget` ones are the largest inputs
 * the budgets let through, which must stay within the promise too.
 */
const CASES = [
  {
    name: 'aliases-of-gzip',
    what: '300 YAML aliases of one gzip+base64 content that inflates to 31 MiB (the review\'s case)',
    write(dir) {
      const files = [`    - path: /etc/bomb/0\n      encoding: gzip+base64\n      content: &bomb ${gzipBomb(31 * MiB)}\n`];
      for (let i = 1; i < 300; i++) files.push(`    - path: /etc/bomb/${i}\n      encoding: gzip+base64\n      content: *bomb\n`);
      return file(dir, 'config.yaml', `${HEAD}spec:\n  files:\n${files.join('')}`);
    },
  },
  {
    name: 'aliases-of-gzip-15mib',
    what: '300 YAML aliases of one gzip+base64 content that inflates to 15 MiB (under the limit per file)',
    write(dir) {
      const files = [`    - path: /etc/bomb/0\n      encoding: gzip+base64\n      content: &bomb ${gzipBomb(15 * MiB)}\n`];
      for (let i = 1; i < 300; i++) files.push(`    - path: /etc/bomb/${i}\n      encoding: gzip+base64\n      content: *bomb\n`);
      return file(dir, 'config.yaml', `${HEAD}spec:\n  files:\n${files.join('')}`);
    },
  },
  {
    name: 'many-gzip-files',
    what: '4.2 MB configuration: 130 different gzip+base64 contents of 31 MiB each (the review\'s case)',
    write(dir) {
      const files = [];
      for (let i = 0; i < 130; i++) files.push(`    - path: /etc/bomb/${i}\n      encoding: gzip+base64\n      content: ${gzipBomb(31 * MiB, i)}\n`);
      return file(dir, 'config.yaml', `${HEAD}spec:\n  files:\n${files.join('')}`);
    },
  },
  {
    name: 'many-gzip-files-15mib',
    what: '4.2 MB configuration: 270 different gzip+base64 contents of 15 MiB each',
    write(dir) {
      const files = [];
      for (let i = 0; i < 270; i++) files.push(`    - path: /etc/bomb/${i}\n      encoding: gzip+base64\n      content: ${gzipBomb(15 * MiB, i)}\n`);
      return file(dir, 'config.yaml', `${HEAD}spec:\n  files:\n${files.join('')}`);
    },
  },
  {
    name: 'mime-10000-parts',
    what: 'MIME user data with 10,000 MachineConfig parts',
    write(dir) {
      const parts = [];
      // About 700 bytes each: the 8 MiB a source may hold, in parts.
      const labels = Array.from({ length: 10 }, (_, k) => `        example.com/label-${k}: value-${k}-xxxxxxxxxxxxxxxxxxxxxxxx\n`).join('');
      for (let i = 0; i < 10_000; i++) parts.push(`--B\nContent-Type: application/machineadm.cluster.x-k8s.io\n\n${HEAD}spec:\n  kubernetes:\n    node:\n      labels:\n${labels}        n: "${i}"\n`);
      return file(dir, 'user-data', `MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary="B"\n\n${parts.join('')}--B--\n`);
    },
  },
  {
    name: 'mime-10000-other-parts',
    what: 'MIME user data with 10,000 shell-script parts and one MachineConfig',
    write(dir) {
      const parts = [`--B\nContent-Type: application/machineadm.cluster.x-k8s.io\n\n${HEAD}spec: {}\n`];
      for (let i = 0; i < 10_000; i++) parts.push(`--B\nContent-Type: text/x-shellscript\n\n#!/bin/sh\necho ${i}\n`);
      return file(dir, 'user-data', `MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary="B"\n\n${parts.join('')}--B--\n`);
    },
  },
  {
    name: 'mime-gzip-parts',
    what: 'MIME user data with 600 gzip parts that inflate to 8 MiB each',
    write(dir) {
      const bomb = gzipBomb(8 * MiB - 1024, 0x20);
      const parts = [];
      for (let i = 0; i < 600; i++) parts.push(`--B\nContent-Type: text/x-shellscript\nContent-Transfer-Encoding: base64\n\n${bomb}\n`);
      parts.push(`--B\nContent-Type: application/machineadm.cluster.x-k8s.io\n\n${HEAD}spec: {}\n`);
      return file(dir, 'user-data', `MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary="B"\n\n${parts.join('')}--B--\n`);
    },
  },
  {
    name: 'mime-blank-lines',
    what: 'MIME user data of 7 MiB of empty lines in one part',
    write(dir) {
      return file(dir, 'user-data', `MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary="B"\n\n--B\nContent-Type: application/machineadm.cluster.x-k8s.io\n\n${HEAD}spec: {}\n--B\nContent-Type: text/plain\n\n${'\n'.repeat(7 * MiB)}--B--\n`);
    },
  },
  {
    name: 'mime-quoted-printable',
    what: 'MIME user data with a 7 MiB quoted-printable part',
    write(dir) {
      return file(dir, 'user-data', `MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary="B"\n\n--B\nContent-Type: application/machineadm.cluster.x-k8s.io\n\n${HEAD}spec: {}\n--B\nContent-Type: text/plain\nContent-Transfer-Encoding: quoted-printable\n\n${'a=20'.repeat((7 * MiB) / 4)}\n--B--\n`);
    },
  },
  {
    name: 'config-dir-10000-files',
    what: 'a config directory of 10,000 drop-ins',
    write(dir) {
      const d = join(dir, 'config.d');
      mkdirSync(d);
      for (let i = 0; i < 10_000; i++) writeFileSync(join(d, `${String(i).padStart(5, '0')}.yaml`), `${HEAD}spec:\n  sysctls:\n    net.ipv4.ip_forward: "${i % 2}"\n`);
      return d;
    },
  },
  {
    name: 'config-dir-60-large-files',
    what: 'a config directory of 60 drop-ins of 7 MiB each (one long value)',
    write(dir) {
      const d = join(dir, 'config.d');
      mkdirSync(d);
      const value = 'QUJD'.repeat((7 * MiB) / 4);
      for (let i = 0; i < 60; i++) writeFileSync(join(d, `${String(i).padStart(2, '0')}.yaml`), `${HEAD}spec:\n  files:\n    - path: /etc/big\n      encoding: base64\n      content: ${value}\n`);
      return d;
    },
  },
  {
    name: 'endpoints-5000',
    what: '5,000 report endpoints (init also spools events for each)',
    init: true,
    write(dir) {
      const endpoints = Array.from({ length: 5000 }, (_, i) => `    - url: http://127.0.0.1:9/events/${i}\n`).join('');
      return file(dir, 'config.yaml', `${HEAD}spec:\n  files:\n    - path: /etc/motd\n      content: hi\n  report:\n    deadlineSeconds: 1\n    endpoints:\n${endpoints}`);
    },
  },
  {
    name: 'flat-map-7mb',
    what: 'a flat 7 MB map (sysctls with 460,000 keys)',
    write(dir) {
      const n = 460_000;
      return file(dir, 'config.yaml', `${HEAD}spec:\n  sysctls:\n${Array.from({ length: n }, (_, i) => `    k.${i}: 1\n`).join('')}`);
    },
  },
  {
    name: 'flat-list-3mb',
    what: 'a flat 3 MB flow list (kernelModules: [a,a,...])',
    write(dir) {
      return file(dir, 'config.yaml', `${HEAD}spec:\n  kernelModules: [${'a,'.repeat(1.5e6)}a]\n`);
    },
  },
  {
    name: 'flat-flow-map-7mb',
    what: 'a flat 7 MB flow map of keys without values ({k0,k1,...})',
    write(dir) {
      return file(dir, 'config.yaml', `${HEAD}spec:\n  sysctls: {${Array.from({ length: 800_000 }, (_, i) => `k${i}`).join(',')}}\n`);
    },
  },
  {
    name: 'escapes-7mb',
    what: 'a 7 MB double-quoted string of escapes ("\\t\\t...")',
    write(dir) {
      return file(dir, 'config.yaml', `${HEAD}spec:\n  files:\n    - path: /etc/d\n      content: "${'\\t'.repeat(3.5e6)}"\n`);
    },
  },
  {
    name: 'block-lines-7mb',
    what: 'a 7 MB block scalar of 700,000 short lines',
    write(dir) {
      return file(dir, 'config.yaml', `${HEAD}spec:\n  files:\n    - path: /etc/d\n      content: |\n${'        a\n'.repeat(700_000)}`);
    },
  },
  {
    name: 'drop-ins-of-escapes',
    what: '80 drop-ins of 100 KB of escapes each (each far under the limit of a source)',
    write(dir) {
      const d = join(dir, 'config.d');
      mkdirSync(d);
      for (let i = 0; i < 80; i++) writeFileSync(join(d, `${String(i).padStart(2, '0')}.yaml`), `${HEAD}spec:\n  files:\n    - path: /etc/d\n      content: "${'\\t'.repeat(50_000)}"\n`);
      return d;
    },
  },
];

// The largest inputs the budgets accept (src/config/budgets.ts): each must run within 256 MiB too.
const AT_BUDGET = [
  {
    name: 'at-budget-inline-text',
    what: 'one gzip+base64 text file of 15.9 MiB (the plan shows its diff)',
    write(dir) {
      const text = Buffer.from('a line of some text in a file\n'.repeat(Math.floor((15.9 * MiB) / 30)));
      return file(dir, 'config.yaml', `${HEAD}spec:\n  files:\n    - path: /etc/big.txt\n      encoding: gzip+base64\n      content: ${gzipSync(text).toString('base64')}\n`);
    },
  },
  {
    name: 'at-budget-inline-files',
    what: '500 gzip+base64 text files of 32 KiB each (15.6 MiB together)',
    write(dir) {
      const content = gzipSync(Buffer.from('x = 1\n'.repeat(5461))).toString('base64');
      const files = Array.from({ length: 500 }, (_, i) => `    - path: /etc/many/${i}.conf\n      encoding: gzip+base64\n      content: ${content}\n`).join('');
      return file(dir, 'config.yaml', `${HEAD}spec:\n  files:\n${files}`);
    },
  },
  {
    name: 'at-budget-sources',
    what: 'two sources of 3.9 MiB each (base64 file contents)',
    write(dir) {
      const value = 'QUJD'.repeat(Math.floor((3.9 * MiB) / 4));
      return ['a', 'b'].map((n) => file(dir, `${n}.yaml`, `${HEAD}spec:\n  files:\n    - path: /etc/${n}\n      encoding: base64\n      content: ${value}\n`));
    },
  },
  {
    name: 'at-budget-values',
    what: 'one document of 19,500 values (sysctls)',
    write(dir) {
      return file(dir, 'config.yaml', `${HEAD}spec:\n  sysctls:\n${Array.from({ length: 19_500 }, (_, i) => `    net.k${i}: "1"\n`).join('')}`);
    },
  },
  {
    name: 'at-budget-values-all-wrong',
    what: 'one document of 19,500 values, each a problem (unknown fields)',
    write(dir) {
      return file(dir, 'config.yaml', `${HEAD}spec:\n${Array.from({ length: 19_500 }, (_, i) => `  unknown${i}: 1\n`).join('')}`);
    },
  },
  {
    name: 'at-budget-pieces',
    what: 'a flow map of 99,990 keys without values (the worst shape under the YAML pieces budget; refused by the values budget once parsed)',
    write(dir) {
      return file(dir, 'config.yaml', `${HEAD}metadata: {${Array.from({ length: 99_990 }, (_, i) => `k${i}`).join(',')}}\n`);
    },
  },
  {
    name: 'at-budget-escapes',
    what: 'a double-quoted file content of 99,900 escapes',
    write(dir) {
      return file(dir, 'config.yaml', `${HEAD}spec:\n  files:\n    - path: /etc/d\n      content: "${'a line\\n'.repeat(99_900)}"\n`);
    },
  },
  {
    name: 'at-budget-lines',
    what: 'a block scalar file content of 99,900 lines (3.5 MB; the plan shows its diff)',
    write(dir) {
      return file(dir, 'config.yaml', `${HEAD}spec:\n  files:\n    - path: /etc/d\n      content: |\n${'        a line of text here\n'.repeat(99_900)}`);
    },
  },
  {
    name: 'at-budget-documents',
    what: '990 drop-ins of 3 KiB each (a file\'s text of 80 lines each)',
    write(dir) {
      const d = join(dir, 'config.d');
      mkdirSync(d);
      const content = 'some text in the file\n'.repeat(80);
      for (let i = 0; i < 990; i++) writeFileSync(join(d, `${String(i).padStart(3, '0')}.yaml`), `${HEAD}spec:\n  sysctls:\n    net.k${i}: "1"\n  files:\n    - path: /etc/d/${i}\n      content: ${JSON.stringify(content)}\n`);
      return d;
    },
  },
  {
    name: 'at-budget-mime-parts',
    what: 'MIME user data of 990 MachineConfig parts, 3 KiB each',
    write(dir) {
      const content = 'some text in the file\n'.repeat(80);
      const parts = Array.from({ length: 990 }, (_, i) => `--B\nContent-Type: application/machineadm.cluster.x-k8s.io\n\n${HEAD}spec:\n  sysctls:\n    net.k${i}: "1"\n  files:\n    - path: /etc/p/${i}\n      content: ${JSON.stringify(content)}\n`);
      return file(dir, 'user-data', `MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary="B"\n\n${parts.join('')}--B--\n`);
    },
  },
  {
    name: 'at-budget-endpoints',
    what: '16 report endpoints (init spools every event for each)',
    init: true,
    write(dir) {
      const endpoints = Array.from({ length: 16 }, (_, i) => `    - url: http://127.0.0.1:9/events/${i}\n`).join('');
      return file(dir, 'config.yaml', `${HEAD}spec:\n  files:\n    - path: /etc/motd\n      content: hi\n  report:\n    deadlineSeconds: 1\n    endpoints:\n${endpoints}`);
    },
  },
];

function file(dir, name, text) {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

function duSize(path) {
  let total = 0;
  let count = 0;
  const walk = (p) => {
    let info;
    try {
      info = statSync(p);
    } catch {
      return;
    }
    if (info.isDirectory()) for (const n of readdirSync(p)) walk(join(p, n));
    else {
      total += info.size;
      count++;
    }
  };
  walk(path);
  return { bytes: total, files: count };
}

// Runs the CLI under /usr/bin/time; kills it when its RSS passes the cap.
function run(argv) {
  return new Promise((done) => {
    const timeFile = join(tmpdir(), `hostile-time-${process.pid}-${Math.random().toString(16).slice(2)}`);
    const started = Date.now();
    const child = spawn('/usr/bin/time', ['-f', '%M', '-o', timeFile, NODE, CLI, ...argv], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d) => (stderr = (stderr + d).slice(-4000)));
    let killed = false;
    const watch = setInterval(() => {
      try {
        const kids = readFileSync(`/proc/${child.pid}/task/${child.pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean);
        for (const pid of kids) {
          const rss = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);
          if (rss > capMiB * 1024) {
            killed = true;
            process.kill(Number(pid), 'SIGKILL');
          }
        }
      } catch {
        // gone between the reads
      }
    }, 50);
    child.on('exit', (code) => {
      clearInterval(watch);
      let peakKiB = NaN;
      try {
        peakKiB = Number(/^(\d+)\s*$/m.exec(readFileSync(timeFile, 'utf8'))?.[1]);
        rmSync(timeFile);
      } catch {}
      // The first line that says what went wrong (under a "N problems:" heading, the first problem).
      const lines = stderr.split('\n').map((l) => l.trim()).filter(Boolean);
      const message = lines.find((l) => !/^error: invalid configuration/.test(l)) ?? lines[0] ?? '';
      done({ code: killed ? 'killed' : code, peakMiB: killed ? `>${capMiB}` : Math.round(peakKiB / 1024), seconds: (Date.now() - started) / 1000, message: message.trim().slice(0, 160) });
    });
  });
}

const ALL = [...CASES, ...AT_BUDGET];
const chosen = args.length ? ALL.filter((c) => args.includes(c.name) || (args.includes('at-budget') && AT_BUDGET.includes(c)) || (args.includes('hostile') && CASES.includes(c))) : ALL;
if (chosen.length === 0) throw new Error(`no such case; cases: hostile, at-budget, ${ALL.map((c) => c.name).join(', ')}`);
const rows = [];
for (const c of chosen) {
  const dir = mkdtempSync(join(tmpdir(), `hostile-${c.name}-`));
  try {
    const sources = [c.write(dir)].flat();
    const size = sources.reduce((sum, s) => sum + duSize(s).bytes, 0);
    const config = sources.flatMap((s) => ['-c', s]);
    const commands = [
      ['plan', ['plan', ...config, '--root', join(dir, 'root')]],
      ['config validate', ['config', 'validate', ...config]],
      ...(c.init ? [['init', ['init', ...config, '--root', join(dir, 'root')]]] : []),
    ];
    mkdirSync(join(dir, 'root'));
    for (const [label, argv] of commands) {
      const result = await run(argv);
      const state = label === 'init' ? duSize(join(dir, 'root/var/lib/machineadm')) : undefined;
      const row = { case: c.name, command: label, inputBytes: size, ...result, ...(state ? { stateDir: `${(state.bytes / MiB).toFixed(1)} MiB in ${state.files} files` } : {}) };
      rows.push(row);
      if (!json) process.stdout.write(`${c.name.padEnd(24)} ${label.padEnd(16)} ${String(row.peakMiB).padStart(6)} MiB  exit ${String(row.code).padEnd(6)} ${row.seconds.toFixed(1).padStart(6)} s${state ? `  state dir ${row.stateDir}` : ''}  ${row.message}\n`);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
if (json) process.stdout.write(`${JSON.stringify(rows, null, 2)}\n`);
