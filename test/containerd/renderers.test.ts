// The containerd renderers' building blocks: the TOML writer, version choice, extraConfig merge and
// the proxy drop-in.
import { describe, expect, it } from 'vitest';
import { parse } from '@iarna/toml';
import { stringifyToml } from '../../src/config/containerd-toml/toml.ts';
import { chooseTarget, describeTarget, kernelBefore411 } from '../../src/containerd/target.ts';
import { ExtraConfigError, mergeExtraConfig, parseExtraConfig } from '../../src/config/containerd-toml/extra.ts';
import { renderProxyDropIn } from '../../src/containerd/proxy.ts';
import { renderContainerdConfig } from '../../src/containerd/config.ts';

describe('TOML writer', () => {
  it('writes what @iarna/toml reads back as the same value', () => {
    const table = {
      version: 2,
      'quoted key': 'a "quote" \\ back\nslash\t\u0001',
      list: ['a', 'b'],
      nums: [1, -2],
      flag: false,
      plugins: { 'io.containerd.grpc.v1.cri': { containerd: { runtimes: { runc: { options: { SystemdCgroup: true } } } } }, empty: {} },
      items: [{ name: 'x' }, { name: 'y' }],
    };
    expect(JSON.parse(JSON.stringify(parse(stringifyToml(table, ['header'])))) ).toEqual(table);
  });
});

describe('version choice', () => {
  it.each([
    [{ containerdVersion: '1.6.20' }, { version: '2.1' }, 2, 'installed'],
    [{ containerdVersion: '2.1.9' }, undefined, 3, 'installed'],
    [{ containerdVersion: '2.3.0' }, undefined, 3, 'installed'],
    [{}, { version: '2.0' }, 3, 'configured'],
    [{}, { version: '1.7.24' }, 2, 'configured'],
    [{}, undefined, 2, 'default'],
  ] as const)('facts %j and spec %j -> config version %i (%s)', (facts, spec, configVersion, source) => {
    const target = chooseTarget(facts, spec);
    expect(target).toMatchObject({ configVersion, source });
    expect(describeTarget(target)).toContain(`config version ${configVersion}`);
  });

  it.each([
    ['4.9.337', true],
    ['4.11.0', false],
    ['3.10.0-1160.el7.x86_64', true],
    ['6.18.44-fc', false],
  ])('kernel %s is older than 4.11: %s', (release, old) => {
    expect(kernelBefore411(release)).toBe(old);
  });
});

describe('extraConfig merge', () => {
  const base = { version: 2, plugins: { cri: { sandbox_image: 'p', containerd: { runtimes: { runc: { runtime_type: 'io.containerd.runc.v2' } } } } } };

  it('deep-merges tables and replaces values of the same type', () => {
    const extra = parseExtraConfig('root = "/r"\n[plugins.cri]\nsandbox_image = "q"\n[plugins.cri.containerd.runtimes.runc.options]\nBinaryName = "/x"\n');
    expect(mergeExtraConfig(base, extra, '')).toEqual({
      version: 2,
      root: '/r',
      plugins: { cri: { sandbox_image: 'q', containerd: { runtimes: { runc: { runtime_type: 'io.containerd.runc.v2', options: { BinaryName: '/x' } } } } } },
    });
  });

  it('lists every conflict with its TOML line', () => {
    const text = '[plugins.cri]\nsandbox_image = 1\n[plugins.cri.containerd]\nruntimes = ["x"]\n';
    try {
      mergeExtraConfig(base, parseExtraConfig(text), text);
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(ExtraConfigError);
      expect((error as ExtraConfigError).problems.map((p) => [p.line, p.message])).toEqual([
        [2, 'plugins.cri.sandbox_image is a number here, but machineadm generates it as a string'],
        [4, 'plugins.cri.containerd.runtimes is an array here, but machineadm generates it as a table'],
      ]);
    }
  });

  it('reports a TOML syntax error with its line', () => {
    expect(() => parseExtraConfig('a = 1\n[b\n')).toThrow(/TOML line 2: is not valid TOML/);
  });
});

describe('proxy drop-in', () => {
  it('escapes % for systemd and quotes for Environment=', () => {
    const text = renderProxyDropIn({ httpsProxy: 'http://u:p%40"x@proxy:3128', noProxy: ['.svc', '10.0.0.0/8'] })!;
    expect(text).toContain('Environment="HTTPS_PROXY=http://u:p%%40\\"x@proxy:3128"');
    expect(text).toContain('Environment="NO_PROXY=.svc,10.0.0.0/8"');
    expect(renderProxyDropIn(undefined)).toBeUndefined();
  });
});

describe('extraConfig written for the other config version', () => {
  it.each([
    [{ containerdVersion: '1.6.20' }, '[plugins."io.containerd.cri.v1.images"]\nuse_local_image_pull = true\n', 'TOML line 1: sets plugins."io.containerd.cri.v1.images", a config version 3 (containerd 2.x) section'],
    [{ containerdVersion: '2.1.9' }, '[plugins."io.containerd.grpc.v1.cri"]\nsandbox_image = "x"\n', 'TOML line 1: sets plugins."io.containerd.grpc.v1.cri".sandbox_image, a config version 2 (containerd 1.x) key'],
  ])('is refused for containerd %j (containerd would ignore it)', (facts, extraConfig, message) => {
    expect(() => renderContainerdConfig({ extraConfig }, chooseTarget(facts, undefined))).toThrow(message);
  });

  it('allows the CRI server keys that stay in io.containerd.grpc.v1.cri in version 3', () => {
    expect(renderContainerdConfig({ extraConfig: '[plugins."io.containerd.grpc.v1.cri"]\nstream_server_port = "10010"\n' }, chooseTarget({ containerdVersion: '2.1.9' }, undefined))).toContain('stream_server_port = "10010"');
  });
});
