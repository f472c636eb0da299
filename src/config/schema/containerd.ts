// spec.containerd: containerd's runtime configuration in machineadm's own terms.
import { array, boolean, documented, enumOf, object, optional, record, string } from './dsl.ts';
import { networkUrlProblem } from './url.ts';
import { hasCredentials } from '../../redaction.ts';
import { extraConfigProblems } from '../containerd-toml/extra-types.ts';
import { cgroupDriverConflicts, parseExtraConfig } from '../containerd-toml/extra.ts';

const HTTP_URL = /^https?:\/\/[^\s/]+(\/\S*)?$/;

// Checked without quoting the value: a mirror URL may carry a token.
const httpUrl = string({
  check: (u) => {
    if (HTTP_URL.test(u)) return networkUrlProblem(u);
    const shown = hasCredentials(u) ? 'is not an http:// or https:// URL (the value is not shown: it may hold a credential)' : `${JSON.stringify(u.length > 80 ? u.slice(0, 77) + '...' : u)} is not valid`;
    return `${shown}|only http:// and https:// URLs are supported, e.g. https://mirror.internal:5000`;
  },
  jsonPattern: HTTP_URL,
});

// A proxy URL may carry a password (user:password@host), so a problem with it never quotes it.
const proxyUrl = string({
  check: (u) =>
    /^https?:\/\/[^\s/]+(\/\S*)?$/.test(u)
      ? networkUrlProblem(u)
      : 'is not an http:// or https:// URL without spaces (the value is not shown: it may hold a password)|e.g. http://proxy.internal:3128, or http://user:password@proxy.internal:3128 with the password percent-encoded',
});

function machinePath(description?: string) {
  return string({
    minLength: 1,
    ...(description ? { description } : {}),
    check: (p) => (!p.startsWith('/') ? `"${p}" is not an absolute path|give the full path of the file on the machine` : p.split('/').includes('..') ? `"${p}" contains ".."|write the path without ".." segments` : undefined),
  });
}

// Every hosts.toml names the CA bundle, and containerd fails a pull whose `ca` file does not
// parse: one damaged certificate would stop every image pull on the node.
export function certificateProblem(pem: string): string | undefined {
  const blocks = pem.match(/-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g) ?? [];
  if (blocks.length === 0) return 'has no complete PEM certificate (no -----END CERTIFICATE----- line)|paste the whole PEM block, from the BEGIN line to the END line';
  // node:crypto only when there are certificates to read: loading it is a good part of a start.
  const { X509Certificate } = process.getBuiltinModule('node:crypto');
  for (const [i, block] of blocks.entries()) {
    try {
      new X509Certificate(block);
    } catch (error) {
      return `certificate ${i + 1} in this entry cannot be read (${(error as Error).message})|paste the PEM block unchanged; openssl x509 -in FILE -noout checks it`;
    }
  }
  return undefined;
}

export const registryMirror = object(
  {
    url: documented(httpUrl, { description: 'the mirror\'s http:// or https:// URL', example: 'https://mirror.internal:5000' }),
    capabilities: optional(array(enumOf(['pull', 'resolve', 'push'] as const), { unique: true, minItems: 1, description: 'what the mirror is used for (containerd\'s hosts.toml capabilities; default pull and resolve)', example: ['pull', 'resolve'] })),
    caFile: optional(machinePath('path of a PEM CA bundle on the machine for this mirror'), { example: '/etc/ssl/mirror.pem' }),
    skipVerify: optional(boolean({ description: 'disable TLS verification for this mirror (only when explicitly asked)', example: false })),
    overridePath: optional(boolean({ description: "the URL's path is the registry API root (it then ends in its /v2 part); for mirrors that serve the API under a prefix", example: true })),
  },
  {
    // With override_path containerd appends "<repo>/manifests/<tag>" to the URL as it is: without
    // the API root it asks for /<repo>/manifests/<tag>, gets 404 and falls back to upstream, which
    // an air-gapped node cannot reach and a connected one reaches silently, bypassing the mirror.
    check: (mirror, report) => {
      if (!URL.canParse(mirror.url)) return;
      // containerd keeps only the scheme, host and path of a hosts.toml host: a login or token in the
      // URL is never sent, the mirror answers 401, and the pull goes on to the registry itself.
      const parsed = new URL(mirror.url);
      if (parsed.username || parsed.password || parsed.search) {
        report('url', 'has a user name, password or query, which containerd leaves out of every request to the mirror (the value is not shown: it may hold a credential); the mirror would refuse the pull and containerd go on to the registry itself', 'give the URL without them, and the login in spec.containerd.extraConfig under [plugins."io.containerd.grpc.v1.cri".registry.configs."<mirror host>".auth] (containerd 2.x: io.containerd.cri.v1.images), or let the mirror allow anonymous pulls');
      }
      if (!mirror.overridePath) return;
      const segments = new URL(mirror.url).pathname.split('/');
      if (!segments.includes('v2')) {
        report('url', 'overridePath: true needs the registry API root in the URL, including its /v2 part (containerd would request <url>/<repository>/manifests/<tag>, get 404 and fall back to upstream)', `e.g. ${apiRootOf(mirror.url)}, or leave overridePath out for a mirror that serves /v2/ at its root`);
      }
    },
  },
);

