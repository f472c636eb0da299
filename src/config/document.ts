// Turning the bytes of one source into a value plus a position index (field path -> line and
// column), refusing what is not a configuration: invalid UTF-8, HTML pages, several documents,
// duplicate keys, alias bombs. YAML and JSON alike (JSON is read as YAML flow syntax).
// Pure: no I/O.
import { CORE_SCHEMA, EVENT_ID, YAMLException, constructFromEvents, getScalarValue, parseEvents, type Event } from 'js-yaml';
import type { ConfigIssue } from '../errors.ts';
import type { FieldPath } from './schema/dsl.ts';
import { BUDGETS, LoadBudget, SMALLER_HINT, formatMiB } from './budgets.ts';

export interface Position {
  line: number;
  column: number;
}

export interface ParsedDocument {
  source: string;
  value: unknown;
  /** Where each field path starts (the key for a map entry, the item for a list entry). */
  positions: PositionIndex;
}

/** Alias uses per document; a configuration needs a handful at most. */
export const MAX_ALIASES = 1_000;

/** Issues found while reading a source; they carry the source and, when known, the line. */
export class DocumentError extends Error {
  readonly issues: ConfigIssue[];
  constructor(issues: ConfigIssue[]) {
    super(issues.map((i) => i.message).join('; '));
    this.issues = issues;
  }
}

export class PositionIndex {
  private readonly byPath = new Map<string, Position>();
  private fill: ((index: PositionIndex) => void) | undefined;
  /** `fill` records the positions when they are first asked for: a valid document never needs them. */
  constructor(fill?: (index: PositionIndex) => void) {
    this.fill = fill;
  }
  private filled(): Map<string, Position> {
    const fill = this.fill;
    this.fill = undefined;
    fill?.(this);
    return this.byPath;
  }
  set(path: FieldPath, position: Position): void {
    const key = JSON.stringify(path);
    if (!this.byPath.has(key)) this.byPath.set(key, position);
  }
  /** The position of the path, or of its closest ancestor that has one. */
  find(path: FieldPath): (Position & { exact: boolean }) | undefined {
    const byPath = this.filled();
    for (let n = path.length; n >= 0; n--) {
      const hit = byPath.get(JSON.stringify(path.slice(0, n)));
      if (hit) return { ...hit, exact: n === path.length };
    }
    return undefined;
  }
  has(path: FieldPath): boolean {
    return this.filled().has(JSON.stringify(path));
  }
  get size(): number {
    return this.filled().size;
  }
}

/**
 * Decodes UTF-8 strictly; an invalid byte is an error with its line, never a replacement character.
 * `lineOffset` is where the bytes start in a larger document (a MIME part of user data).
 */
export function decodeUtf8(bytes: Uint8Array, source: string, lineOffset = 0): string {
  try {
    const text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false }).decode(bytes);
    return text;
  } catch {
    const offset = firstInvalidUtf8(bytes);
    let line = 1 + lineOffset;
    for (let i = 0; i < offset; i++) if (bytes[i] === 0x0a) line++;
    throw new DocumentError([
      {
        source,
        line,
        path: '',
        message: `not valid UTF-8 (byte ${offset} is 0x${(bytes[offset] ?? 0).toString(16).padStart(2, '0')})`,
        hint: 'save the file as UTF-8; a binary or UTF-16 file is not a configuration',
      },
    ]);
  }
}

/** Offset of the first byte that breaks UTF-8. */
export function firstInvalidUtf8(bytes: Uint8Array): number {
  let i = 0;
  while (i < bytes.length) {
    const b = bytes[i]!;
    const need = b < 0x80 ? 0 : b >= 0xc2 && b <= 0xdf ? 1 : b >= 0xe0 && b <= 0xef ? 2 : b >= 0xf0 && b <= 0xf4 ? 3 : -1;
    if (need < 0) return i;
    for (let k = 1; k <= need; k++) {
      const c = bytes[i + k];
      if (c === undefined || (c & 0xc0) !== 0x80) return i;
    }
    // Overlong and surrogate forms the fatal decoder also rejects.
    if (need === 2 && ((b === 0xe0 && bytes[i + 1]! < 0xa0) || (b === 0xed && bytes[i + 1]! >= 0xa0))) return i;
    if (need === 3 && ((b === 0xf0 && bytes[i + 1]! < 0x90) || (b === 0xf4 && bytes[i + 1]! >= 0x90))) return i;
    i += need + 1;
  }
  return bytes.length;
}

