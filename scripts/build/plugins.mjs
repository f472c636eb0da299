// The esbuild plugins of the bundle: each makes a module (or a builtin) that a start would load
// but seldom uses load at its first use instead, and fails the build when the code it rewrites is
// no longer as it expects.
import { readFileSync } from 'node:fs';
import * as fsp from 'node:fs/promises';
import { createRequire } from 'node:module';
import { basename, dirname, join } from 'node:path';
import { BuildError, ROOT } from './common.mjs';

const require = createRequire(import.meta.url);

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
