// A small schema language: one definition gives the TypeScript type (Infer), the validation
// (parse, collecting every issue with its field path) and the published JSON Schema (json).
// Pure: imports nothing that does I/O.
import { redactUrlsIn } from '../../redaction.ts';
import { suggest } from './suggest.ts';

export type PathSegment = string | number;
export type FieldPath = readonly PathSegment[];

export interface SchemaIssue {
  path: FieldPath;
  message: string;
  hint?: string;
}

export interface ParseContext {
  issues: SchemaIssue[];
  /**
   * A single source of a merged configuration: required fields and defaults are not enforced yet,
   * because a later source may still provide them.
   */
  partial: boolean;
}

export type JsonSchema = Record<string, unknown>;

/**
 * Which JSON Schema: `full` describes a whole configuration; `drop-in` one source of a merged one,
 * checked as the CLI checks a source before merging (ParseContext.partial): no field required.
 */
export type JsonMode = 'full' | 'drop-in';

type Presence = 'required' | 'optional' | 'defaulted';

export interface Schema<T, P extends Presence = 'required'> {
  readonly presence: P;
  readonly defaultValue?: T;
  readonly description?: string;
  /** A value the field could hold, shown by explain and the API reference (JSON Schema's examples). */
  readonly example?: unknown;
  /** Marks values never to be printed (see redact()). */
  readonly secret?: boolean;
  parse(value: unknown, path: FieldPath, ctx: ParseContext): T | undefined;
  json(mode?: JsonMode): JsonSchema;
}

export type Infer<S> = S extends Schema<infer T, Presence> ? T : never;
type AnySchema = Schema<any, Presence>;
export type Shape = Record<string, AnySchema>;
type Simplify<T> = { [K in keyof T]: T[K] } & {};
type OptionalKeys<S extends Shape> = { [K in keyof S]: S[K]['presence'] extends 'optional' ? K : never }[keyof S];
type PresentKeys<S extends Shape> = Exclude<keyof S, OptionalKeys<S>>;
export type ObjectOf<S extends Shape> = Simplify<{ [K in PresentKeys<S>]: Infer<S[K]> } & { [K in OptionalKeys<S>]?: Infer<S[K]> }>;

/** spec.containerd.registries["docker.io"].mirrors[0].url */
export function formatPath(path: FieldPath): string {
  let out = '';
  for (const segment of path) {
    if (typeof segment === 'number') out += `[${segment}]`;
    else if (/^[A-Za-z_$][\w$]*$/.test(segment)) out += out ? `.${segment}` : segment;
    else out += `[${JSON.stringify(segment)}]`;
  }
  return out;
}

function issue(ctx: ParseContext, path: FieldPath, message: string, hint?: string): undefined {
  ctx.issues.push(hint === undefined ? { path, message } : { path, message, hint });
  return undefined;
}

function typeName(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'a map';
  if (typeof value === 'string') return 'a string';
  return `${typeof value} ${JSON.stringify(value)}`;
}

interface Common {
  description?: string;
  /** A value the field could hold, as it is written in YAML (e.g. '10.0.0.10:6443', ['overlay']). */
  example?: unknown;
}

function base<T>(
  parse: (value: unknown, path: FieldPath, ctx: ParseContext) => T | undefined,
  json: (mode: JsonMode) => JsonSchema,
  common: Common & { secret?: boolean } = {},
): Schema<T> {
  return {
    presence: 'required',
    description: common.description,
    example: common.example,
    secret: common.secret,
    parse,
    json: (mode = 'full') => withDescription(json(mode), common),
  };
}

// The field's own words first in the JSON Schema (editors show them), over any the inner schema had.
function withDescription(schema: JsonSchema, common: Common): JsonSchema {
  const { description, examples, ...rest } = schema;
  const said = common.description ?? description;
  const shown = common.example !== undefined ? [common.example] : examples;
  return { ...(said ? { description: said } : {}), ...(shown !== undefined ? { examples: shown } : {}), ...rest };
}

/** What a field says about itself: its description and an example value. */
export type FieldDoc = Common;

/**
 * The same schema with this field's own description and example, for a schema shared by fields
 * that mean different things (one URL rule for httpProxy and httpsProxy).
 */
export function documented<T, P extends Presence>(schema: Schema<T, P>, doc: FieldDoc): Schema<T, P> {
  const merged: Common = { description: doc.description ?? schema.description, example: doc.example !== undefined ? doc.example : schema.example };
  return { ...schema, description: merged.description, example: merged.example, json: (mode = 'full') => withDescription(schema.json(mode), merged) };
}

