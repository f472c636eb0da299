// Secrets: a literal, or a reference read when a step needs it (so a plan made on another machine
// never needs the secret). Every value read is registered with a scrubber that removes it from
// every event, log line and report.
import type { ConfigHost } from '../host/config-host.ts';
import type { SecretSource } from './schema/secret-field.ts';
import { ConfigError } from '../errors.ts';
import { REDACTED, urlSecrets } from '../redaction.ts';

export { REDACTED };

export class SecretScrubber {
  private readonly values = new Set<string>();
  /** The values longest first, sorted once per registration rather than for every string scrubbed. */
  private longestFirst: string[] | undefined;

  add(value: string): void {
    // Very short values would scrub ordinary words out of every line, so a secret shorter than
    // 4 characters is not scrubbed (validation does not refuse one: it is the user's choice).
    if (value.length < 4 || this.values.has(value)) return;
    this.values.add(value);
    this.longestFirst = undefined;
  }

  /** Registers what a URL holds that displayUrl hides (password, token-like query values). */
  addUrl(url: string): void {
    for (const value of urlSecrets(url)) this.add(value);
  }

  scrub(text: string): string {
    let out = text;
    // Longest first: a secret that holds another (a password and its decoded form) goes whole.
    this.longestFirst ??= [...this.values].sort((a, b) => b.length - a.length);
    for (const value of this.longestFirst) if (out.includes(value)) out = out.split(value).join(REDACTED);
    return out;
  }

  /** A deep copy of any JSON-like value with every registered secret replaced. */
  scrubValue<T>(value: T): T {
    if (typeof value === 'string') return this.scrub(value) as T;
    if (Array.isArray(value)) return value.map((v) => this.scrubValue(v)) as T;
    if (value && typeof value === 'object') {
      return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, this.scrubValue(v)])) as T;
    }
    return value;
  }
}

/** The secret's value; `field` names it in errors (never the value). */
/** The largest secret file read: tokens, keys and passwords are bytes to a few kilobytes. */
export const MAX_SECRET_FILE_BYTES = 64 * 1024;

export async function resolveSecret(source: SecretSource, host: ConfigHost, field: string, scrubber?: SecretScrubber): Promise<string> {
  let value: string;
  if (typeof source === 'string') {
    value = source;
  } else if ('file' in source.valueFrom) {
    const path = source.valueFrom.file;
    const read = await host.fs.readSmallFile(path, MAX_SECRET_FILE_BYTES).catch((cause: unknown) => {
      throw new ConfigError([{ path: field, message: `cannot read secret file ${path}: ${(cause as Error).message}` }]);
    });
    if ('problem' in read) {
      const [message, hint]: [string, string] = ({
        missing: [`secret file ${path} does not exist`, 'write it before machineadm runs, or give the value another way'],
        'not-a-file': [`secret file ${path} is not a regular file (a pipe, device or directory)`, 'write the secret to a plain file; a FIFO would wait for a writer for ever'],
        'too-large': [`secret file ${path} is larger than ${MAX_SECRET_FILE_BYTES / 1024} KiB${read.size === undefined ? '' : ` (${read.size} bytes)`}`, 'a token, key or password is never that large: check the path'],
      } satisfies Record<typeof read.problem, [string, string]>)[read.problem];
      throw new ConfigError([{ path: field, message, hint }]);
    }
    value = read.bytes.toString('utf8').replace(/\r?\n$/, '');
  } else {
    const name = source.valueFrom.env;
    const env = host.env[name];
    if (env === undefined) throw new ConfigError([{ path: field, message: `environment variable ${name} is not set`, hint: 'export it for machineadm, or give the value another way' }]);
    value = env;
  }
  if (value === '') throw new ConfigError([{ path: field, message: 'the secret is empty' }]);
  scrubber?.add(value);
  return value;
}
