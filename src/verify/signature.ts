// Verifying minisign signatures (signing is in sign.ts). Prehashed signatures (ED, minisign's
// default) sign BLAKE2b-512 of the file, computed while streaming, so a large file is never held in
// memory. Legacy signatures (Ed, and signify's) sign the file itself; they need the whole file at once.
import { createHash, createPublicKey, verify as nodeVerify, type Hash } from 'node:crypto';
import { VerificationError } from '../errors.ts';
import { keyIdHex, type PublicKey, type Signature, type SignatureAlgorithm } from './minisign.ts';

/** Legacy signatures cover the raw file; above this size machineadm asks for a prehashed one. */
export const LEGACY_MAX_BYTES = 1024 * 1024 * 1024;

const ED25519_SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');

// node:crypto's native Ed25519 (OpenSSL), not tweetnacl: like minisign's libsodium it refuses a
// signature whose scalar is not reduced (S >= L), which tweetnacl accepts, so a signature altered
// that way does not pass here either; and it takes ~1 ms where tweetnacl's first calls in a fresh
// process take ~18 ms (a whole legacy-signed file: ~0.1 s against ~3.4 s per 100 MB).
function ed25519Verify(message: Uint8Array, signature: Uint8Array, key: Uint8Array): boolean {
  try {
    const publicKey = createPublicKey({ key: Buffer.concat([ED25519_SPKI_PREFIX, key]), format: 'der', type: 'spki' });
    return nodeVerify(null, message, publicKey, signature);
  } catch {
    return false;
  }
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
