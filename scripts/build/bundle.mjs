// The esbuild bundle: the CLI split into pieces (the start piece every run loads and the lazy ones
// each command loads), converted to CommonJS and ASCII, checked, and written with their code caches.
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import * as fsp from 'node:fs/promises';
import { join, relative, resolve } from 'node:path';
import { writeCodeCaches, writeRunCaches } from './code-caches.mjs';
import { BuildError, ROOT } from './common.mjs';
import { mainScript, PIECE_HEAD, PIECE_TAIL, START_PIECE } from './loader.mjs';
import { lazyCommanderChildProcess, lazyExecaStandardStreams, lazyExecaV8, lazyExecaVerbose, lazyGotNetwork, lazyGotOptional, lazyListFormat, lazyNodeCrypto } from './plugins.mjs';

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

/**
 * The modules a phase command loads as it runs (their pieces get caches of every function, see
 * writeCodeCaches). got too: every run that reports to an endpoint or downloads loads it, and
 * compiling its functions as they ran cost a report run ~20 ms of CPU (a fleet reporting at once
 * waits for each: 200 runs 1.43x the same runs offline with it compiled as it runs, 1.33x cached).
 */
const PHASE_ENTRIES = ['src/cli/commands/phase-run.ts', 'src/cli/host-options.ts', 'src/host/exec.ts', 'src/host/facts.ts', 'node_modules/execa/index.js', 'node_modules/got/dist/source/index.js'];

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
