// The keys containerd reads from config.toml, with the TOML type each must have, for config
// version 2 (containerd 1.6/1.7) and version 3 (2.x). Read by the renderer (plugin IDs) and by
// validation (extraConfig is type-checked against it), so neither imports the other. Pure data.
//
// Sources:
// - version 2: `containerd config default` of containerd 1.6.20 (Debian bookworm), every key and
//   the type of its default value (test/containerd/keys.test.ts compares the two on this machine),
//   plus the 1.7 additions of containerd's pkg/cri/config/config.go at v1.7.34.
// - version 3: containerd's internal/cri/config/config.go and plugins/cri/*/plugin.go, v2.0.11
//   to v2.3.4; the top-level tables are the same as in version 2.
// - runc options: the `Options` message of containerd's runc options proto,
//   runtime/v2/runc/options/oci.proto (1.x: CriuPath is field 8) and
//   api/types/runc/options/oci.proto (2.x: field 8 reserved, "Removed in containerd v2.0";
//   task_api_address = 12 and task_api_version = 13 added). The CRI plugin decodes a runtime's
//   `options` into that message by its Go field names, without strict mode, so containerd neither
//   refuses nor warns about an unknown or misspelled option: it is dropped, and `config dump`
//   echoes it back unchanged.
//
// containerd 1.6 (go-toml v1) refuses a wrong type at start ("Can't convert 5(int64) to string"),
// also an integer where a float is wanted and the other way round (measured). 2.x (go-toml v2)
// refuses a wrong type too (read in its decoder, not run here); whether it takes an integer for a
// float is not known, so machineadm asks for the float form in both versions.

export const V2_CRI = 'io.containerd.grpc.v1.cri';
export const V3_IMAGES = 'io.containerd.cri.v1.images';
export const V3_RUNTIME = 'io.containerd.cri.v1.runtime';
/** The CRI server plugin of version 3 keeps the v2 plugin ID for a few keys. */
export const V3_SERVER = V2_CRI;

/** What a TOML value must be. `duration` is a string Go's time.ParseDuration reads ("10s", "4h0m0s"). */
export type ValueType = 'string' | 'boolean' | 'integer' | 'unsigned' | 'float' | 'duration' | 'strings';

/** A table with known keys; keys not listed are not checked (containerd ignores them). */
export interface TableShape {
  kind: 'table';
  keys: Readonly<Record<string, Shape>>;
}
/** A table whose keys are names the user chooses (runtimes, registries, timeouts). */
export interface MapShape {
  kind: 'map';
  of: Shape;
}
/** A runtime's `options`: decoded into the message its runtime_type names (runc: RUNC_OPTIONS). */
export interface OptionsShape {
  kind: 'options';
}
export type Shape = ValueType | TableShape | MapShape | OptionsShape;

const table = (keys: Record<string, Shape>): TableShape => ({ kind: 'table', keys });
const mapOf = (of: Shape): MapShape => ({ kind: 'map', of });
const OPTIONS: OptionsShape = { kind: 'options' };

// The fields both major versions have (proto field numbers 1-7, 9-11).
const RUNC_OPTIONS_COMMON: Record<string, ValueType> = {
  NoPivotRoot: 'boolean',
  NoNewKeyring: 'boolean',
  ShimCgroup: 'string',
  IoUid: 'unsigned',
  IoGid: 'unsigned',
  BinaryName: 'string',
  Root: 'string',
  SystemdCgroup: 'boolean',
  CriuImagePath: 'string',
  CriuWorkPath: 'string',
};

/** Fields of containerd's runc `Options` message, by the Go names config.toml uses. */
export const RUNC_OPTIONS: Readonly<Record<2 | 3, Readonly<Record<string, ValueType>>>> = {
  2: { ...RUNC_OPTIONS_COMMON, CriuPath: 'string' },
  3: { ...RUNC_OPTIONS_COMMON, TaskApiAddress: 'string', TaskApiVersion: 'unsigned' },
};

/** runtime_type values whose options are the runc Options message. */
export function isRuncRuntime(runtimeType: unknown): boolean {
  return typeof runtimeType === 'string' && /^io\.containerd\.runc\.v[12]$/.test(runtimeType);
}

const auth = table({ username: 'string', password: 'string', auth: 'string', identitytoken: 'string' });

