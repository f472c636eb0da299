// The run's scrubber: every secret value read (and every credential a secret store was reached
// with) is registered here and removed from every event, log line and report.
import { REDACTED, urlSecrets } from '../redaction.ts';

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
