// The key table (src/config/containerd-toml/keys.ts) and the extraConfig type check against the real containerd
// (1.6 from Debian): the table has every key `config default` prints with the type of its value;
// what machineadm accepts, containerd loads; what machineadm refuses for its type, containerd
// refuses too (except runtime options, which containerd never checks: they are dropped).
import { describe, expect, it } from 'vitest';
import { execFile, execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { parse } from '@iarna/toml';
import { missingRequirement } from '../support/environment.ts';
import { scratchDir } from '../support/tmp.ts';
import { CONFIG_V2, CONFIG_V3, RUNC_OPTIONS, type Shape, type ValueType } from '../../src/config/containerd-toml/keys.ts';
import { extraConfigProblems, extraConfigTypeProblems } from '../../src/config/containerd-toml/extra-types.ts';
import { refusedKeys } from '../../src/config/containerd-toml/extra.ts';
import { renderContainerdConfig } from '../../src/containerd/config.ts';
import { chooseTarget } from '../../src/containerd/target.ts';
import { stringifyToml, type TomlTable, type TomlValue } from '../../src/config/containerd-toml/toml.ts';
import { leaves, roundTrip } from './roundtrip.ts';

const run = promisify(execFile);
const skip = missingRequirement({ commands: ['containerd'] });
const dir = scratchDir('machineadm-keys-');

// A name for the entries of each map, so a leaf below it can be written.
const MAP_SAMPLE: Record<string, string> = { runtimes: 'runc', timeouts: 'io.containerd.timeout.shim.load', auths: 'https://registry.example', configs: 'registry.example', headers: 'X-Probe', proxy_plugins: 'probe', pinned_images: 'sandbox', runtime_platforms: 'runc' };

interface KeyLeaf {
  path: string[];
  type: ValueType;
  /** Under a runtime's options (decoded later by the CRI, never checked by containerd's loader). */
  option: boolean;
}

function keyLeaves(shape: Shape, path: string[], configVersion: 2 | 3): KeyLeaf[] {
  if (typeof shape === 'string') return [{ path, type: shape, option: false }];
  if (shape.kind === 'options') return Object.entries(RUNC_OPTIONS[configVersion]).map(([k, type]) => ({ path: [...path, k], type, option: true }));
  if (shape.kind === 'map') return keyLeaves(shape.of, [...path, MAP_SAMPLE[path[path.length - 1]!] ?? 'probe'], configVersion);
  return Object.entries(shape.keys).flatMap(([k, s]) => keyLeaves(s, [...path, k], configVersion));
}

/** The shape the table gives a key path (map entries match any name), or undefined. */
function shapeAt(shape: Shape, path: readonly string[]): Shape | undefined {
  let cur: Shape | undefined = shape;
  for (const part of path) {
    if (cur === undefined || typeof cur === 'string') return undefined;
    if (cur.kind === 'options') return RUNC_OPTIONS[2][part];
    cur = cur.kind === 'map' ? cur.of : cur.keys[part];
  }
  return cur;
}

const GOOD: Record<ValueType, TomlValue> = { string: '/probe', boolean: true, integer: 7, unsigned: 7, float: 0.5, duration: '10s', strings: ['io.containerd.probe.v1.probe'] };
const WRONG: Record<ValueType, TomlValue> = { string: 5, boolean: 'true', integer: 'seven', unsigned: 'seven', float: 1, duration: 10, strings: 'probe' };

function setPath(table: TomlTable, path: readonly string[], value: TomlValue): void {
  let cur = table;
  for (const p of path.slice(0, -1)) cur = (cur[p] ??= {}) as TomlTable;
  cur[path[path.length - 1]!] = value;
}

function typeOfDefault(value: unknown): string {
  if (Array.isArray(value)) return 'strings';
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'float';
  return typeof value;
}

const compatible: Record<string, ValueType[]> = { strings: ['strings'], integer: ['integer', 'unsigned'], float: ['float'], string: ['string', 'duration'], boolean: ['boolean'] };

describe.skipIf(skip)('the containerd key table against containerd 1.6', () => {
  const defaults = skip ? {} : (parse(execFileSync('containerd', ['config', 'default'], { encoding: 'utf8' })) as Record<string, unknown>);
  const printed = leaves(defaults).filter((l) => l.path[0] !== 'version' && l.path[0] !== 'stream_processors');

  it('has every key `containerd config default` prints, with the type of its default value', () => {
    const wrong = printed.flatMap((l) => {
      const shape = shapeAt(CONFIG_V2, l.path);
      if (shape === undefined) return [`${l.path.join(' > ')}: not in the table`];
      if (typeof shape !== 'string' || !compatible[typeOfDefault(l.value)]!.includes(shape)) return [`${l.path.join(' > ')}: table says ${JSON.stringify(shape)}, default is ${JSON.stringify(l.value)}`];
      return [];
    });
    expect(wrong).toEqual([]);
    expect(printed.length).toBeGreaterThan(100);
  });

  it('lists exactly the runc options containerd 1.6 prints for runc', () => {
    const options = printed.filter((l) => l.path.join('.').startsWith('plugins.io.containerd.grpc.v1.cri.containerd.runtimes.runc.options.')).map((l) => l.path.at(-1));
    expect(options.sort()).toEqual(Object.keys(RUNC_OPTIONS[2]).sort());
  });

  // Keys containerd 1.6 knows (1.7-only keys are ignored by 1.6 whatever their type), that
  // machineadm does not refuse for other reasons (registry TLS next to config_path), left out:
  // imports (containerd reads the files) and proxy plugins (it registers them).
  const known = new Set(printed.map((l) => l.path.join('\u0000')));
  const sample = keyLeaves(CONFIG_V2, [], 2).filter((l) => !['imports', 'proxy_plugins'].includes(l.path[0]!) && refusedKeys(tableOf(l.path, GOOD[l.type]), '').length === 0);
  const known16 = sample.filter((l) => l.option || known.has(l.path.join('\u0000')));

  function tableOf(path: readonly string[], value: TomlValue): TomlTable {
    const t: TomlTable = {};
    setPath(t, path, value);
    return t;
  }

  it('accepts every key of the table with a value of its type, and containerd loads the rendered file with each value', async () => {
    const extra: TomlTable = {};
    for (const l of sample) setPath(extra, l.path, GOOD[l.type]);
    const text = stringifyToml(extra);
    const rendered = renderContainerdConfig({ extraConfig: text }, chooseTarget({ containerdVersion: '1.6.20' }, undefined));
    const result = await roundTrip('containerd', dir, 'all-keys', rendered);
    // containerd 1.6 drops the keys only 1.7 knows; every key it knows comes back as written.
    const mismatched = result.mismatches.filter((m) => known16.some((l) => m.startsWith(`${l.path.join(' > ')}:`)));
    expect(mismatched).toEqual([]);
    console.log(`extraConfig with ${sample.length} keys of the v2 table: containerd 1.6 loaded it, ${result.checked - result.mismatches.length} values came back as written`);
  });

  it('refuses a value of the wrong type for every key containerd 1.6 reads, and containerd refuses each of them too', async () => {
    const cases = known16.filter((l) => !l.option);
    const disagreements: string[] = [];
    const queue = [...cases];
    const worker = async () => {
      for (let l = queue.shift(); l; l = queue.shift()) {
        const text = stringifyToml(tableOf(l.path, WRONG[l.type]));
        const ours = extraConfigTypeProblems(parse(text) as TomlTable, text, 2);
        const file = join(dir, `wrong-${cases.indexOf(l)}.toml`);
        writeFileSync(file, `version = 2\n${text}`);
        const theirs = await run('containerd', ['--config', file, 'config', 'dump'], { timeout: 30_000 }).then(
          () => 'loaded',
          (e: { stderr?: string }) => (/Can't convert|failed to unmarshal|unmarshal text/.test(e.stderr ?? '') ? 'refused' : `failed: ${e.stderr}`),
        );
        if (ours.length === 0 || theirs !== 'refused') disagreements.push(`${l.path.join(' > ')} = ${JSON.stringify(WRONG[l.type])}: machineadm ${ours.length ? 'refuses' : 'accepts'}, containerd ${theirs}`);
      }
    };
    await Promise.all([worker(), worker()]);
    expect(disagreements).toEqual([]);
    console.log(`${cases.length} wrong-typed values: machineadm and containerd 1.6 refuse each one`);
  });

  it('refuses a misspelled runc option, which containerd loads and echoes back unchanged', async () => {
    const text = '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]\nSystemdCgroups = true\n';
    expect(extraConfigTypeProblems(parse(text) as TomlTable, text, 2).map((p) => p.message)).toEqual([
      'plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options.SystemdCgroups is not a runc option, and containerd would drop it without a word (did you mean "SystemdCgroup"?)',
    ]);
    const result = await roundTrip('containerd', dir, 'misspelled-option', `version = 2\n${text}`);
    expect(result.mismatches).toEqual([]);
  });
});

describe('the key table for config version 3', () => {
  it.each([
    [['plugins', 'io.containerd.cri.v1.images', 'pinned_images', 'sandbox'], 'string'],
    [['plugins', 'io.containerd.cri.v1.images', 'registry', 'config_path'], 'string'],
    [['plugins', 'io.containerd.cri.v1.runtime', 'containerd', 'runtimes', 'runc', 'runtime_type'], 'string'],
    [['plugins', 'io.containerd.cri.v1.runtime', 'cni', 'bin_dirs'], 'strings'],
    [['plugins', 'io.containerd.cri.v1.runtime', 'enable_unprivileged_ports'], 'boolean'],
    [['plugins', 'io.containerd.grpc.v1.cri', 'stream_server_port'], 'string'],
  ])('knows %j as %s', (path, type) => {
    expect(shapeAt(CONFIG_V3, path)).toBe(type);
  });

  it.each([[['plugins', 'io.containerd.grpc.v1.cri', 'sandbox_image']], [['plugins', 'io.containerd.cri.v1.runtime', 'containerd', 'snapshotter']], [['plugin_dir']]])('does not know %j (not read by containerd 2.x)', (path) => {
    expect(shapeAt(CONFIG_V3, path)).toBeUndefined();
  });
});

describe('durations in extraConfig', () => {
  it('are read as Go reads them, with micro written either way (U+00B5 or U+03BC)', () => {
    const problems = (value: string) => extraConfigProblems(`[timeouts]\n"io.containerd.timeout.shim.cleanup" = "${value}"\n`);
    for (const ok of ['5\u00b5s', '5\u03bcs', '1h30m', '0', '1.5s']) expect(problems(ok), ok).toEqual([]);
    for (const bad of ['5xs', '5', 'µs']) expect(problems(bad), bad).not.toEqual([]);
  });
});
