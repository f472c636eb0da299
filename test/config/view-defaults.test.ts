// config view fills in the schema's defaults, and only those: every `default` the published JSON
// Schema names for a field of a minimal configuration shows in view's output with that value, and
// view shows no value the input and the schema do not account for.
import { describe, expect, it } from 'vitest';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { load } from 'js-yaml';
import { runCli } from '../support/cli.ts';
import { scratchDir } from '../support/tmp.ts';
import { machineConfigJsonSchema } from '../../src/config/schema/index.ts';

type Json = Record<string, any>;

const INPUT = {
  apiVersion: 'machineadm.cluster.x-k8s.io/v1alpha1',
  kind: 'MachineConfig',
  spec: { files: [{ path: '/etc/x', content: 'x' }], containerd: {}, kubernetes: { role: 'control-plane', bootstrap: 'init' }, windows: {} },
};

/** The defaults the schema names for the objects present in `value` (recursing into them). */
function schemaDefaults(schema: Json, value: unknown, path: string, out: Map<string, unknown>): void {
  const props: Json | undefined = schema.properties;
  const isArray = schema.type === 'array' || (Array.isArray(schema.type) && schema.type.includes('array'));
  if (isArray && Array.isArray(value)) value.forEach((v, i) => schemaDefaults(schema.items, v, `${path}[${i}]`, out));
  if (!props || typeof value !== 'object' || value === null) return;
  for (const [key, sub] of Object.entries(props) as [string, Json][]) {
    const at = path ? `${path}.${key}` : key;
    const present = (value as Json)[key];
    if (present === undefined && 'default' in sub) out.set(at, sub.default);
    const next = present ?? sub.default;
    if (next !== undefined) schemaDefaults(sub.anyOf?.[0] ?? sub, next, at, out);
  }
}

function leaves(value: unknown, path: string, out: Map<string, unknown>): void {
  if (value !== null && typeof value === 'object' && !Array.isArray(value) && Object.keys(value).length > 0) {
    for (const [k, v] of Object.entries(value)) leaves(v, path ? `${path}.${k}` : k, out);
  } else if (Array.isArray(value) && value.length > 0 && typeof value[0] === 'object') {
    value.forEach((v, i) => leaves(v, `${path}[${i}]`, out));
  } else out.set(path, value);
}

describe('config view and the schema', () => {
  it('view fills in exactly the schema\'s defaults', async () => {
    const dir = scratchDir('machineadm-view-');
    const file = join(dir, 'config.yaml');
    writeFileSync(file, JSON.stringify(INPUT));
    const run = await runCli(['config', 'view', '-c', file, '--root', dir]);
    expect(run.code, run.stderr).toBe(0);
    const viewed = load(run.stdout) as Json;
    const defaults = new Map<string, unknown>();
    schemaDefaults(machineConfigJsonSchema(), INPUT, '', defaults);
    expect(defaults.size).toBeGreaterThan(5);
    const shown = new Map<string, unknown>();
    leaves(viewed, '', shown);
    const given = new Map<string, unknown>();
    leaves(INPUT, '', given);
    for (const [path, value] of defaults) {
      if (value !== null && typeof value === 'object') continue;
      expect(shown.get(path), path).toEqual(value);
    }
    // Everything view shows is the input's or a default's (of the field or of an object around it).
    for (const [path, value] of shown) {
      const fromDefault = [...defaults.keys()].some((d) => path === d || path.startsWith(`${d}.`));
      if (!fromDefault) expect(given.get(path), path).toEqual(value);
    }
  });
});
