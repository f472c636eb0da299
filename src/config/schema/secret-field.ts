// The schema of a secret field: a literal, or where the secret is read from when the run starts,
// marked for every reader (x-secret) and never quoted by a rule that rejects it.
import { either, object, optional, string, truncate, type FieldDoc, type ParseContext, type Schema, type StringOptions } from './dsl.ts';

/** A secret: a literal, or a reference `{ valueFrom: { file: PATH } }` / `{ valueFrom: { env: NAME } }`. */
export type SecretSource = string | { valueFrom: { file: string } | { env: string } };

export function secret(options: FieldDoc & Omit<StringOptions, 'format'> = {}): Schema<SecretSource> {
  const { description, example, ...literal } = options;
  const common: FieldDoc = { ...(description === undefined ? {} : { description }), ...(example === undefined ? {} : { example }) };
  const ref = object({
    valueFrom: object(
      { file: optional(string({ minLength: 1, description: 'absolute path of a file holding the secret', example: '/etc/machineadm/secret' })), env: optional(string({ pattern: /^[A-Za-z_][A-Za-z0-9_]*$/, description: 'name of an environment variable holding the secret', example: 'MACHINEADM_SECRET' })) },
      {
        check: (v, report) => {
          if ((v.file === undefined) === (v.env === undefined)) report([], 'give exactly one of file or env');
        },
        description: 'where the secret is read from when the run starts: a file or an environment variable (exactly one)',
        example: { file: '/etc/machineadm/secret' },
      },
    ),
  });
  const schema = either<string, { valueFrom: { file?: string; env?: string } }>(string({ minLength: 1, ...literal }), ref, {
    ...common,
    pick: (value) => (typeof value === 'string' ? 'a' : 'b'),
  });
  // x-secret tells readers of the JSON Schema (and redaction) that the value is never shown.
  return {
    ...(schema as Schema<SecretSource>),
    secret: true,
    // A rule on a literal (pattern, check) must never quote the value it rejects.
    parse: (value, path, ctx) => {
      const inner: ParseContext = { issues: [], partial: ctx.partial };
      const parsed = schema.parse(value, path, inner);
      const hide = typeof value === 'string' && value !== '' ? [value, JSON.stringify(value), JSON.stringify(truncate(value))] : [];
      const clean = (text: string) => hide.reduce((t, h) => t.split(h).join('<redacted>'), text);
      for (const found of inner.issues) ctx.issues.push({ ...found, message: clean(found.message), ...(found.hint !== undefined ? { hint: clean(found.hint) } : {}) });
      return parsed as SecretSource | undefined;
    },
    json: (mode) => ({ ...schema.json(mode), 'x-secret': true }),
  };
}
