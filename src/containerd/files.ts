// Every file machineadm writes for containerd, rendered from spec.containerd and the version facts.
// Pure: the steps compare these with the disk and write them.
import type { ContainerdSpec } from '../config/schema/index.ts';
import { chooseTarget, type ContainerdTarget, type TargetFacts } from './target.ts';
import { renderContainerdConfig } from './config.ts';
import { renderHostsToml } from './hosts.ts';
import { proxyHasCredentials, renderProxyDropIn } from './proxy.ts';
import { PROXY_DROPIN, containerdPaths } from './paths.ts';
import { hasCredentials } from '../redaction.ts';
import { holdsCredentialKey } from '../config/containerd-toml/credentials.ts';

export interface RenderedFile {
  path: string;
  content: string;
  mode: number;
  /** The configuration field it comes from (named in errors). */
  field: string;
  /** Hide the content in plan diffs. */
  sensitive?: boolean;
}

export interface ContainerdFiles {
  target: ContainerdTarget;
  config: RenderedFile;
  hosts: RenderedFile[];
  caBundle?: RenderedFile;
  proxy?: RenderedFile;
}

export function renderCaBundle(certificates: readonly string[]): string {
  return certificates.map((c) => c.trim() + '\n').join('');
}

/** The registries that get a hosts.toml: those configured, and _default when it carries the extra CAs. */
export function hostsTomlRegistries(spec: ContainerdSpec | undefined): string[] {
  const names = Object.keys(spec?.registries ?? {}).sort();
  // With extra CAs, _default carries them to every registry that has no directory of its own.
  if ((spec?.caCertificates?.length ?? 0) > 0 && !names.includes('_default')) names.push('_default');
  return names;
}

/** Whether extraConfig puts a credential into config.toml, which then must not be readable by all. */
export function extraConfigHoldsCredentials(text: string | undefined): boolean {
  return holdsCredentialKey(text);
}

export function renderContainerdFiles(spec: ContainerdSpec | undefined, facts: TargetFacts): ContainerdFiles {
  const target = chooseTarget(facts, spec);
  const paths = containerdPaths(target.os ?? 'linux');
  const loginInConfig = extraConfigHoldsCredentials(spec?.extraConfig);
  const out: ContainerdFiles = {
    target,
    config: { path: paths.config, content: renderContainerdConfig(spec, target), mode: loginInConfig ? 0o600 : 0o644, field: 'spec.containerd', ...(loginInConfig ? { sensitive: true } : {}) },
    hosts: [],
  };
  const cas = spec?.caCertificates ?? [];
  const bundle = cas.length ? paths.caBundle : undefined;
  if (bundle) out.caBundle = { path: paths.caBundle, content: renderCaBundle(cas), mode: 0o644, field: 'spec.containerd.caCertificates' };
  const registries = { ...(spec?.registries ?? {}) };
  for (const name of hostsTomlRegistries(spec)) {
    // A mirror URL with a user, password or query (a token) makes its hosts.toml a secret.
    const secret = (registries[name]?.mirrors ?? []).some((m) => hasCredentials(m.url));
    out.hosts.push({
      path: paths.hostsToml(name),
      content: renderHostsToml(name, registries[name], bundle),
      mode: secret ? 0o600 : 0o644,
      field: `spec.containerd.registries[${JSON.stringify(name)}]`,
      ...(secret ? { sensitive: true } : {}),
    });
  }
  // A systemd drop-in has no meaning on Windows; the Windows steps refuse spec.containerd.proxy.
  const proxy = target.os === 'windows' ? undefined : renderProxyDropIn(spec?.proxy);
  if (proxy) {
    // Credentials in a proxy URL make the drop-in a secret.
    const secret = proxyHasCredentials(spec?.proxy);
    out.proxy = { path: PROXY_DROPIN, content: proxy, mode: secret ? 0o600 : 0o644, field: 'spec.containerd.proxy', ...(secret ? { sensitive: true } : {}) };
  }
  return out;
}
