// A small deterministic TOML writer for the files machineadm generates: keys keep their insertion
// order, scalars come before sub-tables, one header per table that holds values. (@iarna/toml's
// own stringify indents inconsistently, which makes reviewing golden files harder.)

export type TomlValue = string | number | bigint | boolean | Date | TomlFloat | TomlValue[] | TomlTable;
export interface TomlTable {
  [key: string]: TomlValue;
}

/**
 * A float whose value is a whole number (`pause_threshold = 1.0`): JavaScript holds it as the
 * number 1, which would be written back as an integer, and containerd 1.x refuses an integer
 * where it reads a float.
 */
export class TomlFloat {
  readonly value: number;
  constructor(value: number) {
    this.value = value;
  }
  toJSON(): number {
    return this.value;
  }
}

export function isTable(value: unknown): value is TomlTable {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof Date) && !(value instanceof TomlFloat);
}

function isTableArray(value: TomlValue): value is TomlTable[] {
  return Array.isArray(value) && value.length > 0 && value.every(isTable);
}

export function quoteKey(key: string): string {
  return /^[A-Za-z0-9_-]+$/.test(key) ? key : quoteString(key);
}

export function quoteString(value: string): string {
  let out = '"';
  for (const ch of value) {
    const code = ch.codePointAt(0)!;
    if (ch === '"') out += '\\"';
    else if (ch === '\\') out += '\\\\';
    else if (ch === '\n') out += '\\n';
    else if (ch === '\t') out += '\\t';
    else if (ch === '\r') out += '\\r';
    else if (code < 0x20 || code === 0x7f) out += `\\u${code.toString(16).padStart(4, '0')}`;
    else out += ch;
  }
  return out + '"';
}

function scalar(value: TomlValue): string {
  if (typeof value === 'string') return quoteString(value);
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  if (typeof value === 'bigint') return String(value);
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) return Number.isNaN(value) ? 'nan' : value > 0 ? 'inf' : '-inf';
    // Integers past 2^53 are bigints here, so this number was a float: written without an
    // exponent it would read back as an integer, and past 2^63 as one containerd refuses.
    if (Number.isInteger(value) && !Number.isSafeInteger(value)) return value.toExponential();
    return String(value);
  }
  if (value instanceof TomlFloat) {
    if (!Number.isFinite(value.value)) return scalar(value.value);
    // toFixed keeps the decimal point up to 1e21, toExponential past it: both read back as floats.
    return Object.is(value.value, -0) ? '-0.0' : Math.abs(value.value) < 1e21 ? value.value.toFixed(1) : value.value.toExponential();
  }
  if (value instanceof Date) return value.toISOString();
  if (Array.isArray(value)) return `[${value.map(scalar).join(', ')}]`;
  return `{ ${Object.entries(value).map(([k, v]) => `${quoteKey(k)} = ${scalar(v)}`).join(', ')} }`;
}

function emitTable(table: TomlTable, path: string[], out: string[], header: 'table' | 'array-item' | 'none'): void {
  const values = Object.entries(table).filter(([, v]) => !isTable(v) && !isTableArray(v));
  const tables = Object.entries(table).filter(([, v]) => isTable(v) || isTableArray(v));
  const name = path.map(quoteKey).join('.');
  if (header === 'array-item') out.push('', `[[${name}]]`);
  else if (header === 'table' && (values.length > 0 || tables.length === 0)) out.push('', `[${name}]`);
  for (const [k, v] of values) out.push(`${quoteKey(k)} = ${scalar(v)}`);
  for (const [k, v] of tables) {
    if (isTableArray(v)) for (const item of v) emitTable(item, [...path, k], out, 'array-item');
    else emitTable(v as TomlTable, [...path, k], out, 'table');
  }
}

/** TOML text for a table; `comment` lines go first, each prefixed with "# ". */
export function stringifyToml(table: TomlTable, comment: readonly string[] = []): string {
  const out: string[] = comment.map((line) => `# ${line}`);
  emitTable(table, [], out, 'none');
  while (out[0] === '') out.shift();
  const lines = comment.length && out.length > comment.length && out[comment.length] !== '' ? [...out.slice(0, comment.length), '', ...out.slice(comment.length)] : out;
  return lines.join('\n') + '\n';
}
