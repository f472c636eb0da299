// minisign's file formats (public key, secret key, signature), read and written byte for byte as
// minisign 0.11 does, so releases can be checked with the standard tool and signify's legacy
// signatures too. Pure: no I/O. Verification is in signature.ts.
import { scryptSync, timingSafeEqual } from 'node:crypto';
import { VerificationError, UsageError } from '../errors.ts';
import { blake2b } from './blake2b.ts';

export const UNTRUSTED_PREFIX = 'untrusted comment: ';
export const TRUSTED_PREFIX = 'trusted comment: ';

const ALG_LEGACY = 'Ed';
const ALG_PREHASHED = 'ED';
const KDF_NONE = '\0\0';
const KDF_SCRYPT = 'Sc';
const CHK_BLAKE2B = 'B2';

// minisign reads line 1 into a buffer of 1024 bytes and line 3 into one of 8192 (fgets: the line
// end included, one byte for the NUL) and refuses a longer line; `minisign -S` refuses to write a
// longer trusted comment. So a comment is at most this many bytes after its prefix, LF line end.
const UNTRUSTED_LINE_MAX_BYTES = 1024 - 2;
const TRUSTED_LINE_MAX_BYTES = 8192 - 2;
export const UNTRUSTED_COMMENT_MAX_BYTES = UNTRUSTED_LINE_MAX_BYTES - UNTRUSTED_PREFIX.length;
export const TRUSTED_COMMENT_MAX_BYTES = TRUSTED_LINE_MAX_BYTES - TRUSTED_PREFIX.length;

export interface PublicKey {
  /** 8 random bytes minisign calls the key number; ties signatures to their key. */
  keyId: Uint8Array;
  key: Uint8Array;
}

export interface SecretKey {
  keyId: Uint8Array;
  /** tweetnacl/libsodium layout: 32-byte seed followed by the 32-byte public key. */
  secretKey: Uint8Array;
}

export type SignatureAlgorithm = 'prehashed' | 'legacy';

export interface Signature {
  algorithm: SignatureAlgorithm;
  keyId: Uint8Array;
  signature: Uint8Array;
  untrustedComment: string;
  /** Missing only in signify's format (legacy signatures without the trusted comment). */
  trusted?: { comment: string; bytes: Uint8Array; globalSignature: Uint8Array };
}

/** Key id as minisign prints it: the 8 bytes as a little-endian number in upper-case hex. */
export function keyIdHex(keyId: Uint8Array): string {
  return Buffer.from(keyId).reverse().toString('hex').toUpperCase();
}

// Buffer.from(x, 'base64') skips characters it does not know; a signature must not be "mostly" read.
export function decodeBase64Strict(text: string, what: string): Buffer {
  const trimmed = text.trim();
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(trimmed) || trimmed.length % 4 !== 0) {
    throw new VerificationError(`${what} is not valid base64`, { hint: 'the file was damaged or is not a minisign file; download it again' });
  }
  const bytes = Buffer.from(trimmed, 'base64');
  if (bytes.toString('base64') !== trimmed) {
    throw new VerificationError(`${what} is not valid base64`, { hint: 'the file was damaged or is not a minisign file; download it again' });
  }
  return bytes;
}

// minisign trims CR and LF at the end of every line, so files edited on Windows still verify; the
// same here. The bytes are kept as latin1 so a trusted comment is signed over exactly its bytes.
function splitLines(data: Uint8Array | string): string[] {
  const text = typeof data === 'string' ? Buffer.from(data, 'utf8').toString('latin1') : Buffer.from(data).toString('latin1');
  const lines = text.split('\n').map((line) => line.replace(/\r+$/, ''));
  while (lines.length > 0 && lines[lines.length - 1] === '') lines.pop();
  return lines;
}

function utf8(latin1: string): string {
  return Buffer.from(latin1, 'latin1').toString('utf8');
}

/**
 * Reads a public key: a minisign or signify public key file (comment line + key line) or the bare
 * base64 key line as given with -P.
 */
