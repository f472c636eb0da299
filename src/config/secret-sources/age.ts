// age envelopes: a value encrypted to the machine's age identity (an X25519 key baked into the
// image, or written by the site before machineadm runs), decrypted when the step that needs it runs.
// The envelope is inline (armor), a file on the machine, or downloaded; anyone may read it, only the
// identity opens it. age gives confidentiality, not authenticity: anyone who knows the recipient can
// make an envelope, so the configuration that names it must itself come from a trusted source.
import { isUtf8 } from 'node:buffer';
import { armor, Decrypter, identityToRecipient } from 'age-encryption';
import type { HttpResponse } from '../../host/http.ts';
import type { AgeReference } from '../schema/secret-field.ts';
import { ageIdentityPath, MAX_SECRET_FILE_BYTES } from './limits.ts';
import { NOT_UTF8, readCaFile, secretRefused, SecretUnavailableError, storeRequest, transient, type SecretRead, type Verdict } from './read.ts';

const ARMOR_BEGIN = '-----BEGIN AGE ENCRYPTED FILE-----';
// An envelope holds at most a secret file's bytes, plus its header and armor.
const MAX_ENVELOPE_BYTES = MAX_SECRET_FILE_BYTES * 2;

/** The envelope's plaintext, decrypted with the machine's identity file. */
export async function readAgeSecret(reference: AgeReference, read: SecretRead): Promise<string> {
  const identities = await readIdentities(reference, read);
  const envelope = await envelopeBytes(reference, read);
  const decrypter = new Decrypter();
  for (const identity of identities) decrypter.addIdentity(identity);
  let bytes: Uint8Array;
  try {
    bytes = await decrypter.decrypt(envelope);
  } catch (error) {
    const recipients = await Promise.all(identities.map((i) => identityToRecipient(i)));
    const why = (error as Error).message;
    if (/no identity matched/i.test(why)) {
      throw secretRefused(read, `the age envelope (${where(reference)}) is not encrypted to this machine's identity (recipient ${recipients.join(', ')})`, `seal it again for this machine: machineadm seal -r ${recipients[0]}`);
    }
    throw secretRefused(read, `the age envelope (${where(reference)}) cannot be opened: ${why.slice(0, 200)}`, 'it was damaged or cut short: give the whole output of machineadm seal (or age -a)');
  }
  if (!isUtf8(bytes)) throw secretRefused(read, `the age envelope (${where(reference)}) holds ${NOT_UTF8.message}`, NOT_UTF8.hint);
  // Kept byte for byte: resolveSecret drops a field's final newline, as for every source.
  return Buffer.from(bytes).toString('utf8');
}

function where(reference: AgeReference): string {
  return reference.file !== undefined ? `file ${reference.file}` : reference.url !== undefined ? `from ${reference.url}` : 'inline armor';
}

/** The identity file's keys (AGE-SECRET-KEY-1...), each registered with the scrubber. */
async function readIdentities(reference: AgeReference, read: SecretRead): Promise<string[]> {
  const path = ageIdentityPath(reference, read.host.fs.platform);
  const found = await read.host.fs.readSmallFile(path, MAX_SECRET_FILE_BYTES).catch((cause: unknown) => {
    throw secretRefused(read, `cannot read the age identity ${path}: ${(cause as Error).message}`);
  });
  if ('problem' in found) {
    throw secretRefused(read, found.problem === 'missing' ? `the age identity ${path} does not exist` : `the age identity ${path} is not a small regular file`, 'bake the identity into the image (age-keygen -o, mode 0600) or write it before machineadm runs; or name it as identity');
  }
  // A key others on the machine can read opens every envelope sealed to it: refused, not used.
  // The mode is the file's, through any link to it (a mounted secret is a link, its mode 0777).
  if (read.host.fs.platform === 'linux' && (found.mode & 0o077) !== 0) {
    throw secretRefused(read, `the age identity ${path} can be read by others (mode ${(found.mode & 0o777).toString(8).padStart(4, '0')})`, `chmod 0600 ${path}, owned by root`);
  }
  // Each key keeps its line number in the file, so a refusal points past age-keygen's comments.
  const lines = found.bytes
    .toString('utf8')
    .split(/\r?\n/)
    .map((line, i) => ({ key: line.trim(), line: i + 1 }))
    .filter(({ key }) => key !== '' && !key.startsWith('#'));
  for (const { key } of lines) read.register(key);
  const bad = await findBadKey(lines);
  if (lines.length === 0 || bad !== undefined) {
    throw secretRefused(read, `the age identity ${path} ${bad === undefined ? 'holds no key' : `line ${bad.line} is not an age secret key`}`, 'an identity file holds AGE-SECRET-KEY-1... lines (age-keygen writes one); plugin and SSH identities are not read');
  }
  return lines.map(({ key }) => key);
}