// Top-level tables common to both versions (services/server/config/config.go). `version` is left
// out: machineadm writes it and refuses it in extraConfig.
const TOP_LEVEL: Record<string, Shape> = {
  root: 'string',
  state: 'string',
  temp: 'string',
  oom_score: 'integer',
  imports: 'strings',
  disabled_plugins: 'strings',
  required_plugins: 'strings',
  grpc: table({ address: 'string', tcp_address: 'string', tcp_tls_ca: 'string', tcp_tls_cert: 'string', tcp_tls_key: 'string', uid: 'integer', gid: 'integer', max_recv_message_size: 'integer', max_send_message_size: 'integer' }),
  ttrpc: table({ address: 'string', uid: 'integer', gid: 'integer' }),
  debug: table({ address: 'string', uid: 'integer', gid: 'integer', level: 'string', format: 'string' }),
  metrics: table({ address: 'string', grpc_histogram: 'boolean' }),
  cgroup: table({ path: 'string' }),
  timeouts: mapOf('duration'),
  proxy_plugins: mapOf(table({ type: 'string', address: 'string', platform: 'string' })),
};

// Plugins outside the CRI whose keys `containerd config default` prints (1.6.20); unchanged in 2.x.
const OTHER_PLUGINS: Record<string, Shape> = {
  'io.containerd.gc.v1.scheduler': table({ pause_threshold: 'float', deletion_threshold: 'integer', mutation_threshold: 'integer', schedule_delay: 'duration', startup_delay: 'duration' }),
  'io.containerd.internal.v1.opt': table({ path: 'string' }),
  'io.containerd.internal.v1.restart': table({ interval: 'duration' }),
  'io.containerd.metadata.v1.bolt': table({ content_sharing_policy: 'string' }),
  'io.containerd.monitor.v1.cgroups': table({ no_prometheus: 'boolean' }),
  'io.containerd.service.v1.diff-service': table({ default: 'strings' }),
  'io.containerd.service.v1.tasks-service': table({ rdt_config_file: 'string' }),
  'io.containerd.snapshotter.v1.overlayfs': table({ root_path: 'string', upperdir_label: 'boolean' }),
  'io.containerd.snapshotter.v1.native': table({ root_path: 'string' }),
  'io.containerd.snapshotter.v1.aufs': table({ root_path: 'string' }),
  'io.containerd.snapshotter.v1.btrfs': table({ root_path: 'string' }),
  'io.containerd.snapshotter.v1.zfs': table({ root_path: 'string' }),
  'io.containerd.snapshotter.v1.devmapper': table({ root_path: 'string', pool_name: 'string', base_image_size: 'string', async_remove: 'boolean', discard_blocks: 'boolean', fs_type: 'string', fs_options: 'string' }),
};

const runtimeCommon: Record<string, Shape> = {
  runtime_type: 'string',
  runtime_path: 'string',
  pod_annotations: 'strings',
  container_annotations: 'strings',
  privileged_without_host_devices: 'boolean',
  privileged_without_host_devices_all_devices_allowed: 'boolean',
  base_runtime_spec: 'string',
  cni_conf_dir: 'string',
  cni_max_conf_num: 'integer',
  snapshotter: 'string',
  options: OPTIONS,
};
const cniCommon: Record<string, Shape> = { bin_dir: 'string', conf_dir: 'string', max_conf_num: 'integer', conf_template: 'string', ip_pref: 'string', setup_serially: 'boolean' };
const streaming: Record<string, Shape> = {
  disable_tcp_service: 'boolean',
  stream_server_address: 'string',
  stream_server_port: 'string',
  stream_idle_timeout: 'duration',
  enable_tls_streaming: 'boolean',
  x509_key_pair_streaming: table({ tls_cert_file: 'string', tls_key_file: 'string' }),
};
const runtimeSecurity: Record<string, Shape> = {
  enable_selinux: 'boolean',
  selinux_category_range: 'integer',
  max_container_log_line_size: 'integer',
  disable_apparmor: 'boolean',
  restrict_oom_score_adj: 'boolean',
  disable_proc_mount: 'boolean',
  unset_seccomp_profile: 'string',
  tolerate_missing_hugetlb_controller: 'boolean',
  disable_hugetlb_controller: 'boolean',
  device_ownership_from_security_context: 'boolean',
  ignore_image_defined_volumes: 'boolean',
  netns_mounts_under_state_dir: 'boolean',
  enable_unprivileged_ports: 'boolean',
  enable_unprivileged_icmp: 'boolean',
  enable_cdi: 'boolean',
  cdi_spec_dirs: 'strings',
  drain_exec_sync_io_timeout: 'duration',
};
const registryCommon: Record<string, Shape> = { config_path: 'string', auths: mapOf(auth), headers: mapOf('strings') };