export function parsePublicKey(data: Uint8Array | string, source: string): PublicKey {
  const lines = splitLines(data);
  const keyLine = lines[0]?.startsWith('untrusted comment:') ? lines[1] : lines[0];
  if (keyLine === undefined || keyLine.trim() === '') {
    throw new VerificationError(`public key ${source} is empty or has no key line`, { hint: 'give the key line (RW...) with -P, or a minisign public key file with -p' });
  }
  const bytes = decodeBase64Strict(keyLine, `public key ${source}`);
  if (bytes.length === SECRET_KEY_BYTES && bytes.subarray(0, 2).toString('latin1') === ALG_LEGACY) {
    throw new VerificationError(`public key ${source} is a minisign secret key, not a public key`, {
      hint: 'give the public key made with it (the .pub file written beside it); keep the secret key to yourself',
    });
  }
  if (bytes.length !== 42) {
    throw new VerificationError(`public key ${source} is ${bytes.length} bytes long, a minisign ed25519 public key is 42 (Ed + 8-byte key id + 32-byte key)`, {
      hint: 'copy the whole key line (56 characters starting with RW)',
    });
  }
  if (bytes.subarray(0, 2).toString('latin1') !== ALG_LEGACY) {
    throw new VerificationError(`public key ${source} is not an ed25519 minisign key (it starts with "${bytes.subarray(0, 2).toString('latin1')}", not "Ed")`);
  }
  return { keyId: new Uint8Array(bytes.subarray(2, 10)), key: new Uint8Array(bytes.subarray(10, 42)) };
}

export function formatPublicKeyLine(key: PublicKey): string {
  return Buffer.concat([Buffer.from(ALG_LEGACY, 'latin1'), key.keyId, key.key]).toString('base64');
}

export function formatPublicKey(key: PublicKey): string {
  return `${UNTRUSTED_PREFIX}minisign public key ${keyIdHex(key.keyId)}\n${formatPublicKeyLine(key)}\n`;
}

/** Reads a minisign signature file, or signify's (two lines, legacy algorithm, no trusted comment). */
export function parseSignature(data: Uint8Array | string, source: string): Signature {
  const lines = splitLines(data);
  const first = lines[0];
  if (first === undefined) throw new VerificationError(`signature ${source} is empty`, { hint: 'download the .minisig file again' });
  checkLineLength(data, 0, UNTRUSTED_LINE_MAX_BYTES, source, 'untrusted comment');
  if (!first.startsWith(UNTRUSTED_PREFIX)) {
    throw new VerificationError(`signature ${source}: line 1 should start with "${UNTRUSTED_PREFIX}"`, { hint: 'this is not a minisign signature file' });
  }
  if (lines[1] === undefined) throw new VerificationError(`signature ${source} is truncated: the signature line (line 2) is missing`);
  const bytes = decodeBase64Strict(lines[1], `signature ${source} line 2`);
  if (bytes.length !== 74) {
    throw new VerificationError(`signature ${source} line 2 is ${bytes.length} bytes, a minisign signature is 74 (algorithm + 8-byte key id + 64-byte signature)`);
  }
  const alg = bytes.subarray(0, 2).toString('latin1');
  if (alg !== ALG_LEGACY && alg !== ALG_PREHASHED) {
    throw new VerificationError(`signature ${source} uses an unknown algorithm "${alg}" (expected ED or Ed)`);
  }
  const signature: Signature = {
    algorithm: alg === ALG_PREHASHED ? 'prehashed' : 'legacy',
    keyId: new Uint8Array(bytes.subarray(2, 10)),
    signature: new Uint8Array(bytes.subarray(10, 74)),
    untrustedComment: utf8(first.slice(UNTRUSTED_PREFIX.length)),
  };
  if (lines.length === 2 && signature.algorithm === 'legacy') return signature;
  const commentLine = lines[2];
  if (commentLine === undefined) throw new VerificationError(`signature ${source} is truncated: the trusted comment (line 3) is missing`);
  if (!commentLine.startsWith(TRUSTED_PREFIX)) throw new VerificationError(`signature ${source}: line 3 should start with "${TRUSTED_PREFIX}"`);
  checkLineLength(data, 2, TRUSTED_LINE_MAX_BYTES, source, 'trusted comment');
  if (lines[3] === undefined) throw new VerificationError(`signature ${source} is truncated: the signature of the trusted comment (line 4) is missing`);
  const global = decodeBase64Strict(lines[3], `signature ${source} line 4`);
  if (global.length !== 64) throw new VerificationError(`signature ${source} line 4 is ${global.length} bytes, expected a 64-byte signature`);
  if (lines.length > 4) throw new VerificationError(`signature ${source} has ${lines.length} lines, a minisign signature has 4`);
  const commentBytes = Buffer.from(commentLine.slice(TRUSTED_PREFIX.length), 'latin1');
  signature.trusted = { comment: commentBytes.toString('utf8'), bytes: new Uint8Array(commentBytes), globalSignature: new Uint8Array(global) };
  return signature;
}

