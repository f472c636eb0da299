// A registry login that extraConfig gives containerd (the CRI plugin's registry.configs."<host>".auth,
// or the older registry.auths): which keys hold one, and its values. config.toml is then kept from
// other users (src/containerd/files.ts), and config view shows it redacted (../redact.ts). Pure.
import { parseExtraConfig } from './extra.ts';
import { isTable, type TomlTable, type TomlValue } from './toml.ts';

/** A login table, or a password or token by its own name. */
export const CREDENTIAL_KEY = /^(password|identitytoken|auth|auths)$/i;

// Text that does not parse is refused at validation: nothing in it reaches containerd.
function parsed(text: string): TomlTable | undefined {
  try {
    return parseExtraConfig(text);
  } catch {
    return undefined;
  }
}

/** Whether extraConfig has a credential key at any depth. */
export function holdsCredentialKey(text: string | undefined): boolean {
  const table = text ? parsed(text) : undefined;
  const holds = (value: TomlTable): boolean => Object.entries(value).some(([key, v]) => CREDENTIAL_KEY.test(key) || (isTable(v) && holds(v)));
  return table !== undefined && holds(table);
}

/**
 * Every non-empty string at or below a credential key (a login's user name excepted: it is no
 * secret, and an operator checks it), or undefined when the text does not parse.
 */
export function extraConfigCredentials(text: string): string[] | undefined {
  const table = parsed(text);
  if (!table) return undefined;
  const found: string[] = [];
  const visit = (key: string, value: TomlValue, inLogin: boolean): void => {
    const login = inLogin || CREDENTIAL_KEY.test(key);
    if (typeof value === 'string') {
      if (login && value !== '' && key.toLowerCase() !== 'username') found.push(value);
    } else if (Array.isArray(value)) value.forEach((v) => visit(key, v, login));
    else if (isTable(value)) for (const [k, v] of Object.entries(value)) visit(k, v, login);
  };
  for (const [k, v] of Object.entries(table)) visit(k, v, false);
  return found;
}
