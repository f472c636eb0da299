// spec.containerd.extraConfig: raw TOML deep-merged over what machineadm generates. Tables merge
// key by key, a value replaces the generated one only when it has the same type, and the keys that
// would break the generated configuration are refused. Pure.
import parseToml from '@iarna/toml/parse-string.js';
import { TomlFloat, isTable, type TomlTable, type TomlValue } from './toml.ts';

export interface ExtraConfigProblem {
  message: string;
  /** Line in the extraConfig text (1-based), when known. */
  line?: number;
  hint?: string;
}

export class ExtraConfigError extends Error {
  readonly problems: ExtraConfigProblem[];
  constructor(problems: ExtraConfigProblem[]) {
    super(problems.map((p) => `${p.line ? `TOML line ${p.line}: ` : ''}${p.message}`).join('; '));
    this.problems = problems;
  }
}

// @iarna/toml looks tables up on ordinary objects, so a table named like an Object member
// ("constructor", "toString", ...) is that member: its keys land on functions shared by the whole
// process and vanish from the result. Such keys are refused before the text is parsed.
const OBJECT_MEMBERS = Object.getOwnPropertyNames(Object.prototype).filter((name) => name !== '__proto__');
const MEMBER_AS_TABLE = new RegExp(`(?:^|[\\s.[{,])(["']?)(${OBJECT_MEMBERS.join('|')})\\1\\s*(?:\\.|\\])`);

export function parseExtraConfig(text: string): TomlTable {
  const problems = text.split('\n').flatMap((line, i) => {
    const key = MEMBER_AS_TABLE.exec(line)?.[2];
    return key ? [{ message: `the key "${key}" names a table, which the TOML reader cannot hold apart from JavaScript's own "${key}"`, line: i + 1, hint: 'rename it (containerd has no such key)' }] : [];
  });
  if (problems.length) throw new ExtraConfigError(problems);
  try {
    return toPlain(parseToml(text)) as TomlTable;
  } catch (error) {
    const e = error as Error & { line?: number; col?: number };
    const first = e.message.split('\n')[0] ?? e.message;
    throw new ExtraConfigError([
      { message: `is not valid TOML: ${first.replace(/ at row \d+, col \d+, pos \d+:?$/, '')}`, ...(typeof e.line === 'number' ? { line: e.line + 1 } : {}), hint: 'fix the TOML syntax (the line is counted from the first line of extraConfig)' },
    ]);
  }
}

// @iarna/toml marks objects with symbols; plain copies keep the merge and the writer simple.
function toPlain(value: unknown): TomlValue {
  if (Array.isArray(value)) return value.map(toPlain);
  if (value instanceof Date) return value;
  // Integers past 2^53 stay exact.
  if (typeof value === 'bigint') return value;
  if (isTable(value)) return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, toPlain(v)]));
  return value as TomlValue;
}

function kind(value: TomlValue): string {
  if (Array.isArray(value)) return 'an array';
  if (value instanceof Date) return 'a date-time';
  if (isTable(value)) return 'a table';
  if (typeof value === 'number' || typeof value === 'bigint') return 'a number';
  return `a ${typeof value}`;
}

export function dottedKey(path: readonly string[]): string {
  return path.map((p) => (/^[A-Za-z0-9_-]+$/.test(p) ? p : JSON.stringify(p))).join('.');
}

/** The first line of the TOML text that sets or opens the last part of this key. */
export function lineOf(text: string, path: readonly string[]): number | undefined {
  const leaf = path[path.length - 1];
  if (leaf === undefined) return undefined;
  const escaped = leaf.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const lines = text.split('\n');
  const assign = new RegExp(`^\\s*(?:[\\w"'.-]+\\.)?["']?${escaped}["']?\\s*=`);
  const header = new RegExp(`^\\s*\\[\\[?.*["']?${escaped}["']?\\s*\\]\\]?\\s*(#.*)?$`);
  for (const [i, line] of lines.entries()) if (assign.test(line) || header.test(line)) return i + 1;
  return undefined;
}

/**
 * Whether the number at `path` is written as a TOML float (1.0, 1e3, inf): the parser gives both
 * as a JavaScript number, and containerd refuses an integer for a float key and the other way
 * round. Undefined when the text cannot tell (a value inside an inline table or array).
 */
