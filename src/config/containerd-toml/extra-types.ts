// spec.containerd.extraConfig checked against the keys containerd reads (keys.ts): a value of the
// wrong type would make containerd refuse the whole file at start, and a misspelled runc option
// would be dropped without a word. Keys containerd does not know are left alone. Pure.
import { suggest } from '../schema/dsl.ts';
import { CONFIG_SHAPES, RUNC_OPTIONS, isRuncRuntime, type Shape, type ValueType } from './keys.ts';
import { ExtraConfigError, dottedKey, lineOf, parseExtraConfig, refusedKeys, writtenAsFloat, type ExtraConfigProblem } from './extra.ts';
import { TomlFloat, isTable, type TomlTable, type TomlValue } from './toml.ts';

const TYPE_NAMES: Record<ValueType | 'table', string> = {
  string: 'a string',
  boolean: 'true or false',
  integer: 'an integer',
  unsigned: 'an integer from 0 to 4294967295',
  float: 'a float',
  duration: 'a duration string such as "10s" or "4h0m0s"',
  strings: 'an array of strings',
  table: 'a table',
};

// Go's time.ParseDuration: "0", or one or more decimal numbers each with a unit.
// Micro is written both ways Go accepts: U+00B5 (micro sign) and U+03BC (Greek mu), as escapes so
// that the bundle stays ASCII (see charset in scripts/build.mjs).
const GO_DURATION = /^[+-]?(0|((\d+(\.\d*)?|\.\d+)(ns|us|\u00b5s|\u03bcs|ms|s|m|h))+)$/;

// containerd reads integers as Go int64.
const INT64_MAX = BigInt('9223372036854775807');
const INT64_MIN = -INT64_MAX - BigInt(1);

function describe(value: TomlValue, float: boolean | undefined): string {
  if (Array.isArray(value)) return 'an array';
  if (value instanceof Date) return 'a date-time';
  if (value instanceof TomlFloat) return `the float ${value.value.toFixed(1)}`;
  if (isTable(value)) return 'a table';
  if (typeof value === 'number') return float || !Number.isInteger(value) ? `the float ${Number.isInteger(value) ? value.toFixed(1) : value}` : `the integer ${value}`;
  if (typeof value === 'boolean') return `the boolean ${value}`;
  // Integers past 2^53 are kept exact as bigints.
  if (typeof value === 'bigint') return `the integer ${value}`;
  return `the string ${JSON.stringify(value.length > 40 ? `${value.slice(0, 37)}...` : value)}`;
}

/** Why `value` is not of `type`, or undefined when it is. */
function typeProblem(type: ValueType, value: TomlValue, text: string, path: readonly string[]): string | undefined {
  const float = typeof value === 'number' ? (!Number.isInteger(value) || writtenAsFloat(text, path) === true) : undefined;
  const ok = (() => {
    switch (type) {
      case 'string':
        return typeof value === 'string';
      case 'boolean':
        return typeof value === 'boolean';
      case 'integer':
        return typeof value === 'bigint' ? value >= INT64_MIN && value <= INT64_MAX : typeof value === 'number' && !float;
      case 'unsigned':
        return (typeof value === 'number' || typeof value === 'bigint') && !float && value >= 0 && value <= 0xffffffff;
      case 'float':
        return typeof value === 'number' && (float === true || writtenAsFloat(text, path) === undefined);
      case 'duration':
        return typeof value === 'string' && GO_DURATION.test(value);
      case 'strings':
        return Array.isArray(value) && value.every((v) => typeof v === 'string');
    }
  })();
  return ok ? undefined : `${dottedKey(path)} is ${describe(value, float)}; containerd reads ${TYPE_NAMES[type]} there`;
}

function hintFor(type: ValueType | 'table', path: readonly string[]): string {
  const leaf = dottedKey(path.slice(-1));
  switch (type) {
    case 'string':
      return `put the value in quotes: ${leaf} = "..."`;
    case 'duration':
      return `write ${leaf} = "30s" (units ns, us, ms, s, m, h)`;
    case 'strings':
      return `write ${leaf} = ["..."]`;
    case 'table':
      return `write [${dottedKey(path)}] as a table with its keys, or leave it out`;
    case 'float':
      return `write it with a decimal point, e.g. ${leaf} = 0.5`;
    case 'boolean':
      return `write ${leaf} = true or ${leaf} = false, without quotes`;
    default:
      return `write ${leaf} as whole number${type === 'unsigned' ? ' from 0 to 4294967295' : ''}, without quotes or a decimal point`;
  }
}

