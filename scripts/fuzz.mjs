#!/usr/bin/env node
// The property tests (test/**/*.property.test.ts) with many more inputs than `npm test` gives them,
// and a new seed each time unless one is given, so a long run explores what the fixed seed does not.
// A failure prints its seed and counterexample; FUZZ_SEED=<seed> replays it.
//
//   npm run fuzz [-- --runs 10000] [--seed 42] [test/config]
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const option = (name, fallback) => {
  const i = args.indexOf(name);
  if (i < 0) return fallback;
  const [, value] = args.splice(i, 2);
  return value;
};
const runs = option('--runs', process.env.FUZZ_RUNS ?? '10000');
const seed = option('--seed', process.env.FUZZ_SEED ?? String(Math.floor(Math.random() * 2 ** 31)));
const files = readdirSync(join(ROOT, 'test'), { recursive: true })
  .map((f) => join('test', String(f)))
  .filter((f) => f.endsWith('.property.test.ts') && (args.length === 0 || args.some((a) => resolve(ROOT, f).startsWith(resolve(a)))));
if (files.length === 0) throw new Error(`no property tests under ${args.join(', ')}`);
process.stdout.write(`fuzz: ${runs} inputs per property, seed ${seed} (FUZZ_SEED=${seed} replays this run)\n`);
const result = spawnSync('npx', ['vitest', 'run', '--testTimeout=0', ...files], {
  cwd: ROOT,
  stdio: 'inherit',
  env: { ...process.env, FUZZ_RUNS: runs, FUZZ_SEED: seed },
});
process.exit(result.status ?? 1);