// Measured on the bytes as they are, a CR before the LF included, as minisign's buffer holds them.
function checkLineLength(data: Uint8Array | string, index: number, max: number, source: string, what: string): void {
  const raw = (typeof data === 'string' ? Buffer.from(data, 'utf8') : Buffer.from(data)).toString('latin1').split('\n')[index] ?? '';
  if (raw.length > max) {
    throw new VerificationError(`signature ${source}: the ${what} (line ${index + 1}) is ${raw.length} bytes long, minisign reads at most ${max}`, {
      hint: 'minisign -V refuses this signature too: sign the file again with a shorter comment',
    });
  }
}

export function formatSignature(signature: Signature): string {
  if (!signature.trusted) throw new Error('a signature written by machineadm always has a trusted comment');
  const line = Buffer.concat([Buffer.from(signature.algorithm === 'prehashed' ? ALG_PREHASHED : ALG_LEGACY, 'latin1'), signature.keyId, signature.signature]);
  return (
    `${UNTRUSTED_PREFIX}${oneLine(signature.untrustedComment)}\n${line.toString('base64')}\n` +
    `${TRUSTED_PREFIX}${Buffer.from(signature.trusted.bytes).toString('utf8')}\n${Buffer.from(signature.trusted.globalSignature).toString('base64')}\n`
  );
}

export function oneLine(text: string): string {
  return text.replace(/[\r\n]+/g, ' ');
}

// Secret key layout (minisign 0.11): sig alg (2) | kdf alg (2) | checksum alg (2) | kdf salt (32) |
// kdf opslimit (8, LE) | kdf memlimit (8, LE) | then, encrypted when kdf is scrypt: key id (8) |
// secret key (64) | checksum (32) = BLAKE2b-256(sig alg | key id | secret key).
const SECRET_KEY_BYTES = 158;
const ENCRYPTED_OFFSET = 54;

/** Thrown when an encrypted secret key is read without a password. */
export class PasswordRequiredError extends UsageError {}

