// Signing and verifying with minisign-format keys. Prehashed signatures (ED, minisign's default)
// sign BLAKE2b-512 of the file, computed while streaming, so a large file is never held in memory.
// Legacy signatures (Ed, and signify's) sign the file itself; they need the whole file at once.
import { createHash, createPublicKey, randomBytes, verify as nodeVerify, type Hash } from 'node:crypto';
import nacl from 'tweetnacl';
import { VerificationError, UsageError } from '../errors.ts';
import { keyIdHex, oneLine, type PublicKey, type SecretKey, type Signature, type SignatureAlgorithm } from './minisign.ts';

/** Legacy signatures cover the raw file; above this size machineadm asks for a prehashed one. */
export const LEGACY_MAX_BYTES = 1024 * 1024 * 1024;

const ED25519_SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');

// tweetnacl is used for keys, signing and the 64-byte prehash messages. A legacy signature covers
// the whole file, where tweetnacl takes ~3.4 s per 100 MB and node:crypto's native Ed25519 ~0.1 s.
function ed25519Verify(message: Uint8Array, signature: Uint8Array, key: Uint8Array): boolean {
  if (message.length <= 64 * 1024) return nacl.sign.detached.verify(message, signature, key);
  try {
    const publicKey = createPublicKey({ key: Buffer.concat([ED25519_SPKI_PREFIX, key]), format: 'der', type: 'spki' });
    return nodeVerify(null, message, publicKey, signature);
  } catch {
    return false;
  }
}

export function generateKeyPair(): { publicKey: PublicKey; secretKey: SecretKey } {
  const pair = nacl.sign.keyPair();
  const keyId = new Uint8Array(randomBytes(8));
  return { publicKey: { keyId, key: pair.publicKey }, secretKey: { keyId, secretKey: pair.secretKey } };
}

export function publicKeyOf(secret: SecretKey): PublicKey {
  return { keyId: secret.keyId, key: secret.secretKey.slice(32, 64) };
}

/** Collects what a signature covers while the file streams past: its hash, or for legacy its bytes. */
export class MessageDigester {
  readonly algorithm: SignatureAlgorithm;
  private readonly hash: Hash | undefined;
  private readonly chunks: Buffer[] = [];
  private size = 0;

  constructor(algorithm: SignatureAlgorithm) {
    this.algorithm = algorithm;
    this.hash = algorithm === 'prehashed' ? createHash('blake2b512') : undefined;
  }

  get bytes(): number {
    return this.size;
  }

  update(chunk: Uint8Array): void {
    this.size += chunk.length;
    if (this.hash) {
      this.hash.update(chunk);
      return;
    }
    if (this.size > LEGACY_MAX_BYTES) {
      throw new VerificationError(`a legacy (not prehashed) signature covers the whole file, and this one is larger than ${LEGACY_MAX_BYTES / 1024 / 1024} MiB`, {
        hint: 'sign it prehashed (minisign without -l, or machineadm sign)',
      });
    }
    this.chunks.push(Buffer.from(chunk));
  }

  /** The message the ed25519 signature is over. */
  message(): Uint8Array {
    return this.hash ? this.hash.digest() : Buffer.concat(this.chunks);
  }
}

export interface VerifyOptions {
  /** Refuse legacy (non-prehashed) signatures, like minisign -H. */
  requirePrehashed?: boolean;
  /**
   * Accept a signature without a trusted comment (signify's format). Off by default: minisign -V
   * refuses one, and a minisign signature whose trusted comment was cut off must not pass.
   */
  signify?: boolean;
  /** Names the file in messages. */
  fileName?: string;
}

export interface VerifiedSignature {
  algorithm: SignatureAlgorithm;
  keyId: string;
  /** Absent for signify signatures, which have none. */
  trustedComment: string | undefined;
}