export interface StringOptions extends Common {
  pattern?: RegExp;
  /** Said when the pattern does not match, e.g. 'use dots, e.g. net.ipv4.ip_forward'. */
  patternHint?: string;
  minLength?: number;
  maxLength?: number;
  format?: string;
  /** Extra rule: returns a message (optionally "message|hint") when the value is wrong. */
  check?: (value: string) => string | undefined;
  /**
   * What of `check` a JSON Schema pattern can carry, for editors: it must accept every value
   * `check` accepts (test/config/schema-agreement.test.ts holds it to that).
   */
  jsonPattern?: RegExp;
}

export function string(options: StringOptions = {}): Schema<string> {
  return base(
    (value, path, ctx) => {
      // A YAML number where a string is wanted (mode: 0644) is usually a missing pair of quotes.
      if (typeof value !== 'string') return issue(ctx, path, `expected a string, got ${typeName(value)}`, typeof value === 'number' ? (options.patternHint ?? 'put the value in quotes') : undefined);
      return checkString(value, options, path, ctx);
    },
    () => stringJson(options),
    options,
  );
}

function stringJson(options: StringOptions): JsonSchema {
  const out: JsonSchema = { type: 'string' };
  const pattern = options.pattern ?? options.jsonPattern;
  if (pattern) out.pattern = pattern.source;
  if (options.minLength !== undefined) out.minLength = options.minLength;
  if (options.maxLength !== undefined) out.maxLength = options.maxLength;
  if (options.format) out.format = options.format;
  return out;
}

function checkString(value: string, options: StringOptions, path: FieldPath, ctx: ParseContext): string | undefined {
  if (options.minLength !== undefined && value.length < options.minLength) {
    return issue(ctx, path, options.minLength === 1 ? 'must not be empty' : `must be at least ${options.minLength} characters long`);
  }
  if (options.maxLength !== undefined && value.length > options.maxLength) {
    return issue(ctx, path, `must be at most ${options.maxLength} characters long`);
  }
  if (options.pattern && !options.pattern.test(value)) {
    // A URL that fails its pattern is quoted as every URL is shown: without its password or query values.
    return issue(ctx, path, `${JSON.stringify(truncate(redactUrlsIn(value)))} is not valid`, options.patternHint ?? `must match ${options.pattern.source}`);
  }
  const problem = options.check?.(value);
  if (problem) {
    const [message = problem, hint] = problem.split('|');
    return issue(ctx, path, message, hint);
  }
  return value;
}

export function truncate(value: string): string {
  return value.length > 80 ? value.slice(0, 77) + '...' : value;
}

/** A string that YAML users often write as a number or boolean (sysctl values, quantities). */
export function scalarString(options: StringOptions = {}): Schema<string> {
  return base(
    (value, path, ctx) => {
      if (typeof value === 'number' || typeof value === 'boolean') value = String(value);
      if (typeof value !== 'string') return issue(ctx, path, `expected a string or number, got ${typeName(value)}`);
      return checkString(value, options, path, ctx);
    },
    () => ({ type: ['string', 'number', 'boolean'], ...(options.pattern ? { pattern: options.pattern.source } : {}) }),
    options,
  );
}

export function enumOf<const V extends readonly string[]>(values: V, common: Common = {}): Schema<V[number]> {
  return base(
    (value, path, ctx) => {
      if (typeof value === 'string' && values.includes(value)) return value as V[number];
      const shown = typeof value === 'string' ? JSON.stringify(truncate(value)) : truncate(String(JSON.stringify(value)));
      return issue(ctx, path, `${shown} is not one of ${values.map((v) => JSON.stringify(v)).join(', ')}`, suggest(String(value), values));
    },
    () => ({ type: 'string', enum: [...values] }),
    common,
  );
}

export function integer(options: Common & { min?: number; max?: number } = {}): Schema<number> {
  return base(
    (value, path, ctx) => {
      if (typeof value !== 'number' || !Number.isInteger(value)) return issue(ctx, path, `expected a whole number, got ${typeName(value)}`);
      if (options.min !== undefined && value < options.min) return issue(ctx, path, `must be at least ${options.min}`);
      if (options.max !== undefined && value > options.max) return issue(ctx, path, `must be at most ${options.max}`);
      return value;
    },
    () => ({ type: 'integer', ...(options.min !== undefined ? { minimum: options.min } : {}), ...(options.max !== undefined ? { maximum: options.max } : {}) }),
    options,
  );
}

