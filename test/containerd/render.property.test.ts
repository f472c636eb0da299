// Properties of the containerd renderers and extraConfig: what machineadm writes parses back with
// @iarna/toml as the same values (whatever the keys and strings hold), extraConfig text of any
// shape gives a table or an ExtraConfigError, and the proxy drop-in's quoting survives systemd's
// unquoting.
import fc from 'fast-check';
import TOML from '@iarna/toml';
import { describe, expect, it } from 'vitest';
import { ExtraConfigError, containerdConfigTable, parseExtraConfig, renderContainerdConfig, renderHostsToml, stringifyToml, type TomlTable, type TomlValue } from '../../src/containerd/index.ts';
import { renderProxyDropIn } from '../../src/containerd/proxy.ts';
import { chooseTarget } from '../../src/containerd/target.ts';
import type { ContainerdSpec } from '../../src/config/schema/index.ts';
import { holds, thrownBy } from '../support/property.ts';

/**
 * Parses as containerd would read the file: the UTF-8 bytes on disk. @iarna/toml reads integers
 * past 2^53 as BigInt (and wraps those past 2^63, which containerd refuses): a number only when exact.
 */
function parseWritten(text: string): unknown {
  return JSON.parse(JSON.stringify(TOML.parse(Buffer.from(text, 'utf8').toString('utf8')), (_k, v: unknown) => (typeof v === 'bigint' ? (BigInt(Number(v)) === v ? Number(v) : `the integer ${v}`) : v)));
}

function plain(value: unknown): unknown {
  return JSON.parse(JSON.stringify(value, (_k, v: unknown) => (typeof v === 'number' && !Number.isFinite(v) ? String(v) : typeof v === 'bigint' ? (BigInt(Number(v)) === v ? Number(v) : `the integer ${v}`) : v)));
}

/** JSON with sorted keys: toEqual would compare a key named "constructor" as the object's type. */
function canonical(value: unknown): string {
  const sort = (v: unknown): unknown => (v !== null && typeof v === 'object' && !Array.isArray(v) ? Object.fromEntries(Object.keys(v).sort().map((k) => [k, sort((v as Record<string, unknown>)[k])])) : Array.isArray(v) ? v.map(sort) : v);
  return JSON.stringify(sort(value));
}

// Well-formed Unicode: a file on disk is UTF-8 (lone surrogates cannot be written; see the report).
const anyText = fc.string({ unit: 'grapheme', maxLength: 30 });
// Object member names are refused as tables (see the examples below); @iarna/toml, the reference reader here, cannot read them back.
const key = fc.oneof(fc.stringMatching(/^[A-Za-z0-9_-]{1,12}$/), anyText).filter((k) => k === '__proto__' || !(k in Object.prototype));
const scalar = fc.oneof(
  anyText,
  fc.boolean(),
  fc.integer(),
  fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }),
  fc.double({ noNaN: true, noDefaultInfinity: true }).filter((d) => !Object.is(d, -0)),
);
// TOML 0.5 (what @iarna/toml reads) wants the items of one array to share a type.
const homogeneousArray = fc.oneof(fc.array(anyText, { maxLength: 4 }), fc.array(fc.integer(), { maxLength: 4 }), fc.array(fc.boolean(), { maxLength: 4 }));
const table: fc.Arbitrary<TomlTable> = fc.letrec<{ table: TomlTable; value: TomlValue }>((tie) => ({
  table: fc.dictionary(key, tie('value'), { maxKeys: 5, noNullPrototype: true }),
  value: fc.oneof({ depthSize: 'small', withCrossShrink: true }, scalar, homogeneousArray, tie('table'), fc.array(tie('table'), { minLength: 1, maxLength: 2 })),
})).table;

const label = fc.stringMatching(/^[a-z0-9]([a-z0-9-]{0,8}[a-z0-9])?$/);
const registryName = fc.oneof(fc.constant('_default'), fc.constant('docker.io'), fc.tuple(fc.array(label, { minLength: 1, maxLength: 3 }), fc.option(fc.integer({ min: 1, max: 65535 }), { nil: undefined })).map(([p, port]) => p.join('.') + (port ? `:${port}` : '')));
// The schema lets a mirror URL hold any non-space character after the host.
const mirrorUrl = fc.tuple(fc.constantFrom('http', 'https'), fc.string({ unit: fc.constantFrom(...'abc.-:[]@%"\\\'#?=&'.split('')), minLength: 1, maxLength: 12 }).filter((h) => !h.includes('/')), fc.string({ maxLength: 20 }).map((p) => p.replace(/\s/g, ''))).map(([s, h, p]) => `${s}://${h}/${p}`);
const machinePath = fc.array(fc.string({ unit: 'grapheme', minLength: 1, maxLength: 8 }).filter((s) => !s.includes('/') && s !== '..'), { minLength: 1, maxLength: 3 }).map((s) => '/' + s.join('/'));
const registry = fc.record(
  {
    mirrors: fc.uniqueArray(
      fc.record({ url: mirrorUrl, capabilities: fc.uniqueArray(fc.constantFrom('pull' as const, 'resolve' as const, 'push' as const), { minLength: 1 }), caFile: machinePath, skipVerify: fc.boolean(), overridePath: fc.boolean() }, { requiredKeys: ['url'] }),
      { maxLength: 3, selector: (m) => m.url },
    ),
    caFile: machinePath,
    skipVerify: fc.boolean(),
  },
  { requiredKeys: [] },
);

