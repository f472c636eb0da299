// Every golden case and a seeded random set of valid inputs go through the real containerd's
// `config dump`; each value machineadm set must come back unchanged. containerd 2.x (config
// version 3) is checked only when MACHINEADM_CONTAINERD2 names its binary (Debian stable has 1.6).
import { describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from '@iarna/toml';
import { missingRequirement } from '../support/environment.ts';
import { scratchDir } from '../support/tmp.ts';
import { parseFacts } from './facts.ts';
import { goldenCases, parseSpec } from './cases.ts';
import { renderContainerdConfig } from '../../src/containerd/config.ts';
import { chooseTarget } from '../../src/containerd/target.ts';
import type { ContainerdSpec } from '../../src/config/schema/index.ts';
import { roundTrip, seeded } from './roundtrip.ts';

const skip1 = missingRequirement({ commands: ['containerd'] });
const base = scratchDir('machineadm-dump-');
const subdir = (name: string) => mkdtempSync(join(base, name));
const containerd2 = process.env.MACHINEADM_CONTAINERD2;
const skip2 = !containerd2
  ? 'MACHINEADM_CONTAINERD2 is not set (containerd 2.x is not a Debian stable package; unpack Debian unstable\'s with dpkg-deb -x and point this variable at bin/containerd)'
  : !existsSync(containerd2)
    ? `MACHINEADM_CONTAINERD2=${containerd2} does not exist`
    : undefined;
if (skip2) console.warn(`skipping the containerd 2.x round trip: ${skip2}`);

function versionOf(binary: string): string {
  return parseFacts(execFileSync(binary, ['--version'], { encoding: 'utf8' }));
}

const CRI = 'io.containerd.grpc.v1.cri';
const IMAGES = 'io.containerd.cri.v1.images';
const RUNTIME = 'io.containerd.cri.v1.runtime';

// Settings known to the containerd of each config version, with values to pick from.
const V2_POOL: [string[], unknown[]][] = [
  [['oom_score'], [-999, 0, -500]],
  [['plugins', CRI, 'max_concurrent_downloads'], [1, 3, 5, 10]],
  [['plugins', CRI, 'max_container_log_line_size'], [16384, -1, 65536]],
  [['plugins', CRI, 'enable_unprivileged_ports'], [true, false]],
  [['plugins', CRI, 'enable_unprivileged_icmp'], [true, false]],
  [['plugins', CRI, 'device_ownership_from_security_context'], [true, false]],
  [['plugins', CRI, 'disable_apparmor'], [true, false]],
  [['plugins', CRI, 'stream_idle_timeout'], ['4h0m0s', '30m0s']],
  [['plugins', CRI, 'tolerate_missing_hugetlb_controller'], [true, false]],
  [['plugins', CRI, 'ignore_image_defined_volumes'], [true, false]],
  [['plugins', CRI, 'sandbox_image'], ['registry.internal.example/pause:3.9']],
  [['plugins', CRI, 'cni', 'bin_dir'], ['/opt/cni/bin', '/usr/lib/cni']],
  [['plugins', CRI, 'cni', 'conf_dir'], ['/etc/cni/net.d', '/etc/cni/custom.d']],
  [['plugins', CRI, 'cni', 'max_conf_num'], [1, 2]],
  [['plugins', CRI, 'containerd', 'snapshotter'], ['overlayfs', 'native']],
  [['plugins', CRI, 'containerd', 'discard_unpacked_layers'], [true, false]],
  [['plugins', CRI, 'containerd', 'runtimes', 'runc', 'options', 'BinaryName'], ['/usr/local/sbin/runc', '/usr/sbin/runc']],
  [['plugins', CRI, 'containerd', 'runtimes', 'runc', 'options', 'NoPivotRoot'], [true, false]],
  [['plugins', 'io.containerd.internal.v1.opt', 'path'], ['/opt/containerd', '/var/lib/containerd-opt']],
  [['grpc', 'max_recv_message_size'], [16777216, 33554432]],
  [['debug', 'level'], ['info', 'debug']],
];

const V3_POOL: [string[], unknown[]][] = [
  [['oom_score'], [-999, 0]],
  [['plugins', IMAGES, 'max_concurrent_downloads'], [3]],
  [['plugins', IMAGES, 'use_local_image_pull'], [true, false]],
  [['plugins', IMAGES, 'image_pull_progress_timeout'], ['5m0s', '10m0s']],
  [['plugins', RUNTIME, 'max_container_log_line_size'], [16384, 65536]],
  [['plugins', RUNTIME, 'enable_unprivileged_ports'], [true, false]],
  [['plugins', RUNTIME, 'device_ownership_from_security_context'], [true, false]],
  [['plugins', RUNTIME, 'cni', 'conf_dir'], ['/etc/cni/net.d', '/etc/cni/custom.d']],
  [['plugins', RUNTIME, 'containerd', 'runtimes', 'runc', 'options', 'BinaryName'], ['/usr/local/sbin/runc']],
  [['plugins', 'io.containerd.internal.v1.opt', 'path'], ['/opt/containerd']],
];

function setPath(table: Record<string, any>, path: string[], value: unknown): void {
  let cur = table;
  for (const p of path.slice(0, -1)) cur = cur[p] ??= {};
  cur[path[path.length - 1]!] = value;
}

/** A valid random spec.containerd (parsed by the schema, like real input). */
function randomSpec(random: () => number, pool: [string[], unknown[]][]): ContainerdSpec {
  const pick = <T,>(list: readonly T[]): T => list[Math.floor(random() * list.length)]!;
  const raw: Record<string, unknown> = {};
  if (random() < 0.7) raw.sandboxImage = pick(['registry.k8s.io/pause:3.10', 'registry.k8s.io/pause:3.9', 'registry.internal.example:5000/k8s/pause:3.10.1']);
  if (random() < 0.8) raw.cgroupDriver = pick(['systemd', 'cgroupfs']);
  if (random() < 0.5) raw.registries = { 'docker.io': { mirrors: [{ url: 'https://mirror.internal.example:5000' }] } };
  if (random() < 0.8) {
    const extra: Record<string, any> = {};
    for (const [path, values] of pool) if (random() < 0.35) setPath(extra, path, pick(values));
    if (Object.keys(extra).length) raw.extraConfig = stringify(extra);
  }
  return parseSpec(raw, 'random case');
}

interface Totals {
  files: number;
  keys: number;
  distinct: Set<string>;
}

async function check(binary: string, configVersion: 2 | 3, dir: string, totals: Totals): Promise<void> {
  const version = versionOf(binary);
  const cases = goldenCases().filter((c) => chooseTarget(c.facts, c.spec).configVersion === configVersion);
  const random = seeded(20261129 + configVersion);
  const pool = configVersion === 2 ? V2_POOL : V3_POOL;
  const inputs: [string, ContainerdSpec][] = [...cases.map((c) => [`golden-${c.name}`, c.spec] as [string, ContainerdSpec]), ...Array.from({ length: 50 }, (_, i) => [`random-${i}`, randomSpec(random, pool)] as [string, ContainerdSpec])];
  const failures: string[] = [];
  const queue = [...inputs];
  const worker = async () => {
    for (let next = queue.shift(); next; next = queue.shift()) {
      const [name, spec] = next;
      const text = renderContainerdConfig(spec, chooseTarget({ containerdVersion: version }, spec));
      const result = await roundTrip(binary, dir, name, text);
      totals.files++;
      totals.keys += result.checked;
      for (const k of result.paths) totals.distinct.add(k);
      failures.push(...result.mismatches.map((m) => `${name}: ${m}`));
    }
  };
  await Promise.all([worker(), worker()]);
  expect(failures).toEqual([]);
  expect(totals.files).toBe(inputs.length);
}

describe('containerd config dump round trip', () => {
  it.skipIf(skip1)('returns every value machineadm set, for the golden cases and 50 random inputs (config version 2, installed containerd)', async () => {
    const totals: Totals = { files: 0, keys: 0, distinct: new Set() };
    await check('containerd', 2, subdir('v2-'), totals);
    console.log(`containerd ${versionOf('containerd')} round trip: ${totals.files} configurations, ${totals.keys} rendered values (${totals.distinct.size} distinct keys) compared with config dump`);
    expect(totals.keys).toBeGreaterThan(totals.files * 5);
  });

  it.skipIf(skip1 || skip2)('returns every value machineadm set (config version 3, containerd 2.x from MACHINEADM_CONTAINERD2)', async () => {
    const totals: Totals = { files: 0, keys: 0, distinct: new Set() };
    await check(containerd2!, 3, subdir('v3-'), totals);
    console.log(`containerd ${versionOf(containerd2!)} round trip: ${totals.files} configurations, ${totals.keys} rendered values (${totals.distinct.size} distinct keys) compared with config dump`);
  });

  it.skipIf(skip1)('keeps a whole-number float of extraConfig a float (pause_threshold = 1.0), which containerd 1.x refuses as an integer', async () => {
    const spec = parseSpec({ extraConfig: '[plugins."io.containerd.gc.v1.scheduler"]\npause_threshold = 1.0\ndeletion_threshold = 0\n' }, 'float case');
    const text = renderContainerdConfig(spec, chooseTarget({ containerdVersion: versionOf('containerd') }, spec));
    expect(text).toContain('pause_threshold = 1.0\n');
    expect(text).toContain('deletion_threshold = 0\n');
    const result = await roundTrip('containerd', subdir('float-'), 'float', text);
    expect(result.mismatches).toEqual([]);
  });

  it.skipIf(skip1)('catches a key containerd drops (a misspelled option is reported, not passed)', async () => {
    const text = 'version = 2\n[plugins."io.containerd.grpc.v1.cri"]\nsandbox_imagee = "x"\n';
    const result = await roundTrip('containerd', subdir('typo-'), 'typo', text);
    expect(result.mismatches.join('\n')).toContain('sandbox_imagee');
  });
});