const runtimeV2 = table({ ...runtimeCommon, runtime_engine: 'string', runtime_root: 'string', sandbox_mode: 'string' });

/** Config version 2 (containerd 1.6 and 1.7). */
export const CONFIG_V2: TableShape = table({
  ...TOP_LEVEL,
  plugin_dir: 'string',
  plugins: table({
    ...OTHER_PLUGINS,
    'io.containerd.runtime.v1.linux': table({ shim: 'string', runtime: 'string', runtime_root: 'string', no_shim: 'boolean', shim_debug: 'boolean' }),
    'io.containerd.runtime.v2.task': table({ platforms: 'strings', sched_core: 'boolean' }),
    [V2_CRI]: table({
      ...streaming,
      ...runtimeSecurity,
      sandbox_image: 'string',
      systemd_cgroup: 'boolean',
      disable_cgroup: 'boolean',
      stats_collect_period: 'integer',
      max_concurrent_downloads: 'integer',
      image_pull_progress_timeout: 'duration',
      image_pull_with_sync_fs: 'boolean',
      cni: table(cniCommon),
      containerd: table({
        default_runtime_name: 'string',
        snapshotter: 'string',
        no_pivot: 'boolean',
        disable_snapshot_annotations: 'boolean',
        discard_unpacked_layers: 'boolean',
        ignore_rdt_not_enabled_errors: 'boolean',
        ignore_blockio_not_enabled_errors: 'boolean',
        runtimes: mapOf(runtimeV2),
        default_runtime: runtimeV2,
        untrusted_workload_runtime: runtimeV2,
      }),
      registry: table({ ...registryCommon, configs: mapOf(table({ auth, tls: table({ ca_file: 'string', cert_file: 'string', key_file: 'string', insecure_skip_verify: 'boolean' }) })) }),
      image_decryption: table({ key_model: 'string' }),
    }),
  }),
});

/** Config version 3 (containerd 2.x). */
export const CONFIG_V3: TableShape = table({
  ...TOP_LEVEL,
  plugins: table({
    ...OTHER_PLUGINS,
    [V3_SERVER]: table(streaming),
    [V3_IMAGES]: table({
      snapshotter: 'string',
      disable_snapshot_annotations: 'boolean',
      discard_unpacked_layers: 'boolean',
      pinned_images: mapOf('string'),
      runtime_platforms: mapOf(table({ platform: 'string', snapshotter: 'string' })),
      registry: table({ ...registryCommon, configs: mapOf(table({ auth })) }),
      image_decryption: table({ key_model: 'string' }),
      max_concurrent_downloads: 'integer',
      concurrent_layer_fetch_buffer: 'integer',
      image_pull_progress_timeout: 'duration',
      image_pull_with_sync_fs: 'boolean',
      stats_collect_period: 'integer',
      use_local_image_pull: 'boolean',
    }),
    [V3_RUNTIME]: table({
      ...runtimeSecurity,
      ignore_deprecation_warnings: 'strings',
      enable_criu: 'boolean',
      enable_experimental_restore_via_create: 'boolean',
      stats_collect_period: 'duration',
      stats_retention_period: 'duration',
      cni: table({ ...cniCommon, bin_dirs: 'strings', use_internal_loopback: 'boolean' }),
      containerd: table({
        default_runtime_name: 'string',
        ignore_rdt_not_enabled_errors: 'boolean',
        ignore_blockio_not_enabled_errors: 'boolean',
        runtimes: mapOf(table({ ...runtimeCommon, cgroup_writable: 'boolean', sandboxer: 'string', io_type: 'string' })),
      }),
    }),
  }),
});

export const CONFIG_SHAPES: Readonly<Record<2 | 3, TableShape>> = { 2: CONFIG_V2, 3: CONFIG_V3 };
