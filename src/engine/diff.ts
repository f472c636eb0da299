// Short unified diffs for plan output, with secrets taken out. Pure: text in, text out.
import { redactUrlsIn } from '../redaction.ts';

export interface DiffOptions {
  /** Lines of context around each change. */
  context?: number;
  /** The diff is cut after this many lines (the rest is counted, not shown). */
  maxLines?: number;
  /** Name shown in the ---/+++ header. */
  label?: string;
}

// A key named exactly `auth` holds registry credentials (containerd's registry.configs.<host>.auth,
// base64 user:password); matching it as a word part would hide authorization/authentication settings.
const SECRET_LINE = /^(\s*(?:[^=:\s]*(?:password|passwd|secret|token|credential|private[_-]?key|api[_-]?key)[^=:\s]*|["']?auth["']?)\s*[=:]\s*)(.+)$/i;

/** Replaces values that look like secrets (password = x, token: y, URLs' passwords and query values) with <redacted>. */
export function redactSecrets(line: string): string {
  const withoutUserinfo = redactUrlsIn(line);
  const m = SECRET_LINE.exec(withoutUserinfo);
  return m ? `${m[1]}<redacted>` : withoutUserinfo;
}

function splitLines(text: string): string[] {
  if (text === '') return [];
  const lines = text.split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  return lines;
}

// How many lines splitLines would make, without making them.
function lineCount(text: string): number {
  if (text === '') return 0;
  let count = 0;
  for (let lf = text.indexOf('\n'); lf !== -1; lf = text.indexOf('\n', lf + 1)) count++;
  return text.endsWith('\n') ? count : count + 1;
}

/** Past this many lines on both sides together, a diff is "everything changed", made only as far as it is shown. */
const MAX_COMPARED_LINES = 20_000;

// Longest common subsequence table; the files machineadm writes are small, so O(n*m) is fine.
// Larger inputs fall back to "everything changed" rather than spending time and memory.
function editScript(a: string[], b: string[]): { op: ' ' | '-' | '+'; line: string }[] {
  const n = a.length;
  const m = b.length;
  if (n * m > 4_000_000) return [...a.map((line) => ({ op: '-' as const, line })), ...b.map((line) => ({ op: '+' as const, line }))];
  const lcs: Uint32Array[] = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
  for (let i = n - 1; i >= 0; i--) {
    for (let j = m - 1; j >= 0; j--) {
      lcs[i]![j] = a[i] === b[j] ? lcs[i + 1]![j + 1]! + 1 : Math.max(lcs[i + 1]![j]!, lcs[i]![j + 1]!);
    }
  }
  const out: { op: ' ' | '-' | '+'; line: string }[] = [];
  let i = 0;
  let j = 0;
  while (i < n && j < m) {
    if (a[i] === b[j]) {
      out.push({ op: ' ', line: a[i]! });
      i++;
      j++;
    } else if (lcs[i + 1]![j]! >= lcs[i]![j + 1]!) {
      out.push({ op: '-', line: a[i++]! });
    } else {
      out.push({ op: '+', line: b[j++]! });
    }
  }
  while (i < n) out.push({ op: '-', line: a[i++]! });
  while (j < m) out.push({ op: '+', line: b[j++]! });
  return out;
}

/** A unified diff of two texts ('' when they are equal); every line passes through redactSecrets. */
export function unifiedDiff(before: string, after: string, options: DiffOptions = {}): string {
  if (before === after) return '';
  const context = options.context ?? 3;
  const maxLines = options.maxLines ?? 60;
  const label = options.label ?? 'file';
  const n = lineCount(before);
  const m = lineCount(after);
  // A new (or emptied) file has nothing to compare: the same diff, without a line list.
  if (n === 0 || m === 0 || n * m > 4_000_000 || n + m > MAX_COMPARED_LINES) return everythingChanged(before, after, n, m, label, maxLines);
  const a = splitLines(before);
  const b = splitLines(after);
  const script = editScript(a, b);
  const changed = script.map((s, index) => (s.op === ' ' ? -1 : index)).filter((index) => index >= 0);
  const lines: string[] = [];
  lines.push(`--- ${before === '' ? '/dev/null' : label}`, `+++ ${label}`);
  // Group changes whose context overlaps into hunks.
  let k = 0;
  while (k < changed.length) {
    const start = Math.max(0, changed[k]! - context);
    let end = Math.min(script.length, changed[k]! + context + 1);
    k++;
    while (k < changed.length && changed[k]! - context <= end) {
      end = Math.min(script.length, changed[k]! + context + 1);
      k++;
    }
    let oldStart = 1;
    let newStart = 1;
    for (let x = 0; x < start; x++) {
      if (script[x]!.op !== '+') oldStart++;
      if (script[x]!.op !== '-') newStart++;
    }
    const hunk = script.slice(start, end);
    const oldCount = hunk.filter((s) => s.op !== '+').length;
    const newCount = hunk.filter((s) => s.op !== '-').length;
    lines.push(`@@ -${oldCount === 0 ? oldStart - 1 : oldStart},${oldCount} +${newCount === 0 ? newStart - 1 : newStart},${newCount} @@`);
    for (const s of hunk) lines.push(s.op + redactSecrets(s.line));
  }
  lines.push(...endMarkers(before, after));
  return shown(lines, lines.length, maxLines);
}

function endMarkers(before: string, after: string): string[] {
  return [...(before !== '' && !before.endsWith('\n') ? ['\\ No newline at end of file (before)'] : []), ...(after !== '' && !after.endsWith('\n') ? ['\\ No newline at end of file'] : [])];
}

// The first maxLines of a diff of `total` lines, and how many more there are.
function shown(lines: string[], total: number, maxLines: number): string {
  if (total <= maxLines) return lines.join('\n') + '\n';
  const hidden = total - maxLines;
  return [...lines.slice(0, maxLines), `... ${hidden} more diff line${hidden === 1 ? '' : 's'}`].join('\n') + '\n';
}

/**
 * One hunk removing every line of `before` and adding every line of `after`, as editScript's
 * fallback gives it, but reading only the lines that are shown: a new file of 30 MiB took
 * 900 MiB as an object per line.
 */
function everythingChanged(before: string, after: string, n: number, m: number, label: string, maxLines: number): string {
  const lines = [`--- ${before === '' ? '/dev/null' : label}`, `+++ ${label}`, `@@ -${n === 0 ? 0 : 1},${n} +${m === 0 ? 0 : 1},${m} @@`];
  for (const [op, text] of [['-', before], ['+', after]] as const) {
    for (let at = 0; at < text.length && lines.length <= maxLines; ) {
      const lf = text.indexOf('\n', at);
      const stop = lf === -1 ? text.length : lf;
      lines.push(op + redactSecrets(text.slice(at, stop)));
      at = stop + 1;
    }
  }
  const markers = endMarkers(before, after);
  if (lines.length <= maxLines) lines.push(...markers);
  return shown(lines, 3 + n + m + markers.length, maxLines);
}
