// The parser alone: the package's entry also loads its stream parser, and with it all of Node's
// streams, into every start that checks a configuration.
declare module '@iarna/toml/parse-string.js' {
  import type { JsonMap } from '@iarna/toml';
  export default function parseString(text: string): JsonMap;
}
