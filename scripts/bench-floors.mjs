// The floors of the bench: for a figure whose goal may be out of reach, the least a program must do
// for the same job when it is built the way machineadm must be (the libraries the product is built
// on: commander for the command line, js-yaml, execa for processes, got for HTTP) and packaged the way
// machineadm is (a bundle compiled from a V8 code cache taken after a run, by the embedded Node).
// Each floor is run side by side with machineadm and its baseline. A floor above the goal shows the
// goal cannot be met on this runtime with those libraries, whatever machineadm does; the distance
// from the floor to machineadm is machineadm's own cost.
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { lazyCommanderChildProcess, lazyGotNetwork, lazyGotOptional, lazyListFormat } from './build.mjs';

// The command line: one command with the options the figure's command takes, through commander.
const CLI = (action) => `import { Command } from 'commander';
import { readFileSync } from 'node:fs';
const program = new Command('floor');
program.command('run').requiredOption('-c, --config <file>').option('--root <dir>').option('--count <n>').action(async (options) => {
${action}
});
program.parseAsync(process.argv).catch((error) => { process.stderr.write(String(error) + '\\n'); process.exitCode = 1; });`;

const YAML = `  const config = (await import('js-yaml')).load(readFileSync(options.config, 'utf8'));
  if (!config || typeof config !== 'object') throw new Error('no configuration');`;

// What every phase command must learn before it can plan: the installed containerd's version (it
// decides the config format), asked the only way containerd tells it, by running it (through execa).
const PROBE = `  const probe = import('execa').then(({ execa }) => execa('containerd', ['--version']));`;

// An atomic, durable write of each file (temporary file, fsync, rename) and one fsync of each
// directory at the end: what init does for the files it writes, nothing else.
const WRITES = `  const fs = await import('node:fs');
  const path = await import('node:path');
  const dirs = new Set();
  for (let i = 0; i < Number(options.count); i++) {
    const dir = path.join(options.root, 'd' + (i % 5));
    fs.mkdirSync(dir, { recursive: true });
    dirs.add(dir);
    const temp = path.join(dir, '.f' + i + '.tmp');
    const fd = fs.openSync(temp, 'wx', 0o644);
    fs.writeSync(fd, 'line of a configuration file\\n'.repeat(40));
    fs.fsyncSync(fd);
    fs.closeSync(fd);
    fs.renameSync(temp, path.join(dir, 'f' + i));
  }
  for (const dir of dirs) {
    const fd = fs.openSync(dir, 'r');
    fs.fsyncSync(fd);
    fs.closeSync(fd);
  }`;

// A run's events, posted with got the least a poster can: one after the other over a kept-alive
// connection, each a CloudEvent of the size of machineadm's, its answer read and dropped.
const POST = `import got from 'got';
import { Agent } from 'node:http';
const agent = new Agent({ keepAlive: true, maxSockets: 4 });
const post = (i) => new Promise((resolve, reject) => {
  const body = Buffer.from(JSON.stringify({ specversion: '1.0', id: process.pid + '.' + i, source: 'floor', type: 'floor.event', time: new Date().toISOString(), datacontenttype: 'application/json', data: { step: 'report/sentinel', detail: 'x'.repeat(400) } }));
  const stream = got.stream.post(process.argv[2], { headers: { 'content-type': 'application/cloudevents+json', 'content-length': String(body.length) }, agent: { http: agent }, retry: { limit: 0 }, throwHttpErrors: false });
  stream.on('error', reject).on('end', resolve).resume();
  stream.end(body);
});
(async () => {
  for (let i = 0; i < 6; i++) await post(i);
  agent.destroy();
})();`;

// fetch, done plainly (a reference, not a floor: machineadm does better): the body received with
// got, hashed with node:crypto and written as it arrives (a 1 MiB write buffer, as machineadm's),
// then one fsync: no temporary file, no rename, nothing else.
const FETCH = `import got from 'got';
import { createHash } from 'node:crypto';
import { closeSync, createWriteStream, fsyncSync, openSync } from 'node:fs';
import { once } from 'node:events';
import { finished } from 'node:stream/promises';
(async () => {
  const [url, out] = process.argv.slice(2);
  const hash = createHash('sha256');
  const file = createWriteStream(out, { highWaterMark: 1 << 20 });
  for await (const chunk of got.stream(url, { decompress: false, retry: { limit: 0 } })) {
    hash.update(chunk);
    if (!file.write(chunk)) await once(file, 'drain');
  }
  file.end();
  await finished(file);
  const fd = openSync(out, 'r+');
  fsyncSync(fd);
  closeSync(fd);
  hash.digest('hex');
})();`;

