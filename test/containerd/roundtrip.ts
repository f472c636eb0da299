// Round trip through a real containerd: `containerd --config F config dump` prints the configuration
// containerd actually loaded; every leaf machineadm rendered must come back unchanged (containerd
// drops misspelled or misplaced keys silently, so exit 0 proves nothing).
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from '@iarna/toml';

const run = promisify(execFile);

export interface Leaf {
  path: string[];
  value: unknown;
}

function isTable(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Date);
}

export function leaves(table: Record<string, unknown>, path: string[] = []): Leaf[] {
  return Object.entries(table).flatMap(([k, v]) => (isTable(v) ? leaves(v, [...path, k]) : [{ path: [...path, k], value: v }]));
}

function at(table: unknown, path: string[]): unknown {
  let cur = table;
  for (const p of path) {
    if (!isTable(cur)) return undefined;
    cur = cur[p];
  }
  return cur;
}

function plain(v: unknown): unknown {
  if (v === undefined) return undefined;
  return JSON.parse(JSON.stringify(v, (_k, x) => (typeof x === 'bigint' ? Number(x) : x)));
}

export interface RoundTrip {
  checked: number;
  /** The dotted key paths compared. */
  paths: string[];
  mismatches: string[];
}

/** Writes `text` to dir/name, runs the containerd binary's config dump, compares every leaf. */
export async function roundTrip(containerd: string, dir: string, name: string, text: string): Promise<RoundTrip> {
  const file = join(dir, `${name}.toml`);
  writeFileSync(file, text);
  const { stdout } = await run(containerd, ['--config', file, 'config', 'dump'], { timeout: 30_000, maxBuffer: 16 * 1024 * 1024 });
  const dumped = parse(stdout);
  const rendered = parse(text) as Record<string, unknown>;
  const mismatches: string[] = [];
  const all = leaves(rendered);
  for (const leaf of all) {
    const got = plain(at(dumped, leaf.path));
    const want = plain(leaf.value);
    if (JSON.stringify(got) !== JSON.stringify(want)) mismatches.push(`${leaf.path.join(' > ')}: rendered ${JSON.stringify(want)}, containerd loaded ${JSON.stringify(got)}`);
  }
  return { checked: all.length, paths: all.map((l) => l.path.join('.')), mismatches };
}

/** A small seeded generator (mulberry32), so a failing random case can be reproduced. */
export function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