/** An HTML page (a login portal, a proxy's error page) served in place of the configuration. */
export function looksLikeHtml(text: string): boolean {
  return /^\s*(<!doctype\s+html|<html[\s>]|<head[\s>]|<body[\s>])/i.test(text.slice(0, 1024));
}

function lineStarts(text: string): number[] {
  const starts = [0];
  for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) === 0x0a) starts.push(i + 1);
  return starts;
}

function positionAt(starts: number[], offset: number): Position {
  let lo = 0;
  let hi = starts.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (starts[mid]! <= offset) lo = mid;
    else hi = mid - 1;
  }
  return { line: lo + 1, column: offset - starts[lo]! + 1 };
}

function nodeStart(event: Event): number {
  switch (event.type) {
    case EVENT_ID.SCALAR: {
      const starts = [event.anchorStart, event.tagStart].filter((n) => n >= 0);
      // Quoted scalars' values start after the quote.
      const value = event.style === 2 || event.style === 3 ? event.valueStart - 1 : event.valueStart;
      return Math.min(value, ...starts);
    }
    case EVENT_ID.MAPPING:
    case EVENT_ID.SEQUENCE:
      return Math.min(event.start, ...[event.anchorStart, event.tagStart].filter((n) => n >= 0));
    case EVENT_ID.ALIAS:
      return Math.max(0, event.anchorStart - 1);
    default:
      return 0;
  }
}

/** Records path -> position from the parser's events (keys of maps, items of lists). */
function indexPositions(index: PositionIndex, text: string, events: Event[], lineOffset: number): void {
  const starts = lineStarts(text);
  const pos = (offset: number): Position => {
    const p = positionAt(starts, offset);
    return { line: p.line + lineOffset, column: p.column };
  };
  let i = 0;
  // Skips one node (with its children) starting at events[i]; returns the index after it.
  const skip = (at: number): number => {
    const e = events[at];
    if (!e) return at;
    if (e.type !== EVENT_ID.MAPPING && e.type !== EVENT_ID.SEQUENCE) return at + 1;
    let depth = 0;
    let k = at;
    do {
      const t = events[k]!.type;
      if (t === EVENT_ID.MAPPING || t === EVENT_ID.SEQUENCE) depth++;
      else if (t === EVENT_ID.POP) depth--;
      k++;
    } while (depth > 0 && k < events.length);
    return k;
  };
  const walk = (at: number, path: FieldPath): number => {
    const e = events[at];
    if (!e) return at;
    index.set(path, pos(nodeStart(e)));
    if (e.type === EVENT_ID.MAPPING) {
      let k = at + 1;
      while (k < events.length && events[k]!.type !== EVENT_ID.POP) {
        const key = events[k]!;
        if (key.type === EVENT_ID.SCALAR) {
          const name = getScalarValue(text, key);
          const child = [...path, name];
          index.set(child, pos(nodeStart(key)));
          k = walk(k + 1, child);
        } else {
          // A complex key (a map or list as key) is not a configuration field: skip key and value.
          k = skip(skip(k));
        }
      }
      return k + 1;
    }
    if (e.type === EVENT_ID.SEQUENCE) {
      let k = at + 1;
      let n = 0;
      while (k < events.length && events[k]!.type !== EVENT_ID.POP) k = walk(k, [...path, n++]);
      return k + 1;
    }
    return at + 1;
  };
  while (i < events.length && events[i]!.type === EVENT_ID.DOCUMENT) i = walk(i + 1, []) + 1;
}

/** How many values the document stands for once every alias is expanded, stopping at `limit`. */
export function expandedSize(value: unknown, limit: number): number {
  return expanded(value, () => 1, limit);
}

/**
 * How many bytes of text (keys and scalars) the document stands for once every alias is expanded,
 * stopping at `limit`: a few aliases of one long string are few values but gigabytes once merged,
 * copied or printed.
 */
export function expandedBytes(value: unknown, limit: number): number {
  return expanded(value, (scalar) => (typeof scalar === 'string' ? scalar.length : 8), limit, (key) => key.length);
}