export const containerdSection = object({
  version: optional(string({ pattern: /^\d+\.\d+(\.\d+)?$/, patternHint: 'a version such as 1.7 or 2.1.0', description: 'containerd version to render for, when containerd is not installed yet', example: '1.7' })),
  sandboxImage: optional(string({ minLength: 1, description: 'the pause image every pod sandbox runs (default: containerd\'s own)', example: 'registry.k8s.io/pause:3.10' })),
  cgroupDriver: optional(enumOf(['systemd', 'cgroupfs'] as const, { description: 'the cgroup driver runc uses; must match the kubelet\'s (systemd on systemd machines)', example: 'systemd' })),
  registries: optional(
    record(
      object(
        {
          mirrors: optional(array(registryMirror), { description: 'mirrors tried in order before the registry itself', example: [{ url: 'https://mirror.internal:5000' }] }),
          caFile: optional(machinePath('path of a PEM CA bundle on the machine for the registry itself'), { example: '/etc/ssl/registry.pem' }),
          skipVerify: optional(boolean({ description: 'disable TLS verification for the registry itself (only when explicitly asked)', example: false })),
        },
        {
          // hosts.toml keys its host tables by URL: a second mirror with the same URL would silently replace the first.
          check: (registry, report) => {
            const seen = new Map<string, number>();
            registry.mirrors?.forEach((mirror, i) => {
              const key = mirror.url.replace(/\/+$/, '');
              const first = seen.get(key);
              if (first !== undefined) report(['mirrors', i, 'url'], `the same mirror as mirrors[${first}]`, 'list each mirror once, with all its settings');
              else seen.set(key, i);
            });
          },
          description: 'one registry\'s mirrors and TLS settings',
          example: { mirrors: [{ url: 'https://mirror.internal:5000' }] },
        },
      ),
      // The name is a directory under certs.d, so "." and ".." (and names starting with either) are not hosts.
      { key: { pattern: /^[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)*(:\d+)?$|^_default$/, patternHint: 'a registry host such as docker.io or registry.internal:5000' } },
    ),
    { description: 'registries by host (docker.io, registry.internal:5000, or _default for every registry): each becomes certs.d/<host>/hosts.toml', example: { 'docker.io': { mirrors: [{ url: 'https://mirror.internal:5000' }] } } },
  ),
  proxy: optional(
    object({
      httpProxy: optional(proxyUrl, { description: 'proxy for http:// pulls (HTTP_PROXY of the containerd service)', example: 'http://proxy.internal:3128' }),
      httpsProxy: optional(proxyUrl, { description: 'proxy for https:// pulls (HTTPS_PROXY of the containerd service)', example: 'http://proxy.internal:3128' }),
      noProxy: optional(array(string({ pattern: /^[^\s,]+$/, patternHint: 'one host, domain, IP or CIDR per entry, without spaces or commas' })), { description: 'hosts, domains, IPs and CIDRs reached without the proxy (NO_PROXY)', example: ['10.0.0.0/8', '.cluster.local'] }),
    }),
    { description: 'the proxy containerd pulls through (a systemd drop-in for the service)', example: { httpsProxy: 'http://proxy.internal:3128', noProxy: ['10.0.0.0/8'] } },
  ),
  caCertificates: optional(array(string({ pattern: /-----BEGIN CERTIFICATE-----/, patternHint: 'a PEM certificate', check: certificateProblem })), { description: 'PEM certificates trusted for every registry, in addition to the system CAs', example: ['-----BEGIN CERTIFICATE-----\n...\n-----END CERTIFICATE-----\n'] }),
  extraConfig: optional(string({ description: 'raw TOML deep-merged over what machineadm generates', example: '[plugins."io.containerd.grpc.v1.cri"]\n  enable_unprivileged_ports = true\n' })),
}, {
  // extraConfig is checked against the keys containerd reads in both config versions, so a
  // problem shows at validation time whichever containerd the machine turns out to have.
  check: (spec, report) => {
    if (!spec.extraConfig?.trim()) return;
    const problems = extraConfigProblems(spec.extraConfig);
    for (const p of problems) report('extraConfig', `${p.line ? `TOML line ${p.line}: ` : ''}${p.message}`, p.hint);
    if (problems.length) return;
    // The kubelet's cgroupDriver comes from spec.containerd.cgroupDriver (default systemd), never from extraConfig.
    for (const p of cgroupDriverConflicts(parseExtraConfig(spec.extraConfig), spec.extraConfig, spec.cgroupDriver ?? 'systemd', spec.cgroupDriver === undefined)) {
      report('extraConfig', `${p.line ? `TOML line ${p.line}: ` : ''}${p.message}`, p.hint);
    }
  },
});

/** The mirror's URL with /v2 added to its path, without user info or query (which may hold credentials). */
function apiRootOf(url: string): string {
  const parsed = new URL(url);
  return `${parsed.origin}${parsed.pathname.replace(/\/+$/, '')}/v2`;
}
