// certs.d/<registry>/hosts.toml: registry mirrors, CAs and TLS settings, read by containerd on every
// pull (no restart needed). Pure.
import type { ContainerdSpec } from '../config/schema/index.ts';
import { stringifyToml, type TomlTable } from '../config/containerd-toml/toml.ts';

export type RegistrySpec = NonNullable<ContainerdSpec['registries']>[string];

/** The upstream a registry name stands for; `_default` has none (each registry's own host is used). */
export function upstreamOf(registry: string): string | undefined {
  if (registry === '_default') return undefined;
  if (registry === 'docker.io') return 'https://registry-1.docker.io';
  return `https://${registry}`;
}

function caList(files: (string | undefined)[]): string | string[] | undefined {
  const list = files.filter((f): f is string => Boolean(f));
  if (list.length === 0) return undefined;
  return list.length === 1 ? list[0] : list;
}

/**
 * hosts.toml for one registry. `caBundle` (the machine path of spec.containerd.caCertificates) is
 * added to the upstream and to every https mirror; containerd adds these CAs to the system roots.
 */
export function renderHostsToml(registry: string, entry: RegistrySpec | undefined, caBundle?: string): string {
  const table: TomlTable = {};
  const server = upstreamOf(registry);
  if (server) table.server = server;
  const serverCa = caList([entry?.caFile, server?.startsWith('https://') || !server ? caBundle : undefined]);
  if (serverCa) table.ca = serverCa;
  if (entry?.skipVerify) table.skip_verify = true;
  const hosts: TomlTable = {};
  for (const mirror of entry?.mirrors ?? []) {
    const h: TomlTable = { capabilities: [...(mirror.capabilities ?? ['pull', 'resolve'])] };
    const ca = caList([mirror.caFile, mirror.url.startsWith('https://') ? caBundle : undefined]);
    if (ca) h.ca = ca;
    if (mirror.skipVerify) h.skip_verify = true;
    if (mirror.overridePath) h.override_path = true;
    hosts[mirror.url] = h;
  }
  // Always present, empty without mirrors: containerd 1.6 (1.6.20, Debian 12's) refuses a hosts.toml
  // with no [host] table ("invalid `host` tree"), logs it and pulls without its ca and skip_verify.
  table.host = hosts;
  const what = registry === '_default' ? 'every registry without its own directory' : registry;
  return stringifyToml(table, [`Written by machineadm from spec.containerd for ${what}; changes here are overwritten on its next run.`]);
}
