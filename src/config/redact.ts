// Redaction: every field the schema marks secret (x-secret in the JSON Schema) is shown as
// <redacted> when it holds a literal value. A reference ({ valueFrom: { file | env } }) is shown as
// written: it names where the secret is, never the secret itself, and that is what an operator
// needs to see when something is wrong.
import { machineConfigSchema, type MachineConfig } from './schema/index.ts';
import { isPlainObject } from './schema/dsl.ts';
import type { SecretSource } from './schema/secret-field.ts';
import { REDACTED } from './secrets.ts';
import { displayUrl, hasCredentials } from '../redaction.ts';
import { extraConfigCredentials } from './containerd-toml/credentials.ts';
export { REDACTED };

type JsonSchema = Record<string, unknown>;

let cached: JsonSchema | undefined;
function schema(): JsonSchema {
  return (cached ??= machineConfigSchema.json());
}

/**
 * A copy of the configuration with every secret value replaced by <redacted>, and every URL with
 * user info or a query (a proxy's password, a presigned download) shown as displayUrl shows it.
 */
export function redactConfig(config: MachineConfig | unknown): unknown {
  return redactExtraConfig(redactHeaders(mapUrls(walk(schema(), config, (secret) => (isReference(secret) ? secret : REDACTED)), displayUrl)));
}

/**
 * extraConfig with each value of a registry login (password, identitytoken, auth) as <redacted>,
 * the rest as written; all of it <redacted> when a value is written in a way not found here (an
 * escape, a multi-line string), so that no login is ever shown.
 */
function redactExtraConfigText(text: string): string {
  const values = extraConfigCredentials(text);
  if (values === undefined || values.length === 0) return text;
  let out = text;
  // Longest first, so that a value inside another is not replaced before it.
  for (const value of [...new Set(values)].sort((a, b) => b.length - a.length)) {
    out = out.replaceAll(JSON.stringify(value), `"${REDACTED}"`).replaceAll(`'${value}'`, `'${REDACTED}'`);
  }
  const left = extraConfigCredentials(out);
  return left !== undefined && left.every((v) => v === REDACTED) ? out : REDACTED;
}

function redactExtraConfig(value: unknown): unknown {
  const containerd = (value as { spec?: { containerd?: unknown } } | undefined)?.spec?.containerd;
  if (isPlainObject(containerd) && typeof containerd.extraConfig === 'string') containerd.extraConfig = redactExtraConfigText(containerd.extraConfig);
  return value;
}

// Headers whose value is a credential: Authorization and its proxy twin, cookies, and API keys
// and tokens by any vendor's name (X-API-Key, Api-Key, X-Auth-Token, PRIVATE-TOKEN, ...).
const CREDENTIAL_HEADER = /^(proxy-)?authorization$|^cookie$|key|token|secret|auth|passw|session|signature/i;

/** Whether a header's value is a credential, by the header's name. */
export function isCredentialHeader(name: string): boolean {
  return CREDENTIAL_HEADER.test(name);
}

/** Every endpoint header value that is a credential (to be scrubbed wherever it would show). */
export function credentialHeaderValues(config: MachineConfig): string[] {
  return (config.spec.report.endpoints ?? []).flatMap((e) => Object.entries(e.headers ?? {}).filter(([name]) => isCredentialHeader(name)).map(([, value]) => value));
}

function redactHeaders(value: unknown): unknown {
  const endpoints = (value as { spec?: { report?: { endpoints?: unknown } } } | undefined)?.spec?.report?.endpoints;
  if (!Array.isArray(endpoints)) return value;
  for (const endpoint of endpoints) {
    const headers = isPlainObject(endpoint) ? endpoint.headers : undefined;
    if (!isPlainObject(headers)) continue;
    for (const name of Object.keys(headers)) if (isCredentialHeader(name)) headers[name] = REDACTED;
  }
  return value;
}

/** Every value in the configuration that is a URL holding user info or a query. */
export function credentialUrls(value: unknown): string[] {
  const found: string[] = [];
  mapUrls(value, (url) => (found.push(url), url));
  return found;
}

// A URL field holds the URL alone; text that merely contains one (a file's content) is not a URL field.
const WHOLE_URL = /^[a-z][a-z0-9+.-]*:\/\/\S+$/i;

function mapUrls(value: unknown, map: (url: string) => string): unknown {
  if (typeof value === 'string') return WHOLE_URL.test(value) && hasCredentials(value) ? map(value) : value;
  if (Array.isArray(value)) return value.map((v) => mapUrls(v, map));
  if (isPlainObject(value)) return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, mapUrls(v, map)]));
  return value;
}

/** Every literal secret value in a (possibly invalid, unmerged) configuration document. */
export function secretLiterals(value: unknown): string[] {
  return secretSources(value)
    .filter((s) => !isReference(s))
    // Anything else in a secret field (a string, or a wrongly typed value) is treated as the secret.
    .map((s) => (typeof s === 'string' ? s : JSON.stringify(s)));
}

/** Every secret field's value, literal or reference, in document order. */
export function secretSources(value: unknown): SecretSource[] {
  return secretFields(value).map((s) => s.source);
}

/**
 * Every secret of the configuration with the field it is for (spec.kubernetes.token), in
 * document order: the secret fields, and each file whose content is a secret reference.
 */
export function secretFields(value: unknown): { field: string; source: SecretSource }[] {
  const found: { field: string; source: SecretSource }[] = [];
  walk(schema(), value, (secret, path) => {
    found.push({ field: path, source: secret as SecretSource });
    return secret;
  });
  const files = (value as { spec?: { files?: unknown } } | undefined)?.spec?.files;
  if (Array.isArray(files)) {
    files.forEach((file: unknown, i) => {
      const content = isPlainObject(file) ? file.content : undefined;
      if (isReference(content)) found.push({ field: `spec.files[${i}].content`, source: content as SecretSource });
    });
  }
  return found;
}

function isReference(value: unknown): boolean {
  return isPlainObject(value) && 'valueFrom' in value;
}

function walk(node: JsonSchema, value: unknown, onSecret: (value: unknown, path: string) => unknown, path = ''): unknown {
  if (node['x-secret'] === true) return value === undefined || value === null ? value : onSecret(value, path);
  if (Array.isArray(value)) return value.map((v, i) => walk((node.items as JsonSchema) ?? {}, v, onSecret, `${path}[${i}]`));
  if (isPlainObject(value)) {
    const props = (node.properties ?? {}) as Record<string, JsonSchema>;
    const extra = isPlainObject(node.additionalProperties) ? (node.additionalProperties as JsonSchema) : {};
    const variants = [...((node.oneOf as JsonSchema[]) ?? []), ...((node.anyOf as JsonSchema[]) ?? [])];
    return Object.fromEntries(
      Object.entries(value).map(([k, v]) => {
        let child: JsonSchema | undefined = props[k];
        // Inside oneOf/anyOf, the first variant that knows the key decides (x-secret is on the field itself).
        if (!child) for (const variant of variants) child ??= ((variant.properties ?? {}) as Record<string, JsonSchema>)[k];
        return [k, walk(child ?? extra, v, onSecret, path === '' ? k : `${path}.${k}`)];
      }),
    );
  }
  return value;
}