/**
 * The first line that is not a whole age key. A key's checksum is checked here, not by the
 * decrypter: the library's message for a mistyped key quotes the key itself.
 */
async function findBadKey(lines: { key: string; line: number }[]): Promise<{ line: number } | undefined> {
  for (const entry of lines) {
    if (!/^AGE-SECRET-KEY-(PQ-)?1[0-9A-Z]+$/.test(entry.key)) return entry;
    try {
      await identityToRecipient(entry.key);
    } catch {
      return entry;
    }
  }
  return undefined;
}

/** The envelope's binary form, from the armor, a file (armored or binary) or a URL. */
async function envelopeBytes(reference: AgeReference, read: SecretRead): Promise<Uint8Array> {
  if (reference.armor !== undefined) return dearmor(reference.armor, read, 'inline armor');
  if (reference.file !== undefined) {
    const found = await read.host.fs.readSmallFile(reference.file, MAX_ENVELOPE_BYTES).catch((cause: unknown) => {
      throw secretRefused(read, `cannot read the age envelope ${reference.file}: ${(cause as Error).message}`);
    });
    if ('problem' in found) {
      const message = found.problem === 'missing' ? 'does not exist' : found.problem === 'too-large' ? `is larger than ${MAX_ENVELOPE_BYTES / 1024} KiB` : 'is not a regular file';
      throw secretRefused(read, `the age envelope ${reference.file} ${message}`, 'write it before machineadm runs (machineadm seal makes one)');
    }
    return maybeArmored(found.bytes, read, `file ${reference.file}`);
  }
  if (reference.url === undefined) throw new Error('an age reference names none of armor, file or url');
  const url = reference.url;
  const ca = await readCaFile(read, reference.caFile);
  const answer = await storeRequest(read, {
    url,
    headers: {},
    ...(ca !== undefined ? { ca } : {}),
    service: url,
    judge: (a: HttpResponse): Verdict => {
      if (a.status === 200) return a.body.length <= MAX_ENVELOPE_BYTES ? { ok: a } : { fail: secretRefused(read, `the age envelope at ${url} is larger than ${MAX_ENVELOPE_BYTES / 1024} KiB`) };
      if (a.status === 404 || a.status === 410) return { fail: secretRefused(read, `the age envelope at ${url} does not exist (HTTP ${a.status})`, 'check the URL') };
      if (a.status === 401 || a.status === 403) return { fail: secretRefused(read, `the server refuses the age envelope at ${url} (HTTP ${a.status})`, 'an envelope needs no access control: serve it to the machine as it is') };
      return transient(a, 'the envelope could not be had') ?? { fail: new SecretUnavailableError(read, `the server answered HTTP ${a.status} for the age envelope at ${url}`) };
    },
  });
  return maybeArmored(answer.body, read, `from ${url}`);
}

function maybeArmored(bytes: Buffer, read: SecretRead, where: string): Uint8Array {
  const head = bytes.subarray(0, 64).toString('latin1').trimStart();
  return head.startsWith(ARMOR_BEGIN) ? dearmor(bytes.toString('latin1'), read, where) : new Uint8Array(bytes);
}

function dearmor(text: string, read: SecretRead, where: string): Uint8Array {
  try {
    return armor.decode(text);
  } catch (error) {
    throw secretRefused(read, `the age envelope (${where}) is not valid ASCII armor: ${(error as Error).message.slice(0, 200)}`, 'give the whole output of machineadm seal (or age -a), its lines unchanged');
  }
}
