// Properties of minisign keys and signatures read from outside: keys and signatures machineadm
// writes read back as written and verify; anything else (random bytes, single-character damage,
// a secret key asking for any scrypt parameters) gives a machineadm error in bounded time.
import fc from 'fast-check';
import nacl from 'tweetnacl';
import { describe, expect, it } from 'vitest';
import { formatPublicKey, formatPublicKeyLine, formatSecretKey, formatSignature, oneLine, parsePublicKey, parseSecretKey, parseSignature, type SecretKey } from '../../src/verify/minisign.ts';
import { signStream } from '../../src/verify/sign.ts';
import { verifyStream } from '../../src/verify/signature.ts';
import { MachineadmError, VerificationError } from '../../src/errors.ts';
import { holds, thrownBy } from '../support/property.ts';

const keyPair = fc.tuple(fc.uint8Array({ minLength: 32, maxLength: 32 }), fc.uint8Array({ minLength: 8, maxLength: 8 })).map(([seed, keyId]) => {
  const pair = nacl.sign.keyPair.fromSeed(seed);
  return { secret: { keyId, secretKey: pair.secretKey } satisfies SecretKey, publicKey: { keyId, key: pair.publicKey } };
});
const message = fc.uint8Array({ maxLength: 4096 });
const comment = fc.string({ unit: 'grapheme', maxLength: 80 });

async function signed(secret: SecretKey, bytes: Uint8Array, trustedComment: string, legacy: boolean): Promise<string> {
  return formatSignature(await signStream([bytes], secret, { trustedComment, legacy }));
}

describe('minisign keys and signatures', () => {
  it('read back a public key as written, from the file and from the bare key line', async () => {
    await holds('minisign: public key round trip', keyPair, ({ publicKey }) => {
      for (const text of [formatPublicKey(publicKey), formatPublicKeyLine(publicKey)]) expect(parsePublicKey(text, 'k')).toEqual(publicKey);
    }, 60);
  });

  it('read back an unencrypted secret key as written', async () => {
    await holds('minisign: secret key round trip', keyPair, ({ secret }) => {
      expect(parseSecretKey(formatSecretKey(secret), 'k')).toEqual({ keyId: secret.keyId, secretKey: secret.secretKey });
    }, 60);
  });

  it('verify what they signed, with the trusted comment as given on one line, and refuse any other bytes', async () => {
    await holds('minisign: sign, write, read, verify', fc.record({ pair: keyPair, bytes: message, trusted: comment, legacy: fc.boolean(), flip: fc.nat() }), async ({ pair, bytes, trusted, legacy, flip }) => {
      const signature = parseSignature(await signed(pair.secret, bytes, trusted, legacy), 'f.minisig');
      const verified = await verifyStream([bytes], signature, pair.publicKey);
      expect(verified.trustedComment).toBe(oneLine(trusted));
      const changed = Buffer.from(bytes.length ? bytes : [0]);
      if (bytes.length) changed[flip % changed.length]! ^= 1 + (flip % 255);
      const error = await thrownBy(() => verifyStream([changed], signature, pair.publicKey), [VerificationError]);
      expect(error?.message).toMatch(/signature verification failed/);
    }, 20);
  });

  it('refuse a signature file damaged in any one character with a VerificationError, or still verify it when only the untrusted comment changed', async () => {
    const fixed = await (async () => {
      const pair = nacl.sign.keyPair.fromSeed(new Uint8Array(32).fill(7));
      const keyId = new Uint8Array(8).fill(9);
      const bytes = Buffer.from('release bytes');
      return { bytes, publicKey: { keyId, key: pair.publicKey }, text: await signed({ keyId, secretKey: pair.secretKey }, bytes, 'timestamp:1\tfile:x', false) };
    })();
    const damage = fc.tuple(fc.nat({ max: fixed.text.length - 1 }), fc.string({ unit: 'binary', minLength: 0, maxLength: 2 }));
    await holds('minisign: one damaged character', damage, async ([at, replacement]) => {
      const text = fixed.text.slice(0, at) + replacement + fixed.text.slice(at + 1);
      const error = await thrownBy(async () => verifyStream([fixed.bytes], parseSignature(text, 'f.minisig'), fixed.publicKey), [VerificationError]);
      const firstLineEnd = fixed.text.indexOf('\n');
      // Only the untrusted comment (line 1 after its prefix) and trailing CR/LF are not covered by a signature.
      if (error === undefined) expect(at >= 'untrusted comment: '.length && at < firstLineEnd || at >= fixed.text.length - 1 || /^[\r\n]*$/.test(replacement + fixed.text[at])).toBe(true);
    }, 120);
  });

  it.each([
    ['public key', (input: string) => parsePublicKey(input, 'k')],
    ['signature', (input: string) => parseSignature(input, 's')],
    ['unencrypted secret key', (input: string) => parseSecretKey(input, 'k')],
  ])('read any text given as a %s into a value or a machineadm error', async (what, parse) => {
    const text = fc.oneof(
      fc.string({ unit: 'binary', maxLength: 400 }),
      fc.array(fc.constantFrom('untrusted comment: x\n', 'trusted comment: y\n', 'RW', 'RU', 'ED', 'Ed', 'A', '=', '==', '\r\n', '\n', ' '), { maxLength: 30 }).map((t) => t.join('')),
      fc.tuple(fc.constantFrom('Ed', 'ED', 'EdScB2', 'Ed\0\0B2', 'xx'), fc.uint8Array({ maxLength: 200 })).map(([head, tail]) => `untrusted comment: c\n${Buffer.concat([Buffer.from(head, 'latin1'), tail]).toString('base64')}\ntrusted comment: t\n${Buffer.from(tail.subarray(0, 64)).toString('base64')}\n`),
    );
    await holds(`minisign: any text as a ${what}`, text, (input) => thrownBy(() => parse(input), [MachineadmError]), 300);
  });

  it('decrypt or refuse an encrypted secret key whatever scrypt parameters it asks for, in bounded time', async () => {
    // Small limits decrypt quickly; large ones are refused before any work.
    const limit = fc.oneof(fc.bigInt({ min: 0n, max: 2n ** 20n }), fc.bigInt({ min: 2n ** 40n, max: 2n ** 64n - 1n }));
    const key = fc.record({ salt: fc.uint8Array({ minLength: 32, maxLength: 32 }), opslimit: limit, memlimit: limit, rest: fc.uint8Array({ minLength: 104, maxLength: 104 }), password: fc.string({ maxLength: 20 }) });
    await holds('minisign: encrypted secret key parameters', key, ({ salt, opslimit, memlimit, rest, password }) => {
      const bytes = Buffer.alloc(158);
      bytes.write('EdScB2', 0, 'latin1');
      Buffer.from(salt).copy(bytes, 6);
      bytes.writeBigUInt64LE(opslimit, 38);
      bytes.writeBigUInt64LE(memlimit, 46);
      Buffer.from(rest).copy(bytes, 54);
      return thrownBy(() => parseSecretKey(`untrusted comment: k\n${bytes.toString('base64')}\n`, 'k', password), [MachineadmError]);
    }, 40);
  });
});
