// config.toml for containerd's CRI: version 2 (containerd 1.x) or version 3 (2.x). Pure.
import type { ContainerdSpec } from '../config/schema/index.ts';
import { containerdPaths } from './paths.ts';
import { cniBinDirs, kernelBefore411, type ContainerdTarget } from './target.ts';
import { ExtraConfigError, mergeExtraConfig, parseExtraConfig, wrongVersionSections } from '../config/containerd-toml/extra.ts';
import { extraConfigTypeProblems } from '../config/containerd-toml/extra-types.ts';
import { V2_CRI, V3_IMAGES, V3_RUNTIME } from '../config/containerd-toml/keys.ts';
import { stringifyToml, type TomlTable } from '../config/containerd-toml/toml.ts';

/** kubelet's default cgroup driver since Kubernetes 1.22; containerd must use the same one. */
export const DEFAULT_CGROUP_DRIVER = 'systemd';

// The whole runc entry, always with runtime_type: containerd 1.x replaces the runtimes map as a
// whole when any part of it is written, and an entry without runtime_type breaks every pod.
function runtimes(spec: ContainerdSpec | undefined): TomlTable {
  const systemd = (spec?.cgroupDriver ?? DEFAULT_CGROUP_DRIVER) === 'systemd';
  return {
    default_runtime_name: 'runc',
    runtimes: { runc: { runtime_type: 'io.containerd.runc.v2', options: { SystemdCgroup: systemd } } },
  };
}

/** containerd's Windows named pipe, the CRI endpoint kubelet and kubeadm use (npipe:////./pipe/containerd-containerd). */
export const WINDOWS_PIPE = '\\\\.\\pipe\\containerd-containerd';
/** The CNI directories every Windows network plugin's installer uses (sig-windows-tools rewrites containerd's defaults to these). */
export const WINDOWS_CNI_BIN = 'C:\\opt\\cni\\bin';
export const WINDOWS_CNI_CONF = 'C:\\etc\\cni\\net.d';

// Process-isolated Windows containers through the runhcs shim, as containerd's Windows defaults;
// Kubernetes does not support Hyper-V isolation.
function windowsRuntimes(): TomlTable {
  return {
    default_runtime_name: 'runhcs-wcow-process',
    runtimes: { 'runhcs-wcow-process': { runtime_type: 'io.containerd.runhcs.v1', container_annotations: ['io.microsoft.container.*'] } },
  };
}

function windowsConfig(spec: ContainerdSpec | undefined, target: ContainerdTarget): TomlTable {
  const registry = { config_path: containerdPaths('windows').certsDir };
  const cni: TomlTable = { ...(cniBinDirs(target.containerdVersion) ? { bin_dirs: [WINDOWS_CNI_BIN] } : { bin_dir: WINDOWS_CNI_BIN }), conf_dir: WINDOWS_CNI_CONF };
  const grpc = { address: WINDOWS_PIPE };
  if (target.configVersion === 2) {
    return {
      version: 2,
      grpc,
      plugins: { [V2_CRI]: { ...(spec?.sandboxImage ? { sandbox_image: spec.sandboxImage } : {}), containerd: windowsRuntimes(), cni, registry } },
    };
  }
  return {
    version: 3,
    grpc,
    plugins: {
      [V3_IMAGES]: { ...(spec?.sandboxImage ? { pinned_images: { sandbox: spec.sandboxImage } } : {}), registry },
      [V3_RUNTIME]: { containerd: windowsRuntimes(), cni },
    },
  };
}

/** What machineadm itself sets, before extraConfig. */
export function generatedConfig(spec: ContainerdSpec | undefined, target: ContainerdTarget): TomlTable {
  if (target.os === 'windows') return windowsConfig(spec, target);
  // config_path only; never `mirrors` next to it (that makes the CRI plugin fail to load).
  const registry = { config_path: containerdPaths('linux').certsDir };
  if (target.configVersion === 2) {
    return {
      version: 2,
      plugins: {
        [V2_CRI]: {
          ...(spec?.sandboxImage ? { sandbox_image: spec.sandboxImage } : {}),
          containerd: runtimes(spec),
          registry,
        },
      },
    };
  }
  const runtime: TomlTable = { containerd: runtimes(spec) };
  if (kernelBefore411(target.kernelRelease)) {
    runtime.enable_unprivileged_ports = false;
    runtime.enable_unprivileged_icmp = false;
  }
  return {
    version: 3,
    plugins: {
      [V3_IMAGES]: {
        ...(spec?.sandboxImage ? { pinned_images: { sandbox: spec.sandboxImage } } : {}),
        registry,
      },
      [V3_RUNTIME]: runtime,
    },
  };
}

/** The generated configuration with extraConfig merged over it (throws ExtraConfigError). */
export function containerdConfigTable(spec: ContainerdSpec | undefined, target: ContainerdTarget): TomlTable {
  const generated = generatedConfig(spec, target);
  if (!spec?.extraConfig?.trim()) return generated;
  const extra = parseExtraConfig(spec.extraConfig);
  const problems = [...wrongVersionSections(extra, target.configVersion, spec.extraConfig), ...extraConfigTypeProblems(extra, spec.extraConfig, target.configVersion)];
  if (problems.length) throw new ExtraConfigError(problems);
  return mergeExtraConfig(generated, extra, spec.extraConfig);
}

export function renderContainerdConfig(spec: ContainerdSpec | undefined, target: ContainerdTarget): string {
  return stringifyToml(containerdConfigTable(spec, target), [
    `Written by machineadm for containerd ${target.containerdVersion} (config version ${target.configVersion}) from spec.containerd.`,
    'Changes here are overwritten on its next run: put them in spec.containerd.extraConfig.',
  ]);
}
