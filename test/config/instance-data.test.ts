// Values from cloud-init's instance data ({ fromInstanceData: ds.meta_data.label }): read from the
// file cloud-init writes, as its templates read it; a provider ID made of them ({ template,
// values }); each refusal before anything changes, naming the key and what to do.
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseWith } from '../../src/config/schema/dsl.ts';
import { machineConfigSchema } from '../../src/config/schema/index.ts';
import { runCli } from '../support/cli.ts';
import { scratchDir } from '../support/tmp.ts';

// A Linode-like datasource with cloud-init's own keys: a dashed key, a number, a redacted one, a map.
const INSTANCE_DATA = {
  ds: { id: 'ocid1.instance.oc1.phx.abc', meta_data: { label: 'web-1', 'local-ipv4': '10.0.0.9', vm_host: 'host-3', instance_id: 'vm-42', rack: 7, 'user-data': 'redacted for non-root user', placement: { zone: 'a' }, bad: 'a/b' } },
  v1: { instance_id: 'i-1', cloud_name: 'linode' },
};

function rootWith(data: unknown = INSTANCE_DATA): string {
  const root = scratchDir();
  mkdirSync(join(root, 'run/cloud-init'), { recursive: true });
  writeFileSync(join(root, 'run/cloud-init/instance-data.json'), typeof data === 'string' ? data : JSON.stringify(data));
  return root;
}

function configWith(node: string, extra = ''): string {
  const file = join(scratchDir(), 'node.yaml');
  const head = 'apiVersion: machineadm.cluster.x-k8s.io/v1alpha1\nkind: MachineConfig\nspec:\n';
  const kubernetes = `  kubernetes:\n    role: worker\n    bootstrap: join\n    controlPlaneEndpoint: cp.example:6443\n    token: abcdef.0123456789abcdef\n    caCertHashes: ["sha256:${'0f'.repeat(32)}"]\n    node:\n${node.replace(/^/gm, '      ')}\n`;
  writeFileSync(file, head + extra + kubernetes);
  return file;
}

async function planJson(config: string, root: string, ...args: string[]): Promise<{ code: number; stderr: string; values: Array<{ field: string; value: string; source: string }> }> {
  const r = await runCli(['plan', '-c', config, '--root', root, '-o', 'json', ...args], { env: { MACHINEADM_IMDS_ENDPOINT: 'http://127.0.0.1:9' } });
  return { code: r.code, stderr: r.stderr, values: r.code === 0 ? JSON.parse(r.stdout).machineValues : [] };
}

