// Properties of the kubeadm renderer: whatever strings the node settings and secrets hold (YAML
// punctuation, "-", "=", line breaks, words YAML would read as booleans or numbers), the rendered
// documents parse back with js-yaml as exactly those strings, each value one kubelet argument.
import fc from 'fast-check';
import { loadAll } from 'js-yaml';
import { describe, expect, it } from 'vitest';
import type { KubernetesSpec } from '../../src/config/schema/index.ts';
import { renderKubeadm } from '../../src/kubeadm/render.ts';
import { ConfigError } from '../../src/errors.ts';
import { holds, thrownBy } from '../support/property.ts';

// Strings YAML likes to read as something else, mixed with anything at all.
const hostile = fc.oneof(
  fc.string({ unit: 'grapheme', maxLength: 30 }),
  fc.constantFrom('--pod-manifest-path=/etc/evil', '-v=10', 'a=b=c', 'x\n--y=z', 'yes', 'no', 'null', '~', '0x10', '1e3', '0644', '', ' ', '- a', ': b', '#c', '&a', '*a', '!!str', '"q"', "'s'", '{x: y}', '[1]', '\t', '\r\n', '\u2028', '\ufeff'),
);
const flag = fc.stringMatching(/^[a-z0-9][a-z0-9-]{0,15}$/).filter((k) => !['node-labels', 'register-with-taints', 'hostname-override'].includes(k));
const quantity = fc.stringMatching(/^\d{1,4}(Ki|Mi|Gi|m)?$/);

const input = fc
  .record({
    shape: fc.constantFrom(
      { role: 'control-plane' as const, bootstrap: 'init' as const, os: 'linux' as const },
      { role: 'control-plane' as const, bootstrap: 'join' as const, os: 'linux' as const },
      { role: 'worker' as const, bootstrap: 'join' as const, os: 'linux' as const },
      { role: 'worker' as const, bootstrap: 'join' as const, os: 'windows' as const },
    ),
    api: fc.constantFrom('v1beta3' as const, 'v1beta4' as const),
    kubeletPatches: fc.boolean(),
    name: fc.option(hostile, { nil: undefined }),
    labels: fc.dictionary(hostile.filter((k) => k !== ''), hostile, { maxKeys: 3 }),
    taints: fc.option(fc.array(fc.record({ key: hostile, value: fc.option(hostile, { nil: undefined }), effect: fc.constantFrom('NoSchedule' as const, 'PreferNoSchedule' as const, 'NoExecute' as const) }), { maxLength: 3 }), { nil: undefined }),
    kubeletExtraArgs: fc.dictionary(flag, hostile, { maxKeys: 4 }),
    apiServerExtraArgs: fc.dictionary(flag, hostile, { maxKeys: 3 }),
    systemReserved: fc.option(fc.record({ cpu: quantity, memory: quantity }, { requiredKeys: [] }), { nil: undefined }),
    maxPods: fc.option(fc.integer({ min: 1, max: 10_000 }), { nil: undefined }),
    token: hostile,
    caCertHashes: fc.array(hostile, { minLength: 1, maxLength: 2 }),
    certificateKey: hostile,
    endpoint: hostile,
  });

function argsOf(value: unknown): Record<string, string> {
  // v1beta3 writes a map, v1beta4 a list of {name, value}.
  if (Array.isArray(value)) return Object.fromEntries(value.map((a: { name: string; value: string }) => [a.name, a.value]));
  return (value ?? {}) as Record<string, string>;
}

describe('kubeadm configuration rendering', () => {
  it('parses back with js-yaml as exactly the strings given, each value one argument', async () => {
    await holds('kubeadm: render round trip', input, (i) => {
      const kubernetes = {
        ...i.shape,
        controlPlaneEndpoint: i.endpoint,
        node: { ...(i.name !== undefined ? { name: i.name } : {}), labels: i.labels, ...(i.taints ? { taints: i.taints } : {}), kubeletExtraArgs: i.kubeletExtraArgs },
        ...(i.shape.bootstrap === 'init' ? { controlPlane: { apiServer: { extraArgs: i.apiServerExtraArgs } } } : {}),
        kubelet: { ...(i.maxPods !== undefined ? { maxPods: i.maxPods } : {}), ...(i.systemReserved ? { systemReserved: i.systemReserved } : {}) },
        retries: 3,
        backoffSeconds: 10,
        timeoutSeconds: 600,
      } as KubernetesSpec;
      const secrets = { token: i.token, caCertHashes: i.caCertHashes, certificateKey: i.certificateKey };
      const rendered = renderKubeadm({ kubernetes, os: i.shape.os, api: i.api, kubeletPatches: i.kubeletPatches, cgroupDriver: 'systemd', secrets });
      const docs = loadAll(rendered.config) as Record<string, any>[];
      const first = docs[0]!;
      expect(first.apiVersion).toBe(`kubeadm.k8s.io/${i.api}`);
      const registration = first.nodeRegistration;
      expect(registration.name).toBe(i.name);
      const args = argsOf(registration.kubeletExtraArgs);
      for (const [k, v] of Object.entries(i.kubeletExtraArgs)) expect(args[k]).toBe(v);
      const labels = Object.entries(i.labels).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
      expect(args['node-labels']).toBe(labels.length ? labels.map(([k, v]) => `${k}=${v}`).join(',') : undefined);
      for (const v of Object.values(args)) expect(typeof v).toBe('string');
      if (i.taints) expect(registration.taints).toEqual(i.taints.map((t) => ({ key: t.key, ...(t.value ? { value: t.value } : {}), effect: t.effect })));
      if (i.shape.bootstrap === 'init') {
        expect(first.bootstrapTokens[0].token).toBe(i.token);
        expect(first.certificateKey).toBe(i.certificateKey);
        const cluster = docs[1]!;
        expect(cluster.controlPlaneEndpoint).toBe(i.endpoint);
        expect(argsOf(cluster.apiServer?.extraArgs)).toEqual(i.apiServerExtraArgs);
        expect(docs[2]!.maxPods).toBe(i.maxPods);
      } else {
        expect(first.discovery.bootstrapToken).toEqual({ apiServerEndpoint: i.endpoint, token: i.token, caCertHashes: i.caCertHashes });
        if (i.shape.role === 'control-plane') expect(first.controlPlane.certificateKey).toBe(i.certificateKey);
        for (const patch of rendered.patches) expect((loadAll(patch.content)[0] as Record<string, unknown>).maxPods).toBe(i.maxPods);
      }
    }, 250);
  });

  it('refuses a Windows control plane with a ConfigError, whatever else it holds', async () => {
    await holds('kubeadm: windows control plane', fc.record({ api: fc.constantFrom('v1beta3' as const, 'v1beta4' as const), name: hostile }), async ({ api, name }) => {
      const kubernetes = { role: 'control-plane', bootstrap: 'init', node: { name }, retries: 3, backoffSeconds: 10, timeoutSeconds: 600 } as KubernetesSpec;
      const error = await thrownBy(() => renderKubeadm({ kubernetes, os: 'windows', api, cgroupDriver: 'systemd', secrets: { caCertHashes: [] } }), [ConfigError]);
      expect(error).toBeInstanceOf(ConfigError);
    }, 50);
  });
});
