// BLAKE2b with a chosen output length (RFC 7693). node:crypto only offers the 64-byte variant, and
// minisign's secret key checksum is BLAKE2b-256, which is not a truncated BLAKE2b-512. Only used
// on a few dozen bytes, so BigInt arithmetic is fast enough; file hashing uses node:crypto.

const MASK = (1n << 64n) - 1n;

const IV = [
  0x6a09e667f3bcc908n, 0xbb67ae8584caa73bn, 0x3c6ef372fe94f82bn, 0xa54ff53a5f1d36f1n,
  0x510e527fade682d1n, 0x9b05688c2b3e6c1fn, 0x1f83d9abfb41bd6bn, 0x5be0cd19137e2179n,
];

const SIGMA = [
  [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15],
  [14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3],
  [11, 8, 12, 0, 5, 2, 15, 13, 10, 14, 3, 6, 7, 1, 9, 4],
  [7, 9, 3, 1, 13, 12, 11, 14, 2, 6, 5, 10, 4, 0, 15, 8],
  [9, 0, 5, 7, 2, 4, 10, 15, 14, 1, 11, 12, 6, 8, 3, 13],
  [2, 12, 6, 10, 0, 11, 8, 3, 4, 13, 7, 5, 15, 14, 1, 9],
  [12, 5, 1, 15, 14, 13, 4, 10, 0, 7, 6, 3, 9, 2, 8, 11],
  [13, 11, 7, 14, 12, 1, 3, 9, 5, 0, 15, 4, 8, 6, 2, 10],
  [6, 15, 14, 9, 11, 3, 0, 8, 12, 2, 13, 7, 1, 4, 10, 5],
  [10, 2, 8, 4, 7, 6, 1, 5, 15, 11, 9, 14, 3, 12, 13, 0],
];

function rotr(x: bigint, n: bigint): bigint {
  return ((x >> n) | (x << (64n - n))) & MASK;
}

function compress(h: bigint[], block: Uint8Array, counter: bigint, last: boolean): void {
  const m: bigint[] = [];
  const view = new DataView(block.buffer, block.byteOffset, 128);
  for (let i = 0; i < 16; i++) m.push(view.getBigUint64(i * 8, true));
  const v = [...h, ...IV];
  v[12] = v[12]! ^ (counter & MASK);
  v[13] = v[13]! ^ (counter >> 64n);
  if (last) v[14] = v[14]! ^ MASK;
  const g = (a: number, b: number, c: number, d: number, x: bigint, y: bigint): void => {
    v[a] = (v[a]! + v[b]! + x) & MASK;
    v[d] = rotr(v[d]! ^ v[a]!, 32n);
    v[c] = (v[c]! + v[d]!) & MASK;
    v[b] = rotr(v[b]! ^ v[c]!, 24n);
    v[a] = (v[a]! + v[b]! + y) & MASK;
    v[d] = rotr(v[d]! ^ v[a]!, 16n);
    v[c] = (v[c]! + v[d]!) & MASK;
    v[b] = rotr(v[b]! ^ v[c]!, 63n);
  };
  for (let round = 0; round < 12; round++) {
    const s = SIGMA[round % 10]!;
    const x = (i: number): bigint => m[s[i]!]!;
    g(0, 4, 8, 12, x(0), x(1));
    g(1, 5, 9, 13, x(2), x(3));
    g(2, 6, 10, 14, x(4), x(5));
    g(3, 7, 11, 15, x(6), x(7));
    g(0, 5, 10, 15, x(8), x(9));
    g(1, 6, 11, 12, x(10), x(11));
    g(2, 7, 8, 13, x(12), x(13));
    g(3, 4, 9, 14, x(14), x(15));
  }
  for (let i = 0; i < 8; i++) h[i] = h[i]! ^ v[i]! ^ v[i + 8]!;
}

/** Unkeyed BLAKE2b of `data` with an output of `outputLength` bytes (1..64). */
export function blake2b(data: Uint8Array, outputLength: number): Uint8Array {
  if (!Number.isInteger(outputLength) || outputLength < 1 || outputLength > 64) throw new RangeError('BLAKE2b output length must be 1..64');
  const h = [...IV];
  h[0] = h[0]! ^ 0x01010000n ^ BigInt(outputLength);
  let offset = 0;
  let counter = 0n;
  while (data.length - offset > 128) {
    counter += 128n;
    compress(h, data.subarray(offset, offset + 128), counter, false);
    offset += 128;
  }
  const last = new Uint8Array(128);
  last.set(data.subarray(offset));
  counter += BigInt(data.length - offset);
  compress(h, last, counter, true);
  const out = new Uint8Array(64);
  const view = new DataView(out.buffer);
  for (let i = 0; i < 8; i++) view.setBigUint64(i * 8, h[i]!, true);
  return out.slice(0, outputLength);
}
