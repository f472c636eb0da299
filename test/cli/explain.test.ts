// explain FIELD and config print-defaults, through the command line.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { load } from 'js-yaml';
import { describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.ts';
import { scratchDir } from '../support/tmp.ts';
import { machineConfigJsonSchema } from '../../src/config/schema/index.ts';
import { allFields } from '../../src/config/schema/fields.ts';

describe('machineadm explain', () => {
  it('prints a field with its type, description, example and child fields', async () => {
    const { code, stdout } = await runCli(['explain', 'spec.kubernetes.node.taints']);
    expect(code).toBe(0);
    expect(stdout).toContain('FIELD: spec.kubernetes.node.taints <[]object>');
    expect(stdout).toMatch(/DESCRIPTION:\n {4}taints the node registers with/);
    expect(stdout).toMatch(/EXAMPLE:\n {4}taints:\n {6}- key: dedicated/);
    expect(stdout).toMatch(/FIELDS:\n {2}key <string> -required-\n {6}the taint key/);
    expect(stdout).toContain('effect <"NoSchedule" | "PreferNoSchedule" | "NoExecute"> -required-');
  });

  it("lists the fields of an alternative of several fields (a provider ID's template and values), not those of a one-field reference", async () => {
    const providerID = await runCli(['explain', 'spec.kubernetes.node.providerID']);
    expect(providerID.stdout).toMatch(/FIELDS:\n {2}template <string> -required-\n[^\n]*\n {2}values <map\[string\]\(string \| \{ fromMachine: \.\.\. \} \| \{ fromInstanceData: \.\.\. \}\)> -required-/);
    expect((await runCli(['explain', 'spec.kubernetes.node.providerID.values'])).code).toBe(0);
    const name = await runCli(['explain', 'spec.kubernetes.node.name']);
    expect(name.stdout).toContain('FIELD: spec.kubernetes.node.name <string | { fromMachine: ... } | { fromInstanceData: ... }>');
    expect(name.stdout).not.toContain('FIELDS:');
  });

  it('prints the default of a defaulted field', async () => {
    const { stdout } = await runCli(['explain', 'spec.kubernetes.timeoutSeconds']);
    expect(stdout).toMatch(/DEFAULT:\n {4}600\n/);
  });

  it('explains every field of the schema', async () => {
    const failed: string[] = [];
    for (const field of allFields(machineConfigJsonSchema())) {
      const { code, stdout } = await runCli(['explain', field.path.replaceAll('*', 'example.com')]);
      if (code !== 0 || !stdout.includes(`FIELD: ${field.path} `) || !stdout.includes('EXAMPLE:')) failed.push(field.path);
    }
    expect(failed).toEqual([]);
  });

  it.each([
    ['a key of a map of strings', 'spec.sysctls.net.ipv4.ip_forward', 'FIELD: spec.sysctls.* <string>'],
    ['a map of strings by *', 'spec.kubernetes.node.labels.*', 'FIELD: spec.kubernetes.node.labels.* <'],
    ['the form validation prints: a quoted key', 'spec.containerd.registries["docker.io"].mirrors', 'FIELD: spec.containerd.registries.*.mirrors <[]object>'],
    ['the form validation prints: a list index', 'spec.files[0].path', 'FIELD: spec.files.path <string>'],
  ])('explains %s (%s)', async (_what, path, heading) => {
    const { code, stdout, stderr } = await runCli(['explain', path]);
    expect(stderr).toBe('');
    expect(code).toBe(0);
    expect(stdout).toContain(heading);
  });

  it('names the closest field and the known ones for a misspelt path (exit 2)', async () => {
    const { code, stdout, stderr } = await runCli(['explain', 'spec.kubernetes.node.tains']);
    expect(code).toBe(2);
    expect(stdout).toBe('');
    expect(stderr).toBe('error: explain spec.kubernetes.node.tains: spec.kubernetes.node has no field "tains"\nhint: did you mean "taints"? its fields: name, ip, providerID, labels, taints, kubeletExtraArgs, imagePullPolicy, imagePullSerial\n');
  });

  it('gives the field as data with -o json, and the fields below it with --recursive', async () => {
    const { stdout } = await runCli(['explain', 'spec.report', '-o', 'json', '--recursive']);
    const data = JSON.parse(stdout) as { path: string; default: unknown; fields: { path: string }[] };
    expect(data.path).toBe('spec.report');
    expect(data.default).toEqual({ clusterAPISentinel: true, deadlineSeconds: 30 });
    expect(data.fields.map((f) => f.path)).toContain('spec.report.endpoints.bearerToken');
  });
});

describe('machineadm config print-defaults', () => {
  it('prints a configuration that config validate accepts', async () => {
    const printed = await runCli(['config', 'print-defaults']);
    expect(printed.code).toBe(0);
    const file = join(scratchDir(), 'defaults.yaml');
    writeFileSync(file, printed.stdout);
    const validated = await runCli(['config', 'validate', '-c', file, '--root', scratchDir()]);
    expect(validated.stderr).toBe('');
    expect(validated.code).toBe(0);
  });

  it('leaves out spec.kubernetes.install, whose presence asks for an install', async () => {
    const config = load((await runCli(['config', 'print-defaults'])).stdout) as { spec: { kubernetes: Record<string, unknown> } };
    expect(config.spec.kubernetes).not.toHaveProperty('install');
  });

  it('writes out every default of the sections it holds', async () => {
    const config = load((await runCli(['config', 'print-defaults'])).stdout) as Record<string, unknown>;
    const valueAt = (path: string): unknown => path.split('.').reduce<unknown>((at, key) => (at as Record<string, unknown> | undefined)?.[key], config);
    const defaulted = allFields(machineConfigJsonSchema()).filter((f) => f.default !== undefined && /^spec\.(kubernetes|report|security)\./.test(f.path) && !f.path.includes('endpoints') && !f.path.startsWith('spec.kubernetes.install.'));
    expect(defaulted.length).toBeGreaterThan(5);
    for (const f of defaulted) expect(valueAt(f.path), f.path).toEqual(f.default);
  });
});
