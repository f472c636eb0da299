#!/usr/bin/env node
// Startup time of the packaged binary next to the Node release it embeds, measured in one run,
// interleaved so that machine load affects both alike. Prints the medians in milliseconds.
//
//   node scripts/bench-startup.mjs [--runs 21] [--binary dist/machineadm-linux-x64]
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const arg = (name, fallback) => {
  const i = args.indexOf(name);
  return i >= 0 && args[i + 1] !== undefined ? args[i + 1] : fallback;
};
const runs = Number(arg('--runs', '21'));
const binary = resolve(arg('--binary', join(ROOT, 'dist', 'machineadm-linux-x64')));
const node = join(ROOT, 'node_modules', '.bin', 'node');
for (const f of [binary, node]) if (!existsSync(f)) throw new Error(`${f} does not exist (npm ci, npm run build)`);

const subjects = [
  { label: `${binary.replace(ROOT + '/', '')} version`, argv: [binary, 'version'] },
  { label: 'node -e 0 (node_modules/.bin/node)', argv: [node, '-e', '0'] },
];
const env = { PATH: process.env.PATH ?? '/usr/bin:/bin' };
const samples = subjects.map(() => []);
// One warm-up each, not counted: the first run pays for reading the binary into the page cache.
for (const s of subjects) spawnSync(s.argv[0], s.argv.slice(1), { env, stdio: 'ignore' });
for (let i = 0; i < runs; i++) {
  subjects.forEach((s, j) => {
    const start = process.hrtime.bigint();
    const result = spawnSync(s.argv[0], s.argv.slice(1), { env, stdio: 'ignore' });
    const ms = Number(process.hrtime.bigint() - start) / 1e6;
    if (result.status !== 0) throw new Error(`${s.label} exited with ${result.status}`);
    samples[j].push(ms);
  });
}
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
subjects.forEach((s, j) => {
  const xs = samples[j];
  process.stdout.write(`${s.label}: median ${median(xs).toFixed(1)} ms (min ${Math.min(...xs).toFixed(1)}, max ${Math.max(...xs).toFixed(1)}, ${xs.length} runs)\n`);
});
