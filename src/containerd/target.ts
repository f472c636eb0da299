// Which containerd the configuration is written for. The installed containerd decides; when it is
// not installed yet, spec.containerd.version does; else the documented default. containerd 1.x reads
// config version 2; 2.x reads version 3 (2.3+ also reads 4, 2.0-2.2 refuse 4, so 4 is never written).
import type { ContainerdSpec } from '../config/schema/index.ts';

/**
 * Rendered for when nothing says which containerd there will be: a version 2 file works on 1.6/1.7
 * and is migrated in memory by every 2.x, while a version 3 file is ignored by 1.6.0-1.6.31.
 */
export const DEFAULT_CONTAINERD_VERSION = '1.7';

export interface ContainerdTarget {
  containerdVersion: string;
  configVersion: 2 | 3;
  /** Where the version came from. */
  source: 'installed' | 'configured' | 'default';
  /** uname -r of the machine, when known (old kernels need unprivileged ports/ICMP off on 2.x). */
  kernelRelease?: string;
  /** Windows: runhcs runtime, named pipe, Windows CNI paths. Linux when absent. */
  os?: 'linux' | 'windows';
}

export interface TargetFacts {
  containerdVersion?: string;
  kernelRelease?: string;
  os?: 'linux' | 'windows';
}

function major(version: string): number {
  return Number(/^v?(\d+)/.exec(version)?.[1] ?? NaN);
}

export function chooseTarget(facts: TargetFacts, spec: Pick<ContainerdSpec, 'version'> | undefined): ContainerdTarget {
  const [containerdVersion, source] = facts.containerdVersion
    ? [facts.containerdVersion, 'installed' as const]
    : spec?.version
      ? [spec.version, 'configured' as const]
      : [DEFAULT_CONTAINERD_VERSION, 'default' as const];
  const configVersion = major(containerdVersion) >= 2 ? 3 : 2;
  const windows = facts.os === 'windows';
  return { containerdVersion, configVersion, source, ...(facts.kernelRelease && !windows ? { kernelRelease: facts.kernelRelease } : {}), ...(windows ? { os: 'windows' as const } : {}) };
}

/** One line for the plan: "config version 2 for containerd 1.6.20 (installed)". */
export function describeTarget(target: ContainerdTarget): string {
  const from = { installed: 'installed', configured: 'from spec.containerd.version', default: 'default; containerd is not installed and spec.containerd.version is not set' }[target.source];
  return `config version ${target.configVersion} for containerd ${target.containerdVersion} (${from})`;
}

/** True for kernels older than 4.11, where containerd 2.x's default unprivileged ports/ICMP make the CRI runtime plugin fail. */
export function kernelBefore411(release: string | undefined): boolean {
  const m = /^(\d+)\.(\d+)/.exec(release ?? '');
  if (!m) return false;
  const [maj, min] = [Number(m[1]), Number(m[2])];
  return maj < 4 || (maj === 4 && min < 11);
}

/** True from containerd 2.1, which reads the CNI binary directories as the list bin_dirs. */
export function cniBinDirs(version: string): boolean {
  const m = /^v?(\d+)\.(\d+)/.exec(version);
  return m !== null && (Number(m[1]) > 2 || (Number(m[1]) === 2 && Number(m[2]) >= 1));
}
