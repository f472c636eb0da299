// The fields of MachineConfig as a reader looks them up: by dotted path, each with its
// description, type, default, example and child fields. Read from the published JSON Schema, so
// `machineadm explain`, the API reference and the editors' schema can never disagree.
// Pure: imports nothing that does I/O.
import type { JsonSchema } from './dsl.ts';

export interface FieldInfo {
  /** spec.kubernetes.node.taints; list items and map values add no segment of their own but "*" for a map key. */
  path: string;
  type: string;
  description?: string;
  /** Present when the field takes a value when left out. */
  default?: unknown;
  example?: unknown;
  required: boolean;
  secret: boolean;
  /** The child fields' names, in the schema's order. */
  children: string[];
}

function isNull(schema: JsonSchema): boolean {
  return schema.type === 'null';
}

/** The schema without the "or null" a drop-in or an optional field adds. */
function withoutNull(schema: JsonSchema): JsonSchema {
  const out: JsonSchema = { ...schema };
  if (Array.isArray(out.type)) {
    const types = (out.type as string[]).filter((t) => t !== 'null');
    out.type = types.length === 1 ? types[0] : types;
  }
  if (Array.isArray(out.enum)) out.enum = (out.enum as unknown[]).filter((v) => v !== null);
  for (const key of ['anyOf', 'oneOf'] as const) {
    if (!Array.isArray(out[key])) continue;
    const rest = (out[key] as JsonSchema[]).filter((s) => !isNull(s));
    if (rest.length === 1 && Object.keys(out).length === 1) return withoutNull(rest[0]!);
    out[key] = rest;
  }
  return out;
}

function variants(schema: JsonSchema): JsonSchema[] {
  const list = (schema.anyOf ?? schema.oneOf) as JsonSchema[] | undefined;
  return list ? list.map(withoutNull) : [schema];
}


/** The map a field's value is, when it is a map of names to values (sysctls, labels). */
function mapValue(schema: JsonSchema): JsonSchema | undefined {
  const extra = schema.additionalProperties;
  return schema.type === 'object' && !schema.properties && typeof extra === 'object' && extra !== null ? withoutNull(extra as JsonSchema) : undefined;
}

/**
 * The object schemas a field's value holds, through lists. Alternatives of one field (a secret's
 * valueFrom, a { fromMachine } reference) are told by the field's type, not listed under every
 * field; an alternative of more fields (a provider ID's { template, values }) is listed.
 */
function objectsIn(raw: JsonSchema): JsonSchema[] {
  const schema = withoutNull(raw);
  if (schema.type === 'array' && schema.items) return objectsIn(schema.items as JsonSchema);
  if (schema.anyOf || schema.oneOf) return variants(schema).filter((v) => v.type === 'object' && v.properties && Object.keys(v.properties as object).length > 1);
  return schema.type === 'object' && schema.properties ? [schema] : [];
}

function grouped(type: string): string {
  return type.includes(' | ') ? `(${type})` : type;
}

export function typeOf(raw: JsonSchema): string {
  const schema = withoutNull(raw);
  if (schema['x-secret']) return 'secret (a string, or { valueFrom: { file | env | awsSecretsManager | awsParameterStore | azureKeyVault | gcpSecretManager | age: ... } }, see docs/contract/secrets.md)';
  if (Array.isArray(schema.enum)) return (schema.enum as unknown[]).map((v) => JSON.stringify(v)).join(' | ');
  if (schema.anyOf || schema.oneOf) return variants(schema).map(typeOf).join(' | ');
  const value = mapValue(schema);
  if (value) return `map[string]${grouped(typeOf(value))}`;
  if (schema.type === 'array') return `[]${grouped(typeOf((schema.items ?? {}) as JsonSchema))}`;
  if (schema.type === 'object' && schema.properties) {
    const required = (schema.required as string[] | undefined) ?? [];
    // A small closed object reads best spelled out: { fromMachine }.
    return Object.keys(schema.properties as object).length <= 1 && required.length === 1 ? `{ ${required[0]}: ... }` : 'object';
  }
  if (Array.isArray(schema.type)) return (schema.type as string[]).includes('string') ? 'string' : (schema.type as string[]).join(' | ');
  return typeof schema.type === 'string' ? schema.type : 'any';
}