describe('containerd files machineadm writes', () => {
  it('parse back as the same table, whatever the keys and strings hold', async () => {
    await holds('toml: stringify round trip', table, (t) => {
      expect(canonical(parseWritten(stringifyToml(t, ['a comment'])))).toBe(canonical(plain(t)));
    }, 300);
  });

  it('render hosts.toml that parses back as the registry and mirrors of the spec', async () => {
    await holds('hosts.toml: render round trip', fc.tuple(registryName, registry, fc.option(machinePath, { nil: undefined })), ([name, entry, caBundle]) => {
      const parsed = parseWritten(renderHostsToml(name, entry, caBundle)) as Record<string, any>;
      if (name === '_default') expect(parsed.server).toBeUndefined();
      else expect(parsed.server).toBe(name === 'docker.io' ? 'https://registry-1.docker.io' : `https://${name}`);
      expect(parsed.skip_verify).toBe(entry.skipVerify ? true : undefined);
      expect(Object.keys(parsed.host ?? {})).toEqual((entry.mirrors ?? []).map((m) => m.url));
      for (const mirror of entry.mirrors ?? []) {
        const host = parsed.host[mirror.url];
        expect(host.capabilities).toEqual(mirror.capabilities ?? ['pull', 'resolve']);
        expect(host.skip_verify).toBe(mirror.skipVerify ? true : undefined);
        expect(host.override_path).toBe(mirror.overridePath ? true : undefined);
        const cas = [mirror.caFile, mirror.url.startsWith('https://') ? caBundle : undefined].filter(Boolean);
        expect(host.ca).toEqual(cas.length === 0 ? undefined : cas.length === 1 ? cas[0] : cas);
      }
    }, 300);
  });

  it('render config.toml that parses back as the generated table with every extraConfig value merged over it, or refuse it with an ExtraConfigError', async () => {
    // extraConfig over a plugin machineadm does not generate, and over those it does (where a key can clash).
    const plugin = fc.constantFrom('io.containerd.gc.v1.scheduler', 'io.containerd.grpc.v1.cri', 'io.containerd.cri.v1.images', 'io.containerd.cri.v1.runtime');
    const extra = fc.tuple(plugin, fc.oneof(table, fc.constant({ sandbox_image: 'x' }), fc.constant({ containerd: { default_runtime_name: 'crun' } }), fc.constant({ registry: { config_path: 7 } })));
    const spec = fc.record({ sandboxImage: fc.string({ unit: 'grapheme', minLength: 1, maxLength: 40 }), cgroupDriver: fc.constantFrom('systemd' as const, 'cgroupfs' as const), extraConfig: extra.map(([id, t]) => stringifyToml({ plugins: { [id]: t } })) }, { requiredKeys: [] });
    await holds('config.toml: render round trip', fc.tuple(spec, fc.constantFrom('1.6.20', '1.7', '2.0', '2.1.9')), async ([s, version]) => {
      const target = chooseTarget({ containerdVersion: version, kernelRelease: '6.1.0' }, undefined);
      let text = '';
      if (await thrownBy(() => (text = renderContainerdConfig(s as ContainerdSpec, target)), [ExtraConfigError])) return;
      const parsed = parseWritten(text) as Record<string, any>;
      expect(canonical(parsed)).toBe(canonical(plain(containerdConfigTable(s as ContainerdSpec, target))));
      // Every value extraConfig sets is in the file as given (tables merge key by key).
      const leaves = (value: unknown, path: string[]): [string[], unknown][] => (value !== null && typeof value === 'object' && !Array.isArray(value) ? Object.entries(value).flatMap(([k, v]) => leaves(v, [...path, k])) : [[path, value]]);
      for (const [path, value] of leaves(s.extraConfig ? parseWritten(s.extraConfig) : {}, [])) expect(canonical(path.reduce<any>((at, k) => at?.[k], parsed)), path.join('.')).toBe(canonical(value));
      if (!s.extraConfig?.includes('sandbox')) {
        const images = parsed.plugins[target.configVersion === 2 ? 'io.containerd.grpc.v1.cri' : 'io.containerd.cri.v1.images'];
        expect(target.configVersion === 2 ? images.sandbox_image : images.pinned_images?.sandbox).toBe(s.sandboxImage);
      }
    }, 200);
  });

  it.each([
    ['__proto__', '[plugins."io.containerd.grpc.v1.cri"]\n__proto__ = { polluted = "yes" }\n'],
    ['toString', '[plugins."io.containerd.grpc.v1.cri"]\ntoString = 0\n'],
  ])('write an extraConfig key named %s as a key, changing no other object', (_name, extraConfig) => {
    const parsed = parseWritten(renderContainerdConfig({ extraConfig }, chooseTarget({ containerdVersion: '1.7' }, undefined))) as Record<string, any>;
    expect(parsed.plugins['io.containerd.grpc.v1.cri']).toMatchObject((plain(parseExtraConfig(extraConfig)) as Record<string, any>).plugins['io.containerd.grpc.v1.cri']);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it.each([
    ['a table header', '[plugins."io.containerd.grpc.v1.cri".constructor]\npolluted = "yes"\n', 1],
    ['a dotted key', '[plugins."io.containerd.grpc.v1.cri"]\ncontainerd.toString.polluted = "yes"\n', 2],
    ['an array of tables', '[[plugins.valueOf]]\npolluted = "yes"\n', 1],
  ])('refuse an Object member name as a table in %s, before the TOML reader writes through it', (_form, extraConfig, line) => {
    let error: unknown;
    try {
      renderContainerdConfig({ extraConfig }, chooseTarget({ containerdVersion: '1.7' }, undefined));
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ExtraConfigError);
    expect((error as ExtraConfigError).problems[0]).toMatchObject({ line, message: expect.stringMatching(/^the key "(constructor|toString|valueOf)" names a table/) });
    for (const target of [Object, Function.prototype, Object.prototype, Object.prototype.toString, Object.prototype.valueOf]) expect((target as unknown as Record<string, unknown>).polluted).toBeUndefined();
  });

  it.each([
    ['a float past 2^63', 'x = 1e20\n', 1e20],
    ['an integer past 2^53', 'x = 9007199254740993\n', 'the integer 9007199254740993'],
  ])('write extraConfig holding %s as the same number', (_name, value, expected) => {
    const parsed = parseWritten(renderContainerdConfig({ extraConfig: `[plugins."io.containerd.gc.v1.scheduler"]\n${value}` }, chooseTarget({ containerdVersion: '1.7' }, undefined))) as Record<string, any>;
    expect(parsed.plugins['io.containerd.gc.v1.scheduler'].x).toBe(expected);
  });

  const tomlToken = fc.constantFrom(...'[]{}="\'.,#\n \t\\'.split(''), '[[', ']]', 'plugins', '"io.containerd.grpc.v1.cri"', 'registry', 'mirrors', 'configs', 'tls', 'version', 'containerd', 'runtimes', 'runc', 'options', ' = ', '1', '1e20', '9223372036854775808', 'true', '"""', "'''", '1979-05-27T07:32:00Z', 'inf', 'nan', 'x', '\u0000', 'é', 'constructor', 'toString', '__proto__');
  it.each([
    ['any text', fc.string({ unit: 'binary', maxLength: 300 })],
    ['text made of TOML punctuation and containerd words', fc.array(tomlToken, { maxLength: 80 }).map((t) => t.join(''))],
  ])('take extraConfig of %s as a table or an ExtraConfigError, never a crash', async (name, text) => {
    await holds(`extraConfig: ${name}`, text, async (extra) => {
      await thrownBy(() => parseExtraConfig(extra), [ExtraConfigError]);
      for (const version of ['1.7', '2.1']) await thrownBy(() => renderContainerdConfig({ extraConfig: extra }, chooseTarget({ containerdVersion: version }, undefined)), [ExtraConfigError]);
    }, 300);
  });

  it('write the proxy drop-in so that systemd unquotes each variable back to the URL given', async () => {
    // systemd's Environment= with one double-quoted word: \\ and \" unescape, %% is a literal %.
    const unquote = (line: string) => /^Environment="(.*)"$/.exec(line)![1]!.replace(/\\(.)|%%/g, (_m, c: string | undefined) => c ?? '%');
    const url = fc.tuple(fc.constantFrom('http', 'https'), fc.string({ unit: fc.constantFrom(...'ab:@%"\\\'$`;.'.split('')), minLength: 1, maxLength: 20 }).filter((h) => !h.includes('/'))).map(([s, h]) => `${s}://${h}`);
    await holds('proxy drop-in: systemd unquoting', fc.record({ httpProxy: url, httpsProxy: url, noProxy: fc.array(fc.string({ unit: fc.constantFrom(...'a.%"\\$'.split('')), minLength: 1, maxLength: 8 }), { minLength: 1, maxLength: 3 }) }), (proxy) => {
      const lines = renderProxyDropIn(proxy)!.split('\n').filter((l) => l.startsWith('Environment='));
      expect(lines.map(unquote)).toEqual([`HTTP_PROXY=${proxy.httpProxy}`, `HTTPS_PROXY=${proxy.httpsProxy}`, `NO_PROXY=${proxy.noProxy.join(',')}`]);
    }, 200);
  });
});
