// Golden tests of the containerd renderers: bytes compared with test/golden/containerd/<case>/expected
// (UPDATE_GOLDEN=1 rewrites them), and the meaning of the key fields asserted from the parsed TOML,
// so a golden update cannot hide a wrong value.
import { describe, expect, it } from 'vitest';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { parse } from '@iarna/toml';
import { CERTS_DIR, CONTAINERD_CONFIG } from '../../src/containerd/paths.ts';
import { DEFAULT_CGROUP_DRIVER } from '../../src/containerd/config.ts';
import { renderContainerdConfig } from '../../src/containerd/config.ts';
import { extraConfigTypeProblems } from '../../src/config/containerd-toml/extra-types.ts';
import { chooseTarget, type TargetFacts } from '../../src/containerd/target.ts';
import type { ContainerdSpec } from '../../src/config/schema/index.ts';
import type { TomlTable } from '../../src/config/containerd-toml/toml.ts';
import { expectedFiles, goldenCases, renderCase } from './cases.ts';

const update = process.env.UPDATE_GOLDEN === '1';
const cases = goldenCases();

type Tree = Record<string, any>;

describe('containerd golden cases', () => {
  it('has cases for both config versions', () => {
    const versions = new Set(cases.map((c) => renderCase(c).files.target.configVersion));
    expect([...versions].sort()).toEqual([2, 3]);
  });

  it.each(cases.map((c) => [c.name, c] as const))('%s renders exactly the expected files', (_name, c) => {
    const { byPath } = renderCase(c);
    if (update) {
      rmSync(join(c.dir, 'expected'), { recursive: true, force: true });
      for (const [path, content] of byPath) {
        const file = join(c.dir, 'expected', path);
        mkdirSync(dirname(file), { recursive: true });
        writeFileSync(file, content);
      }
    }
    const expected = expectedFiles(c.dir);
    expect([...byPath.keys()].sort()).toEqual([...expected.keys()].sort());
    for (const [path, content] of byPath) expect(content, path).toBe(expected.get(path));
  });

  it.each(cases.map((c) => [c.name, c] as const))('%s means what its input says', (_name, c) => {
    const { files, byPath } = renderCase(c);
    const config = parse(byPath.get(CONTAINERD_CONFIG)!) as Tree;
    const v = files.target.configVersion;
    expect(config.version).toBe(v);
    const major = Number(files.target.containerdVersion.split('.')[0]);
    expect(v).toBe(major >= 2 ? 3 : 2);
    const runtimeRoot = v === 2 ? config.plugins['io.containerd.grpc.v1.cri'] : config.plugins['io.containerd.cri.v1.runtime'];
    const images = v === 2 ? config.plugins['io.containerd.grpc.v1.cri'] : config.plugins['io.containerd.cri.v1.images'];
    const runc = runtimeRoot.containerd.runtimes.runc;
    expect(runc.runtime_type).toBe('io.containerd.runc.v2');
    expect(runc.options.SystemdCgroup).toBe((c.spec.cgroupDriver ?? DEFAULT_CGROUP_DRIVER) === 'systemd');
    expect(runtimeRoot.containerd.default_runtime_name).toBe('runc');
    expect(images.registry.config_path).toBe(CERTS_DIR);
    expect(images.registry.mirrors).toBeUndefined();
    const sandbox = v === 2 ? images.sandbox_image : images.pinned_images?.sandbox;
    if (c.spec.extraConfig === undefined) expect(sandbox).toBe(c.spec.sandboxImage);
    // Never a v2 path in a v3 file or the other way round (both are silently ignored).
    expect(Object.keys(config.plugins).every((id) => (v === 2 ? id === 'io.containerd.grpc.v1.cri' || !id.startsWith('io.containerd.cri.') : id !== 'io.containerd.grpc.v1.cri'))).toBe(true);
    for (const [registry, entry] of Object.entries(c.spec.registries ?? {})) {
      const hosts = parse(byPath.get(`${CERTS_DIR}/${registry}/hosts.toml`)!) as Tree;
      expect(Object.keys(hosts.host ?? {})).toEqual((entry.mirrors ?? []).map((m) => m.url));
      for (const m of entry.mirrors ?? []) {
        const h = hosts.host[m.url];
        expect(h.capabilities).toEqual(m.capabilities ?? ['pull', 'resolve']);
        expect(h.skip_verify ?? false).toBe(m.skipVerify ?? false);
        if (m.caFile) expect([h.ca].flat()).toContain(m.caFile);
      }
      expect(hosts.skip_verify ?? false).toBe(entry.skipVerify ?? false);
      if (registry === 'docker.io') expect(hosts.server).toBe('https://registry-1.docker.io');
    }
    if (c.spec.proxy?.httpsProxy) expect(files.proxy?.content).toContain('HTTPS_PROXY=');
  });
});

// The golden files and the assertions above share the test's own spelling of each key; this
// checks what the renderer writes against containerd's key table and the fields of its runc
// Options message (src/config/containerd-toml/keys.ts), which containerd itself never checks for options.
describe('what the containerd renderer writes', () => {
  const inputs: [string, ContainerdSpec, TargetFacts][] = [
    ...cases.map((c): [string, ContainerdSpec, TargetFacts] => [c.name, c.spec, c.facts]),
    ...(['systemd', 'cgroupfs'] as const).flatMap((cgroupDriver) =>
      ['1.6.20', '1.7.24', '2.0.5', '2.1.9'].map((containerdVersion): [string, ContainerdSpec, TargetFacts] => [`${cgroupDriver} for ${containerdVersion}`, { cgroupDriver, sandboxImage: 'registry.k8s.io/pause:3.10' }, { containerdVersion, kernelRelease: '4.9.0' }]),
    ),
  ];

  it.each(inputs)('%s: every key has the type containerd reads and every runc option is a field of runc Options', (_name, spec, facts) => {
    const target = chooseTarget(facts, spec);
    const text = renderContainerdConfig(spec, target);
    expect(extraConfigTypeProblems(parse(text) as TomlTable, text, target.configVersion)).toEqual([]);
  });
});