/**
 * Every value of `extra` whose type differs from what containerd reads for that key in this
 * config version, and every runtime option of a runc runtime that the runc Options message does
 * not have.
 */
export function extraConfigTypeProblems(extra: TomlTable, text: string, configVersion: 2 | 3): ExtraConfigProblem[] {
  const problems: ExtraConfigProblem[] = [];
  const add = (path: readonly string[], message: string, hint: string) => {
    const line = lineOf(text, path);
    problems.push({ message, ...(line ? { line } : {}), hint });
  };
  const walk = (shape: Shape, value: TomlValue, path: string[], parent: TomlTable | undefined): void => {
    if (typeof shape === 'string') {
      const problem = typeProblem(shape, value, text, path);
      if (problem) add(path, problem, hintFor(shape, path));
      return;
    }
    if (!isTable(value)) {
      add(path, `${dottedKey(path)} is ${describe(value, undefined)}; containerd reads a table there`, hintFor('table', path));
      return;
    }
    if (shape.kind === 'table') {
      for (const [key, child] of Object.entries(value)) {
        const known = Object.hasOwn(shape.keys, key) ? shape.keys[key] : undefined;
        if (known) walk(known, child, [...path, key], value);
      }
    } else if (shape.kind === 'map') {
      for (const [key, child] of Object.entries(value)) walk(shape.of, child, [...path, key], value);
    } else {
      // machineadm's own runc entry has runtime_type io.containerd.runc.v2 when extraConfig does not say.
      const runtimeName = path[path.length - 2];
      const runtimeType = parent?.runtime_type ?? (runtimeName === 'runc' ? 'io.containerd.runc.v2' : undefined);
      if (!isRuncRuntime(runtimeType)) return;
      const fields = RUNC_OPTIONS[configVersion];
      for (const [key, child] of Object.entries(value)) {
        const type = Object.hasOwn(fields, key) ? fields[key] : undefined;
        if (type) walk(type, child, [...path, key], value);
        else {
          const near = suggest(key, Object.keys(fields));
          add(
            [...path, key],
            `${dottedKey([...path, key])} is not a runc option, and containerd would drop it without a word${near ? ` (${near})` : ''}`,
            `runc options are ${Object.keys(fields).join(', ')}`,
          );
        }
      }
    }
  };
  walk(CONFIG_SHAPES[configVersion], extra, [], undefined);
  return problems;
}

/**
 * The type problems for both config versions, for validation before the containerd version is
 * known: a problem only one version has says which.
 */
export function extraConfigTypeProblemsAnyVersion(extra: TomlTable, text: string): ExtraConfigProblem[] {
  const v2 = extraConfigTypeProblems(extra, text, 2);
  const v3 = extraConfigTypeProblems(extra, text, 3);
  const key = (p: ExtraConfigProblem) => `${p.line}|${p.message}`;
  const inV2 = new Set(v2.map(key));
  const inV3 = new Set(v3.map(key));
  return [
    ...v2.map((p) => (inV3.has(key(p)) ? p : { ...p, message: `${p.message} (config version 2, containerd 1.x)` })),
    ...v3.filter((p) => !inV2.has(key(p))).map((p) => ({ ...p, message: `${p.message} (config version 3, containerd 2.x)` })),
  ];
}

// Loading a configuration checks each document and then the merged whole: the same text twice.
let lastChecked: { text: string; problems: readonly ExtraConfigProblem[] } | undefined;

/** Everything wrong with an extraConfig text before the containerd version is known. */
export function extraConfigProblems(text: string): readonly ExtraConfigProblem[] {
  if (lastChecked?.text === text) return lastChecked.problems;
  let problems: ExtraConfigProblem[];
  try {
    const extra = parseExtraConfig(text);
    problems = [...refusedKeys(extra, text), ...extraConfigTypeProblemsAnyVersion(extra, text)].sort((a, b) => (a.line ?? 0) - (b.line ?? 0));
  } catch (error) {
    if (!(error instanceof ExtraConfigError)) throw error;
    problems = error.problems;
  }
  lastChecked = { text, problems: Object.freeze(problems) };
  return lastChecked.problems;
}
