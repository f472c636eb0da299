// What `machineadm explain` and `machineadm config print-defaults` print, made from the schema's
// own words (fields.ts). Pure: text in, text out.
import { dump } from 'js-yaml';
import type { JsonSchema } from './dsl.ts';
import { allFields, findField, locateField, type FieldInfo } from './fields.ts';
import { API_VERSION } from './index.ts';

function indent(text: string, by: string): string {
  return text.replace(/\n$/, '').split('\n').map((l) => (l ? by + l : l)).join('\n');
}

function yaml(value: unknown): string {
  return dump(value, { lineWidth: 100, noRefs: true });
}

/** kubectl explain's layout: the field, its description, default, example, then its child fields. */
export function renderExplain(root: JsonSchema, field: FieldInfo, recursive = false): string {
  const lines = [`FIELD: ${field.path || 'MachineConfig'} <${field.type}>${field.required && field.path ? ' -required-' : ''}`, ''];
  lines.push('DESCRIPTION:', indent(field.description ?? (field.path ? '(no description)' : ROOT_DESCRIPTION), '    '));
  if (field.secret) lines.push('    A secret: never printed; give it with valueFrom (a file or an environment variable) rather than as a literal.');
  if (field.default !== undefined) lines.push('', 'DEFAULT:', indent(yaml(field.default), '    '));
  if (field.example !== undefined) lines.push('', 'EXAMPLE:', indent(yaml(exampleAsWritten(field)), '    '));
  if (field.children.length > 0) {
    lines.push('', 'FIELDS:');
    const prefix = field.path ? `${field.path}.` : '';
    const below = recursive
      ? allFields(root).filter((f) => f.path.startsWith(prefix) && f.path !== field.path)
      : field.children.map((name) => {
          const found = findField(root, prefix + name);
          if (!('field' in found)) throw new Error(`${prefix}${name} is listed as a child but cannot be found`);
          return found.field;
        });
    for (const child of below) {
      const depth = child.path.slice(prefix.length).split('.').length - 1;
      const pad = '  '.repeat(depth + 1);
      lines.push(`${pad}${child.path.split('.').at(-1)} <${child.type}>${child.required ? ' -required-' : ''}`);
      if (!recursive && child.description) lines.push(indent(child.description, pad + '    '));
    }
  }
  return lines.join('\n') + '\n';
}

export { findField, locateField };

const ROOT_DESCRIPTION = 'the configuration of one machine: what machineadm makes of it (apiVersion, kind, spec)';

/** The example as it is written under its field's name (a map entry's value alone: its key is any name). */
export function exampleAsWritten(field: FieldInfo): unknown {
  const name = field.path.split('.').at(-1)!;
  return name === '*' ? field.example : { [name]: field.example };
}

// A value for a field the default configuration must give (a join needs an endpoint, a token and
// the CA pins): the field's own example, a placeholder to replace.
function exampleOf(root: JsonSchema, path: string): unknown {
  const found = findField(root, path);
  if (!('field' in found) || found.field.example === undefined) throw new Error(`${path} has no example`);
  return found.field.example;
}

// Sections whose presence asks for work (install downloads Kubernetes): their defaults apply once
// they are written, and writing them out would ask for it.
const ASKED_FOR_BY_PRESENCE = ['spec.kubernetes.install.'];

/** Every field under `path` that has a default, with it (a nested default wins over its parent's). */
function defaultsUnder(root: JsonSchema, path: string): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const prefix = `${path}.`;
  for (const f of allFields(root)) {
    if (!f.path.startsWith(prefix) || f.default === undefined || f.path.includes('*')) continue;
    if (ASKED_FOR_BY_PRESENCE.some((section) => f.path.startsWith(section))) continue;
    const rest = f.path.slice(prefix.length).split('.');
    // Inside lists there is no item to give defaults to.
    if (!isPlainPath(root, f.path)) continue;
    let at = out;
    for (const key of rest.slice(0, -1)) at = (at[key] ??= {}) as Record<string, unknown>;
    const last = rest.at(-1)!;
    at[last] = isObject(at[last]) && isObject(f.default) ? { ...(f.default as object), ...(at[last] as object) } : structuredClone(f.default);
  }
  return out;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

// A path through objects only (no list on the way).
function isPlainPath(root: JsonSchema, path: string): boolean {
  const parts = path.split('.');
  for (let i = 1; i < parts.length; i++) {
    const found = findField(root, parts.slice(0, i).join('.'));
    if (!('field' in found) || found.field.type.startsWith('[]')) return false;
  }
  return true;
}

export const DEFAULTS_HEADER = `# A MachineConfig for a worker that joins, with the default of every field that has one.
# Values marked "placeholder" are examples: replace them. A field left out takes the default
# shown; "machineadm explain FIELD" describes each field.
`;

/** A valid MachineConfig for a worker that joins, with every default written out. */
export function defaultMachineConfig(root: JsonSchema): Record<string, unknown> {
  const spec = defaultsUnder(root, 'spec');
  const kubernetes = {
    ...(spec.kubernetes as object),
    controlPlaneEndpoint: exampleOf(root, 'spec.kubernetes.controlPlaneEndpoint'),
    token: exampleOf(root, 'spec.kubernetes.token'),
    caCertHashes: exampleOf(root, 'spec.kubernetes.caCertHashes'),
  };
  // A worker joins: init-only and Windows-only sections are left to explain.
  const { domainJoin: _d, windows: _w, ...rest } = spec;
  return { apiVersion: API_VERSION, kind: 'MachineConfig', spec: { ...rest, kubernetes } };
}

/** The YAML of defaultMachineConfig, with the placeholders marked. */
export function renderDefaults(root: JsonSchema): string {
  const text = yaml(defaultMachineConfig(root));
  return DEFAULTS_HEADER + text.replace(/^(\s*(controlPlaneEndpoint|token|caCertHashes):.*)$/gm, '$1   # placeholder');
}