function info(path: string, raw: JsonSchema, required: boolean): FieldInfo {
  const schema = withoutNull(raw);
  const children = objectsIn(schema).flatMap((o) => Object.keys(o.properties as object));
  const value = mapValue(schema);
  if (value && objectsIn(value).length > 0) children.push('*');
  const examples = schema.examples as unknown[] | undefined;
  return {
    path,
    type: typeOf(schema),
    ...(typeof schema.description === 'string' ? { description: schema.description } : {}),
    ...('default' in schema ? { default: schema.default } : {}),
    ...(examples?.length ? { example: examples[0] } : {}),
    required,
    secret: schema['x-secret'] === true,
    children: [...new Set(children)],
  };
}

/** The schema of a child field, through lists and maps ("*" or any key). */
function child(schema: JsonSchema, name: string): { schema: JsonSchema; required: boolean; name: string } | undefined {
  const value = mapValue(withoutNull(schema));
  if (value) return { schema: value, required: false, name: '*' };
  const found = objectsIn(schema).find((o) => Object.hasOwn(o.properties as object, name));
  return found ? { schema: (found.properties as Record<string, JsonSchema>)[name]!, required: ((found.required as string[] | undefined) ?? []).includes(name), name } : undefined;
}

/**
 * A path's segments, as written here (spec.containerd.registries.docker.io) or as validation prints
 * it (spec.containerd.registries["docker.io"], spec.files[0].path): a quoted key is one segment, and
 * a list index none (list items add no segment).
 */
function pathSegments(path: string): string[] {
  const segments: string[] = [];
  for (const [, name, quoted] of path.matchAll(/([^.[\]]+)|\[("(?:[^"\\]|\\.)*")\]|\[\d*\]/g)) {
    if (name !== undefined) segments.push(name);
    else if (quoted !== undefined) segments.push(JSON.parse(quoted) as string);
  }
  return segments;
}

/** Where a dotted path leads: the field's schema, or the longest path that exists and what is missing after it. */
export function locateField(root: JsonSchema, path: string): { path: string; schema: JsonSchema; required: boolean } | { known: string; missing: string; children: string[] } {
  const segments = pathSegments(path);
  let schema = root;
  let required = true;
  const at: string[] = [];
  for (let i = 0; i < segments.length; i++) {
    const next = child(schema, segments[i]!);
    if (!next) return { known: at.join('.'), missing: segments[i]!, children: info(at.join('.'), schema, required).children };
    // A map key may hold dots (docker.io): it runs on until a segment names a field of the value.
    if (next.name === '*') while (i + 1 < segments.length && !child(next.schema, segments[i + 1]!)) i++;
    schema = next.schema;
    required = next.required;
    at.push(next.name);
  }
  return { path: at.join('.'), schema, required };
}

/**
 * The field at a dotted path such as spec.kubernetes.node.taints (a map's key as any name or "*",
 * e.g. spec.containerd.registries.docker.io.mirrors), or the longest path that exists and the
 * segment that does not.
 */
export function findField(root: JsonSchema, path: string): { field: FieldInfo } | { known: string; missing: string; children: string[] } {
  const found = locateField(root, path);
  return 'schema' in found ? { field: info(found.path, found.schema, found.required) } : found;
}

/** Every field, depth first in the schema's order (map keys as "*"). */
export function allFields(root: JsonSchema): FieldInfo[] {
  const out: FieldInfo[] = [];
  const walk = (schema: JsonSchema, path: string, required: boolean): void => {
    const field = info(path, schema, required);
    if (path) out.push(field);
    for (const name of field.children) {
      const next = child(schema, name);
      if (next) walk(next.schema, path ? `${path}.${name}` : name, next.required);
    }
  };
  walk(root, '', true);
  return out;
}