export function parseSecretKey(data: Uint8Array | string, source: string, password?: string): SecretKey {
  const lines = splitLines(data);
  const keyLine = lines[0]?.startsWith('untrusted comment:') ? lines[1] : lines[0];
  if (keyLine === undefined) throw new UsageError(`secret key ${source} is empty`);
  const bytes = decodeBase64Strict(keyLine, `secret key ${source}`);
  if (bytes.length !== SECRET_KEY_BYTES || bytes.subarray(0, 2).toString('latin1') !== ALG_LEGACY) {
    throw new UsageError(`secret key ${source} is not a minisign ed25519 secret key (${bytes.length} bytes)`, { hint: 'create one with "machineadm keygen" or "minisign -G"' });
  }
  const kdf = bytes.subarray(2, 4).toString('latin1');
  if (bytes.subarray(4, 6).toString('latin1') !== CHK_BLAKE2B) throw new UsageError(`secret key ${source} uses an unknown checksum algorithm`);
  const secret = Buffer.from(bytes.subarray(ENCRYPTED_OFFSET));
  if (kdf === KDF_SCRYPT) {
    if (password === undefined) {
      throw new PasswordRequiredError(`secret key ${source} is encrypted with a password`, { hint: 'give the password with --password-file FILE' });
    }
    const opslimit = bytes.readBigUInt64LE(38);
    const memlimit = bytes.readBigUInt64LE(46);
    const stream = scryptStream(password, bytes.subarray(6, 38), opslimit, memlimit, secret.length);
    for (let i = 0; i < secret.length; i++) secret[i] = secret[i]! ^ stream[i]!;
  } else if (kdf !== KDF_NONE) {
    throw new UsageError(`secret key ${source} uses an unknown key derivation "${kdf}"`);
  }
  const keyId = secret.subarray(0, 8);
  const secretKey = secret.subarray(8, 72);
  const checksum = secret.subarray(72, 104);
  const expected = blake2b(Buffer.concat([Buffer.from(ALG_LEGACY, 'latin1'), keyId, secretKey]), 32);
  // minisign 0.11 leaves the checksum of an unencrypted key (-W) all zero; it is only a check
  // against a wrong password, so an unencrypted key with a zero checksum is accepted as minisign does.
  const unsetChecksum = kdf === KDF_NONE && checksum.every((b) => b === 0);
  if (!unsetChecksum && !timingSafeEqual(checksum, expected)) {
    throw new UsageError(kdf === KDF_SCRYPT ? `wrong password for secret key ${source}` : `secret key ${source} is damaged (its checksum does not match)`);
  }
  return { keyId: new Uint8Array(keyId), secretKey: new Uint8Array(secretKey) };
}

/** An unencrypted secret key file as `minisign -G -W` writes it. */
export function formatSecretKey(key: SecretKey): string {
  const checksum = blake2b(Buffer.concat([Buffer.from(ALG_LEGACY, 'latin1'), key.keyId, key.secretKey]), 32);
  const bytes = Buffer.concat([
    Buffer.from(ALG_LEGACY + KDF_NONE + CHK_BLAKE2B, 'latin1'),
    Buffer.alloc(32 + 8 + 8),
    key.keyId,
    key.secretKey,
    checksum,
  ]);
  return `${UNTRUSTED_PREFIX}minisign secret key ${keyIdHex(key.keyId)} (unencrypted)\n${bytes.toString('base64')}\n`;
}

// libsodium's crypto_pwhash_scryptsalsa208sha256 turns (opslimit, memlimit) into scrypt's N, r, p
// this way; minisign stores only the two limits.
function scryptStream(password: string, salt: Uint8Array, opslimitIn: bigint, memlimit: bigint, length: number): Buffer {
  const opslimit = opslimitIn < 32768n ? 32768n : opslimitIn;
  const r = 8n;
  let p: bigint;
  let nLog2 = 1n;
  if (opslimit < memlimit / 32n) {
    p = 1n;
    const maxN = opslimit / (r * 4n);
    for (nLog2 = 1n; nLog2 < 63n; nLog2++) if (1n << nLog2 > maxN / 2n) break;
  } else {
    const maxN = memlimit / (r * 128n);
    for (nLog2 = 1n; nLog2 < 63n; nLog2++) if (1n << nLog2 > maxN / 2n) break;
    let maxrp = opslimit / 4n / (1n << nLog2);
    if (maxrp > 0x3fffffffn) maxrp = 0x3fffffffn;
    p = maxrp / r;
  }
  const N = Number(1n << nLog2);
  if (N > 2 ** 22) throw new UsageError('the secret key asks for more than 4 GiB of memory to decrypt; refusing');
  // The work grows with N * p: a large opslimit with a small memlimit asks for a huge p (minisign's own keys have p = 1).
  if (N * Number(p) > 2 ** 22) throw new UsageError('the secret key asks for more work to decrypt than any minisign key needs; refusing', { hint: 'create the key again with "machineadm keygen" or "minisign -G"' });
  const memory = 128 * N * Number(r) * Number(p) + 1024 * 1024;
  return scryptSync(Buffer.from(password, 'utf8'), salt, length, { N, r: Number(r), p: Number(p), maxmem: memory * 2 });
}
