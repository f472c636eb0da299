// spec.containerd: containerd's runtime configuration in machineadm's own terms.
import { array, boolean, enumOf, object, optional, record, string } from './dsl.ts';

const httpUrl = string({ pattern: /^https?:\/\/[^\s/]+(\/\S*)?$/, patternHint: 'an http:// or https:// URL, e.g. https://mirror.internal:5000' });

export const registryMirror = object({
  url: httpUrl,
  capabilities: optional(array(enumOf(['pull', 'resolve', 'push'] as const), { unique: true, minItems: 1 })),
  caFile: optional(string({ minLength: 1, description: 'path of a PEM CA bundle on the machine for this mirror' })),
  skipVerify: optional(boolean({ description: 'disable TLS verification for this mirror (only when explicitly asked)' })),
  overridePath: optional(boolean()),
});

export const containerdSection = object({
  version: optional(string({ pattern: /^\d+\.\d+(\.\d+)?$/, patternHint: 'a version such as 1.7 or 2.1.0', description: 'containerd version to render for, when containerd is not installed yet' })),
  sandboxImage: optional(string({ minLength: 1 })),
  cgroupDriver: optional(enumOf(['systemd', 'cgroupfs'] as const)),
  registries: optional(
    record(
      object({
        mirrors: optional(array(registryMirror)),
        caFile: optional(string({ minLength: 1 })),
        skipVerify: optional(boolean()),
      }),
      { key: { pattern: /^[A-Za-z0-9.-]+(:\d+)?$|^_default$/, patternHint: 'a registry host such as docker.io or registry.internal:5000' } },
    ),
  ),
  proxy: optional(
    object({
      httpProxy: optional(httpUrl),
      httpsProxy: optional(httpUrl),
      noProxy: optional(array(string({ minLength: 1 }))),
    }),
  ),
  caCertificates: optional(array(string({ pattern: /-----BEGIN CERTIFICATE-----/, patternHint: 'a PEM certificate' }))),
  extraConfig: optional(string({ description: 'raw TOML deep-merged over what machineadm generates' })),
});