export function writtenAsFloat(text: string, path: readonly string[]): boolean | undefined {
  const line = lineOf(text, path);
  const leaf = path[path.length - 1];
  if (line === undefined || leaf === undefined) return undefined;
  const escaped = leaf.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const token = new RegExp(`["']?${escaped}["']?\\s*=\\s*([^\\s#,}\\]]+)`).exec(text.split('\n')[line - 1] ?? '')?.[1];
  if (token === undefined) return undefined;
  return /^[+-]?(inf|nan)$/.test(token) || (!/^[+-]?0[xob]/.test(token) && /[.eE]/.test(token));
}

// A float written as 1.0 is the number 1 once parsed: kept a float, or the file would hold an integer.
function asWritten(value: TomlValue, text: string, path: readonly string[]): TomlValue {
  return typeof value === 'number' && Number.isInteger(value) && writtenAsFloat(text, path) === true ? new TomlFloat(value) : structuredClone(value);
}

/** The problem with setting this key from extraConfig, when machineadm refuses it. */
function refusal(path: readonly string[], text: string): ExtraConfigProblem | undefined {
  const reason = reserved(path);
  if (!reason) return undefined;
  const [message = reason, hint] = reason.split('|');
  const line = lineOf(text, path);
  return { message, ...(line ? { line } : {}), ...(hint ? { hint } : {}) };
}

function reserved(path: readonly string[]): string | undefined {
  if (path.length === 1 && path[0] === 'version') return 'sets "version", which machineadm chooses from the containerd version|set spec.containerd.version instead (it is used when containerd is not installed)';
  const registryAt = path.indexOf('registry');
  if (path[0] === 'plugins' && registryAt > 0) {
    const next = path[registryAt + 1];
    if (next === 'mirrors') return `sets ${dottedKey(path)}: "mirrors" together with the config_path machineadm writes makes the CRI plugin fail to load|describe mirrors in spec.containerd.registries (written as hosts.toml)`;
    if (next === 'configs' && path.includes('tls')) return `sets ${dottedKey(path)}: "configs.<host>.tls" together with config_path makes the CRI plugin fail to load on containerd 1.x|use spec.containerd.registries.<host>.caFile / skipVerify`;
  }
  return undefined;
}

/** The keys of `extra` machineadm refuses (see reserved), wherever they are. */
export function refusedKeys(extra: TomlTable, text: string): ExtraConfigProblem[] {
  const problems: ExtraConfigProblem[] = [];
  const walk = (table: TomlTable, path: string[]) => {
    for (const [key, value] of Object.entries(table)) {
      const here = [...path, key];
      const refused = refusal(here, text);
      if (refused) problems.push(refused);
      else if (isTable(value)) walk(value, here);
    }
  };
  walk(extra, []);
  return problems;
}

// Own data properties only: a TOML key such as "__proto__" or "toString" is a key, never the
// object's prototype or one of its methods (writing through "__proto__" would change every object).
function put(target: TomlTable, key: string, value: TomlValue): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

/** A copy of `base` with `extra` merged over it; throws ExtraConfigError listing every conflict. */
export function mergeExtraConfig(base: TomlTable, extra: TomlTable, text: string): TomlTable {
  const problems: ExtraConfigProblem[] = [];
  const merged = structuredClone(base);
  const walk = (target: TomlTable, source: TomlTable, path: string[]) => {
    for (const [key, value] of Object.entries(source)) {
      const here = [...path, key];
      const refused = refusal(here, text);
      if (refused) {
        problems.push(refused);
        continue;
      }
      const existing = Object.hasOwn(target, key) ? target[key] : undefined;
      if (existing === undefined) {
        // A new table is walked too: a refused key can sit deeper than the generated tables
        // (registry.configs."<host>".tls under a configs table machineadm never writes).
        if (isTable(value)) {
          const fresh: TomlTable = {};
          put(target, key, fresh);
          walk(fresh, value, here);
        } else put(target, key, asWritten(value, text, here));
        continue;
      }
      if (isTable(existing) && isTable(value)) {
        walk(existing, value, here);
        continue;
      }
      if (kind(existing) !== kind(value)) {
        const line = lineOf(text, here);
        problems.push({
          message: `${dottedKey(here)} is ${kind(value)} here, but machineadm generates it as ${kind(existing)}`,
          ...(line ? { line } : {}),
          hint: `give ${dottedKey(here)} as ${kind(existing)}, or leave it to machineadm`,
        });
        continue;
      }
      put(target, key, asWritten(value, text, here));
    }
  };
  walk(merged, extra, []);
  if (problems.length) throw new ExtraConfigError(problems);
  return merged;
}

