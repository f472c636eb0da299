// The contract is an index, docs/contract.md, and one page per part in docs/contract/. This keeps it
// navigable and keeps each promise tied to the test that would catch its breach:
// (a) every page is linked from the index and links back to it, and the index lists every section
//     (## and ###) of every page;
// (b) every relative link of the index and the pages resolves, anchors included (GitHub's heading
//     anchors), and so does every link to the contract from the other Markdown files and every
//     mention of docs/contract.md or docs/contract/<page>.md[#anchor] in README.md, docs, src, test,
//     scripts and examples;
// (c) every checked-by link names a test file that exists and a title that file has, every
//     "checked by test/..." is such a link (no half-written one), and every test path the contract
//     names exists;
// (d) every promise names at least one test.
//
// A checked-by link is `checked by test/PATH.test.ts: "TITLE"`, usually in parentheses, maybe
// followed by ` and "TITLE"`; the title is as the test file writes it (`%s` where it.each fills one
// in), and a line break may fall anywhere in the link.
// A promise is each item of a numbered list (a line starting "N. " at the margin, outside code
// blocks, up to the next item, a blank line or a heading): the contract states its enumerated
// guarantees that way (reset's list is headed "Promises:"), and each names its test there. Pages that
// name no test at all are listed below, so that the list can only shrink.
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, extname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CONTRACT_DIR, CONTRACT_INDEX, REPO, contractPages } from '../support/contract-pages.ts';

/** Pages that name no test, and why. A page that comes to name one must leave this list. */
const NAMING_NO_TEST: Record<string, string> = {
  'command-reference.md': 'generated from the command line; test/docs/contract-reference.test.ts compares it whole',
  'recipes.md': 'says each recipe is "checked by the tests with the real tool that reads it" without naming them',
};

const PAGES = contractPages();
const read = (path: string): string => readFileSync(path, 'utf8');
const rel = (path: string): string => relative(REPO, path);
const lineOf = (text: string, index: number): number => text.slice(0, index).split('\n').length;

interface Line {
  n: number;
  line: string;
  code: boolean;
}

/** The lines of a Markdown text, each marked when it is in (or opens or closes) a fenced code block. */
function lines(text: string): Line[] {
  let fence: string | undefined;
  return text.split('\n').map((line, i) => {
    const marker = /^\s*(`{3,}|~{3,})/.exec(line)?.[1];
    if (marker && (!fence || marker.startsWith(fence))) {
      fence = fence ? undefined : marker;
      return { n: i + 1, line, code: true };
    }
    return { n: i + 1, line, code: fence !== undefined };
  });
}

interface Heading {
  level: number;
  text: string;
  anchor: string;
}

/** The headings of a Markdown text with the anchors GitHub gives them (a repeated one gets -1, -2, ...). */
function headings(text: string): Heading[] {
  const seen = new Map<string, number>();
  const out: Heading[] = [];
  for (const { line, code } of lines(text)) {
    const m = code ? null : /^(#{1,6})\s+(.*?)\s*$/.exec(line);
    if (!m) continue;
    const base = m[2]!
      .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
      .toLowerCase()
      .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
      .replace(/ /g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.push({ level: m[1]!.length, text: m[2]!, anchor: n === 0 ? base : `${base}-${n}` });
  }
  return out;
}

interface Link {
  from: string;
  n: number;
  target: string;
}

/** The inline links of a Markdown file, outside code blocks and code spans. */
function links(path: string): Link[] {
  const out: Link[] = [];
  for (const { n, line, code } of lines(read(path))) {
    if (code) continue;
    for (const m of line.replace(/`[^`]*`/g, '').matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) out.push({ from: path, n, target: m[1]! });
  }
  return out;
}

const external = (target: string): boolean => /^[a-z][a-z\d+.-]*:/i.test(target);

/** Where a relative link leads: the file (or folder) and the anchor, if any. */
function destination(link: Link): { file: string; anchor?: string } {
  const hash = link.target.indexOf('#');
  const path = hash < 0 ? link.target : link.target.slice(0, hash);
  const anchor = hash < 0 ? undefined : decodeURIComponent(link.target.slice(hash + 1));
  return { file: path ? resolve(dirname(link.from), decodeURIComponent(path)) : link.from, anchor };
}

/** Why a relative link does not resolve, or undefined when it does. */
function broken(link: Link): string | undefined {
  const { file, anchor } = destination(link);
  if (!existsSync(file)) return `${rel(file)} does not exist`;
  if (anchor === undefined || !file.endsWith('.md')) return undefined;
  if (!headings(read(file)).some((h) => h.anchor === anchor)) return `${rel(file)} has no heading with the anchor #${anchor}`;
  return undefined;
}

interface CheckedBy {
  page: string;
  n: number;
  file: string;
  title: string;
}

const CHECKED_BY = /checked by\s+(test\/[\w./-]+?\.test\.ts):\s*("(?:[^"\\]|\\.)*"(?:\s+and\s+"(?:[^"\\]|\\.)*")*)/g;

