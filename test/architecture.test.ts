// The layering rules, checked on the source: imports run down the floors docs/architecture.md
// lists, no two modules import each other (even through others), only src/host/ touches the
// machine (file system, processes, HTTP), and nothing below src/cli/ ends the process or reads
// its arguments.
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const SRC = fileURLToPath(new URL('../src/', import.meta.url));
const ARCHITECTURE = fileURLToPath(new URL('../docs/architecture.md', import.meta.url));
const MACHINE_MODULES = ['node:fs', 'fs', 'node:fs/promises', 'fs/promises', 'node:child_process', 'child_process', 'execa', 'got'];

interface Finding {
  line: number;
  what: string;
}

function sourceFiles(): string[] {
  return readdirSync(SRC, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && /\.(ts|mts|cts|js|mjs|cjs)$/.test(e.name))
    .map((e) => relative(SRC, join(e.parentPath, e.name)).split(sep).join('/'))
    .sort();
}

function parse(file: string, text: string): ts.SourceFile {
  return ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
}

const lineOf = (sf: ts.SourceFile, node: ts.Node) => sf.getLineAndCharacterOfPosition(node.getStart(sf)).line + 1;

/** Every module a file loads at run time: static imports and re-exports, import(), require(). Type-only imports load nothing. */
function importsOf(file: string, text: string): { module: string; line: number }[] {
  const sf = parse(file, text);
  const found: { module: string; line: number }[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier) && !node.importClause?.isTypeOnly) {
      found.push({ module: node.moduleSpecifier.text, line: lineOf(sf, node) });
    } else if (ts.isExportDeclaration(node) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier) && !node.isTypeOnly) {
      found.push({ module: node.moduleSpecifier.text, line: lineOf(sf, node) });
    } else if (ts.isImportEqualsDeclaration(node) && ts.isExternalModuleReference(node.moduleReference) && ts.isStringLiteral(node.moduleReference.expression)) {
      found.push({ module: node.moduleReference.expression.text, line: lineOf(sf, node) });
    } else if (ts.isCallExpression(node)) {
      const callee = node.expression;
      const isImport = callee.kind === ts.SyntaxKind.ImportKeyword;
      const isRequire = ts.isIdentifier(callee) && callee.text === 'require';
      const isCreateRequire = ts.isIdentifier(callee) && callee.text === 'createRequire';
      const arg = node.arguments[0];
      if ((isImport || isRequire) && arg) {
        // A computed specifier cannot be checked, so it is not allowed outside src/host/ either.
        found.push({ module: ts.isStringLiteralLike(arg) ? arg.text : `<computed: ${arg.getText(sf)}>`, line: lineOf(sf, node) });
      }
      if (isCreateRequire) found.push({ module: '<createRequire>', line: lineOf(sf, node) });
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return found;
}

/** Every module a file names in an import of any kind: static, type-only, re-exports, import(), import('x').T. */
function everyImportOf(file: string, text: string): { module: string; line: number }[] {
  const sf = parse(file, text);
  const found: { module: string; line: number }[] = [];
  const visit = (node: ts.Node): void => {
    let module: string | undefined;
    if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) module = node.moduleSpecifier.text;
    else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword && node.arguments[0] && ts.isStringLiteralLike(node.arguments[0])) module = node.arguments[0].text;
    else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument) && ts.isStringLiteral(node.argument.literal)) module = node.argument.literal.text;
    if (module !== undefined) found.push({ module, line: lineOf(sf, node) });
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return found;
}

/** The src-relative file a relative import of `file` names; undefined for packages and node: modules. */
function targetOf(file: string, module: string): string | undefined {
  if (!module.startsWith('.')) return undefined;
  const target = relative(SRC, join(SRC, file, '..', module)).split(sep).join('/');
  return target.startsWith('..') ? undefined : target;
}

/** The room a src file lives in: its top folder, or the root files. */
const roomOf = (file: string): string => (file.includes('/') ? `src/${file.slice(0, file.indexOf('/'))}/` : 'src/*.ts');