function expanded(value: unknown, weigh: (scalar: unknown) => number, limit: number, weighKey: (key: string) => number = () => 0): number {
  const sizes = new Map<object, number>();
  const active = new Set<object>();
  const size = (v: unknown): number => {
    if (v === null || typeof v !== 'object') return weigh(v);
    const known = sizes.get(v);
    if (known !== undefined) return known;
    if (active.has(v)) return Number.POSITIVE_INFINITY;
    active.add(v);
    let total = weigh(v);
    for (const [key, child] of Array.isArray(v) ? v.map((c) => ['', c] as const) : Object.entries(v)) {
      total += weighKey(key) + size(child);
      if (total > limit) break;
    }
    active.delete(v);
    sizes.set(v, total);
    return total;
  };
  return size(value);
}

/**
 * How many pieces the YAML parser may make of the text, counted before it runs: every value but
 * the first follows one of `- ? : , [ {`, and the parser makes at most two events of each; a
 * string is built a piece per line and per escape (`\` in double quotes, `''` in single quotes).
 * Counted wherever they are (in a string too), so this counts too many, never too few.
 */
export function yamlPieces(text: string): number {
  let count = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    // - ? : , [ { line break, backslash, single quote
    if (c === 0x2d || c === 0x3f || c === 0x3a || c === 0x2c || c === 0x5b || c === 0x7b || c === 0x0a || c === 0x5c || c === 0x27) count++;
  }
  return count;
}

/**
 * Parses one source's text (YAML or JSON). Returns undefined for an empty document (only comments
 * or white space). `budget` is what is left of the whole configuration's (./budgets.ts): the
 * document's values and text, aliases expanded, are spent from it.
 */
export function parseDocument(text: string, source: string, lineOffset = 0, budget: LoadBudget = new LoadBudget()): ParsedDocument | undefined {
  try {
    return parseLines(text, source, lineOffset, budget);
  } catch (error) {
    // Parts of a larger document (MIME user data) report lines of the whole document.
    if (error instanceof DocumentError && lineOffset) for (const i of error.issues) if (i.line !== undefined) i.line += lineOffset;
    throw error;
  }
}

function parseLines(text: string, source: string, lineOffset: number, budget: LoadBudget): ParsedDocument | undefined {
  if (looksLikeHtml(text)) {
    throw new DocumentError([{ source, line: 1, path: '', message: 'this is an HTML page, not a configuration', hint: 'check the URL or file: a web server or proxy may have answered with an error or login page' }]);
  }
  // Before the parser runs: its events for a flat 7 MB document took over 600 MiB, and a 7 MB
  // string of escapes 290 MiB.
  spend(budget, 'yamlPieces', yamlPieces(text), { source, aliases: false });
  let events: Event[];
  let values: unknown[];
  try {
    events = parseEvents(text, { maxDepth: 64 });
    // A document of nothing (a trailing "---", as generators write after each document) is no document.
    const roots = events.flatMap((e, i) => (e.type === EVENT_ID.DOCUMENT ? [events[i + 1]!] : []));
    const kept = roots.flatMap((root, index) => (isEmptyNode(root) ? [] : [{ root, index }]));
    if (kept.length > 1) {
      const second = positionAt(lineStarts(text), documentMarkerBefore(text, nodeStart(kept[1]!.root)));
      throw new DocumentError([
        { source, line: second.line, column: second.column, path: '', message: `holds ${kept.length} YAML documents; machineadm reads one per source`, hint: 'put each document in its own file (a directory source reads them in order)' },
      ]);
    }
    const all = constructFromEvents(events, { source: text, schema: CORE_SCHEMA, maxAliases: MAX_ALIASES });
    values = kept.length > 0 ? [all[kept[0]!.index]] : [];
  } catch (error) {
    if (error instanceof DocumentError) throw error;
    throw new DocumentError([yamlIssue(error, source)]);
  }
  if (values.length === 0 || values[0] === null || values[0] === undefined) return undefined;
  const value = values[0];
  const aliases = events.some((e) => e.type === EVENT_ID.ALIAS);
  spend(budget, 'values', expandedSize(value, budget.values), { source, aliases });
  spend(budget, 'textBytes', expandedBytes(value, budget.textBytes), { source, aliases });
  // The events are not kept: a valid document never needs its positions, and an invalid one is
  // parsed again for them, so a thousand drop-ins do not hold a thousand event lists.
  return { source, value, positions: new PositionIndex((index) => indexPositions(index, text, parseEvents(text, { maxDepth: 64 }), lineOffset)) };
}

