import { describe, expect, it } from 'vitest';
import { mergeConfigs } from '../../src/config/merge.ts';

describe('merging sources', () => {
  it.each([
    ['a later scalar wins', { a: 1 }, { a: 2 }, { a: 2 }],
    ['maps merge key by key', { m: { x: 1, y: 2 } }, { m: { y: 3, z: 4 } }, { m: { x: 1, y: 3, z: 4 } }],
    ['maps merge at every depth', { a: { b: { c: 1, d: 1 } } }, { a: { b: { d: 2 } } }, { a: { b: { c: 1, d: 2 } } }],
    ['lists replace whole', { l: [1, 2, 3] }, { l: [4] }, { l: [4] }],
    ['an empty list replaces too', { l: [1] }, { l: [] }, { l: [] }],
    ['an explicit null removes', { a: 1, b: 2 }, { a: null }, { b: 2 }],
    ['a null deep inside removes there', { m: { x: 1, y: 2 } }, { m: { x: null } }, { m: { y: 2 } }],
    ['a null for something never set is dropped', undefined, { m: { x: null, y: 1 } }, { m: { y: 1 } }],
    ['a field left out keeps the earlier value', { a: 1, b: 2 }, { b: 3 }, { a: 1, b: 3 }],
    ['a map replaces a scalar', { a: 'x' }, { a: { b: 1 } }, { a: { b: 1 } }],
    ['a scalar replaces a map', { a: { b: 1 } }, { a: 'x' }, { a: 'x' }],
    ['a secret reference replaces another whole', { t: { valueFrom: { env: 'A' } } }, { t: { valueFrom: { file: '/f' } } }, { t: { valueFrom: { file: '/f' } } }],
    ['a literal secret replaces a reference', { t: { valueFrom: { env: 'A' } } }, { t: 'lit' }, { t: 'lit' }],
    ['a machine value reference replaces another whole', { n: { fromMachine: 'localHostname' } }, { n: { fromInstanceData: 'ds.meta_data.label' } }, { n: { fromInstanceData: 'ds.meta_data.label' } }],
    [
      'a provider ID template replaces another whole',
      { p: { template: 'oci://${ID}', values: { ID: { fromInstanceData: 'ds["id"]' } } } },
      { p: { template: 'oci://${OCID}', values: { OCID: { fromInstanceData: 'ds.meta_data.ocid' } } } },
      { p: { template: 'oci://${OCID}', values: { OCID: { fromInstanceData: 'ds.meta_data.ocid' } } } },
    ],
  ])('%s', (_name, base, override, expected) => {
    expect(mergeConfigs(base, override)).toEqual(expected);
  });

  it('does not change its inputs', () => {
    const base = { m: { x: 1 } };
    mergeConfigs(base, { m: { x: 2 } });
    expect(base).toEqual({ m: { x: 1 } });
  });

  it('keeps a "__proto__" key a plain field instead of changing the prototype', () => {
    const merged = mergeConfigs({}, JSON.parse('{"__proto__": {"polluted": true}}')) as Record<string, unknown>;
    expect(Object.getPrototypeOf(merged)).toBe(Object.prototype);
    expect(Object.keys(merged)).toEqual(['__proto__']);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});
