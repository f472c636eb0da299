// The proxy for containerd: a systemd drop-in setting HTTP_PROXY, HTTPS_PROXY and NO_PROXY in the
// service's environment (containerd has no proxy setting of its own; registries are reached over
// https, so HTTPS_PROXY is the one that matters). Pure.
import type { ContainerdSpec } from '../config/schema/index.ts';
import { hasCredentials } from '../redaction.ts';

export type ProxySpec = NonNullable<ContainerdSpec['proxy']>;

// systemd expands % specifiers and unquotes \ and " inside Environment=.
function environmentLine(name: string, value: string): string {
  const escaped = `${name}=${value}`.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/%/g, '%%');
  return `Environment="${escaped}"`;
}

// A query counts as a credential too (a token), as for a mirror's URL in hosts.toml.
export function proxyHasCredentials(proxy: ProxySpec | undefined): boolean {
  return [proxy?.httpProxy, proxy?.httpsProxy].some((u) => u !== undefined && hasCredentials(u));
}

/** The drop-in text, or undefined when no proxy is configured. */
export function renderProxyDropIn(proxy: ProxySpec | undefined): string | undefined {
  if (!proxy || (!proxy.httpProxy && !proxy.httpsProxy && !(proxy.noProxy?.length))) return undefined;
  const lines = ['# Written by machineadm from spec.containerd.proxy; changes here are overwritten on its next run.', '[Service]'];
  if (proxy.httpProxy) lines.push(environmentLine('HTTP_PROXY', proxy.httpProxy));
  if (proxy.httpsProxy) lines.push(environmentLine('HTTPS_PROXY', proxy.httpsProxy));
  if (proxy.noProxy?.length) lines.push(environmentLine('NO_PROXY', proxy.noProxy.join(',')));
  return lines.join('\n') + '\n';
}
