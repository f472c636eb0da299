// The principals in a Kerberos keytab file (MIT format 0x0502 / 0x0501), to tell which domain this
// machine is joined to without running klist. Pure: takes the file's bytes.

export interface KeytabPrincipal {
  realm: string;
  components: string[];
}

/** The principals, in file order; undefined when the bytes are not a keytab. */
export function keytabPrincipals(bytes: Uint8Array): KeytabPrincipal[] | undefined {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (bytes.length < 2 || bytes[0] !== 0x05 || (bytes[1] !== 0x01 && bytes[1] !== 0x02)) return undefined;
  const version = bytes[1]!;
  const out: KeytabPrincipal[] = [];
  const decoder = new TextDecoder('utf-8', { fatal: false });
  let at = 2;
  while (at + 4 <= bytes.length) {
    const size = view.getInt32(at);
    at += 4;
    if (size === 0) break;
    // A negative size is a hole left by a removed entry.
    if (size < 0) {
      at += -size;
      continue;
    }
    const end = at + size;
    if (end > bytes.length) return undefined;
    let p = at;
    const counted = (): string | undefined => {
      if (p + 2 > end) return undefined;
      const length = view.getUint16(p);
      p += 2;
      if (p + length > end) return undefined;
      const text = decoder.decode(bytes.subarray(p, p + length));
      p += length;
      return text;
    };
    if (p + 2 > end) return undefined;
    // Version 1 counts the realm among the components.
    const count = view.getUint16(p) - (version === 0x01 ? 1 : 0);
    p += 2;
    const realm = counted();
    const components: string[] = [];
    for (let i = 0; i < count; i++) {
      const c = counted();
      if (c === undefined) return undefined;
      components.push(c);
    }
    if (realm === undefined) return undefined;
    out.push({ realm, components });
    at = end;
  }
  return out;
}

/** The computer account (NAME$) and realm a joined machine's keytab holds, if any. */
export function machineAccount(principals: readonly KeytabPrincipal[]): { computerName: string; realm: string } | undefined {
  const found = principals.find((p) => p.components.length === 1 && p.components[0]!.endsWith('$'));
  return found ? { computerName: found.components[0]!.slice(0, -1), realm: found.realm } : undefined;
}