interface Layering {
  floors: Map<string, number>;
  /** "src/a/x.ts -> src/b/y.ts" for each import the document allows to run back up. */
  upward: Set<string>;
}

/** The floors table and the upward imports of docs/architecture.md. */
function parseLayering(markdown: string): Layering {
  const floors = new Map<string, number>();
  const upward = new Set<string>();
  for (const line of markdown.split('\n')) {
    const floor = /^\|\s*(\d+(?:\.\d+)?)\s*\|\s*`(src\/[^`]*)`\s*\|/.exec(line);
    if (floor) floors.set(floor[2]!, Number(floor[1]));
    const up = /^\|\s*(src\/\S+\.ts)\s*\|\s*(src\/\S+\.ts)\s*\|\s*\S/.exec(line);
    if (up) upward.add(`${up[1]} -> ${up[2]}`);
  }
  return { floors, upward };
}

/** Imports from one room to another that is not on a lower floor, and rooms the table does not place. */
function layeringFindings(files: readonly { file: string; text: string }[], layering: Layering): string[] {
  const found: string[] = [];
  for (const room of new Set(files.map((f) => roomOf(f.file)))) if (!layering.floors.has(room)) found.push(`${room} is on no floor of docs/architecture.md`);
  for (const { file, text } of files) {
    const from = roomOf(file);
    for (const { module, line } of everyImportOf(file, text)) {
      const target = targetOf(file, module);
      if (target === undefined) continue;
      const to = roomOf(target);
      if (to === from || !layering.floors.has(from) || !layering.floors.has(to)) continue;
      if (layering.floors.get(to)! < layering.floors.get(from)!) continue;
      if (layering.upward.has(`src/${file} -> src/${target}`)) continue;
      found.push(`src/${file}:${line} imports src/${target}: ${to} (floor ${layering.floors.get(to)}) is not below ${from} (floor ${layering.floors.get(from)})`);
    }
  }
  return found;
}

/** Each import circle between files, as the trail that closes it. */
function circles(files: readonly { file: string; text: string }[]): string[] {
  const edges = new Map(files.map(({ file, text }) => [file, everyImportOf(file, text).flatMap(({ module }) => targetOf(file, module) ?? [])]));
  const found: string[] = [];
  const state = new Map<string, 'open' | 'done'>();
  const visit = (f: string, trail: string[]): void => {
    if (state.get(f) === 'done') return;
    if (state.get(f) === 'open') {
      found.push([...trail.slice(trail.indexOf(f)), f].join(' -> '));
      return;
    }
    state.set(f, 'open');
    for (const t of edges.get(f) ?? []) visit(t, [...trail, f]);
    state.set(f, 'done');
  };
  for (const { file } of files) visit(file, []);
  return found;
}

function machineAccess(file: string, text: string): Finding[] {
  return importsOf(file, text)
    .filter(({ module }) => MACHINE_MODULES.includes(module) || module.startsWith('<'))
    .map(({ module, line }) => ({ line, what: `imports ${module}` }));
}

/** Uses of process.exit and process.argv (also as process['exit'], globalThis.process.argv). */
function processControl(file: string, text: string): Finding[] {
  const sf = parse(file, text);
  const found: Finding[] = [];
  const isProcess = (e: ts.Expression): boolean =>
    (ts.isIdentifier(e) && e.text === 'process') || (ts.isPropertyAccessExpression(e) && e.name.text === 'process' && ts.isIdentifier(e.expression) && ['globalThis', 'global'].includes(e.expression.text));
  const visit = (node: ts.Node): void => {
    let name: string | undefined;
    if (ts.isPropertyAccessExpression(node) && isProcess(node.expression)) name = node.name.text;
    if (ts.isElementAccessExpression(node) && isProcess(node.expression) && ts.isStringLiteralLike(node.argumentExpression)) name = node.argumentExpression.text;
    if (name === 'exit' || name === 'argv' || name === 'reallyExit' || name === 'abort') found.push({ line: lineOf(sf, node), what: `uses process.${name}` });
    // const { argv, exit } = process
    if (ts.isVariableDeclaration(node) && node.initializer && isProcess(node.initializer) && ts.isObjectBindingPattern(node.name)) {
      for (const el of node.name.elements) {
        const key = (el.propertyName ?? el.name).getText(sf);
        if (['exit', 'argv'].includes(key)) found.push({ line: lineOf(sf, node), what: `destructures process.${key}` });
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return found;
}

describe('the scanners', () => {
  it.each([
    ["import { readFile } from 'node:fs';", ['imports node:fs']],
    ["import * as fs from 'fs';", ['imports fs']],
    ["import fsp from 'node:fs/promises';", ['imports node:fs/promises']],
    ["import 'node:child_process';", ['imports node:child_process']],
    ["export { execa } from 'execa';", ['imports execa']],
    ["const got = await import('got');", ['imports got']],
    ["const cp = require('child_process');", ['imports child_process']],
    ['const m = await import(name);', ['imports <computed: name>']],
    ["import { createRequire } from 'node:module'; const r = createRequire(x);", ['imports <createRequire>']],
    ["import type { Stats } from 'node:fs';", []],
    ["import { join } from 'node:path';", []],
    ["// import { readFile } from 'node:fs';\nconst s = \"require('fs')\";", []],
  ])('finds machine access in %j', (code, expected) => {
    expect(machineAccess('x.ts', code).map((f) => f.what)).toEqual(expected);
  });

  it.each([
    ['process.exit(1);', ['uses process.exit']],
    ['const a = process.argv.slice(2);', ['uses process.argv']],
    ["process['exit'](2);", ['uses process.exit']],
    ['globalThis.process.exit(0);', ['uses process.exit']],
    ['const { argv } = process;', ['destructures process.argv']],
    ['process.exitCode = 1; const e = process.env.HOME;', []],
  ])('finds process control in %j', (code, expected) => {
    expect(processControl('x.ts', code).map((f) => f.what)).toEqual(expected);
  });
});

describe('the layering checker', () => {
  const layering = parseLayering(['| floor | room | what |', '|---:|---|---|', '| 2 | `src/engine/` | steps |', '| 1 | `src/config/` | schema |', '| 0 | `src/*.ts` | errors |', '', '| from | to | why |', '|---|---|---|', '| src/config/b.ts | src/engine/c.ts | argued |'].join('\n'));
  const at = (file: string, text: string) => ({ file, text });

  it('reads the floors and the upward imports the document allows', () => {
    expect([...layering.floors]).toEqual([['src/engine/', 2], ['src/config/', 1], ['src/*.ts', 0]]);
    expect([...layering.upward]).toEqual(['src/config/b.ts -> src/engine/c.ts']);
  });

  it.each([
    ["import { x } from '../engine/step.ts';", ['src/config/a.ts:1 imports src/engine/step.ts: src/engine/ (floor 2) is not below src/config/ (floor 1)']],
    ["import type { X } from '../engine/step.ts';", ['src/config/a.ts:1 imports src/engine/step.ts: src/engine/ (floor 2) is not below src/config/ (floor 1)']],
    ["const m = await import('../engine/step.ts');", ['src/config/a.ts:1 imports src/engine/step.ts: src/engine/ (floor 2) is not below src/config/ (floor 1)']],
    ["let x: import('../engine/step.ts').Step;", ['src/config/a.ts:1 imports src/engine/step.ts: src/engine/ (floor 2) is not below src/config/ (floor 1)']],
    ["export * from '../engine/step.ts';", ['src/config/a.ts:1 imports src/engine/step.ts: src/engine/ (floor 2) is not below src/config/ (floor 1)']],
    ["import { ExitCode } from '../errors.ts';\nimport { y } from './y.ts';\nimport { load } from 'js-yaml';", []],
  ])('judges %j in src/config/a.ts', (code, expected) => {
    expect(layeringFindings([at('config/a.ts', code)], layering)).toEqual(expected);
  });

  it('lets the listed upward import through, and only that one', () => {
    expect(layeringFindings([at('config/b.ts', "import { c } from '../engine/c.ts';")], layering)).toEqual([]);
    expect(layeringFindings([at('config/b.ts', "import { d } from '../engine/d.ts';")], layering)).toHaveLength(1);
  });

  it('names a folder the table does not place', () => {
    expect(layeringFindings([at('verify/a.ts', "import { x } from '../config/x.ts';")], layering)).toEqual(['src/verify/ is on no floor of docs/architecture.md']);
  });

  it('finds circles through dynamic and type-only imports', () => {
    expect(circles([at('cli/a.ts', "import type { B } from './b.ts';"), at('cli/b.ts', "const a = await import('./a.ts');")])).toEqual(['cli/a.ts -> cli/b.ts -> cli/a.ts']);
    expect(circles([at('cli/a.ts', "import type { B } from './b.ts';"), at('cli/b.ts', "import { c } from './c.ts';")])).toEqual([]);
  });
});

describe('the source tree', () => {
  const files = sourceFiles();

  it('has files to check', () => {
    expect(files.length).toBeGreaterThan(20);
    expect(files).toContain('host/fs.ts');
  });

  it('touches the machine (fs, child_process, execa, got) only in src/host/', () => {
    const offenders = files
      .filter((f) => !f.startsWith('host/'))
      .flatMap((f) => machineAccess(f, readFileSync(join(SRC, f), 'utf8')).map((x) => `src/${f}:${x.line} ${x.what}`));
    expect(offenders, 'use the Host (host.fs, host.proc, ...) instead').toEqual([]);
  });

  it('ends the process and reads its arguments only in src/cli/', () => {
    const offenders = files
      .filter((f) => !f.startsWith('cli/'))
      .flatMap((f) => processControl(f, readFileSync(join(SRC, f), 'utf8')).map((x) => `src/${f}:${x.line} ${x.what}`));
    expect(offenders, 'return a result or throw a MachineadmError; src/cli/ decides the exit code').toEqual([]);
  });

  it('reads process.argv only in the entry point, and calls process.exit only once nothing is pending', () => {
    const offenders = files
      .filter((f) => f.startsWith('cli/'))
      .flatMap((f) => {
        const text = readFileSync(join(SRC, f), 'utf8');
        const lines = text.split('\n');
        // The entry point may exit on 'beforeExit': Node emits it once no write, timer or request is left.
        const allowed = (x: Finding) => f === 'cli/bin.ts' && (x.what === 'uses process.argv' || (x.what === 'uses process.exit' && /^if \(isSea\(\)\) process\.once\('beforeExit', \(\) => process\.exit\(\)\);$/.test(lines[x.line - 1]!.trim())));
        return processControl(f, text).filter((x) => !allowed(x)).map((x) => `src/${f}:${x.line} ${x.what}`);
      });
    // process.exit anywhere else would cut off output still being written; the entry point sets process.exitCode.
    expect(offenders).toEqual([]);
  });

  const sources = () => files.map((file) => ({ file, text: readFileSync(join(SRC, file), 'utf8') }));

  // A circle (a schema importing the renderer that imports the schema's types) means neither can
  // be read, tested or moved alone; type-only and dynamic imports count, since they tie the modules too.
  it('has no import circles between modules, type-only and dynamic imports included', () => {
    expect(circles(sources())).toEqual([]);
  });

  it('imports only down the floors of docs/architecture.md', () => {
    const layering = parseLayering(readFileSync(ARCHITECTURE, 'utf8'));
    expect(layering.floors.size, 'the floors table of docs/architecture.md').toBeGreaterThan(10);
    expect(layering.upward.size, 'at most 3 imports may run back up, each argued in docs/architecture.md').toBeLessThanOrEqual(3);
    expect(layeringFindings(sources(), layering), 'move the shared part down a floor, or argue the import in docs/architecture.md').toEqual([]);
  });

  it('places on a floor only folders that exist', () => {
    const rooms = new Set(files.map(roomOf));
    expect([...parseLayering(readFileSync(ARCHITECTURE, 'utf8')).floors.keys()].filter((room) => !rooms.has(room))).toEqual([]);
  });
});
