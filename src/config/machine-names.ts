// The names a configuration may take from the machine ({ fromMachine: NAME }, --set NAME=VALUE),
// and the keys of cloud-init's instance data it may read ({ fromInstanceData: KEY }).
// A module of its own with no imports: the command line lists them without loading the schema.
export const MACHINE_REFERENCES = ['instanceId', 'instanceName', 'localHostname', 'privateIP', 'zone', 'region', 'instanceType', 'cloud'] as const;

/** What --set and a facts file's "machine" map may give: the references, and the provider ID itself. */
export const GIVEN_VALUE_NAMES = [...MACHINE_REFERENCES, 'providerID'] as const;

// A key of cloud-init's instance data (/run/cloud-init/instance-data.json) as a cloud-init
// template names it: ds.meta_data.label, v1.instance_id, ds["id"]. Keys only, never an expression:
// the value is looked up, not computed. ds is the datasource's own data, v1 and v2 cloud-init's
// standardized keys.
export const INSTANCE_DATA_PATH = /^(?:ds|v1|v2)(?:\.[A-Za-z_][A-Za-z0-9_]{0,127}|\["[^"\\\0-\x1f]{1,128}"\]|\['[^'\\\0-\x1f]{1,128}'\]|\[\d{1,4}\])+$/;

export function isInstanceDataPath(value: string): boolean {
  return value.length <= 512 && INSTANCE_DATA_PATH.test(value);
}

/** The keys of an instance-data path: ds.meta_data["local-ipv4"] is ds, meta_data, local-ipv4. */
export function instanceDataKeys(path: string): string[] {
  return [...path.matchAll(/^(\w+)|\.(\w+)|\["([^"]*)"\]|\['([^']*)'\]|\[(\d+)\]/g)].map((m) => m[1] ?? m[2] ?? m[3] ?? m[4] ?? m[5]!);
}

// jinja2's operators (jinja2.lexer.operator_re, longest first), which cloud-init replaces with "_"
// in a key's alias: local-hostname is also local_hostname, v1.0 also v1_0.
const JINJA_OPERATOR = /\/\/|\*\*|==|!=|>=|<=|[-+/*%~[\](){}=<>.:|,;]/g;

/** Whether a key of the file answers to `name` in cloud-init's templates: as written, or by its alias. */
export function keyAnswersTo(key: string, name: string): boolean {
  return key === name || key.replace(JINJA_OPERATOR, '_') === name;
}

/**
 * Whether a given value's instance-data key (--set, a facts file) names the key a reference
 * reads: the same keys, however written (ds.meta_data.label, ds["meta_data"]["label"]), each
 * also by the alias cloud-init's templates know it by (ds.meta_data["local-ipv4"] for
 * ds.meta_data.local_ipv4).
 */
export function givenKeyNames(given: string, reference: string): boolean {
  const g = instanceDataKeys(given);
  const r = instanceDataKeys(reference);
  return g.length === r.length && g.every((key, i) => keyAnswersTo(key, r[i]!));
}

/** A name --set and a facts file's "machine" map may give: a reference, providerID, or an instance-data key. */
export function isGivenValueName(name: string): boolean {
  return (GIVEN_VALUE_NAMES as readonly string[]).includes(name) || isInstanceDataPath(name);
}

/** NAME=VALUE split after the name: an instance-data key may say "=" within its brackets. */
export function splitGivenValue(text: string): [string, string] | undefined {
  const match = /^((?:ds|v1|v2)(?:\.\w+|\["[^"]*"\]|\['[^']*'\]|\[\d+\])+|[A-Za-z]+)=/s.exec(text);
  return match ? [match[1]!, text.slice(match[0].length)] : undefined;
}

export const GIVEN_VALUE_HINT = `NAME is one of ${GIVEN_VALUE_NAMES.join(', ')}, or a key of cloud-init's instance data such as ds.meta_data.label`;
