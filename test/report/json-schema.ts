// A small JSON Schema checker for the subset docs/schema/*.json use (type, required, properties,
// additionalProperties, items, enum, const, pattern, minimum, minLength, $ref into $defs), so a
// test can prove a real result file matches the published schema without a validator dependency.
type Schema = Record<string, unknown>;

function typeOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number';
  return typeof value;
}

export function validateJsonSchema(root: Schema, value: unknown): string[] {
  const problems: string[] = [];
  const resolve = (schema: Schema): Schema => {
    const ref = schema.$ref;
    if (typeof ref !== 'string') return schema;
    const path = ref.replace(/^#\//, '').split('/');
    let node: unknown = root;
    for (const part of path) node = (node as Schema)[part];
    if (!node) throw new Error(`unresolvable $ref ${ref}`);
    return resolve(node as Schema);
  };
  const check = (raw: Schema, v: unknown, at: string): void => {
    const schema = resolve(raw);
    const known = new Set(['$schema', '$id', '$ref', '$defs', 'title', 'description', 'type', 'required', 'properties', 'additionalProperties', 'items', 'enum', 'const', 'pattern', 'minimum', 'minLength', 'format', 'default']);
    for (const key of Object.keys(schema)) if (!known.has(key)) throw new Error(`${at}: the checker does not know the keyword "${key}"`);
    if (schema.const !== undefined && v !== schema.const) problems.push(`${at}: must be ${JSON.stringify(schema.const)}`);
    if (Array.isArray(schema.enum) && !schema.enum.includes(v)) problems.push(`${at}: ${JSON.stringify(v)} is not one of ${JSON.stringify(schema.enum)}`);
    if (typeof schema.type === 'string') {
      const t = typeOf(v);
      const ok = t === schema.type || (schema.type === 'number' && t === 'integer');
      if (!ok) {
        problems.push(`${at}: expected ${schema.type}, got ${t}`);
        return;
      }
    }
    if (typeof v === 'string') {
      if (typeof schema.minLength === 'number' && v.length < schema.minLength) problems.push(`${at}: shorter than ${schema.minLength}`);
      if (typeof schema.pattern === 'string' && !new RegExp(schema.pattern, 'u').test(v)) problems.push(`${at}: ${JSON.stringify(v)} does not match ${schema.pattern}`);
    }
    if (typeof v === 'number' && typeof schema.minimum === 'number' && v < schema.minimum) problems.push(`${at}: below ${schema.minimum}`);
    if (Array.isArray(v) && schema.items) v.forEach((item, i) => check(schema.items as Schema, item, `${at}[${i}]`));
    if (typeOf(v) === 'object') {
      const obj = v as Record<string, unknown>;
      const props = (schema.properties ?? {}) as Record<string, Schema>;
      for (const name of (schema.required ?? []) as string[]) if (!(name in obj)) problems.push(`${at}.${name}: is required`);
      for (const [k, item] of Object.entries(obj)) {
        if (props[k]) check(props[k], item, `${at}.${k}`);
        else if (schema.additionalProperties === false) problems.push(`${at}.${k}: is not allowed`);
        else if (typeof schema.additionalProperties === 'object') check(schema.additionalProperties as Schema, item, `${at}.${k}`);
      }
    }
  };
  check(root, value, '$');
  return problems;
}
