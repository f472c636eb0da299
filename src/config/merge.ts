// Merging configuration sources: later sources win, maps merge key by key, lists replace whole.
// Lists replace because a list's meaning is its whole content (an OS image's default mirrors
// must not leak into a user's explicit list); maps merge so a drop-in can set one sysctl.
import { isPlainObject } from './schema/dsl.ts';

export function mergeConfigs(base: unknown, override: unknown): unknown {
  if (override === undefined) return base;
  if (isPlainObject(base) && isPlainObject(override)) {
    const out: Record<string, unknown> = { ...base };
    for (const [key, value] of Object.entries(override)) {
      // An explicit null removes what an earlier source set.
      if (value === null) delete out[key];
      else out[key] = mergeConfigs(base[key], value);
    }
    return out;
  }
  return override;
}
