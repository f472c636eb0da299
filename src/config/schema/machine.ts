// Values a field may take from the machine instead of a literal: `{ fromMachine: zone }`, or a key
// of cloud-init's instance data, `{ fromInstanceData: ds.meta_data.label }`. The names are closed on
// purpose, and an instance-data path is keys only: a reference names one value, so a configuration
// shared by a fleet can never carry an expression. Resolution (src/config/machine-values.ts)
// replaces each reference with the machine's value before anything runs.
import { isPlainObject, type FieldPath, type ParseContext, type Schema } from './dsl.ts';

import { INSTANCE_DATA_PATH, isInstanceDataPath, MACHINE_REFERENCES } from '../machine-names.ts';
export { MACHINE_REFERENCES };
export type MachineReferenceName = (typeof MACHINE_REFERENCES)[number];

export type MachineReference = { fromMachine: MachineReferenceName } | { fromInstanceData: string };

export type MachineString = string | MachineReference;

export function isMachineReference(value: unknown): value is MachineReference {
  return isPlainObject(value) && (typeof value.fromMachine === 'string' || typeof value.fromInstanceData === 'string');
}

/** The name a reference's value goes by (--set NAME=VALUE, a facts file): zone, or ds.meta_data.label. */
export function referenceName(reference: MachineReference): string {
  return 'fromMachine' in reference ? reference.fromMachine : reference.fromInstanceData;
}

/** A reference as a configuration writes it, for messages: { fromMachine: zone }. */
export function describeReference(reference: MachineReference): string {
  return 'fromMachine' in reference ? `{ fromMachine: ${reference.fromMachine} }` : `{ fromInstanceData: ${reference.fromInstanceData} }`;
}

const REFERENCE_JSON = [
  {
    type: 'object',
    properties: { fromMachine: { enum: [...MACHINE_REFERENCES], description: 'a value read from this machine (instance metadata, machine facts or --set)' } },
    required: ['fromMachine'],
    additionalProperties: false,
  },
  {
    type: 'object',
    properties: { fromInstanceData: { type: 'string', pattern: INSTANCE_DATA_PATH.source, description: "a key of cloud-init's instance data (/run/cloud-init/instance-data.json) as a cloud-init template names it, e.g. ds.meta_data.label" } },
    required: ['fromInstanceData'],
    additionalProperties: false,
  },
];

/** A reference written in a configuration, or undefined with the issue reported. */
function parseReference(value: Record<string, unknown>, path: FieldPath, ctx: ParseContext): MachineReference | undefined {
  const keys = Object.keys(value);
  const name = value.fromMachine;
  if (keys.length === 1 && typeof name === 'string' && (MACHINE_REFERENCES as readonly string[]).includes(name)) return { fromMachine: name as MachineReferenceName };
  const data = value.fromInstanceData;
  if (keys.length === 1 && typeof data === 'string' && isInstanceDataPath(data)) return { fromInstanceData: data };
  ctx.issues.push(
    keys.length === 1 && typeof data === 'string'
      ? { path, message: `{ fromInstanceData: ${JSON.stringify(data)} } is not a key of cloud-init's instance data`, hint: 'write it as a cloud-init template names it, keys only, starting at ds, v1 or v2: e.g. ds.meta_data.label or ds["id"]' }
      : { path, message: `takes a literal, { fromMachine: NAME } where NAME is one of ${MACHINE_REFERENCES.join(', ')}, or { fromInstanceData: KEY }`, hint: 'e.g. { fromMachine: zone }; values are read from the machine, never computed' },
  );
  return undefined;
}

/** A string field that may instead name a value of the machine; `literal` checks the literal form. */
export function machineString(literal: Schema<string>): Schema<MachineString> {
  return {
    presence: 'required',
    ...(literal.description ? { description: literal.description } : {}),
    ...(literal.example !== undefined ? { example: literal.example } : {}),
    parse(value: unknown, path: FieldPath, ctx: ParseContext): MachineString | undefined {
      return isPlainObject(value) ? parseReference(value, path, ctx) : literal.parse(value, path, ctx);
    },
    // The reference is checked whole in every source (a drop-in too): it keeps its required key.
    // The field's words stand beside the alternatives too, where readers of the schema look first.
    json: (mode) => ({ ...(literal.description ? { description: literal.description } : {}), ...(literal.example !== undefined ? { examples: [literal.example] } : {}), anyOf: [literal.json(mode), ...REFERENCE_JSON] }),
  };
}

/**
 * The literal a resolved field holds. Configurations are resolved before a renderer sees them, so
 * a reference here means a caller skipped resolution.
 */
export function literalOf(value: MachineString, field: string): string {
  if (typeof value === 'string') return value;
  throw new Error(`${field} still reads ${describeReference(value)}: resolve machine values before rendering`);
}

/**
 * `text` with each ${NAME} of `values` replaced by its value, resolved by now (spec.files' values,
 * a provider ID's template). One pass: a value that itself says ${OTHER} is written as it is, and
 * a ${...} of another name stays.
 */
export function fillValues(text: string, values: Record<string, MachineString>, field: string): string {
  return text.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (whole, name: string) => (Object.hasOwn(values, name) ? literalOf(values[name]!, `${field}.${name}`) : whole));
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
