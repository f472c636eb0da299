// V8's code caches of the pieces, made by the embedded Node release: by compiling each piece, or
// by running machineadm commands with the build-time loader.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import * as fsp from 'node:fs/promises';
import { join } from 'node:path';
import { BuildError, ROOT } from './common.mjs';
import { START_PIECE } from './loader.mjs';
import { pinnedNode } from './node-release.mjs';

/**
 * V8's code cache of each piece no run compiled (see writeRunCaches), made by the embedded Node
 * release: the piece then starts from the bytecode of its top level instead of parsing it
 * (compiling execa's piece alone took ~10 ms of a plan). Without --random-seed two caches of the
 * same source differ; V8 leaves that flag out of the flags it checks a cache against.
 *
 * everyFunction: the cache holds the bytecode of every function of the piece, compiled with V8's
 * --no-lazy (which is set back before the cache is taken: a cache is only taken by a V8 with the
 * flags it was made with). For the pieces a phase command loads (PHASE_ENTRIES): a plan compiled
 * ~30 ms of their functions as it ran them, more than the larger caches take to read (plan 290 ->
 * 270 ms). Caches taken after a run of plan would hold only what it ran, but were not the same
 * bytes from one build to the next (4 builds in 6); compiling every function is the same in every build.
 */
export function writeCodeCaches(dir, names, { everyFunction = false } = {}) {
  const script = `const { readFileSync, writeFileSync } = require("node:fs");
const v8 = require("node:v8");
for (const name of process.argv.slice(1)) {
  const source = readFileSync(name, "latin1");
  ${everyFunction ? 'v8.setFlagsFromString("--no-lazy");' : ''}
  const compiled = new (require("node:vm").Script)(source, { filename: "machineadm/" + name });
  ${everyFunction ? 'v8.setFlagsFromString("--lazy");' : ''}
  writeFileSync(name + ".cache", compiled.createCachedData());
}`;
  const result = spawnSync(pinnedNode(), ['--random-seed=1', '-e', script, '--', ...names], { cwd: dir, encoding: 'utf8', env: { PATH: process.env.PATH ?? '' } });
  if (result.status !== 0) throw new BuildError(`making the code caches of the pieces failed: ${(result.stderr || result.stdout).trim()}`);
}

/**
 * The code caches of the pieces that "machineadm --help", "config validate" and "verify" run,
 * taken after a run of each with the embedded Node, each run starting from the caches of the runs
 * before it: they hold the bytecode of every function those runs compiled (commander, the commands,
 * help, reading and checking configuration, checking a signature), which a cache made by compiling
 * alone leaves to be parsed at each start. Not plan or init: the caches of the file-system and plan
 * pieces taken after a plan were not the same bytes from one build to the next (4 builds in 6),
 * though the same functions ran, and the build must be reproducible (see writeCodeCaches for the
 * pieces a phase command loads). The runs see a PATH of one empty folder: no tool of the build machine.
 */
export async function writeRunCaches(workDir, producer) {
  const script = join(workDir, 'produce-caches.cjs');
  await fsp.writeFile(script, producer);
  const machine = join(workDir, 'cache-machine');
  const tools = join(machine, 'bin');
  await fsp.mkdir(tools, { recursive: true });
  // verify reads a file of a few blocks (1 MiB each), so that its loop runs as on a real file.
  await fsp.writeFile(join(machine, 'signed'), Buffer.alloc(3 * 1048576 + 1, 7));
  const key = ['-s', join(machine, 'cache.key')];
  const runs = [
    ['--help'],
    ['config', 'validate', '-c', join(ROOT, 'examples', 'linux-worker.yaml')],
    ['keygen', '-p', join(machine, 'cache.pub'), ...key],
    ['sign', ...key, '-t', 'code caches', join(machine, 'signed')],
    ['verify', join(machine, 'signed'), '-p', join(machine, 'cache.pub'), '-q'],
  ];
  try {
    for (const args of runs) {
      const result = spawnSync(pinnedNode(), ['--random-seed=1', script, ...args], { cwd: workDir, encoding: 'utf8', env: { PATH: tools }, stdio: ['ignore', 'ignore', 'pipe'] });
      if (result.status !== 0) throw new BuildError(`making the code caches with machineadm ${args.join(' ')} failed: ${(result.stderr ?? '').trim()}`);
    }
  } finally {
    await fsp.rm(script, { force: true });
    await fsp.rm(machine, { recursive: true, force: true });
  }
  if (!existsSync(join(workDir, 'pieces', `${START_PIECE}.cache`))) throw new BuildError('a run of machineadm --help left no code cache of the start piece');
}