/** The checks that need no file bytes: key id and algorithm. Done before any download or read. */
export function checkSignatureFits(signature: Signature, publicKey: PublicKey, options: VerifyOptions = {}): void {
  if (!Buffer.from(signature.keyId).equals(Buffer.from(publicKey.keyId))) {
    throw new VerificationError(
      `the signature was made with key ${keyIdHex(signature.keyId)}, but the public key given is key ${keyIdHex(publicKey.keyId)}`,
      { hint: `verify with the public key whose id is ${keyIdHex(signature.keyId)}, or get a signature made with key ${keyIdHex(publicKey.keyId)}` },
    );
  }
  if (!signature.trusted && !options.signify) {
    throw new VerificationError('the signature has no trusted comment: it is in signify\'s format, or a minisign signature whose trusted comment was removed (minisign -V refuses it too)', {
      hint: 'for a file signed with signify, give --signify; otherwise get the original .minisig, which has a trusted comment',
    });
  }
  if (options.requirePrehashed && signature.algorithm !== 'prehashed') {
    throw new VerificationError('the signature is a legacy (not prehashed) signature, and prehashed signatures are required (--require-prehashed)', {
      hint: 'sign the file again without -l (minisign) or with machineadm sign',
    });
  }
}

/** Checks the signature over the collected message and the trusted comment. */
export function finishVerification(signature: Signature, publicKey: PublicKey, digester: MessageDigester, options: VerifyOptions = {}): VerifiedSignature {
  checkSignatureFits(signature, publicKey, options);
  const name = options.fileName ?? 'the file';
  if (!ed25519Verify(digester.message(), signature.signature, publicKey.key)) {
    throw new VerificationError(`signature verification failed for ${name}: its content is not what key ${keyIdHex(publicKey.keyId)} signed`, {
      hint: 'the file was changed or damaged, or the signature belongs to another file; download both again from a trusted source',
    });
  }
  if (signature.trusted) {
    const signed = Buffer.concat([signature.signature, signature.trusted.bytes]);
    if (!ed25519Verify(signed, signature.trusted.globalSignature, publicKey.key)) {
      throw new VerificationError(`the trusted comment of the signature for ${name} was changed (its own signature does not match)`, {
        hint: 'do not edit a signature file; get the original one again',
      });
    }
  }
  return { algorithm: signature.algorithm, keyId: keyIdHex(signature.keyId), trustedComment: signature.trusted?.comment };
}

/** Verifies a stream of the file's bytes against a signature. */
export async function verifyStream(source: AsyncIterable<Uint8Array> | Iterable<Uint8Array>, signature: Signature, publicKey: PublicKey, options: VerifyOptions = {}): Promise<VerifiedSignature> {
  checkSignatureFits(signature, publicKey, options);
  const digester = new MessageDigester(signature.algorithm);
  for await (const chunk of source) digester.update(chunk);
  return finishVerification(signature, publicKey, digester, options);
}

export interface SignOptions {
  trustedComment: string;
  untrustedComment?: string;
  legacy?: boolean;
}

/** Signs a stream of bytes; returns the signature (write it with formatSignature). */
export async function signStream(source: AsyncIterable<Uint8Array> | Iterable<Uint8Array>, secret: SecretKey, options: SignOptions): Promise<Signature> {
  const algorithm: SignatureAlgorithm = options.legacy ? 'legacy' : 'prehashed';
  const digester = new MessageDigester(algorithm);
  for await (const chunk of source) digester.update(chunk);
  const signature = nacl.sign.detached(digester.message(), secret.secretKey);
  const comment = Buffer.from(oneLine(options.trustedComment), 'utf8');
  const globalSignature = nacl.sign.detached(Buffer.concat([signature, comment]), secret.secretKey);
  if (!nacl.sign.detached.verify(Buffer.concat([signature, comment]), globalSignature, secret.secretKey.slice(32))) {
    throw new UsageError('the secret key is inconsistent (its public half does not match); it cannot sign');
  }
  return {
    algorithm,
    keyId: secret.keyId,
    signature,
    untrustedComment: options.untrustedComment ?? 'signature from machineadm secret key',
    trusted: { comment: comment.toString('utf8'), bytes: new Uint8Array(comment), globalSignature },
  };
}

/** minisign's default trusted comment, so signatures look the same whichever tool made them. */
export function defaultTrustedComment(fileName: string, now: Date, legacy = false): string {
  return `timestamp:${Math.floor(now.getTime() / 1000)}\tfile:${fileName}${legacy ? '' : '\thashed'}`;
}
