// Redaction: every field the schema marks secret is shown as <redacted>, whatever form it has.
import { machineConfigSchema, type MachineConfig } from './schema/index.ts';

import { REDACTED } from './secrets.ts';
export { REDACTED };

/** A copy of the configuration with every secret value replaced by <redacted>. */
export function redactConfig(config: MachineConfig): unknown {
  return redactWith(machineConfigSchema.json(), config);
}

function redactWith(schema: Record<string, unknown>, value: unknown): unknown {
  if (isSecretSchema(schema)) return value === undefined ? value : REDACTED;
  if (Array.isArray(value)) return value.map((v) => redactWith((schema.items as Record<string, unknown>) ?? {}, v));
  if (value && typeof value === 'object') {
    const props = (schema.properties ?? {}) as Record<string, Record<string, unknown>>;
    const extra = typeof schema.additionalProperties === 'object' ? (schema.additionalProperties as Record<string, unknown>) : {};
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, redactWith(props[k] ?? extra, v)]));
  }
  return value;
}

function isSecretSchema(schema: Record<string, unknown>): boolean {
  return schema['x-secret'] === true;
}
