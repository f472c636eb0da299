// Where a file machineadm installs comes from: downloaded (an http(s):// URL) or copied from this
// machine (a file:/// URL, or a path relative to the configuration file, as `machineadm bundle`
// writes it). One definition for spec.files, the Windows host agents and the djoin blob.
import { string } from './dsl.ts';
import { networkUrlProblem } from './url.ts';

const SCHEME = /^[A-Za-z][A-Za-z0-9+.-]*:/;

/** A source the run copies from this machine (no network, also with --offline). */
export function isLocalSource(url: string): boolean {
  return url.startsWith('file:') || isRelativeSource(url);
}

/** A path relative to the configuration file, resolved when the configuration is loaded. */
export function isRelativeSource(url: string): boolean {
  return url !== '' && !SCHEME.test(url) && !/^[\\/]/.test(url);
}

// A relative path: no scheme (a drive letter reads as one) and no leading slash or backslash.
const ANY = /^(https?:\/\/|file:\/\/\/|(?![A-Za-z][A-Za-z0-9+.-]*:|[\\/])\S)/;
const HTTPS_ONLY = /^(https:\/\/|file:\/\/\/|(?![A-Za-z][A-Za-z0-9+.-]*:|[\\/])\S)/;

/**
 * The url field of a source. `httpsOnly` for a file that holds a secret (the djoin blob): a
 * download is over https only, while a local copy is always allowed.
 */
export function sourceUrl(options: { description: string; httpsOnly?: boolean; example?: string }) {
  const network = options.httpsOnly ? 'https://' : 'http(s)://';
  const shape = options.httpsOnly ? HTTPS_ONLY : ANY;
  const kinds = `an ${options.httpsOnly ? 'https://' : 'http:// or https://'} URL, a file:/// URL, or a path relative to the configuration file`;
  return string({
    // Checked here rather than as a pattern, whose message quotes the value: a URL that is not
    // one may still hold a password (user:pw@host, //user:pw@host).
    check: (value) => networkUrlProblem(value) ?? (shape.test(value) ? undefined : `is not ${kinds} (the value is not shown: it may hold a credential)|give ${kinds}`),
    jsonPattern: shape,
    description: `${options.description}: ${network} is downloaded; file:/// and a path relative to the configuration file that names it are copied from this machine (no network, also with --offline)`,
    ...(options.example ? { example: options.example } : {}),
  });
}