export function boolean(common: Common = {}): Schema<boolean> {
  return base(
    (value, path, ctx) => (typeof value === 'boolean' ? value : issue(ctx, path, `expected true or false, got ${typeName(value)}`)),
    () => ({ type: 'boolean' }),
    common,
  );
}

export function array<T>(item: Schema<T, Presence>, options: Common & { minItems?: number; maxItems?: number; maxItemsHint?: string; unique?: boolean } = {}): Schema<T[]> {
  return base(
    (value, path, ctx) => {
      if (!Array.isArray(value)) return issue(ctx, path, `expected a list, got ${typeName(value)}`);
      if (options.minItems !== undefined && value.length < options.minItems) return issue(ctx, path, `needs at least ${options.minItems} item${options.minItems === 1 ? '' : 's'}`);
      if (options.maxItems !== undefined && value.length > options.maxItems) return issue(ctx, path, `takes at most ${options.maxItems} items`, options.maxItemsHint);
      const before = ctx.issues.length;
      const out = value.map((v, i) => item.parse(v, [...path, i], ctx));
      if (options.unique) {
        const seen = new Set<string>();
        value.forEach((v, i) => {
          const key = JSON.stringify(v);
          if (seen.has(key)) issue(ctx, [...path, i], `duplicate item ${truncate(key)}`);
          seen.add(key);
        });
      }
      return ctx.issues.length === before ? (out as T[]) : undefined;
    },
    (mode) => ({ type: 'array', items: item.json(mode), ...(options.minItems !== undefined ? { minItems: options.minItems } : {}), ...(options.maxItems !== undefined ? { maxItems: options.maxItems } : {}), ...(options.unique ? { uniqueItems: true } : {}) }),
    options,
  );
}

