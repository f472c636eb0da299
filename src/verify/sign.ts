// Keys and signing with minisign-format keys (tweetnacl). Apart from verification (signature.ts),
// so that verifying a file never loads tweetnacl.
import { randomBytes } from 'node:crypto';
import nacl from 'tweetnacl';
import { UsageError } from '../errors.ts';
import { oneLine, TRUSTED_COMMENT_MAX_BYTES, UNTRUSTED_COMMENT_MAX_BYTES, type PublicKey, type SecretKey, type Signature, type SignatureAlgorithm } from './minisign.ts';
import { MessageDigester } from './signature.ts';

export function generateKeyPair(): { publicKey: PublicKey; secretKey: SecretKey } {
  const pair = nacl.sign.keyPair();
  const keyId = new Uint8Array(randomBytes(8));
  return { publicKey: { keyId, key: pair.publicKey }, secretKey: { keyId, secretKey: pair.secretKey } };
}

export interface SignOptions {
  trustedComment: string;
  untrustedComment?: string;
  legacy?: boolean;
}

/**
 * Refuses a comment minisign -V could not read back (it refuses longer comment lines), before
 * anything is read or written; `names` says how the caller's user gave each comment.
 */
export function checkCommentLengths(options: SignOptions, names = { trusted: 'the trusted comment', untrusted: 'the untrusted comment' }): void {
  const limits: [string | undefined, number, string][] = [
    [options.trustedComment, TRUSTED_COMMENT_MAX_BYTES, names.trusted],
    [options.untrustedComment, UNTRUSTED_COMMENT_MAX_BYTES, names.untrusted],
  ];
  for (const [comment, max, name] of limits) {
    const bytes = comment === undefined ? 0 : Buffer.byteLength(oneLine(comment), 'utf8');
    if (bytes > max) throw new UsageError(`${name} is ${bytes} bytes long; minisign verifies at most ${max}`, { hint: 'give a shorter comment' });
  }
}

/** Signs a stream of bytes; returns the signature (write it with formatSignature). */
export async function signStream(source: AsyncIterable<Uint8Array> | Iterable<Uint8Array>, secret: SecretKey, options: SignOptions): Promise<Signature> {
  checkCommentLengths(options);
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