/** The checked-by links of a text, each title on its own. */
function checkedBy(page: string, text: string, firstLine = 1): CheckedBy[] {
  return [...text.matchAll(CHECKED_BY)].flatMap((m) =>
    [...m[2]!.matchAll(/"((?:[^"\\]|\\.)*)"/g)].map((t) => ({ page, n: firstLine - 1 + lineOf(text, m.index), file: m[1]!, title: t[1]! })),
  );
}

interface PromiseItem {
  page: string;
  n: number;
  text: string;
}

/** Each item of a numbered list: from "N. " at the margin to the next item, a blank line or a heading. */
function promises(page: string, text: string): PromiseItem[] {
  const out: PromiseItem[] = [];
  let current: PromiseItem | undefined;
  for (const { n, line, code } of lines(text)) {
    if (!code && /^\d+\. /.test(line)) {
      current = { page, n, text: line };
      out.push(current);
    } else if (code || line.trim() === '' || line.startsWith('#')) {
      current = undefined;
    } else if (current) {
      current.text += `\n${line}`;
    }
  }
  return out;
}

const pageText = Object.fromEntries(PAGES.map((page) => [page, read(join(CONTRACT_DIR, page))]));
const allLinks = [CONTRACT_INDEX, ...PAGES.map((page) => join(CONTRACT_DIR, page))].flatMap(links);
const relativeLinks = allLinks.filter((l) => !external(l.target));
const indexTargets = new Set(
  links(CONTRACT_INDEX)
    .filter((l) => !external(l.target))
    .map((l) => {
      const { file, anchor } = destination(l);
      return anchor === undefined ? file : `${file}#${anchor}`;
    }),
);
const allCheckedBy = PAGES.flatMap((page) => checkedBy(page, pageText[page]!));
const allPromises = PAGES.flatMap((page) => promises(page, pageText[page]!));

describe('the contract index, docs/contract.md', () => {
  it('has pages to index', () => {
    expect(existsSync(CONTRACT_INDEX)).toBe(true);
    expect(PAGES.length).toBeGreaterThanOrEqual(8);
  });

  it.each(PAGES)('links docs/contract/%s', (page) => {
    expect(indexTargets.has(join(CONTRACT_DIR, page)), `docs/contract.md has no link to contract/${page}`).toBe(true);
  });

  it.each(PAGES)('is linked back from docs/contract/%s', (page) => {
    expect(links(join(CONTRACT_DIR, page)).some((l) => !external(l.target) && destination(l).file === CONTRACT_INDEX), `contract/${page} does not link to ../contract.md`).toBe(true);
  });

  const sections = PAGES.flatMap((page) => headings(pageText[page]!).filter((h) => h.level === 2 || h.level === 3).map((h) => [`${page}#${h.anchor}`, page, h] as const));
  it.each(sections)('lists the section %s', (_name, page, heading) => {
    expect(indexTargets.has(`${join(CONTRACT_DIR, page)}#${heading.anchor}`), `docs/contract.md does not list "${heading.text}" (contract/${page}#${heading.anchor})`).toBe(true);
  });
});

