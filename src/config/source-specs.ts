// The -c sources as given (a path, a directory, -, file://, https://, imds://, each with its pins in
// the fragment) turned into what loading reads: parsed and checked before anything is read.
import { resolve as resolvePath } from 'node:path';
import { displayUrl, type HttpTimeouts, type RetryPolicy } from '../host/http.ts';
import { type ConfigIssue } from '../errors.ts';
import { type Cloud } from './imds.ts';

export type SourceSpec =
  | { kind: 'stdin'; name: string }
  | { kind: 'path'; name: string; path: string; fs: 'local' | 'root'; optional: boolean; sha256?: string }
  | { kind: 'https'; name: string; url: string; sha256?: string; caFile?: string }
  | { kind: 'imds'; name: string; cloud?: Cloud };

export interface RawSource {
  name: string;
  bytes: Buffer;
  /** Instance metadata: a document that is not a MachineConfig is not an error there. */
  userData: boolean;
  instanceId?: string;
  /** The real directory of a file source: relative file sources in it are resolved against it. */
  directory?: string;
  /**
   * A drop-in of a directory that could not be read: its problems, reported with the other
   * drop-ins' (which are still read and checked), and no bytes.
   */
  issues?: ConfigIssue[];
}

export const SCHEMES = ['file://', 'https://', 'imds://'];

// What each scheme's fragment may carry; anything else would be silently ignored (a pin that is
// never checked), so it is refused.
export const FRAGMENT_PARAMETERS: Record<string, { names: string[]; hint: string }> = {
  'file:': { names: ['sha256'], hint: 'a file:// fragment takes only sha256=<hex>' },
  'https:': { names: ['sha256', 'ca'], hint: 'an https:// fragment takes sha256=<hex> and ca=<path of a PEM CA file>' },
  'imds:': { names: [], hint: 'instance metadata takes no fragment: its content cannot be pinned' },
};

/** Reads the source strings of -c into specs, collecting every malformed one. */
export function parseSources(sources: readonly string[], cwd: string): { specs: SourceSpec[]; issues: ConfigIssue[] } {
  const specs: SourceSpec[] = [];
  const issues: ConfigIssue[] = [];
  let stdin = 0;
  for (const source of sources) {
    const bad = (message: string, hint?: string) => issues.push({ source: safeName(source), path: '', message, ...(hint ? { hint } : {}) });
    if (source === '-') {
      if (++stdin > 1) bad('standard input can be read only once', 'give "-" a single time');
      else specs.push({ kind: 'stdin', name: 'stdin' });
    } else if (/^[a-z][a-z0-9+.-]*:\/\//i.test(source)) {
      let url: URL;
      try {
        url = new URL(source);
      } catch {
        bad('not a valid URL', 'write it like https://config.example/node.yaml');
        continue;
      }
      const fragment = new URLSearchParams(url.hash.replace(/^#/, ''));
      const sha256 = fragment.get('sha256') ?? undefined;
      const allowed = FRAGMENT_PARAMETERS[url.protocol];
      const unknown = allowed ? [...fragment.keys()].filter((k) => !allowed.names.includes(k)) : [];
      if (unknown.length) bad(`unknown URL fragment parameter ${unknown.map((k) => JSON.stringify(k)).join(', ')}`, allowed!.hint);
      // Only the first of a repeated parameter is read: a second pin would never be checked.
      const repeated = [...new Set(fragment.keys())].filter((k) => fragment.getAll(k).length > 1);
      if (repeated.length) bad(`URL fragment parameter ${repeated.map((k) => JSON.stringify(k)).join(', ')} given more than once`, `give ${repeated.map((k) => `${k}=`).join(' and ')} once`);
      if (sha256 !== undefined && !/^[a-f0-9]{64}$/i.test(sha256)) bad('the sha256 pin is not 64 hex digits', 'write #sha256=<64 hex digits> (sha256sum prints them)');
      const pin = sha256?.toLowerCase();
      if (url.protocol === 'file:') {
        const path = url.host && url.host !== 'localhost' ? undefined : decodedPath(url);
        if (path === undefined) bad('not a valid file:// URL', 'name a local path, e.g. file:///etc/x.yaml (with %XX escapes only for bytes such as a space)');
        else specs.push({ kind: 'path', name: path, path, fs: 'local', optional: false, ...(pin ? { sha256: pin } : {}) });
      } else if (url.protocol === 'https:') {
        const ca = fragment.get('ca') ?? undefined;
        const clean = new URL(url);
        clean.hash = '';
        specs.push({ kind: 'https', name: displayUrl(source), url: clean.toString(), ...(pin ? { sha256: pin } : {}), ...(ca ? { caFile: resolvePath(cwd, ca) } : {}) });
      } else if (url.protocol === 'imds:') {
        const where = `${url.host}${url.pathname}`.replace(/\/+$/, '');
        const match = /^(?:(aws|azure|gce)\/)?user-data$/.exec(where);
        if (!match) bad('unknown instance metadata source', 'use imds://user-data (cloud detected) or imds://aws/user-data, imds://azure/user-data, imds://gce/user-data');
        else specs.push({ kind: 'imds', name: `imds://${where}`, ...(match[1] ? { cloud: match[1] as Cloud } : {}) });
      } else if (url.protocol === 'http:') {
        bad('plain http:// is not accepted for configuration (it can be changed on the way and may carry secrets)', 'serve it over https://, or copy it to a local file');
      } else {
        bad(`unknown kind of source ${JSON.stringify(url.protocol.replace(/:$/, ''))}`, `use a path, "-", or a URL starting with ${SCHEMES.join(', ')}`);
      }
    } else if (source === '') {
      bad('an empty source', 'give a path, "-", or a URL');
    } else {
      const path = resolvePath(cwd, source);
      specs.push({ kind: 'path', name: source.endsWith('/') && !path.endsWith('/') ? `${path}/` : path, path, fs: 'local', optional: false });
    }
  }
  return { specs, issues };
}

export function decodedPath(url: URL): string | undefined {
  try {
    return decodeURIComponent(url.pathname);
  } catch {
    return undefined;
  }
}

// Sources are named in messages; a URL's query or user info may hold a token, so it is shown as
// displayUrl shows it, whatever the scheme: a URL refused for its scheme still carries its secret.
export function safeName(source: string): string {
  return /^[a-z][a-z0-9+.-]*:\/\//i.test(source) ? displayUrl(source) : source;
}

export function isNetwork(spec: SourceSpec): boolean {
  return spec.kind === 'https' || spec.kind === 'imds';
}

export interface LoadOptions {
  /** Reads all of standard input (for the source "-"). */
  readStdin?: (maxBytes: number) => Promise<Buffer>;
  /** Relative -c paths are resolved against this directory (default: the process's). */
  cwd?: string;
  maxBytes?: number;
  /** Retry and timeout settings for https:// sources (tests shorten them). */
  http?: { retry?: Partial<RetryPolicy>; timeouts?: Partial<HttpTimeouts> };
  /** Retry and timeout settings for imds:// sources. */
  imds?: { retry?: Partial<RetryPolicy>; timeouts?: Partial<HttpTimeouts> };
  /**
   * Without -c and with nothing at the default sources: an empty MachineConfig instead of an error
   * (reset, which works from its records and needs a configuration only for credentials).
   */
  emptyWhenNone?: boolean;
}
