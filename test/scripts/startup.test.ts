// Startup cost: the packaged program loads a command's implementation, and the heavy Node builtins
// it needs, only when that command runs. Checked on the bundle the executable embeds.
import { execFile, execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { promisify } from 'node:util';
import { gzipSync } from 'node:zlib';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
// @ts-expect-error the build script is plain JavaScript (it runs before anything is installed)
import { builtinNamespaces, bundle, lazyExecaVerbose, SEA_EXEC_ARGV } from '../../scripts/build.mjs';
import { scratchDir } from '../support/tmp.ts';

const HEAVY = ['child_process', 'net', 'tls', 'http', 'https', 'zlib', 'crypto', 'dgram'];

let dir = '';
beforeAll(async () => {
  dir = scratchDir();
  await bundle(dir, { version: '0.0.0-test', commit: 'test' });
  // Lists the public builtins the program loaded, as it exits.
  writeFileSync(join(dir, 'loaded.cjs'), "process.on('exit', () => require('fs').writeFileSync(process.env.LOADED_OUT, process.moduleLoadList.filter((m) => m.startsWith('NativeModule ') && !m.includes('internal/')).map((m) => m.slice(13)).join('\\n')));\n");
}, 120_000);

/**
 * Runs plan and init with `spy` loaded first, a script that calls note() at what it watches; by
 * command, what was noted ('' for nothing).
 */
function notedByPlanAndInit(spy: string): { plan: string; init: string } {
  const script = join(scratchDir(), 'spy.cjs');
  writeFileSync(script, `const note = () => require('fs').appendFileSync(process.env.NOTES_OUT, 'noted\\n');\n${spy}\n`);
  const noted = (args: string[]): string => {
    const out = join(scratchDir(), 'notes');
    writeFileSync(out, '');
    execFileSync(process.execPath, ['-r', script, join(dir, 'machineadm.cjs'), ...args], { env: { PATH: process.env.PATH ?? '', NOTES_OUT: out }, stdio: 'ignore' });
    return readFileSync(out, 'utf8');
  };
  return {
    plan: noted(['plan', '-c', 'examples/linux-worker.yaml', '--root', workerRoot()]),
    init: noted(['init', '-c', 'examples/quickstart.yaml', '--root', scratchDir()]),
  };
}

/** What every start runs: the entry, commander and the options of the commands. */
const START = 'machineadm-start.js';

/** The pieces, the start piece and the lazy ones (each has its code cache beside it, "<name>.cache"). */
function pieceNames(): string[] {
  return readdirSync(join(dir, 'pieces')).filter((name) => name.endsWith('.js'));
}

function loadedBy(args: string[], stderr: 'ignore' | 'pipe' = 'ignore', stdout: 'ignore' | 'pipe' = 'ignore'): string[] {
  const out = join(dir, `loaded-${args.join('-').replace(/\W+/g, '_')}-${stderr}-${stdout}.txt`);
  execFileSync(process.execPath, ['-r', join(dir, 'loaded.cjs'), join(dir, 'machineadm.cjs'), ...args], { env: { PATH: process.env.PATH ?? '', LOADED_OUT: out }, cwd: process.cwd(), stdio: ['ignore', stdout, stderr] });
  return execFileSync('cat', [out], { encoding: 'utf8' }).split('\n');
}

/** A scratch machine with the token file examples/linux-worker.yaml reads: plan and config validate check it as init would. */
function workerRoot(): string {
  const root = scratchDir();
  mkdirSync(join(root, 'etc/machineadm'), { recursive: true });
  writeFileSync(join(root, 'etc/machineadm/bootstrap-token'), 'abcdef.0123456789abcdef\n', { mode: 0o600 });
  return root;
}

describe('what starting machineadm loads', () => {
  it.each([
    ['version', ['version']],
    ['--help', ['--help']],
    ['the help of a command', ['fetch', '--help']],
    ['the help of config validate', ['config', 'validate', '--help']],
  ])('%s loads none of the network, process, compression or crypto builtins', (_name, args) => {
    const loaded = loadedBy(args);
    expect(loaded).toContain('fs');
    expect(loaded.filter((m) => HEAVY.includes(m))).toEqual([]);
  });

  it('version with its stderr on a pipe (as under cloud-init or a test runner) does not open it: a pipe would load the network stack', () => {
    expect(loadedBy(['version'], 'pipe').filter((m) => HEAVY.includes(m))).toEqual([]);
  });

  it.each([
    ['/dev/null', 'ignore'],
    ['a pipe', 'pipe'],
  ] as const)("--help with its answer on %s loads none of Node's streams: the terminal's width is asked only of a terminal", (_name, stdout) => {
    expect(loadedBy(['--help'], 'ignore', stdout).filter((m) => ['stream', 'string_decoder', 'net', 'tty'].includes(m))).toEqual([]);
  });

  it("config validate with its answer on a pipe loads none of Node's streams: the file is read and the answer written with plain calls", () => {
    const loaded = loadedBy(['config', 'validate', '-c', 'examples/linux-worker.yaml', '--root', workerRoot()], 'pipe', 'pipe');
    expect(loaded).toContain('fs');
    expect(loaded.filter((m) => ['stream', 'stream/promises', 'string_decoder', 'net'].includes(m))).toEqual([]);
  });

  it.each([
    ['config validate', ['config', 'validate', '-c', 'examples/linux-worker.yaml', '--root', 'SCRATCH']],
    ['plan', ['plan', '-c', 'examples/linux-worker.yaml', '--root', 'SCRATCH']],
  ])('%s loads no TLS, HTTP or compression: it connects nowhere and the configuration is not compressed', (_name, args) => {
    const loaded = loadedBy(args.map((a) => (a === 'SCRATCH' ? workerRoot() : a)));
    expect(loaded.filter((m) => ['tls', 'http', 'https', 'http2', 'zlib'].includes(m))).toEqual([]);
  });

  it('posting events to http:// makes no Intl.ListFormat and loads no TLS, HTTP/2, compression or DNS: what the HTTP client imports for error messages, https, compressed answers and its DNS cache would cost every run', async () => {
    // Counts the Intl.ListFormat objects made, and lists the public builtins loaded, at exit.
    const preload = join(dir, 'count-list-formats.cjs');
    writeFileSync(
      preload,
      "const Made = Intl.ListFormat; let made = 0; Intl.ListFormat = class extends Made { constructor(...a) { super(...a); made++; } }; process.on('exit', () => require('fs').writeFileSync(process.env.MADE_OUT, JSON.stringify({ made, loaded: process.moduleLoadList.filter((m) => m.startsWith('NativeModule ') && !m.includes('internal/')).map((m) => m.slice(13)) })));\n",
    );
    const run = async (args: string[]): Promise<{ made: number; loaded: string[] }> => {
      const out = join(scratchDir(), 'made');
      await promisify(execFile)(process.execPath, ['-r', preload, ...args], { env: { PATH: process.env.PATH ?? '', MADE_OUT: out } });
      return JSON.parse(readFileSync(out, 'utf8')) as { made: number; loaded: string[] };
    };
    let posted = 0;
    const collector = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        posted++;
        res.writeHead(202).end();
      });
    });
    await new Promise<void>((listening) => collector.listen(0, '127.0.0.1', listening));
    try {
      const config = join(scratchDir(), 'report.json');
      const url = `http://127.0.0.1:${(collector.address() as AddressInfo).port}/events`;
      writeFileSync(config, JSON.stringify({ apiVersion: 'machineadm.cluster.x-k8s.io/v1alpha1', kind: 'MachineConfig', spec: { report: { endpoints: [{ url }] } } }));
      expect((await run(['-e', "new Intl.ListFormat('en').format(['a']); require('node:tls')"]))).toEqual({ made: 1, loaded: expect.arrayContaining(['tls']) });
      const report = await run([join(dir, 'machineadm.cjs'), 'report', '-c', config, '--root', scratchDir()]);
      expect(posted).toBe(6);
      expect(report.made).toBe(0);
      expect(report.loaded).toContain('http');
      expect(report.loaded.filter((m) => ['tls', 'https', 'http2', 'zlib', 'dns'].includes(m))).toEqual([]);
    } finally {
      collector.close();
    }
  });

  it('an answer the server compressed is still read: node:zlib is loaded when it is first needed', async () => {
    const yaml = readFileSync('examples/linux-worker.yaml');
    // The metadata server stands in: imds:// may be plain HTTP, a configuration URL may not.
    const server = createServer((_req, res) => res.writeHead(200, { 'content-encoding': 'gzip', 'metadata-flavor': 'Google' }).end(gzipSync(yaml)));
    await new Promise<void>((listening) => server.listen(0, '127.0.0.1', listening));
    try {
      const out = join(scratchDir(), 'loaded.txt');
      const endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const { stdout } = await promisify(execFile)(process.execPath, ['-r', join(dir, 'loaded.cjs'), join(dir, 'machineadm.cjs'), 'config', 'view', '-c', 'imds://gce/user-data'], {
        env: { PATH: process.env.PATH ?? '', LOADED_OUT: out, MACHINEADM_IMDS_ENDPOINT: endpoint },
      });
      expect(stdout).toContain('net.bridge.bridge-nf-call-iptables');
      expect(readFileSync(out, 'utf8').split('\n')).toContain('zlib');
    } finally {
      server.close();
    }
  });

  it('plan and init never make process.stdin (a stream Node makes when first asked for): the process runner compares no option with it', () => {
    // Notes every read of process.stdin, before the program runs.
    const noted = notedByPlanAndInit("const d = Object.getOwnPropertyDescriptor(process, 'stdin'); Object.defineProperty(process, 'stdin', { configurable: true, enumerable: d.enumerable, get() { note(); return d.get.call(this); } });");
    expect(noted).toEqual({ plan: '', init: '' });
  });

  // The logger's colors ask the terminal stream's class whether it has colors as they load.
  it('plan and init load no part of the process runner\'s verbose logger (its colors, its icons): machineadm never asks for its output', () => {
    const noted = notedByPlanAndInit("const { WriteStream } = require('tty'); const has = WriteStream.prototype.hasColors; WriteStream.prototype.hasColors = function (...a) { note(); return has.apply(this, a); };");
    expect(noted).toEqual({ plan: '', init: '' });
  });

  it('the process runner\'s verbose logger still logs when asked, loaded at its first line', async () => {
    const esbuild = await import('esbuild');
    const program = join(scratchDir(), 'verbose.cjs');
    await esbuild.build({
      stdin: { contents: "import { execa } from 'execa';\nawait execa('true', [], { verbose: 'short' });\n", resolveDir: process.cwd(), loader: 'js' },
      bundle: true, platform: 'node', format: 'esm', outfile: program.replace(/cjs$/, 'mjs'), logLevel: 'silent', plugins: [lazyExecaVerbose],
    });
    const { stderr } = await promisify(execFile)(process.execPath, [program.replace(/cjs$/, 'mjs')], { env: { PATH: process.env.PATH ?? '' } });
    expect(stderr).toMatch(/\[\d\d:\d\d:\d\d\.\d{3}\] \[\d+\] \$ true\n/);
  });

  it('a command that needs them still gets them when it runs (plan spawns tools; init also hashes: its temporary names and run id)', () => {
    const planned = loadedBy(['plan', '-c', 'examples/linux-worker.yaml', '--root', workerRoot()]);
    expect(planned).toContain('child_process');
    // A plan numbers no run and writes nothing: node:crypto's ~30 modules stay unloaded.
    expect(planned).not.toContain('crypto');
    // Nor does it hash a containerd configuration it would rewrite anyway (a distribution's default).
    const withDefaults = workerRoot();
    mkdirSync(join(withDefaults, 'etc/containerd'), { recursive: true });
    writeFileSync(join(withDefaults, 'etc/containerd/config.toml'), 'version = 2\n');
    expect(loadedBy(['plan', '-c', 'examples/linux-worker.yaml', '--root', withDefaults])).not.toContain('crypto');
    const initialized = loadedBy(['init', '-c', 'examples/quickstart.yaml', '--root', scratchDir()]);
    expect(initialized).toEqual(expect.arrayContaining(['child_process', 'crypto']));
    // node:v8 is for a download's memory (and the process runner's IPC, which machineadm never opens).
    expect([...planned, ...initialized]).not.toContain('v8');
  });
});