// A document past what is left of a total: the message says whether it is past the total on its
// own (an alias bomb when it has aliases) or together with the documents read before it.
function spend(budget: LoadBudget, what: 'yamlPieces' | 'values' | 'textBytes', used: number, doc: { source: string; aliases: boolean }): void {
  const left = budget[what];
  budget[what] = left - used;
  if (used <= left) return;
  const total = BUDGETS[what];
  const amount = what === 'values' ? `${total} values` : what === 'textBytes' ? `${formatMiB(total)} of text` : `${total} line breaks, escapes (\\ or '') and characters that start a YAML value (- ? : , [ {)`;
  const alone = left === total;
  const message = !alone
    ? `with this document, the sources hold more than ${amount} together${doc.aliases ? ' (YAML aliases expanded)' : ''}`
    : doc.aliases
      ? `YAML aliases expand this document to more than ${amount} (an alias bomb?)`
      : `holds more than ${amount}, more than any configuration`;
  const hint = doc.aliases
    ? what === 'values'
      ? 'write the values out instead of nesting aliases'
      : 'write the values out instead of repeating long values through aliases'
    : what === 'yamlPieces'
      ? "give a file's text as gzip+base64 on one line (gzip -c FILE | base64 -w0), or as source: { url, sha256 }"
      : SMALLER_HINT;
  throw new DocumentError([{ source: doc.source, path: '', message, hint }]);
}

/** A document's root that holds nothing: no value, tag or anchor (what a bare "---" starts). */
function isEmptyNode(event: Event): boolean {
  return event.type === EVENT_ID.SCALAR && event.valueStart < 0 && event.tagStart < 0 && event.anchorStart < 0;
}

/** The "---" that starts the document whose root is at `offset`, or the root itself when it has none. */
function documentMarkerBefore(text: string, offset: number): number {
  const marker = text.lastIndexOf('\n---', offset);
  return marker >= 0 ? marker + 1 : text.startsWith('---') ? 0 : offset;
}

function yamlIssue(error: unknown, source: string): ConfigIssue {
  if (error instanceof YAMLException) {
    const reason = error.reason || 'cannot be parsed';
    const where = error.mark ? { line: error.mark.line + 1, column: error.mark.column + 1 } : {};
    if (/duplicated mapping key/.test(reason)) {
      const mark = error.mark;
      // The parser marks a quoted key after its opening quote (every key of a JSON document): the
      // key is named, and placed, as written, quotes included.
      const quoted = mark && mark.position > 0 ? /^("[^"\n]*"|'[^'\n]*')\s*:/.exec(mark.buffer.slice(mark.position - 1, mark.position + 200))?.[1] : undefined;
      const key = quoted ?? (mark ? /^\s*("[^"\n]*"|'[^'\n]*'|[^:#\n]+?)\s*:/.exec(mark.buffer.slice(mark.position, mark.position + 200))?.[1] : undefined);
      const at = quoted && mark ? { line: mark.line + 1, column: mark.column } : where;
      return { source, ...at, path: '', message: `${key ? `key ${key.startsWith('"') || key.startsWith("'") ? key : JSON.stringify(key)}` : 'a key'} appears twice in the same map`, hint: 'keep one of them; machineadm does not guess which one you meant' };
    }
    if (/maxAliases/.test(reason)) {
      return { source, ...where, path: '', message: `more than ${MAX_ALIASES} YAML aliases (an alias bomb?)`, hint: 'write the values out instead of nesting aliases' };
    }
    if (/maximum nesting depth|maxDepth/i.test(reason)) {
      return { source, ...where, path: '', message: 'nested too deeply', hint: 'a configuration is at most a few levels deep' };
    }
    // The reason alone: js-yaml's message adds a snippet of the source, which could hold a secret.
    return { source, ...where, path: '', message: `not valid YAML or JSON: ${reason}`, hint: 'fix the syntax at this line (indentation, quotes, brackets)' };
  }
  return { source, path: '', message: `cannot be parsed: ${(error as Error).message.split('\n')[0]}` };
}
