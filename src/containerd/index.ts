// src/containerd: MachineConfig.containerd -> config.toml (version 2 for containerd 1.x, version 3
// for 2.x), certs.d/<registry>/hosts.toml, the CA bundle and the proxy drop-in. The renderers are
// pure (no disk, clock or environment) and golden-tested; the steps in steps/ do the I/O through Host.
export { chooseTarget, describeTarget, DEFAULT_CONTAINERD_VERSION, type ContainerdTarget } from './target.ts';
export { renderContainerdConfig, containerdConfigTable, generatedConfig, DEFAULT_CGROUP_DRIVER } from './config.ts';
export { renderHostsToml } from './hosts.ts';
export { renderProxyDropIn } from './proxy.ts';
export { renderContainerdFiles, type ContainerdFiles, type RenderedFile } from './files.ts';
export { ExtraConfigError, parseExtraConfig, mergeExtraConfig } from '../config/containerd-toml/extra.ts';
export { stringifyToml, type TomlTable, type TomlValue } from '../config/containerd-toml/toml.ts';
export * from './paths.ts';
