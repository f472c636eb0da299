// The layering rules, checked on the source: only src/host/ touches the machine (file system,
// processes, HTTP), and nothing below src/cli/ ends the process or reads its arguments.
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const SRC = fileURLToPath(new URL('../src/', import.meta.url));
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

  // A circle (a schema importing the renderer that imports the schema's types) means neither can
  // be read, tested or moved alone; type-only imports count, since they tie the modules too.
  it('has no import cycles between modules, type-only imports included', () => {
    const edges = new Map<string, string[]>();
    for (const f of files) {
      const sf = parse(f, readFileSync(join(SRC, f), 'utf8'));
      const targets = sf.statements
        .flatMap((n) => ((ts.isImportDeclaration(n) || ts.isExportDeclaration(n)) && n.moduleSpecifier && ts.isStringLiteral(n.moduleSpecifier) ? [n.moduleSpecifier.text] : []))
        .filter((m) => m.startsWith('.'))
        .map((m) => relative(SRC, join(SRC, f, '..', m)).split(sep).join('/'));
      edges.set(f, targets);
    }
    const cycles: string[] = [];
    const state = new Map<string, 'open' | 'done'>();
    const visit = (f: string, trail: string[]): void => {
      if (state.get(f) === 'done') return;
      if (state.get(f) === 'open') {
        cycles.push([...trail.slice(trail.indexOf(f)), f].join(' -> '));
        return;
      }
      state.set(f, 'open');
      for (const t of edges.get(f) ?? []) visit(t, [...trail, f]);
      state.set(f, 'done');
    };
    for (const f of files) visit(f, []);
    expect(cycles).toEqual([]);
  });
});