describe('a field that reads a key of cloud-init\'s instance data', () => {
  it('takes the value as a cloud-init template would: a dashed key by its "_" name, a number as text, ds["id"], v1', async () => {
    const config = configWith(
      [
        'name: { fromInstanceData: ds.meta_data.label }',
        'ip: [{ fromInstanceData: ds.meta_data.local_ipv4 }]',
        'labels:',
        '  example.com/rack: { fromInstanceData: ds.meta_data.rack }',
        '  example.com/instance: { fromInstanceData: v1.instance_id }',
        'providerID: { template: "oci://${ID}", values: { ID: { fromInstanceData: \'ds["id"]\' } } }',
      ].join('\n'),
    );
    const { code, stderr, values } = await planJson(config, rootWith());
    expect(stderr).toBe('');
    expect(code).toBe(0);
    const byField = Object.fromEntries(values.map((v) => [v.field, [v.value, v.source]]));
    expect(byField).toEqual({
      'spec.kubernetes.node.name': ['web-1', '/run/cloud-init/instance-data.json'],
      'spec.kubernetes.node.ip[0]': ['10.0.0.9', '/run/cloud-init/instance-data.json'],
      'spec.kubernetes.node.labels["example.com/rack"]': ['7', '/run/cloud-init/instance-data.json'],
      'spec.kubernetes.node.labels["example.com/instance"]': ['i-1', '/run/cloud-init/instance-data.json'],
      'spec.kubernetes.node.providerID.values.ID': ['ocid1.instance.oc1.phx.abc', '/run/cloud-init/instance-data.json'],
      'spec.kubernetes.node.providerID': ['oci://ocid1.instance.oc1.phx.abc', 'spec.kubernetes.node.providerID.values'],
    });
  });

  it('takes a number as the file writes it, not as a double', async () => {
    const config = configWith(['name: node-1', 'labels:', '  example.com/serial: { fromInstanceData: ds.meta_data.serial }', '  example.com/rack: { fromInstanceData: ds.meta_data.rack }', '  example.com/size: { fromInstanceData: ds.meta_data.size }'].join('\n'));
    const root = rootWith('{"ds": {"meta_data": {"serial": 12345678901234567891, "rack": 7.50, "size": 1e3}}}');
    const { code, stderr, values } = await planJson(config, root);
    expect(code, stderr).toBe(0);
    expect(values.map((v) => v.value)).toEqual(['12345678901234567891', '7.50', '1e3']);
  });

  // cloud-init's templates see each key as written and, for one with "-" or ".", under its "_"
  // alias, set in the keys' sorted order: of two that answer to one name, the later wins.
  it.each<[string, Record<string, string>, string]>([
    ['two dashed keys: the later in sorted order', { 'a-b_c': 'first', 'a_b-c': 'second' }, 'second'],
    ['a key as written and a dashed one: the key as written (it sorts later)', { 'a_b_c': 'exact', 'a-b-c': 'dashed' }, 'exact'],
    ['a dotted key', { 'a.b.c': 'dotted' }, 'dotted'],
  ])('finds a key as cloud-init does: %s', async (_name, meta, expected) => {
    const config = configWith('name: node-1\nlabels: { example.com/x: { fromInstanceData: ds.meta_data.a_b_c } }');
    const { code, stderr, values } = await planJson(config, rootWith({ ds: { meta_data: meta } }));
    expect(code, stderr).toBe(0);
    expect(values.map((v) => v.value)).toEqual([expected]);
  });

  it('ends with exit 6 before any change when the file cannot be read (a folder in its place)', async () => {
    const root = scratchDir();
    mkdirSync(join(root, 'run/cloud-init/instance-data.json'), { recursive: true });
    const before = readdirSync(root, { recursive: true }).sort();
    const r = await runCli(['init', '-c', configWith('name: { fromInstanceData: ds.meta_data.label }'), '--root', root], { env: { MACHINEADM_IMDS_ENDPOINT: 'http://127.0.0.1:9' } });
    expect(r.stderr).toMatch(/^error: cannot read ds\.meta_data\.label: \/run\/cloud-init\/instance-data\.json: EISDIR .*; nothing was changed\n/);
    expect(r.code).toBe(6);
    expect(readdirSync(root, { recursive: true }).sort()).toEqual(before);
  });

  it('takes --set KEY=VALUE instead, also a key whose brackets hold "="', async () => {
    const config = configWith('name: { fromInstanceData: ds.meta_data.label }\nlabels: { example.com/x: { fromInstanceData: \'ds.meta_data["a=b"]\' } }');
    const { code, values } = await planJson(config, scratchDir(), '--set', 'ds.meta_data.label=other-1', '--set', 'ds.meta_data["a=b"]=c-d');
    expect(code).toBe(0);
    expect(values.map((v) => [v.value, v.source])).toEqual([['other-1', '--set'], ['c-d', '--set']]);
  });

  it('takes --set of the same key however written: brackets for dots, a dashed key for its "_" name', async () => {
    const config = configWith('name: { fromInstanceData: ds.meta_data.label }\nip: [{ fromInstanceData: ds.meta_data.local_ipv4 }]');
    const args = ['--set', 'ds["meta_data"]["label"]=web-9', '--set', 'ds.meta_data["local-ipv4"]=10.0.0.99'];
    // Without the file, and with a file whose values --set overrides.
    for (const root of [scratchDir(), rootWith()]) {
      const { code, stderr, values } = await planJson(config, root, ...args);
      expect(code, stderr).toBe(0);
      expect(values.map((v) => [v.field, v.value, v.source])).toEqual([
        ['spec.kubernetes.node.name', 'web-9', '--set'],
        ['spec.kubernetes.node.ip[0]', '10.0.0.99', '--set'],
      ]);
    }
  });

  it.each<[string, string, unknown, RegExp]>([
    ['is not there (cloud-init has not run)', 'ds.meta_data.label', undefined, /^error: cannot read ds\.meta_data\.label: \/run\/cloud-init\/instance-data\.json is not there .*; nothing was changed\nhint: run machineadm after cloud-init's first stage/],
    ['is not JSON', 'ds.meta_data.label', '{"ds": ', /^error: \/run\/cloud-init\/instance-data\.json is not JSON/],
    ['holds the key redacted (sensitive)', 'ds.meta_data.user_data', INSTANCE_DATA, /^error: ds\.meta_data\.user_data in \/run\/cloud-init\/instance-data\.json is one cloud-init holds sensitive/],
    ['holds a map under the key', 'ds.meta_data.placement', INSTANCE_DATA, /^error: ds\.meta_data\.placement in \/run\/cloud-init\/instance-data\.json is a map, not one value\nhint: name the key of a string or a number within it/],
    ['holds a list under the key', 'ds.meta_data.keys', { ds: { meta_data: { keys: ['a'] } } }, /^error: ds\.meta_data\.keys in \/run\/cloud-init\/instance-data\.json is a list, not one value/],
    ['holds null under the key', 'ds.meta_data.label', { ds: { meta_data: { label: null } } }, /^error: ds\.meta_data\.label in \/run\/cloud-init\/instance-data\.json is null, not one value/],
    ['is larger than 4 MiB', 'ds.meta_data.label', JSON.stringify({ ds: { meta_data: { label: 'web-1', pad: 'x'.repeat(4 * 1024 * 1024) } } }), /^error: \/run\/cloud-init\/instance-data\.json is larger than 4 MiB/],
  ])('ends with exit 6 before any change when the file %s', async (_name, key, data, message) => {
    const root = data === undefined ? scratchDir() : rootWith(data);
    const before = readdirSync(root, { recursive: true }).sort();
    const r = await runCli(['init', '-c', configWith(`name: { fromInstanceData: ${key} }`), '--root', root], { env: { MACHINEADM_IMDS_ENDPOINT: 'http://127.0.0.1:9' } });
    expect(r.stderr).toMatch(message);
    expect(r.code).toBe(6);
    expect(readdirSync(root, { recursive: true }).sort()).toEqual(before);
  });

  it('refuses a key the file lacks, and a value unfit for its field, naming the field (exit 2)', async () => {
    const missing = await runCli(['plan', '-c', configWith('name: { fromInstanceData: ds.meta_data.nothing }'), '--root', rootWith()]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('spec.kubernetes.node.name: { fromInstanceData: ds.meta_data.nothing }: this machine gave no ds.meta_data.nothing');
    // A "/" in one part would name another machine.
    const part = await runCli(['plan', '-c', configWith('providerID: { template: "oci://${ID}", values: { ID: { fromInstanceData: ds.meta_data.bad } } }'), '--root', rootWith()]);
    expect(part.code).toBe(2);
    expect(part.stderr).toContain('spec.kubernetes.node.providerID.values.ID: ds.meta_data.bad from /run/cloud-init/instance-data.json "a/b" cannot be part of a provider ID');
  });

  it('reads nothing of the instance data or a metadata service when no field asks for it', async () => {
    const r = await runCli(['plan', '-c', configWith('name: node-1'), '--root', rootWith('not json at all')]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
  });
});

// reset undoes a run from its records: cloud-init is off on a reset boot (or its file is gone),
// and a metadata service may no longer answer; the values are those of the run it undoes.
describe('reset of a run that read the instance data', () => {
  it('needs neither the file nor --set: it takes the values of the run it undoes', async () => {
    const config = join(scratchDir(), 'files.yaml');
    writeFileSync(config, 'apiVersion: machineadm.cluster.x-k8s.io/v1alpha1\nkind: MachineConfig\nspec:\n  files:\n    - path: /etc/example/name\n      content: "name=${NAME}\\n"\n      values: { NAME: { fromInstanceData: ds.meta_data.label } }\n');
    const root = rootWith();
    const init = await runCli(['init', '-c', config, '--root', root, '-o', 'json']);
    expect(init.code, init.stderr).toBe(0);
    expect(readFileSync(join(root, 'etc/example/name'), 'utf8')).toBe('name=web-1\n');
    rmSync(join(root, 'run/cloud-init'), { recursive: true });
    const reset = await runCli(['reset', '-c', config, '--root', root, '-o', 'json'], { env: { MACHINEADM_IMDS_ENDPOINT: 'http://127.0.0.1:9' } });
    expect(reset.stderr).not.toContain('error:');
    expect(reset.code).toBe(0);
    expect(existsSync(join(root, 'etc/example/name'))).toBe(false);
    const result = JSON.parse(readFileSync(join(root, 'run/machineadm/result.json'), 'utf8'));
    expect(result.command).toBe('reset');
    expect(result.machine.machineValues).toEqual([
      { field: 'spec.files[0].values.NAME', reference: 'ds.meta_data.label', value: 'web-1', source: 'the run being reset (/run/cloud-init/instance-data.json)' },
    ]);
  });
});

describe('the schema of instance-data keys and provider ID templates', () => {
  const nodeOf = (node: Record<string, unknown>) => parseWith(machineConfigSchema, { apiVersion: 'machineadm.cluster.x-k8s.io/v1alpha1', kind: 'MachineConfig', spec: { kubernetes: { role: 'worker', bootstrap: 'join', controlPlaneEndpoint: 'cp.example:6443', token: 'abcdef.0123456789abcdef', caCertHashes: [`sha256:${'0f'.repeat(32)}`], node } } });
  const messages = (node: Record<string, unknown>) => nodeOf(node).issues.map((i) => `${i.path.join('.')}: ${i.message}`);

  it.each(['ds.meta_data.label', 'ds["id"]', "ds.meta_data['local-ipv4']", 'v1.instance_id', 'v2.x[0].y'])('accepts the key %s', (key) => {
    expect(messages({ name: { fromInstanceData: key } })).toEqual([]);
  });

  it.each(['ds.meta_data.local_hostname.split(".")[0]', 'ds.meta_data.label | lower', 'meta_data.label', 'CLUSTER_APIENDPOINT_HOST', '.kubernetesVersion', 'ds', 'ds.meta_data.label ', 'ds["a\\"b"]'])('refuses %s: keys only, from ds, v1 or v2', (key) => {
    expect(messages({ name: { fromInstanceData: key } })).toEqual([`spec.kubernetes.node.name: { fromInstanceData: ${JSON.stringify(key)} } is not a key of cloud-init's instance data`]);
  });

  it.each<[string, Record<string, unknown>, string[]]>([
    ['a name the values lack', { template: 'oci://${ID}/${X}', values: { ID: { fromInstanceData: 'ds.id' } } }, ['spec.kubernetes.node.providerID.template: says ${X}, which values does not give']],
    ['a value never used', { template: 'oci://${ID}', values: { ID: { fromInstanceData: 'ds.id' }, Y: { fromMachine: 'zone' } } }, ['spec.kubernetes.node.providerID.values.Y: is not used: the template never says ${Y}']],
    ['only literals', { template: 'oci://${ID}', values: { ID: 'abc' } }, ['spec.kubernetes.node.providerID.template: takes no value from the machine: it is a literal']],
    ['no scheme', { template: '${ID}', values: { ID: { fromInstanceData: 'ds.id' } } }, ['spec.kubernetes.node.providerID.template: is not a provider ID such as oci://${INSTANCE_ID} once its values are in']],
    ['a literal part with "/"', { template: 'x://${A}/${ID}', values: { A: 'a/b', ID: { fromInstanceData: 'ds.id' } } }, ['spec.kubernetes.node.providerID.values.A: cannot be part of a provider ID (letters, digits, ".", "_", "-", "(", ")"; at most 128; starting with a letter or digit)']],
  ])('refuses a provider ID template with %s', (_name, providerID, expected) => {
    expect(messages({ providerID })).toEqual(expected);
  });
});