export interface ObjectOptions<S extends Shape> extends Common {
  /** Cross-field rules, run when every field parsed. Report with ctx.issues via the report callback. */
  /** `failed`: the fields given but wrong, absent from `value` (a rule on a field's absence asks it). */
  check?: (value: ObjectOf<S>, report: (field: PathSegment[] | PathSegment, message: string, hint?: string) => void, ctx: ParseContext, failed: ReadonlySet<string>) => void;
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function object<S extends Shape>(shape: S, options: ObjectOptions<S> = {}): Schema<ObjectOf<S>> {
  return base(
    (value, path, ctx) => {
      if (!isPlainObject(value)) return issue(ctx, path, `expected a map, got ${typeName(value)}`);
      const before = ctx.issues.length;
      const out: Record<string, unknown> = {};
      for (const key of Object.keys(value)) {
        if (!Object.hasOwn(shape, key)) issue(ctx, [...path, key], 'unknown field', suggest(key, Object.keys(shape)) ?? `known fields: ${Object.keys(shape).join(', ')}`);
      }
      const failed = new Set<string>();
      for (const [key, field] of Object.entries(shape)) {
        const mark = ctx.issues.length;
        const present = Object.hasOwn(value, key) && value[key] !== undefined && value[key] !== null;
        if (!present) {
          if (ctx.partial) continue;
          if (field.presence === 'required') issue(ctx, [...path, key], 'is required', field.description);
          else if (field.presence === 'defaulted') out[key] = structuredClone(field.defaultValue);
        } else {
          const parsed = field.parse(value[key], [...path, key], ctx);
          if (parsed !== undefined) out[key] = parsed;
        }
        if (ctx.issues.length !== mark) failed.add(key);
      }
      if (options.check && !ctx.partial) runCheck(options.check, out as ObjectOf<S>, failed, path, ctx);
      return ctx.issues.length === before ? (out as ObjectOf<S>) : undefined;
    },
    (mode) => {
      const properties: Record<string, JsonSchema> = {};
      const required: string[] = [];
      for (const [key, field] of Object.entries(shape)) {
        const json = field.json(mode);
        const described = field.presence === 'defaulted' ? { ...json, default: field.defaultValue } : json;
        // An explicit null removes what an earlier source set (merge.ts): a drop-in may say it. A
        // drop-in requires nothing: another source may give the field (checked once merged).
        const needed = field.presence === 'required' && mode === 'full';
        properties[key] = needed ? described : nullable(described);
        if (needed) required.push(key);
      }
      return { type: 'object', properties, ...(required.length ? { required } : {}), additionalProperties: false };
    },
    options,
  );
}

/** The JSON Schema that also admits null, kept flat where it can be (editors show flat types best). */
function nullable(schema: JsonSchema): JsonSchema {
  const nul = { type: 'null' };
  if (Array.isArray(schema.oneOf)) return { ...schema, oneOf: [...(schema.oneOf as JsonSchema[]), nul] };
  if (Array.isArray(schema.anyOf)) return { ...schema, anyOf: [...(schema.anyOf as JsonSchema[]), nul] };
  const type = schema.type;
  if (typeof type === 'string' || Array.isArray(type)) {
    return { ...schema, type: [type, 'null'].flat(), ...(Array.isArray(schema.enum) ? { enum: [...(schema.enum as unknown[]), null] } : {}) };
  }
  return { anyOf: [schema, nul] };
}

/**
 * Cross-field rules run even when some fields are wrong, so every problem shows at once. The
 * fields that failed are absent from the value the rule sees; what it then reports about such a
 * field, or about the object as a whole, could come from that absence and is left out, and so is
 * a rule that trips over it. (Rules compare against values, e.g. role === 'worker', rather than
 * role !== 'control-plane', so an absent field does not fire them.)
 */
function runCheck<S extends Shape>(check: NonNullable<ObjectOptions<S>['check']>, value: ObjectOf<S>, failed: ReadonlySet<string>, path: FieldPath, ctx: ParseContext): void {
  const report = (field: PathSegment[] | PathSegment, message: string, hint?: string) => {
    const at = Array.isArray(field) ? field : [field];
    if (failed.size > 0 && (at.length === 0 || failed.has(String(at[0])))) return;
    issue(ctx, [...path, ...at], message, hint);
  };
  try {
    check(value, report, ctx, failed);
  } catch (error) {
    if (failed.size === 0) throw error;
  }
}

export function record<T>(
  value: Schema<T, Presence>,
  options: Common & { key?: StringOptions } = {},
): Schema<Record<string, T>> {
  return base(
    (input, path, ctx) => {
      if (!isPlainObject(input)) return issue(ctx, path, `expected a map, got ${typeName(input)}`);
      const before = ctx.issues.length;
      const out: Record<string, T> = {};
      for (const [k, v] of Object.entries(input)) {
        if (options.key) checkString(k, options.key, [...path, k], ctx);
        // In a single source, null removes what an earlier source set (see merge.ts).
        if (v === null && ctx.partial) continue;
        const parsed = value.parse(v, [...path, k], ctx);
        if (parsed !== undefined) out[k] = parsed;
      }
      return ctx.issues.length === before ? out : undefined;
    },
    (mode) => ({ type: 'object', additionalProperties: nullable(value.json(mode)), ...(options.key?.pattern ? { propertyNames: { pattern: options.key.pattern.source } } : {}) }),
    options,
  );
}

/** A field that may be left out; `doc` describes it where the schema is shared. */
export function optional<T>(schema: Schema<T, Presence>, doc?: FieldDoc): Schema<T, 'optional'> {
  return { ...(doc ? documented(schema, doc) : schema), presence: 'optional' };
}

/** A field that may be left out and then takes this value (in the merged configuration). */
export function withDefault<T>(schema: Schema<T, Presence>, defaultValue: T, doc?: FieldDoc): Schema<T, 'defaulted'> {
  return { ...(doc ? documented(schema, doc) : schema), presence: 'defaulted', defaultValue };
}

/** A value is one of two schemas; `pick` says which one applies, so only that schema's issues are reported. */
export function either<A, B>(a: Schema<A, Presence>, b: Schema<B, Presence>, options: Common & { pick: (value: unknown) => 'a' | 'b' }): Schema<A | B> {
  return base(
    (value, path, ctx) => (options.pick(value) === 'a' ? a.parse(value, path, ctx) : b.parse(value, path, ctx)),
    (mode) => ({ oneOf: [a.json(mode), b.json(mode)] }),
    options,
  );
}

export function parseWith<T>(schema: Schema<T, Presence>, value: unknown, options: { partial?: boolean } = {}): { value: T | undefined; issues: SchemaIssue[] } {
  const ctx: ParseContext = { issues: [], partial: options.partial ?? false };
  const parsed = schema.parse(value, [], ctx);
  return { value: ctx.issues.length ? undefined : parsed, issues: ctx.issues };
}

export { suggest } from './suggest.ts';
