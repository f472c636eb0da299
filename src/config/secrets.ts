// Secrets: a literal, or a reference read when a step needs it (so a plan made on another machine
// never needs the secret). Every value read is registered with a scrubber that removes it from
// every event, log line and report; so is every credential a secret store was reached with.
import { isUtf8 } from 'node:buffer';
import type { ConfigHost } from '../host/config-host.ts';
import { referenceKind, type SecretReference, type SecretSource } from './schema/secret-field.ts';
import { ConfigError } from '../errors.ts';
import { REDACTED } from '../redaction.ts';
import { SecretScrubber } from './secret-scrubber.ts';
import { MAX_SECRET_FILE_BYTES, OFFLINE_HINT } from './secret-sources/limits.ts';
import type { SecretRead } from './secret-sources/read.ts';
import { describeSecretSource } from './secret-description.ts';
import { decodeContent, type FileEncoding } from './schema/file-content.ts';

export { REDACTED, SecretScrubber, MAX_SECRET_FILE_BYTES };

/** Whether reading the secret needs the network (a secret store, or an envelope at a URL). */
export function secretNeedsNetwork(source: SecretSource): boolean {
  const kind = referenceKind(source);
  if (kind === 'age') return (source as { valueFrom: { age: { url?: string } } }).valueFrom.age.url !== undefined;
  return kind === 'awsSecretsManager' || kind === 'awsParameterStore' || kind === 'azureKeyVault' || kind === 'gcpSecretManager';
}

/** Whether the secret is read when the run starts (a file or a variable) or only by its step. */
export function readAtStart(source: SecretSource): boolean {
  const kind = referenceKind(source);
  return kind === undefined || kind === 'file' || kind === 'env';
}

// A secret read from a store or an envelope is read once a run: the preflight and the step that
// needs it get the same value (and the store sees one request). Keyed by the host of the run.
const remembered = new WeakMap<ConfigHost, Map<string, string>>();

export interface SecretOptions {
  /** The value is a file's content: kept byte for byte, and may be empty. */
  exact?: boolean;
  /** The file's encoding: what the value decodes to is scrubbed too. */
  encoding?: FileEncoding;
}

/** The secret's value; `field` names it in errors (never the value). */
export async function resolveSecret(source: SecretSource, host: ConfigHost, field: string, scrubber?: SecretScrubber, options: SecretOptions = {}): Promise<string> {
  const read: SecretRead = { host, field, register: (value) => scrubber?.add(value), exact: options.exact === true };
  let value: string;
  if (typeof source === 'string') value = source;
  else if (readAtStart(source)) value = await readLocal(source.valueFrom, read);
  else {
    // One refusal for every source that needs the network, before any of them is asked.
    if (host.offline && secretNeedsNetwork(source)) throw new ConfigError([{ path: field, message: `is read from ${describeSecretSource(source, host.fs.platform)}, which machineadm cannot reach with --offline`, hint: OFFLINE_HINT }]);
    const cache = remembered.get(host) ?? new Map<string, string>();
    remembered.set(host, cache);
    // The stored bytes are kept whole, so that a field and a file naming one secret ask the store
    // once; each then takes its own form of them.
    const key = JSON.stringify(source.valueFrom);
    const stored = cache.get(key) ?? (await readRemote(source.valueFrom, { ...read, exact: true }));
    cache.set(key, stored);
    value = read.exact ? stored : stored.replace(/\r?\n$/, '');
  }
  // An empty file is a file (cloud-init writes a contentFrom Secret's empty value as one); an empty
  // token, password or key is a mistake to stop at.
  if (value === '' && !read.exact) throw new ConfigError([{ path: field, message: 'the secret is empty' }]);
  if (scrubber) for (const part of [...scrubbedParts(value), ...decodedParts(value, options.encoding)]) scrubber.add(part);
  return value;
}

/**
 * What of a value is scrubbed: the value, and of a value of several lines (a key, a credentials
 * file) each line long enough to be its own, so that a tool quoting one line of it is scrubbed too.
 * PEM's armor lines are public words, not the secret.
 */
function scrubbedParts(value: string): string[] {
  const lines = value.split(/\r?\n/).map((l) => l.trim());
  return [value, value.replace(/\r?\n$/, ''), ...(lines.length > 1 ? lines.filter((l) => l.length >= 20 && !l.startsWith('-----')) : [])];
}

/**
 * What a file's content given encoded (base64, as binary secrets are stored) decodes to: the
 * secret a tool reading the file would print. Bytes that are not text are no line of output.
 */
function decodedParts(value: string, encoding: FileEncoding | undefined): string[] {
  if (encoding === undefined || encoding === 'plain') return [];
  const decoded = decodeContent(value, encoding);
  return 'bytes' in decoded && isUtf8(decoded.bytes) ? scrubbedParts(decoded.bytes.toString('utf8')) : [];
}

async function readLocal(reference: SecretReference, read: SecretRead): Promise<string> {
  const { host, field } = read;
  if ('env' in reference) {
    const name = reference.env;
    const env = host.env[name];
    if (env === undefined) throw new ConfigError([{ path: field, message: `environment variable ${name} is not set`, hint: 'export it for machineadm, or give the value another way' }]);
    return env;
  }
  if (!('file' in reference)) throw new Error(`not a local secret reference: ${Object.keys(reference).join(', ')}`);
  const path = reference.file;
  const found = await host.fs.readSmallFile(path, MAX_SECRET_FILE_BYTES).catch((cause: unknown) => {
    throw new ConfigError([{ path: field, message: `cannot read secret file ${path}: ${(cause as Error).message}` }]);
  });
  if ('problem' in found) {
    const [message, hint]: [string, string] = ({
      missing: [`secret file ${path} does not exist`, 'write it before machineadm runs, or give the value another way'],
      'not-a-file': [`secret file ${path} is not a regular file (a pipe, device or directory)`, 'write the secret to a plain file; a FIFO would wait for a writer for ever'],
      'too-large': [`secret file ${path} is larger than ${MAX_SECRET_FILE_BYTES / 1024} KiB${found.size === undefined ? '' : ` (${found.size} bytes)`}`, 'a token, key or password is never that large: check the path'],
    } satisfies Record<typeof found.problem, [string, string]>)[found.problem];
    throw new ConfigError([{ path: field, message, hint }]);
  }
  const text = found.bytes.toString('utf8');
  return read.exact ? text : text.replace(/\r?\n$/, '');
}

// Each store's client is loaded when a secret names it: most runs read none.
async function readRemote(reference: SecretReference, read: SecretRead): Promise<string> {
  if ('awsSecretsManager' in reference || 'awsParameterStore' in reference) return (await import('./secret-sources/aws.ts')).readAwsSecret(reference, read);
  if ('azureKeyVault' in reference) return (await import('./secret-sources/azure.ts')).readAzureKeyVault(reference.azureKeyVault, read);
  if ('gcpSecretManager' in reference) return (await import('./secret-sources/gcp.ts')).readGcpSecret(reference.gcpSecretManager, read);
  if ('age' in reference) return (await import('./secret-sources/age.ts')).readAgeSecret(reference.age, read);
  throw new Error(`not a remote secret reference: ${Object.keys(reference).join(', ')}`);
}
