// config.toml for containerd's CRI: version 2 (containerd 1.x) or version 3 (2.x). Pure.
import type { ContainerdSpec } from '../config/schema/index.ts';
import { CERTS_DIR } from './paths.ts';
import { kernelBefore411, type ContainerdTarget } from './target.ts';
import { ExtraConfigError, mergeExtraConfig, parseExtraConfig, wrongVersionSections } from './extra.ts';
import { extraConfigTypeProblems } from './extra-types.ts';
import { V2_CRI, V3_IMAGES, V3_RUNTIME } from './keys.ts';
import { stringifyToml, type TomlTable } from './toml.ts';

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

/** What machineadm itself sets, before extraConfig. */
export function generatedConfig(spec: ContainerdSpec | undefined, target: ContainerdTarget): TomlTable {
  // config_path only; never `mirrors` next to it (that makes the CRI plugin fail to load).
  const registry = { config_path: CERTS_DIR };
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
