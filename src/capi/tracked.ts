// A Cluster API document read field by field, remembering what was read. Whatever the importer
// neither maps, refuses nor explains is found at the end and refused: nothing is dropped silently.
import { formatPath, isPlainObject, type PathSegment } from '../config/schema/dsl.ts';
import type { ConfigIssue } from '../errors.ts';

export type Path = readonly PathSegment[];

/** A field that has no place on the machine, and why (shown, never an error). */
export interface ImportNote {
  path: string;
  message: string;
}

/** An empty value carries nothing: CAPI's YAML is full of `{}`, `""` and `[]` from defaulting. */
export function isEmpty(value: unknown): boolean {
  return value === undefined || value === null || value === '' || (Array.isArray(value) && value.length === 0) || (isPlainObject(value) && Object.keys(value).length === 0);
}

export class TrackedDocument {
  private readonly read = new Set<string>();
  readonly issues: ConfigIssue[] = [];
  readonly notes: ImportNote[] = [];

  readonly root: unknown;
  private readonly source: string;

  constructor(root: unknown, source: string) {
    this.root = root;
    this.source = source;
  }

  /** The value at path without taking it (to look inside a map or list). */
  peek(path: Path): unknown {
    let value: unknown = this.root;
    for (const segment of path) {
      if (typeof segment === 'number' ? !Array.isArray(value) : !isPlainObject(value)) return undefined;
      value = (value as Record<string | number, unknown>)[segment];
    }
    return value;
  }

  /** The value at path, taken whole (its subtree counts as read); undefined when empty. */
  take(path: Path): unknown {
    this.read.add(formatPath(path));
    const value = this.peek(path);
    return isEmpty(value) ? undefined : value;
  }

  string(path: Path): string | undefined {
    const value = this.take(path);
    if (value === undefined) return undefined;
    if (typeof value === 'string') return value;
    if (typeof value === 'number' || typeof value === 'boolean') return String(value);
    this.refuse(path, `expected a string, got ${Array.isArray(value) ? 'a list' : typeof value}`);
    return undefined;
  }

  strings(path: Path): string[] | undefined {
    const value = this.take(path);
    if (value === undefined) return undefined;
    if (Array.isArray(value) && value.every((v) => typeof v === 'string')) return value as string[];
    this.refuse(path, 'expected a list of strings');
    return undefined;
  }

  number(path: Path): number | undefined {
    const value = this.take(path);
    if (value === undefined) return undefined;
    if (typeof value === 'number' && Number.isFinite(value)) return value;
    this.refuse(path, `expected a number, got ${typeof value}`);
    return undefined;
  }

  boolean(path: Path): boolean | undefined {
    const value = this.take(path);
    if (value === undefined) return undefined;
    if (typeof value === 'boolean') return value;
    this.refuse(path, `expected true or false, got ${typeof value}`);
    return undefined;
  }

  /** Keys of the map at path (not taken), or [] when it is not a map. */
  keys(path: Path): string[] {
    const value = this.peek(path);
    return isPlainObject(value) ? Object.keys(value) : [];
  }

  /** Length of the list at path (not taken), or 0. */
  length(path: Path): number {
    const value = this.peek(path);
    return Array.isArray(value) ? value.length : 0;
  }

  refuse(path: Path, message: string, hint?: string): void {
    this.read.add(formatPath(path));
    this.issues.push({ source: this.source, path: formatPath(path), message, ...(hint ? { hint } : {}) });
  }

  /** Takes a non-empty value that has no place on the machine, saying why. */
  note(path: Path, message: string): void {
    const value = this.take(path);
    if (value !== undefined) this.notes.push({ path: formatPath(path), message });
  }

  /** Every non-empty leaf nobody took, refused as having no equivalent. */
  refuseUnread(): void {
    const walk = (value: unknown, path: PathSegment[]): void => {
      if (this.read.has(formatPath(path)) || isEmpty(value)) return;
      if (isPlainObject(value)) for (const [k, v] of Object.entries(value)) walk(v, [...path, k]);
      else if (Array.isArray(value)) value.forEach((v, i) => walk(v, [...path, i]));
      else this.issues.push({ source: this.source, path: formatPath(path), message: 'has no machineadm equivalent', hint: 'remove it, or tell how the machine should do it another way (see docs/recipes/cluster-api/switching-from-cabpk.md)' });
    };
    walk(this.root, []);
  }
}