/**
 * runc's SystemdCgroup set against spec.containerd.cgroupDriver: the kubelet is given that driver,
 * and a kubelet and containerd on different drivers put pods in cgroups neither manages.
 */
export function cgroupDriverConflicts(extra: TomlTable, text: string, driver: 'systemd' | 'cgroupfs', defaulted: boolean): ExtraConfigProblem[] {
  const problems: ExtraConfigProblem[] = [];
  for (const plugin of ['io.containerd.grpc.v1.cri', 'io.containerd.cri.v1.runtime']) {
    const path = ['plugins', plugin, 'containerd', 'runtimes', 'runc', 'options', 'SystemdCgroup'];
    let value: unknown = extra;
    for (const key of path) value = isTable(value as TomlValue) && Object.hasOwn(value as TomlTable, key) ? (value as TomlTable)[key] : undefined;
    if (typeof value !== 'boolean' || value === (driver === 'systemd')) continue;
    const line = lineOf(text, path);
    problems.push({
      message: `sets ${dottedKey(path)} = ${value}, but spec.containerd.cgroupDriver is ${driver}${defaulted ? ' (the default)' : ''}, the driver the kubelet is given too`,
      ...(line ? { line } : {}),
      hint: `set spec.containerd.cgroupDriver: ${value ? 'systemd' : 'cgroupfs'} instead (machineadm sets SystemdCgroup and the kubelet's cgroupDriver from it), and leave SystemdCgroup out of extraConfig`,
    });
  }
  return problems;
}

/** The first line naming plugin `id` in a table header or dotted key ([plugins."id".containerd], plugins."id".x = 1). */
function sectionLine(text: string, id: string): number | undefined {
  const escaped = id.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const naming = new RegExp(`^\\s*(\\[\\[?\\s*)?plugins\\s*\\.\\s*(["'])${escaped}\\2`);
  const index = text.split('\n').findIndex((line) => naming.test(line));
  return index === -1 ? undefined : index + 1;
}

// The CRI server keys that stay under io.containerd.grpc.v1.cri in config version 3.
const V3_SERVER_KEYS = new Set(['disable_tcp_service', 'stream_server_address', 'stream_server_port', 'stream_idle_timeout', 'enable_tls_streaming', 'x509_key_pair_streaming']);

/**
 * Plugin sections of the other config version: containerd ignores them (1.x silently, 2.x with a
 * warning), so extraConfig written for the wrong containerd would quietly do nothing.
 */
export function wrongVersionSections(extra: TomlTable, configVersion: 2 | 3, text: string): ExtraConfigProblem[] {
  const plugins = extra.plugins;
  if (!isTable(plugins)) return [];
  const problems: ExtraConfigProblem[] = [];
  const hint = 'write extraConfig for the config version the plan names (set spec.containerd.version when containerd is not installed yet)';
  for (const [id, section] of Object.entries(plugins)) {
    const line = lineOf(text, ['plugins', id]) ?? sectionLine(text, id);
    if (configVersion === 2 && id.startsWith('io.containerd.cri.v1.')) {
      problems.push({ message: `sets plugins."${id}", a config version 3 (containerd 2.x) section, but this containerd takes config version 2, which has no such plugin`, ...(line ? { line } : {}), hint });
    }
    if (configVersion === 3 && id === 'io.containerd.grpc.v1.cri' && isTable(section)) {
      for (const key of Object.keys(section).filter((k) => !V3_SERVER_KEYS.has(k))) {
        problems.push({ message: `sets plugins."${id}".${key}, a config version 2 (containerd 1.x) key, but this containerd takes config version 3, where it lives under io.containerd.cri.v1.images or io.containerd.cri.v1.runtime`, ...(line ? { line } : {}), hint });
      }
    }
  }
  return problems;
}
