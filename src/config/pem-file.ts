// PEM files the configuration names on the machine (a CA bundle, a client certificate or key),
// read and checked before the run changes anything: a missing or broken one is a configuration
// problem (exit 2), found together with every other.
import type { ConfigHost } from '../host/config-host.ts';
import type { ConfigIssue } from '../errors.ts';

const PEM_CERTIFICATE = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/;
const PEM_KEY = /-----BEGIN ((RSA|EC|ENCRYPTED) )?PRIVATE KEY-----[\s\S]+?-----END ((RSA|EC|ENCRYPTED) )?PRIVATE KEY-----/;

/** Whether the text holds a PEM certificate (Node ignores a `ca` without one, without a word). */
export function holdsPemCertificate(text: string): boolean {
  return PEM_CERTIFICATE.test(text);
}

/** A CA bundle, certificate or key: the system bundle is a few hundred KiB. */
const MAX_PEM_FILE_BYTES = 4 * 1024 * 1024;

/** The PEM text, or undefined with the problem added to `issues`. */
export async function readPem(host: ConfigHost, path: string, field: string, kind: 'certificate' | 'key', issues: ConfigIssue[]): Promise<string | undefined> {
  let text: string;
  try {
    const read = await host.fs.readSmallFile(path, MAX_PEM_FILE_BYTES);
    if ('problem' in read) {
      const [message, hint]: [string, string] = ({
        missing: [`${path} does not exist`, 'write the file before machineadm runs (under --root when one is given)'],
        'not-a-file': [`${path} is not a regular file (a pipe, device or directory)`, 'give a PEM file'],
        'too-large': [`${path} is larger than ${MAX_PEM_FILE_BYTES / (1024 * 1024)} MiB`, 'a certificate bundle or key is never that large: check the path'],
      } satisfies Record<typeof read.problem, [string, string]>)[read.problem];
      issues.push({ path: field, message, hint });
      return undefined;
    }
    text = read.bytes.toString('utf8');
  } catch (cause) {
    issues.push({ path: field, message: `cannot read ${path}: ${(cause as Error).message}`, hint: 'make the file readable by machineadm' });
    return undefined;
  }
  const pattern = kind === 'certificate' ? PEM_CERTIFICATE : PEM_KEY;
  if (!pattern.test(text)) {
    issues.push({
      path: field,
      message: `${path} is not a PEM ${kind === 'certificate' ? 'certificate' : 'private key'}`,
      hint: kind === 'certificate' ? 'give a file with -----BEGIN CERTIFICATE----- blocks' : 'give an unencrypted PEM private key (-----BEGIN PRIVATE KEY-----)',
    });
    return undefined;
  }
  // Node cannot use an encrypted key without its password: every post would fail, for the whole run.
  if (kind === 'key' && /-----BEGIN ENCRYPTED PRIVATE KEY-----|Proc-Type:\s*4,ENCRYPTED/.test(text)) {
    issues.push({
      path: field,
      message: `${path} is an encrypted private key, and machineadm has no password to open it`,
      hint: 'store the key unencrypted, mode 0600 (openssl pkey -in KEY -out KEY.plain)',
    });
    return undefined;
  }
  return text;
}
