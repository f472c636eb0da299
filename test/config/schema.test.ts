// The committed JSON Schema must be what `machineadm config schema` prints; UPDATE_GOLDEN=1 rewrites it.
import { readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.ts';
import { machineConfigJsonSchema } from '../../src/config/schema/index.ts';

const COMMITTED = 'docs/schema/machineconfig-v1alpha1.json';
const COMMITTED_DROP_IN = 'docs/schema/machineconfig-dropin-v1alpha1.json';

async function printedSchema(...flags: string[]): Promise<string> {
  let out = '';
  const code = await main(['config', 'schema', ...flags], { stdout: (t) => void (out += t), stderr: () => {}, readStdin: async () => Buffer.alloc(0), env: {}, cwd: process.cwd(), interactive: false });
  expect(code).toBe(0);
  return out;
}

describe('the published JSON Schema', () => {
  it.each([
    [COMMITTED, []],
    [COMMITTED_DROP_IN, ['--drop-in']],
  ])('%s is what `machineadm config schema %s` prints, byte for byte', async (committed, flags) => {
    const printed = await printedSchema(...flags);
    if (process.env.UPDATE_GOLDEN === '1') {
      mkdirSync('docs/schema', { recursive: true });
      writeFileSync(committed, printed);
    }
    expect(printed, `${committed} is out of date: run UPDATE_GOLDEN=1 npx vitest run test/config/schema.test.ts and commit it`).toBe(readFileSync(committed, 'utf8'));
  });

  it('describes every section, marks secrets and forbids unknown fields', () => {
    const schema = machineConfigJsonSchema() as any;
    expect(schema.properties.apiVersion.enum).toEqual(['machineadm.cluster.x-k8s.io/v1alpha1']);
    expect(Object.keys(schema.properties.spec.properties)).toEqual(expect.arrayContaining(['kernelModules', 'sysctls', 'files', 'containerd', 'kubernetes', 'domainJoin', 'windows', 'report', 'security']));
    expect(schema.additionalProperties).toBe(false);
    expect(schema.properties.spec.properties.domainJoin.properties.credentials.properties.password['x-secret']).toBe(true);
  });
});
