// /etc/fstab: machineadm's mounts live in one marked block, replaced whole on every run; every
// other line is the operator's or the image's and is kept byte for byte. Pure.
import type { MountSpec } from '../../config/schema/index.ts';

export const FSTAB = '/etc/fstab';
export const BLOCK_BEGIN = '# BEGIN machineadm spec.storage.mounts (replaced on every run; edit the configuration instead)';
export const BLOCK_END = '# END machineadm spec.storage.mounts';

// fstab(5): spaces and tabs inside a field are written as octal escapes.
function escapeField(value: string): string {
  return value.replace(/[\\ \t\n]/g, (c) => '\\' + c.charCodeAt(0).toString(8).padStart(3, '0'));
}

function unescapeField(value: string): string {
  return value.replace(/\\([0-7]{3})/g, (_, oct: string) => String.fromCharCode(parseInt(oct, 8)));
}

export function fstabLine(m: MountSpec): string {
  return [escapeField(m.device), escapeField(m.path), m.format, m.options.join(','), String(m.dump ?? 0), String(m.pass ?? 0)].join(' ');
}

/** Mounts in the order they must be made: a parent before what is mounted inside it (stable otherwise). */
export function mountOrder<T>(mounts: readonly T[], pathOf: (mount: T) => string): T[] {
  const depth = (m: T) => pathOf(m).split('/').filter(Boolean).length;
  return [...mounts].sort((a, b) => depth(a) - depth(b));
}

interface Split {
  before: string[];
  after: string[];
  /** The block was found (begin and end, in that order). */
  found: boolean;
}

function splitLines(text: string): string[] {
  const lines = text.split('\n');
  if (lines.at(-1) === '') lines.pop();
  return lines;
}

function split(text: string): Split {
  const lines = splitLines(text);
  const begin = lines.findIndex((l) => l.startsWith('# BEGIN machineadm spec.storage.mounts'));
  const end = begin < 0 ? -1 : lines.findIndex((l, i) => i > begin && l === BLOCK_END);
  if (begin < 0 || end < 0) return { before: lines, after: [], found: false };
  return { before: lines.slice(0, begin), after: lines.slice(end + 1), found: true };
}

/**
 * The file with the block holding these mounts (in mount order), or without a block when there are
 * none. A file without a block gets it at its end.
 */
export function renderFstab(existing: string, mounts: readonly MountSpec[]): string {
  const { before, after } = split(existing);
  const block = mounts.length ? [BLOCK_BEGIN, ...mountOrder(mounts, (m) => m.path).map(fstabLine), BLOCK_END] : [];
  const lines = [...before, ...block, ...after];
  return lines.length ? lines.join('\n') + '\n' : '';
}

/** Lines outside the block that mount one of these paths: the two entries would fight at boot. */
export function outsideEntries(existing: string, paths: readonly string[]): { line: number; path: string; text: string }[] {
  const { before, after, found } = split(existing);
  const out: { line: number; path: string; text: string }[] = [];
  const blockLength = found ? splitLines(existing).length - before.length - after.length : 0;
  const numbered = [...before.map((text, i) => ({ text, line: i + 1 })), ...after.map((text, i) => ({ text, line: before.length + blockLength + i + 1 }))];
  const wanted = new Set(paths.map(normalize));
  for (const { text, line } of numbered) {
    const fields = text.trim().split(/\s+/);
    if (!fields[0] || fields[0].startsWith('#') || fields.length < 2) continue;
    const path = normalize(unescapeField(fields[1]!));
    if (wanted.has(path)) out.push({ line, path, text });
  }
  return out;
}

function normalize(path: string): string {
  const p = path.replace(/\/+/g, '/');
  return p.length > 1 ? p.replace(/\/$/, '') : p;
}