describe('the links of the contract', () => {
  it('are there to check', () => {
    expect(relativeLinks.length).toBeGreaterThan(PAGES.length);
  });

  it.each(relativeLinks.map((l) => [`${rel(l.from)}:${l.n} ${l.target}`, l] as const))('%s resolves', (_name, link) => {
    expect(broken(link)).toBeUndefined();
  });

  // Links from the rest of the documentation into the contract, and mentions of its files anywhere.
  const markdown = ['README.md', ...walk('docs').filter((f) => f.endsWith('.md'))]
    .map((f) => join(REPO, f))
    .filter((f) => f !== CONTRACT_INDEX && dirname(f) !== CONTRACT_DIR);
  const inward = markdown.flatMap(links).filter((l) => {
    if (external(l.target)) return false;
    const { file } = destination(l);
    return file === CONTRACT_INDEX || file === CONTRACT_DIR || file.startsWith(`${CONTRACT_DIR}/`);
  });
  it.each(inward.map((l) => [`${rel(l.from)}:${l.n} ${l.target}`, l] as const))('%s (into the contract) resolves', (_name, link) => {
    expect(broken(link)).toBeUndefined();
  });

  const TEXT = new Set(['.ts', '.mjs', '.js', '.md', '.yaml', '.yml', '.json', '.sh', '.ps1', '.py', '.cmd', '.xml', '.1', '.txt']);
  const mentions = ['README.md', ...['src', 'test', 'scripts', 'docs', 'examples'].flatMap(walk)]
    .filter((f) => TEXT.has(extname(f)))
    .flatMap((f) => {
      const text = read(join(REPO, f));
      return [...text.matchAll(/\bdocs\/contract(\/[\w.-]+\.md|\.md)(?:#([\w-]+))?/g)].map((m) => [`${f}:${lineOf(text, m.index)} ${m[0]}`, m[1] === '.md' ? CONTRACT_INDEX : join(REPO, 'docs', 'contract', m[1]!.slice(1)), m[2]] as const);
    });
  it('are mentioned across the repository', () => {
    expect(mentions.length).toBeGreaterThan(0);
  });
  it.each(mentions)('%s names a page (and section) that exists', (_name, file, anchor) => {
    expect(existsSync(file), `${rel(file)} does not exist`).toBe(true);
    if (anchor !== undefined) expect(headings(read(file)).map((h) => h.anchor)).toContain(anchor);
  });
});

describe('the checked-by links of the contract', () => {
  it('are there to check', () => {
    expect(allCheckedBy.length).toBeGreaterThanOrEqual(100);
  });

  it.each(PAGES)('on %s are all whole: a test file and a quoted title', (page) => {
    const text = pageText[page]!;
    const starts = new Set([...text.matchAll(CHECKED_BY)].map((m) => m.index));
    const halfWritten = [...text.matchAll(/checked by\s+test\//g)].filter((m) => !starts.has(m.index)).map((m) => `line ${lineOf(text, m.index)}: ${text.slice(m.index, m.index + 100)}`);
    expect(halfWritten).toEqual([]);
  });

  const titlesOf = new Map<string, string>();
  const sourceOf = (file: string): string => {
    // As the title is written in a string literal there: escaped quotes read as quotes.
    if (!titlesOf.has(file)) titlesOf.set(file, read(join(REPO, file)).replace(/\\(['"`])/g, '$1').replace(/\s+/g, ' '));
    return titlesOf.get(file)!;
  };
  it.each(allCheckedBy.map((c) => [`${c.page}:${c.n}`, c.file, c.title.replace(/\s+/g, ' ')] as const))('%s names %s: "%s", which exists', (_where, file, title) => {
    expect(existsSync(join(REPO, file)), `${file} does not exist`).toBe(true);
    const source = sourceOf(file);
    expect(source.includes(title.replace(/\\"/g, '"')), `${file} has no test titled "${title}"`).toBe(true);
  });

  const named = PAGES.flatMap((page) => [...pageText[page]!.matchAll(/(?<![\w/.:-])test\/[\w./-]*[\w/]/g)].map((m) => [`${page}:${lineOf(pageText[page]!, m.index)}`, m[0]] as const));
  it.each(named)('%s names %s, which exists', (_where, path) => {
    expect(existsSync(join(REPO, path)), `${path} does not exist`).toBe(true);
  });
});

describe('the promises of the contract', () => {
  it('are there to check', () => {
    expect(allPromises.length).toBeGreaterThanOrEqual(20);
  });

  it.each(allPromises.map((p) => [`${p.page}:${p.n} ${p.text.split('\n')[0]!.slice(0, 60)}`, p] as const))('%s... names at least one test', (_name, promise) => {
    expect(checkedBy(promise.page, promise.text).length, `no "(checked by test/...: \\"title\\")" in ${promise.page}:${promise.n}:\n${promise.text}`).toBeGreaterThan(0);
  });

  it.each(PAGES)('on %s name a test, or the page is listed as naming none', (page) => {
    const count = allCheckedBy.filter((c) => c.page === page).length;
    if (page in NAMING_NO_TEST) expect(count, `${page} now names a test: take it off NAMING_NO_TEST`).toBe(0);
    else expect(count, `${page} names no test (checked by test/...: "title")`).toBeGreaterThan(0);
  });

  it('leave no page listed as naming no test that is not a page', () => {
    expect(Object.keys(NAMING_NO_TEST).filter((page) => !PAGES.includes(page))).toEqual([]);
  });
});

/** Every file below a folder of the repository (node_modules and hidden folders left out), relative to the repository. */
function walk(folder: string): string[] {
  const root = join(REPO, folder);
  if (!existsSync(root) || !statSync(root).isDirectory()) return [];
  return readdirSync(root, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => relative(REPO, join(e.parentPath, e.name)))
    .filter((f) => !f.split('/').some((part) => part === 'node_modules' || part.startsWith('.')));
}
