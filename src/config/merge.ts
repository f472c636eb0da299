// Merging configuration sources: later sources win, maps merge key by key, lists replace whole.
// Lists replace because a list's meaning is its whole content (an OS image's default mirrors
// must not leak into a user's explicit list); maps merge so a drop-in can set one sysctl.
import { isPlainObject } from './schema/dsl.ts';

// Rules, in order: a value a later source leaves out keeps the earlier value; an explicit null
// removes what an earlier source set (so a drop-in can undo an image default); a map merges key
// by key, recursively; anything else (a list, a string, a number, a boolean, or a map replacing a
// non-map) replaces the earlier value whole. A reference ({ valueFrom }, { fromMachine },
// { fromInstanceData }) or a provider ID template ({ template, values }) replaces the earlier value
// whole too, even an earlier reference; a later literal replaces a reference like any scalar.
export function mergeConfigs(base: unknown, override: unknown): unknown {
  if (override === undefined) return base;
  if (isPlainObject(override)) {
    // A reference replaces whatever was there: mixing { valueFrom: file } with an earlier
    // { valueFrom: env }, or { fromInstanceData } with an image's { fromMachine }, would leave one
    // that gives both; a template's values merged with an earlier template's name values it never uses.
    const start = isPlainObject(base) && !isOneValue(override) ? base : {};
    const out: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(start)) define(out, key, value);
    for (const [key, value] of Object.entries(override)) {
      if (value === null) delete out[key];
      else define(out, key, mergeConfigs(start[key], value));
    }
    return out;
  }
  return override;
}

/**
 * Whether a source's value, merged over an earlier one, takes its place whole (a list, a scalar, a
 * null, a secret reference) rather than merging into it key by key: what the earlier sources wrote
 * under it is then gone.
 */
export function replacesWhole(value: unknown): boolean {
  return !isPlainObject(value) || isOneValue(value);
}

// A map that stands for one value, whose keys mean something only together.
function isOneValue(value: Record<string, unknown>): boolean {
  const keys = Object.keys(value);
  if (keys.length === 1) return isPlainObject(value.valueFrom) || typeof value.fromMachine === 'string' || typeof value.fromInstanceData === 'string';
  return keys.length === 2 && typeof value.template === 'string' && isPlainObject(value.values);
}

// defineProperty, not assignment: a key named "__proto__" must stay a plain (invalid) field.
function define(target: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}
