// The floors of the bench: for a figure whose goal may be out of reach, the least a program on the
// embedded Node must do for the same job, as a script run side by side with machineadm and its
// baseline. A floor above the goal shows the goal cannot be met on this runtime whatever
// machineadm does; the distance from the floor to machineadm is machineadm's own cost.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

const YAML = (root) => `const yaml = require(${JSON.stringify(join(root, 'node_modules', 'js-yaml'))});
const config = yaml.load(require('node:fs').readFileSync(process.argv[2], 'utf8'));
if (!config || typeof config !== 'object') throw new Error('no configuration');`;

// What every phase command must learn before it can plan: the installed containerd's version (it
// decides the config format), asked the only way containerd tells it, by running it.
const PROBE = `const probe = new Promise((done, failed) => require('node:child_process').execFile('containerd', ['--version'], (e, out) => (e ? failed(e) : done(out))));`;

// An atomic, durable write of each file (temporary file, fsync, rename) and one fsync of each
// directory at the end: what init does for the files it writes, nothing else.
const WRITES = `const fs = require('node:fs');
const path = require('node:path');
function writeAll(root, count) {
  const dirs = new Set();
  for (let i = 0; i < count; i++) {
    const dir = path.join(root, 'd' + (i % 5));
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
  }
}`;

const SCRIPTS = {
  // config validate: read the configuration and parse its YAML with the project's YAML library.
  'floor-yaml.cjs': (root) => YAML(root),
  // plan: the containerd probe and the YAML, at once.
  'floor-plan.cjs': (root) => `${PROBE}\n${YAML(root)}\nprobe.then((out) => { if (!/containerd/.test(out)) process.exit(3); });`,
  // init: the probe, the YAML and the files, durably.
  'floor-init.cjs': (root) => `${PROBE}\n${YAML(root)}\n${WRITES}\nprobe.then(() => writeAll(process.argv[3], Number(process.argv[4])));`,
  // verify: read the file and hash it with BLAKE2b-512 (minisign's prehash), 1 MiB at a time.
  'floor-verify.cjs': () => `const fs = require('node:fs');
const fd = fs.openSync(process.argv[2], 'r');
const block = Buffer.allocUnsafe(1 << 20);
const hash = require('node:crypto').createHash('blake2b512');
for (let n; (n = fs.readSync(fd, block, 0, block.length, null)) > 0; ) hash.update(n === block.length ? block : block.subarray(0, n));
hash.digest();`,
  // A report run's posts: node's own HTTP client sending six CloudEvents over one kept-alive
  // connection, each acknowledged before the next (the order events are delivered in).
  'floor-post.cjs': () => `const http = require('node:http');
const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
const url = new URL(process.argv[2]);
async function post(i) {
  const body = JSON.stringify({ specversion: '1.0', id: 'floor-' + process.pid + '-' + i, source: 'floor', type: 'io.machineadm.step.finished', data: { step: 'prepare/sysctls', outcome: 'changed' } });
  await new Promise((done, failed) => {
    const req = http.request(url, { method: 'POST', agent, headers: { 'content-type': 'application/cloudevents+json', 'content-length': Buffer.byteLength(body) } }, (res) => {
      res.resume();
      res.on('end', () => (res.statusCode < 300 ? done() : failed(new Error(String(res.statusCode)))));
    });
    req.on('error', failed);
    req.end(body);
  });
}
(async () => { for (let i = 0; i < 6; i++) await post(i); agent.destroy(); })();`,
};

/** Writes the floor scripts into `dir`; returns their paths by name (without ".cjs"). */
export function writeFloors(dir, root) {
  const paths = {};
  for (const [name, text] of Object.entries(SCRIPTS)) {
    paths[name.replace(/^floor-|\.cjs$/g, '')] = join(dir, name);
    writeFileSync(join(dir, name), `'use strict';\n${text(root)}\n`);
  }
  return paths;
}