describe('what starting machineadm compiles', () => {
  it('is the start piece only: the implementation of each command is a piece of its own until the command runs', () => {
    const main = readFileSync(join(dir, 'pieces', START), 'utf8');
    const pieces = pieceNames().filter((name) => name !== START).map((name) => readFileSync(join(dir, 'pieces', name), 'utf8'));
    const lazyBytes = pieces.reduce((sum, text) => sum + text.length, 0);
    expect(main).not.toMatch(/function runPhaseCommand\(/);
    expect(pieces.some((text) => /function runPhaseCommand\(/.test(text))).toBe(true);
    // Only what every start runs: commander and the options of each command.
    expect(main.length).toBeLessThan(lazyBytes / 5);
  });
});

describe('the sources of the pieces', () => {
  it('are ASCII, so that V8 holds each as a one-byte string (a single other character doubles its memory) and the executable takes it from its bytes without decoding', () => {
    expect(pieceNames().filter((n) => readFileSync(join(dir, 'pieces', n)).some((byte) => byte > 0x7f))).toEqual([]);
  });
});

describe('the imports of builtins', () => {
  it('copy no module: a default or namespace import reads the builtin itself (esbuild would copy every export, for each import)', () => {
    const pieces = pieceNames().map((name) => readFileSync(join(dir, 'pieces', name), 'utf8'));
    expect(pieces.filter((text) => /__toESM\(require\("node:/.test(text))).toEqual([]);
    expect(pieces.filter((text) => text.includes('__builtinNamespace(require("node:')).length).toBeGreaterThan(3);
  });

  it("read the module itself, and a piece that lists a namespace's properties fails the build", () => {
    const piece = (use: string) => `var import_node_fs = __toESM(require("node:fs"));\nmodule.exports = ${use};`;
    const run = (code: string) => {
      const module = { exports: undefined as unknown };
      new Function('module', 'require', code)(module, (id: string) => process.getBuiltinModule(id));
      return module.exports;
    };
    expect(run(builtinNamespaces(piece('[import_node_fs.default, import_node_fs.readFileSync]'), './x.js'))).toEqual([process.getBuiltinModule('node:fs'), process.getBuiltinModule('node:fs').readFileSync]);
    for (const listing of ['Object.keys(import_node_fs)', '{ ...import_node_fs }', '(() => { for (const k in import_node_fs) return k; })()']) {
      expect(() => builtinNamespaces(piece(listing), './x.js')).toThrow(/lists the properties of import_node_fs/);
    }
    // A property of the module is not the module.
    expect(() => builtinNamespaces(piece('"x" in import_node_fs.constants'), './x.js')).not.toThrow();
  });
});

describe('the code caches of the pieces', () => {
  const NODE = join(process.cwd(), 'node_modules', 'node', 'bin', 'node');

  it('are taken by the embedded Node: no piece is parsed from its source where the cache applies', () => {
    // Stored whole: a script (the start piece: its pieces by id; the others: a function).
    expect(pieceNames().filter((n) => n !== START).filter((n) => !readFileSync(join(dir, 'pieces', n), 'utf8').startsWith('(function (exports, require, module) {'))).toEqual([]);
    // What the main script does, for every piece, in the Node release the executable embeds: each
    // piece is compiled as it is stored.
    const script = `const { readFileSync } = require("node:fs");
const vm = require("node:vm");
const compile = (file) => new vm.Script(readFileSync(file, "utf8"), { cachedData: readFileSync(file + ".cache") });
const rejected = process.argv.slice(1).filter((file) => compile(file).cachedDataRejected !== false);
process.stdout.write(JSON.stringify(rejected));`;
    const names = pieceNames();
    expect(names.length).toBeGreaterThan(10);
    // With the options the executable starts with.
    const rejected = execFileSync(NODE, [...SEA_EXEC_ARGV, '-e', script, '--', ...names.map((n) => join(dir, 'pieces', n))], { encoding: 'utf8' });
    expect(JSON.parse(rejected)).toEqual([]);
  });

  it('of the start piece holds the functions a start runs (commander, the commands, help), not only its top level', () => {
    const script = `const vm = require("node:vm");
const cold = new vm.Script(require("node:fs").readFileSync(process.argv[1], "utf8"), { produceCachedData: true });
process.stdout.write(String(cold.cachedData.length));`;
    const coldBytes = Number(execFileSync(NODE, ['-e', script, '--', join(dir, 'pieces', START)], { encoding: 'utf8' }));
    const warmBytes = readFileSync(join(dir, 'pieces', `${START}.cache`)).length;
    expect(warmBytes).toBeGreaterThan(coldBytes * 2);
  });

  it("of the pieces verify runs hold the functions it ran, and of those a phase command loads every function, not only their top level", () => {
    const script = `const vm = require("node:vm");
const cold = new vm.Script(require("node:fs").readFileSync(process.argv[1], "utf8"), { produceCachedData: true });
process.stdout.write(String(cold.cachedData.length));`;
    for (const fn of [/function runVerify\(/, /function verifyStream\(/, /function runPhaseCommand\(/, /\bexecaCoreAsync = /]) {
      const piece = pieceNames().find((n) => fn.test(readFileSync(join(dir, 'pieces', n), 'utf8')));
      expect(piece, String(fn)).toBeDefined();
      const coldBytes = Number(execFileSync(NODE, ['-e', script, '--', join(dir, 'pieces', piece!)], { encoding: 'utf8' }));
      expect(readFileSync(join(dir, 'pieces', `${piece}.cache`)).length, piece).toBeGreaterThan(coldBytes * 2);
    }
  });

  it('are the same bytes in two builds of the same sources (the build is reproducible)', async () => {
    const again = scratchDir();
    await bundle(again, { version: '0.0.0-test', commit: 'test' });
    const caches = (d: string): [string, string][] => readdirSync(join(d, 'pieces')).filter((n) => n.endsWith('.cache')).map((n) => [n, readFileSync(join(d, 'pieces', n)).toString('base64')]);
    expect(caches(again).length).toBe(pieceNames().length);
    const first = new Map(caches(dir));
    // By name: which piece's cache differs tells which run made it differently.
    expect(caches(again).filter(([name, bytes]) => first.get(name) !== bytes).map(([name]) => name)).toEqual([]);
  }, 120_000);
});
