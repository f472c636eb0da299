// The rule every network URL of the configuration follows beyond its scheme: one that the WHATWG
// URL parser (Node's, which downloads and posts with it) reads, whole. Without it a URL passes
// validation and fails later, after steps ran, and a URL that does not parse cannot be shown with
// its password hidden. Pure.

/** Why a URL is refused, never quoting it (it may hold a password or a token), or undefined. */
export function networkUrlProblem(value: string): string | undefined {
  if (!/^[a-z][a-z0-9+.-]*:/i.test(value)) return undefined;
  // The parser drops tabs and line breaks silently, and a line break in a URL written into a
  // header or a TOML line starts another one.
  if (/[\u0000-\u0020\u007f]/.test(value)) return 'must not contain white space, line breaks or control characters (the URL is not shown: it may hold a credential)|percent-encode them, e.g. %20 for a space';
  if (!URL.canParse(value)) return 'is not a URL that can be parsed, e.g. a port above 65535 or a character not allowed in the host (the URL is not shown: it may hold a credential)|check the host and port, and percent-encode the user name and password';
  return undefined;
}
