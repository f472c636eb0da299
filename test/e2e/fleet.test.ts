// One configuration for a whole fleet, run by the packaged binary against emulated metadata
// services on 127.0.0.1 (their documented paths: test/config/helpers/fleet-metadata.ts): plan
// shows each machine value with its source, init records them, and hostile metadata stops the
// run before anything on the machine changes.
import { execFile } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { builtBinary } from '../support/binary.ts';
import { scratchDir } from '../support/tmp.ts';
import { imdsHandler, startHttp, type Cloud, type ImdsBehaviour, type RunningServer } from '../config/helpers/servers.ts';
import { AWS_METADATA, azureMetadata, FLEET_EXPECTED, FLEET_MACHINES, GCE_METADATA } from '../config/helpers/fleet-metadata.ts';

const REPO = fileURLToPath(new URL('../..', import.meta.url));
const example = (cloud: Cloud) => join(REPO, 'examples', `fleet-${cloud}.yaml`);
const servers: RunningServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

// Asynchronous on purpose: the emulator answers from this process while the binary runs.
function run(binary: string, args: string[], env: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(binary, args, { cwd: REPO, env: { PATH: '/usr/bin:/bin', ...env }, timeout: 60_000 }, (error, stdout, stderr) => {
      resolve({ code: error ? Number((error as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
  });
}

async function emulator(cloud: Cloud, behaviour: ImdsBehaviour): Promise<Record<string, string>> {
  const server = await startHttp(imdsHandler(cloud, behaviour));
  servers.push(server);
  return { MACHINEADM_IMDS_ENDPOINT: server.url };
}

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true }).filter((e) => e.isFile()).map((e) => join(e.parentPath, e.name).slice(dir.length));
}

describe('machineadm (packaged) with examples/fleet-<cloud>.yaml', () => {
  let binary: string;
  beforeAll(async () => {
    binary = await builtBinary();
  }, 600_000);

  it.each(['aws', 'azure', 'gce'] as const)('%s: plan shows the node name, provider ID and topology labels from the metadata service, with their sources', async (cloud) => {
    const env = await emulator(cloud, FLEET_MACHINES[cloud]);
    // The machine has the token file the example reads: the plan reads it as the run would.
    const root = scratchDir();
    mkdirSync(join(root, 'etc/machineadm'), { recursive: true });
    writeFileSync(join(root, 'etc/machineadm/token'), 'abcdef.0123456789abcdef\n');
    const text = await run(binary, ['plan', '-c', example(cloud), '--root', root], env);
    expect(text.stderr).toBe('');
    expect(text.code).toBe(0);
    for (const [field, [value, source]] of Object.entries(FLEET_EXPECTED[cloud])) {
      expect(text.stdout).toContain(`  ${field} = ${value}\n`);
      expect(text.stdout).toContain(` from ${source}\n`);
    }
    // The provider ID and the name are in what kubeadm gets, not only in the listing.
    expect(text.stdout).toContain(`        providerID: ${FLEET_EXPECTED[cloud]['spec.kubernetes.node.providerID']![0]}\n`);
    expect(text.stdout).toContain(`  name: ${FLEET_EXPECTED[cloud]['spec.kubernetes.node.name']![0]}\n`);
    const json = await run(binary, ['plan', '-c', example(cloud), '--root', root, '-o', 'json'], env);
    const values = (JSON.parse(json.stdout) as { machineValues: Array<{ field: string; value: string; source: string }> }).machineValues;
    expect(Object.fromEntries(values.map((v) => [v.field, [v.value, v.source]]))).toEqual(FLEET_EXPECTED[cloud]);
  });

  it('init --root records every machine value and its source in result.json', async () => {
    const root = scratchDir();
    mkdirSync(join(root, 'etc/machineadm'), { recursive: true });
    writeFileSync(join(root, 'etc/machineadm/token'), 'abcdef.0123456789abcdef\n');
    const env = await emulator('aws', FLEET_MACHINES.aws);
    const init = await run(binary, ['init', '-c', example('aws'), '--root', root], env);
    expect(init.stderr).toBe('');
    expect(init.code).toBe(0);
    const result = JSON.parse(readFileSync(join(root, 'run/machineadm/result.json'), 'utf8')) as { machine: { nodeName: string; machineValues: Array<{ field: string; value: string; source: string }> } };
    expect(result.machine.nodeName).toBe('ip-10-0-1-5.ec2.internal');
    expect(Object.fromEntries(result.machine.machineValues.map((v) => [v.field, [v.value, v.source]]))).toEqual(FLEET_EXPECTED.aws);
  });

  it('plan --facts plans another machine from the values in its facts file, reading no metadata', async () => {
    const facts = join(scratchDir(), 'facts.json');
    writeFileSync(facts, JSON.stringify({ os: 'linux', hostname: 'x', machine: { cloud: 'aws', localHostname: 'ip-10-9-9-9.ec2.internal', zone: 'eu-west-1b', region: 'eu-west-1', instanceType: 'c6i.xlarge', instanceId: 'i-0fff' } }));
    const plan = await run(binary, ['plan', '-c', example('aws'), '--facts', facts, '--root', scratchDir()], { MACHINEADM_IMDS_ENDPOINT: 'http://127.0.0.1:9' });
    expect(plan.stderr).toBe('');
    expect(plan.stdout).toContain(`  spec.kubernetes.node.providerID = aws:///eu-west-1b/i-0fff\n`);
    expect(plan.stdout).toContain(`      localHostname from --facts ${facts} machine\n`);
  });

  const hostile: Array<[string, Cloud, ImdsBehaviour, string]> = [
    ['a hostname that starts with "--"', 'aws', { metadata: { ...AWS_METADATA, 'local-hostname': '--node-ip=1.2.3.4' } }, 'spec.kubernetes.node.name: localHostname from AWS IMDS meta-data/local-hostname "--node-ip=1.2.3.4" starts with "-"'],
    ['an upper-case hostname', 'azure', { metadata: azureMetadata({ osProfile: { computerName: 'Pool-VM-7' } }) }, 'spec.kubernetes.node.name: localHostname from Azure IMDS compute.osProfile.computerName "Pool-VM-7" is not lower case'],
    ['a 300-character instance name', 'gce', { metadata: { ...GCE_METADATA, 'instance/name': 'n'.repeat(300) } }, 'must be at most 253 characters'],
    ['a zone with a slash', 'gce', { metadata: { ...GCE_METADATA, 'instance/zone': 'projects/1/zones/us-central1-a/../../other' } }, 'spec.kubernetes.node.providerID: auto: zone from GCE metadata instance/zone "projects/1/zones/us-central1-a/../../other" cannot be part of a provider ID'],
    ['a zone with a slash', 'aws', { metadata: { ...AWS_METADATA, 'placement/availability-zone': 'us-east-1a/x' } }, 'spec.kubernetes.node.labels["topology.kubernetes.io/zone"]: zone from AWS IMDS meta-data/placement/availability-zone "us-east-1a/x"'],
    ['no region', 'aws', { metadata: { ...AWS_METADATA, 'placement/region': undefined as unknown as string } }, 'spec.kubernetes.node.labels["topology.kubernetes.io/region"]: { fromMachine: region }: this machine gave no region'],
  ];
  it.each(hostile)('init refuses %s (%s) with exit 2, naming the field and the source, and changes nothing', async (_, cloud, behaviour, message) => {
    const root = scratchDir();
    mkdirSync(join(root, 'etc'));
    const init = await run(binary, ['init', '-c', example(cloud), '--root', root], await emulator(cloud, behaviour));
    expect(init.code).toBe(2);
    expect(init.stderr).toContain(message);
    expect(init.stdout).toBe('');
    expect(filesUnder(root)).toEqual([]);
  });
});
