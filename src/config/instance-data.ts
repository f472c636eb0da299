// Values of cloud-init's instance data ({ fromInstanceData: ds.meta_data.label }), read from the
// file cloud-init writes in its first stage, the way its templates read them: keys only, and a key
// written with "_" also finds one with "-" or "." (cloud-init's templates alias local-hostname as
// local_hostname). Only the file every user may read: a key cloud-init holds sensitive says so
// there, and is refused rather than read from instance-data-sensitive.json, since a resolved value
// shows in plan, events and result.json.
import type { ConfigHost } from '../host/config-host.ts';
import { MachineValuesUnavailableError } from '../errors.ts';
import { instanceDataKeys, keyAnswersTo } from './machine-names.ts';
import type { InstanceValues } from './instance-values.ts';

export const INSTANCE_DATA_FILE = '/run/cloud-init/instance-data.json';
// cloud-init's file is some KiB to a few hundred (a cloud's whole metadata tree).
const MAX_BYTES = 4 * 1024 * 1024;
const REDACTED = 'redacted for non-root user';
const HINT = 'run machineadm after cloud-init\'s first stage (from runcmd, or a unit ordered after cloud-init.service), or give the value with --set KEY=VALUE';

export async function readInstanceData(host: ConfigHost, paths: readonly string[]): Promise<InstanceValues> {
  let bytes: Buffer | undefined;
  try {
    bytes = await host.fs.readUpTo(INSTANCE_DATA_FILE, MAX_BYTES);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') throw new MachineValuesUnavailableError(`cannot read ${paths.join(', ')}: ${INSTANCE_DATA_FILE} is not there (cloud-init writes it when it starts; it has not run on this machine, or not yet); nothing was changed`, { hint: HINT });
    // Not readable (EACCES: a user other than the one cloud-init gave it to; EISDIR, ELOOP): the
    // machine cannot give the value, as when the file is missing.
    if (typeof code === 'string') throw new MachineValuesUnavailableError(`cannot read ${paths.join(', ')}: ${INSTANCE_DATA_FILE}: ${code} (${(error as Error).message}); nothing was changed`, { hint: code === 'EACCES' ? 'cloud-init leaves this file readable by every user: check its mode and owner, run machineadm as root, or give the value with --set KEY=VALUE' : HINT });
    throw error;
  }
  if (bytes === undefined) throw new MachineValuesUnavailableError(`${INSTANCE_DATA_FILE} is larger than ${MAX_BYTES / 1024 / 1024} MiB: not cloud-init's instance data; nothing was changed`, { hint: HINT });
  let data: unknown;
  try {
    // A number is taken as written (12345678901234567891, 7.50), not as the double JSON.parse makes of it.
    data = JSON.parse(bytes.toString('utf8'), (_key, value: unknown, context?: { source?: string }) => (typeof value === 'number' && context?.source !== undefined ? new NumberText(context.source) : value));
  } catch (error) {
    throw new MachineValuesUnavailableError(`${INSTANCE_DATA_FILE} is not JSON (${(error as Error).message}); nothing was changed`, { hint: HINT });
  }
  const out: InstanceValues = {};
  for (const path of paths) {
    const value = lookUp(data, instanceDataKeys(path));
    if (value === undefined) continue;
    if (value === REDACTED) throw new MachineValuesUnavailableError(`${path} in ${INSTANCE_DATA_FILE} is one cloud-init holds sensitive ("${REDACTED}"); machineadm does not read the sensitive copy, whose values would show in its plan and reports`, { hint: 'take the value from another key, or give it with --set KEY=VALUE' });
    if (typeof value === 'string') out[path] = { value, source: INSTANCE_DATA_FILE };
    else if (value instanceof NumberText) out[path] = { value: value.text, source: INSTANCE_DATA_FILE };
    else throw new MachineValuesUnavailableError(`${path} in ${INSTANCE_DATA_FILE} is ${Array.isArray(value) ? 'a list' : value === null ? 'null' : typeof value === 'object' ? 'a map' : `a ${typeof value}`}, not one value`, { hint: 'name the key of a string or a number within it' });
  }
  return out;
}

/** A number of the file, as its text. */
class NumberText {
  readonly text: string;
  constructor(text: string) {
    this.text = text;
  }
}

/**
 * The key of a map that `key` finds in cloud-init's templates: each key is there as written and,
 * when it holds an operator, under its alias; cloud-init sets them in the keys' sorted order, so
 * of several keys that answer to one name the last in that order wins (its own name or an alias).
 */
function keyAsCloudInitFinds(keys: string[], key: string): string | undefined {
  let found: string | undefined;
  for (const k of keys) {
    if (keyAnswersTo(k, key) && (found === undefined || byCodePoint(k, found) > 0)) found = k;
  }
  return found;
}

// Python's order of strings (cloud-init's sorted()): by code point, not by UTF-16 unit.
function byCodePoint(a: string, b: string): number {
  const x = [...a];
  const y = [...b];
  for (let i = 0; i < Math.min(x.length, y.length); i++) {
    const d = x[i]!.codePointAt(0)! - y[i]!.codePointAt(0)!;
    if (d !== 0) return d;
  }
  return x.length - y.length;
}

function lookUp(data: unknown, keys: string[]): unknown {
  let at = data;
  for (const key of keys) {
    if (Array.isArray(at)) {
      at = /^\d+$/.test(key) ? at[Number(key)] : undefined;
    } else if (typeof at === 'object' && at !== null) {
      const map = at as Record<string, unknown>;
      const found = keyAsCloudInitFinds(Object.keys(map), key);
      at = found === undefined ? undefined : map[found];
    } else {
      return undefined;
    }
    if (at === undefined) return undefined;
  }
  return at;
}
