// Where each piece spec.kubernetes.install names comes from and goes: the Kubernetes release's
// layout (BASE/VERSION/bin/OS/ARCH/NAME, with NAME.sha256 beside it; NAME.exe on Windows), the
// cri-tools and CNI plugins release archives, and the directories of this machine they go into.
import type { MachineConfig } from './schema/index.ts';
import { KUBERNETES_BINARIES, type KubernetesBinary } from './schema/install.ts';

export type InstallSpec = NonNullable<MachineConfig['spec']['kubernetes']>['install'] & object;

/** Where the CNI plugins go: the plugin directory containerd's configuration names. */
export const CNI_BIN_DIR = { linux: '/opt/cni/bin', windows: 'C:\\opt\\cni\\bin' } as const;

export type InstallOs = 'linux' | 'windows';

export interface Artifact {
  /** kubeadm, kubelet, kubectl, crictl or cni-plugins. */
  name: string;
  url: string;
  /** The sha256 pinned in the configuration; without it, URL.sha256 is read. */
  sha256?: string;
  /** The configuration field a failure is about. */
  field: string;
  /** A binary is put at `path`; an archive's regular files are put into `directory` (only `members` when given). */
  install: { path: string } | { directory: string; members?: readonly string[] };
}

// {arch} and {os} in a URL, also as a file: URL made of a relative path writes them.
const ARCH_MARK = /\{arch\}|%7Barch%7D/gi;
const OS_MARK = /\{os\}|%7Bos%7D/gi;

/** The release's name for the machine's architecture. */
export function releaseArch(arch: string): string {
  return arch === 'x64' ? 'amd64' : arch;
}

/**
 * The binaries' directory: the one given, else /usr/local/bin, or /opt/bin when /usr is read-only
 * (Flatcar, Fedora CoreOS), where the OS's own PATH looks for them; on Windows the kubelet's folder
 * (C:\\k), where the services machineadm registers look for kubelet.exe.
 */
export function binaryDirectory(config: MachineConfig, os: InstallOs, usrReadOnly: boolean): string {
  const given = config.spec.kubernetes?.install?.directory;
  if (given) return given;
  if (os === 'windows') return (config.spec.windows?.kubeletPath ?? 'C:\\k\\kubelet.exe').replace(/\\[^\\]*$/, '');
  return usrReadOnly ? '/opt/bin' : '/usr/local/bin';
}

/** A file in a folder of the machine, with the OS's separator. */
export function inFolder(folder: string, name: string, os: InstallOs): string {
  return `${folder}${os === 'windows' ? '\\' : '/'}${name}`;
}

/**
 * Every piece to install, in order: the binaries, then crictl and the CNI plugins. An archive's
 * URL may say {arch} and {os} where the architecture (amd64, arm64) and the OS (linux, windows)
 * go: one configuration for a mixed fleet, or a bundle.
 */
export function artifacts(install: InstallSpec, version: string, arch: string, directory: string, os: InstallOs = 'linux'): Artifact[] {
  const a = releaseArch(arch);
  const exe = os === 'windows' ? '.exe' : '';
  const base = install.baseUrl.replace(/\/+$/, '');
  const wanted = KUBERNETES_BINARIES.filter((b) => install.binaries.includes(b));
  const list: Artifact[] = wanted.map((name: KubernetesBinary) => ({
    name,
    url: install.urls?.[name]?.replace(ARCH_MARK, a).replace(OS_MARK, os) ?? `${base}/${version}/bin/${os}/${a}/${name}${exe}`,
    ...(install.sha256?.[name] ? { sha256: install.sha256[name] } : {}),
    field: install.sha256?.[name] ? `spec.kubernetes.install.sha256.${name}` : install.urls?.[name] ? `spec.kubernetes.install.urls.${name}` : 'spec.kubernetes.install.baseUrl',
    install: { path: inFolder(directory, `${name}${exe}`, os) },
  }));
  if (install.crictl) {
    const v = install.crictl.version;
    list.push({
      name: 'crictl',
      url: install.crictl.url?.replace(ARCH_MARK, a).replace(OS_MARK, os) ?? `https://github.com/kubernetes-sigs/cri-tools/releases/download/${v}/crictl-${v}-${os}-${a}.tar.gz`,
      ...(install.crictl.sha256 ? { sha256: install.crictl.sha256 } : {}),
      field: 'spec.kubernetes.install.crictl',
      install: { directory, members: [`crictl${exe}`] },
    });
  }
  if (install.cniPlugins) {
    const v = install.cniPlugins.version;
    list.push({
      name: 'cni-plugins',
      url: install.cniPlugins.url?.replace(ARCH_MARK, a).replace(OS_MARK, os) ?? `https://github.com/containernetworking/plugins/releases/download/${v}/cni-plugins-${os}-${a}-${v}.tgz`,
      ...(install.cniPlugins.sha256 ? { sha256: install.cniPlugins.sha256 } : {}),
      field: 'spec.kubernetes.install.cniPlugins',
      install: { directory: CNI_BIN_DIR[os] },
    });
  }
  return list;
}

/** The hex digest of a .sha256 file: the first word (a bare digest, or sha256sum's "DIGEST  NAME"). */
export function parseSha256File(text: string): string | undefined {
  const word = text.trim().split(/\s+/)[0]?.toLowerCase() ?? '';
  return /^[a-f0-9]{64}$/.test(word) ? word : undefined;
}
