// How secrets are shown: the one marker for a hidden value, and the one way a URL reaches any
// output (plan, events, result files, config view, errors). A URL may carry a password in its user
// info or a token in its query (a presigned URL's signature), so both are hidden wherever it goes.
// Pure: no I/O, imported by every layer.

export const REDACTED = '<redacted>';

/**
 * A URL for any output: a password in the user info, a user info without a password (a token
 * given as the user name) and every query value are replaced by <redacted>; the fragment (never
 * sent to a server; machineadm's own pins) is left out. Query names stay, so a presigned URL is
 * recognisable as one.
 */
export function displayUrl(url: string): string {
  const u = URL.parse(url);
  if (!u) return '(an invalid URL)';
  const userinfo = u.password ? `${u.username}:${REDACTED}@` : u.username ? `${REDACTED}@` : '';
  const query = u.search.length > 1 ? `?${u.search.slice(1).split('&').map(redactParameter).join('&')}` : '';
  // new URL() turns "scheme:" without "//" into an opaque path; only hierarchical URLs have a host,
  // and a file: URL has "//" with an empty one (file:///etc/x, which file:/etc/x would not read back as).
  const authority = u.host || userinfo || u.protocol === 'file:' ? `//${userinfo}${u.host}` : '';
  // new URL() adds "/" to a URL without a path (http://proxy:3128); shown as written.
  const path = u.pathname === '/' && /^[a-z][a-z0-9+.-]*:\/\/[^/?#]*([?#]|$)/i.test(url) ? '' : u.pathname;
  return `${u.protocol}${authority}${path}${query}`;
}

function redactParameter(parameter: string): string {
  const eq = parameter.indexOf('=');
  // A parameter without "=" may be a bare token: all of it goes.
  if (eq < 0) return parameter === '' ? '' : REDACTED;
  return eq === parameter.length - 1 ? parameter : `${parameter.slice(0, eq)}=${REDACTED}`;
}

// A URL inside free text ends at white space, a quote or a bracket (TOML, YAML, JSON, prose).
const URL_IN_TEXT = /\b[a-z][a-z0-9+.-]*:\/\/[^\s"'<>`]+/gi;

/** The text with every URL in it shown as displayUrl shows it (when it holds user info or a query). */
export function redactUrlsIn(text: string): string {
  return text.replace(URL_IN_TEXT, (url) => (hasCredentials(url) ? displayUrl(url) : url));
}

/**
 * Whether the URL has a part displayUrl hides (user info or a query). One that does not parse
 * (a port above 65535, a space in the host) is taken to, when it has an "@" or a "?": no parser
 * can say where its password ends, so it is shown only as "(an invalid URL)".
 */
export function hasCredentials(url: string): boolean {
  const u = URL.parse(url);
  if (u === null) return /[@?]/.test(url);
  return u.username !== '' || u.password !== '' || u.search.length > 1;
}

// Query names that carry credentials in the URL schemes machines meet: S3 and GCS presigned URLs,
// Azure SAS, OAuth tokens, API keys.
const CREDENTIAL_PARAMETER = /sig|token|key|secret|pass|credential|auth|session|code/i;
// A value this long is a token whatever its name; shorter ones (a region, "3600") would scrub
// ordinary words out of every line.
const LONG_VALUE = 24;

/**
 * The parts of a URL that are secrets, as written and decoded: the password (or a user name
 * without password), and query values named like credentials or long enough to be tokens.
 */
export function urlSecrets(url: string): string[] {
  const u = URL.parse(url);
  if (!u) return [];
  const found: string[] = [];
  const both = (raw: string, decoded: string) => found.push(raw, decoded);
  if (u.password) both(u.password, safeDecode(u.password));
  else if (u.username) both(u.username, safeDecode(u.username));
  for (const parameter of u.search.slice(1).split('&')) {
    const eq = parameter.indexOf('=');
    if (eq < 0) {
      if (parameter) both(parameter, safeDecode(parameter));
      continue;
    }
    const name = safeDecode(parameter.slice(0, eq));
    const raw = parameter.slice(eq + 1);
    if (raw && (CREDENTIAL_PARAMETER.test(name) || raw.length >= LONG_VALUE)) both(raw, safeDecode(raw.replace(/\+/g, ' ')));
  }
  return [...new Set(found)];
}

function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}