const SOURCES = {
  // config validate: the command line, reading the configuration and parsing its YAML.
  yaml: CLI(YAML),
  // plan: the probe and the YAML, at once.
  plan: CLI(`${PROBE}\n${YAML}\n  if (!/containerd/.test((await probe).stdout)) throw new Error('not containerd');`),
  // init: the probe, the YAML and the files, durably.
  init: CLI(`${PROBE}\n${YAML}\n  await probe;\n${WRITES}`),
  // report, online: the events posted, nothing else; less `empty` (the same packaging, no work),
  // what posting costs a process beyond starting. Both load node:crypto first, as the offline run
  // does too (its spool is named by hashes), so that the difference is the posting alone.
  post: `import 'node:crypto';\n${POST}`,
  fetch: FETCH,
  empty: `import 'node:crypto';`,
};

// verify needs no library: read the file and hash it with BLAKE2b-512 (minisign's prehash), 1 MiB
// at a time, with node:crypto.
const VERIFY = `'use strict';
const fs = require('node:fs');
const fd = fs.openSync(process.argv[2], 'r');
const block = Buffer.allocUnsafe(1 << 20);
const hash = require('node:crypto').createHash('blake2b512');
for (let n; (n = fs.readSync(fd, block, 0, block.length, null)) > 0; ) hash.update(n === block.length ? block : block.subarray(0, n));
hash.digest();
`;

// Runs a bundle as machineadm runs its pieces: compiled by vm.Script from its code cache, which
// the first run (untimed) takes once the run is over and V8's background compiling has settled.
const LOADER = `'use strict';
const fs = require('node:fs');
const vm = require('node:vm');
const file = process.argv[2];
process.argv = [process.argv[0], file, ...process.argv.slice(3)];
const cached = fs.existsSync(file + '.cache') ? fs.readFileSync(file + '.cache') : undefined;
const script = new vm.Script('(function (exports, require, module) {' + fs.readFileSync(file, 'utf8') + '\\n})', { filename: file, ...(cached ? { cachedData: cached } : {}) });
const bundled = { exports: {} };
script.runInThisContext().call(bundled.exports, bundled.exports, require, bundled);
if (!cached || script.cachedDataRejected) process.once('beforeExit', () => setTimeout(() => fs.writeFileSync(file + '.cache', script.createCachedData()), 200));
`;

/**
 * Bundles the floor programs into `dir` and returns, by name, the argv that runs each (before its
 * own arguments). Each must run once through warmFloor before it is timed: that run takes the cache.
 */
export async function buildFloors(dir, root, node) {
  const esbuild = await import('esbuild');
  const entries = Object.fromEntries(Object.entries(SOURCES).map(([name, source]) => [name, join(dir, `floor-${name}.mjs`)]));
  for (const [name, source] of Object.entries(SOURCES)) writeFileSync(entries[name], source);
  await esbuild.build({
    entryPoints: entries,
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: 'node24',
    outdir: dir,
    entryNames: 'floor-[name]',
    outExtension: { '.js': '.cjs' },
    nodePaths: [join(root, 'node_modules')],
    supported: { 'dynamic-import': false },
    legalComments: 'none',
    logLevel: 'silent',
    // As machineadm's bundle: commander without node:child_process at load, got without what a post does not use.
    plugins: [lazyCommanderChildProcess, lazyListFormat, lazyGotNetwork, lazyGotOptional],
  });
  const loader = join(dir, 'floor-loader.cjs');
  writeFileSync(loader, LOADER);
  writeFileSync(join(dir, 'floor-verify.cjs'), VERIFY);
  // The command-line floors take the command 'run' first; the others their arguments alone.
  const floors = Object.fromEntries(Object.entries(SOURCES).map(([name, source]) => [name, [node, loader, join(dir, `floor-${name}.cjs`), ...(source.includes('commander') ? ['run'] : [])]]));
  floors.verify = [node, join(dir, 'floor-verify.cjs')];
  return floors;
}

/**
 * The untimed first run of a floor, which takes its code cache. Not spawnSync: a floor may talk to
 * a server in the bench's own process, which must go on answering.
 */
export async function warmFloor(argv) {
  const child = spawn(argv[0], argv.slice(1), { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += d));
  const code = await new Promise((done, failed) => child.on('error', failed).on('close', done));
  if (code !== 0) throw new Error(`${argv.join(' ')} exited with ${code}: ${stderr.trim().slice(-400)}`);
}
