// Values a field may take from the machine instead of a literal: `{ fromMachine: zone }`. The set
// is closed on purpose: a reference names one known value, so a configuration shared by a fleet
// can never carry an expression. Resolution (src/config/machine-values.ts) replaces each reference
// with the machine's value before anything runs.
import { isPlainObject, type FieldPath, type ParseContext, type Schema } from './dsl.ts';

import { MACHINE_REFERENCES } from '../machine-names.ts';
export { MACHINE_REFERENCES };
export type MachineReferenceName = (typeof MACHINE_REFERENCES)[number];

export interface MachineReference {
  fromMachine: MachineReferenceName;
}

export type MachineString = string | MachineReference;

export function isMachineReference(value: unknown): value is MachineReference {
  return isPlainObject(value) && typeof value.fromMachine === 'string';
}

/** A string field that may instead name a value of the machine; `literal` checks the literal form. */
export function machineString(literal: Schema<string>): Schema<MachineString> {
  const reference = {
    type: 'object',
    properties: { fromMachine: { enum: [...MACHINE_REFERENCES], description: 'a value read from this machine (instance metadata, machine facts or --set)' } },
    required: ['fromMachine'],
    additionalProperties: false,
  };
  return {
    presence: 'required',
    ...(literal.description ? { description: literal.description } : {}),
    ...(literal.example !== undefined ? { example: literal.example } : {}),
    parse(value: unknown, path: FieldPath, ctx: ParseContext): MachineString | undefined {
      if (!isPlainObject(value)) return literal.parse(value, path, ctx);
      const keys = Object.keys(value);
      const name = value.fromMachine;
      if (keys.length !== 1 || typeof name !== 'string' || !(MACHINE_REFERENCES as readonly string[]).includes(name)) {
        ctx.issues.push({
          path,
          message: `takes a literal or { fromMachine: NAME } where NAME is one of ${MACHINE_REFERENCES.join(', ')}`,
          hint: 'e.g. { fromMachine: zone }; values are read from the machine, never computed',
        });
        return undefined;
      }
      return { fromMachine: name as MachineReferenceName };
    },
    // The reference is checked whole in every source (a drop-in too): it keeps its required key.
    // The field's words stand beside the alternatives too, where readers of the schema look first.
    json: (mode) => ({ ...(literal.description ? { description: literal.description } : {}), ...(literal.example !== undefined ? { examples: [literal.example] } : {}), anyOf: [literal.json(mode), reference] }),
  };
}

/**
 * The literal a resolved field holds. Configurations are resolved before a renderer sees them, so
 * a reference here means a caller skipped resolution.
 */
export function literalOf(value: MachineString, field: string): string {
  if (typeof value === 'string') return value;
  throw new Error(`${field} still reads { fromMachine: ${value.fromMachine} }: resolve machine values before rendering`);
}

// A value the machine's launcher gives through the environment: `{ valueFrom: { env: NAME } }`.
// Cluster API fills per-machine values (the control-plane endpoint) in this way; the value is
// read and checked like the literal before anything runs (src/config/env-values.ts).
export interface EnvReference {
  valueFrom: { env: string };
}

export type EnvString = string | EnvReference;

export const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

export function isEnvReference(value: unknown): value is EnvReference {
  return isPlainObject(value) && isPlainObject(value.valueFrom) && typeof value.valueFrom.env === 'string';
}

/** A string field that may instead be read from an environment variable; `literal` checks the literal form. */
export function envString(literal: Schema<string>): Schema<EnvString> {
  const reference = {
    type: 'object',
    properties: { valueFrom: { type: 'object', properties: { env: { type: 'string', pattern: ENV_NAME.source } }, required: ['env'], additionalProperties: false } },
    required: ['valueFrom'],
    additionalProperties: false,
  };
  return {
    presence: 'required',
    ...(literal.description ? { description: literal.description } : {}),
    ...(literal.example !== undefined ? { example: literal.example } : {}),
    parse(value: unknown, path: FieldPath, ctx: ParseContext): EnvString | undefined {
      if (!isPlainObject(value)) return literal.parse(value, path, ctx);
      if (Object.keys(value).length !== 1 || !isEnvReference(value) || Object.keys(value.valueFrom).length !== 1 || !ENV_NAME.test(value.valueFrom.env)) {
        ctx.issues.push({ path, message: 'takes a literal or { valueFrom: { env: NAME } }', hint: 'e.g. { valueFrom: { env: MACHINEADM_CAPI_ENDPOINT } }' });
        return undefined;
      }
      return { valueFrom: { env: value.valueFrom.env } };
    },
    json: (mode) => ({ ...(literal.description ? { description: literal.description } : {}), ...(literal.example !== undefined ? { examples: [literal.example] } : {}), anyOf: [literal.json(mode), reference] }),
  };
}

/** The literal of a field read from the environment; configurations are resolved before rendering. */
export function envLiteralOf(value: EnvString, field: string): string {
  if (typeof value === 'string') return value;
  throw new Error(`${field} still reads { valueFrom: { env: ${value.valueFrom.env} } }: resolve environment values before rendering`);
}
