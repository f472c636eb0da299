import fc from 'fast-check';
import { isIP } from 'node:net';
import { describe, expect, it } from 'vitest';
import { ipFamily } from '../../src/config/schema/ip.ts';

// ipFamily stands in for node:net's isIP (which costs a validation its load time): the two must
// agree on every string, addresses and near misses alike.
const CASES = [
  '10.0.0.10', '0.0.0.0', '255.255.255.255', '256.1.1.1', '01.2.3.4', '1.2.3', '1.2.3.4.5', '1.2.3.4 ', ' 1.2.3.4', '1..2.3',
  '::', '::1', '1::', '1:2:3:4:5:6:7:8', '1:2:3:4:5:6:7::', '::2:3:4:5:6:7:8', '1:2:3:4:5:6:7:8:9', '1:2:3:4:5:6:7', '1::2::3',
  ':1', '1:', ':::', 'fe80::1%eth0', 'fe80::1%', 'fe80::1%eth 0', 'fe80::1%a%b', '::ffff:10.0.0.1', '::10.0.0.1', '1:2:3:4:5:6:1.2.3.4',
  '1:2:3:4:5:6:7:1.2.3.4', '1.2.3.4::', '1:2:3:4:5::1.2.3.4', 'abcd:ef01:2345:6789:ABCD:EF01:2345:6789', '12345::', 'g::1', '[::1]', '',
  'localhost', '2001:db8::/32', '::1.2.3.04', 'fe80::1%25eth0', '1:2:3:4:5:6::7',
];

describe('ipFamily', () => {
  it('agrees with node:net isIP on addresses and near misses', () => {
    for (const value of CASES) expect([value, ipFamily(value)]).toEqual([value, isIP(value)]);
  });

  it('agrees with node:net isIP on generated strings of address characters', () => {
    const char = fc.constantFrom(...'0123456789abcdefABCDEF:.%g'.split(''));
    const v4 = fc.tuple(fc.nat(300), fc.nat(300), fc.nat(300), fc.nat(300)).map((p) => p.join('.'));
    const group = fc.stringMatching(/^[0-9a-f]{0,5}$/);
    const v6 = fc.tuple(fc.array(group, { maxLength: 9 }), fc.boolean(), fc.option(v4, { nil: undefined })).map(([groups, doubled, tail]) => {
      const joined = doubled ? `${groups.slice(0, 3).join(':')}::${groups.slice(3).join(':')}` : groups.join(':');
      return tail === undefined ? joined : `${joined}:${tail}`;
    });
    fc.assert(fc.property(fc.oneof(fc.string({ unit: char, maxLength: 40 }), v4, v6), (value) => ipFamily(value) === isIP(value)), { numRuns: 20_000 });
  });
});
