// Values from the machine: examples/fleet-<cloud>.yaml resolved against emulated metadata
// services (helpers/fleet-metadata.ts cites each cloud's documented paths), hostile and missing
// values refused with the field and the source named, and the other sources (--set, a facts
// file's values, bare-metal facts).
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createHost } from '../../src/host/index.ts';
import { loadConfig } from '../../src/config/load.ts';
import { resolveMachineValues } from '../../src/config/machine-source.ts';
import type { InstanceValues } from '../../src/config/instance-values.ts';
import { ConfigError, ExitCode, MachineValuesUnavailableError } from '../../src/errors.ts';
import { readDmi } from '../../src/config/imds.ts';
import { renderKubeadm, type RenderInput } from '../../src/kubeadm/render.ts';
import { imdsHandler, startHttp, type Cloud, type ImdsBehaviour, type RunningServer } from './helpers/servers.ts';
import { AWS_METADATA, azureMetadata, FLEET_EXPECTED, FLEET_MACHINES, GCE_METADATA } from './helpers/fleet-metadata.ts';
import { scratchDir } from '../support/tmp.ts';

const REPO = join(import.meta.dirname, '..', '..');
const servers: RunningServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

async function emulator(cloud: Cloud, behaviour: ImdsBehaviour): Promise<string> {
  const server = await startHttp(imdsHandler(cloud, behaviour));
  servers.push(server);
  return server.url;
}

async function resolveExample(cloud: Cloud, endpoint: string | undefined, given: InstanceValues = {}, otherMachine = false, root = scratchDir()) {
  const host = createHost({ root, env: endpoint ? { MACHINEADM_IMDS_ENDPOINT: endpoint } : {} });
  const { config } = await loadConfig(host, [join(REPO, 'examples', `fleet-${cloud}.yaml`)], { cwd: REPO });
  return resolveMachineValues(host, config, { given, otherMachine });
}

async function problemOf(promise: Promise<unknown>): Promise<ConfigError> {
  const error = await promise.then(() => undefined, (e: unknown) => e);
  expect(error).toBeInstanceOf(ConfigError);
  return error as ConfigError;
}

describe('examples/fleet-<cloud>.yaml on a machine of that cloud', () => {
  it.each(['aws', 'azure', 'gce'] as const)('%s: node name, provider ID and topology labels come from the metadata service, each with its source', async (cloud) => {
    const { config, resolved } = await resolveExample(cloud, await emulator(cloud, FLEET_MACHINES[cloud]));
    expect(Object.fromEntries(resolved.map((r) => [r.field, [r.value, r.source]]))).toEqual(FLEET_EXPECTED[cloud]);
    const node = config.spec.kubernetes!.node!;
    expect(node.name).toBe(FLEET_EXPECTED[cloud]['spec.kubernetes.node.name']![0]);
    expect(node.labels!['node.kubernetes.io/pool']).toBe('workers');
    // The provider ID reaches the kubelet: a joining node's own kubelet patch, or a flag for kubeadm before 1.25.
    const input: RenderInput = { kubernetes: config.spec.kubernetes!, os: 'linux', api: 'v1beta4', cgroupDriver: 'systemd', secrets: { token: 't', caCertHashes: ['h'] } };
    expect(renderKubeadm(input).patches[0]!.content).toContain(`providerID: ${node.providerID}\n`);
    expect(renderKubeadm({ ...input, api: 'v1beta3', kubeletPatches: false }).config).toContain(`provider-id: ${node.providerID}\n`);
  });

  // The provider ID is the VM's own compute.resourceId: a uniform scale set's instance, and a
  // flexible scale set's VM whose name merely looks like one (<set>_<n>) is still a VM.
  it.each([
    ['a uniform scale set instance', { name: 'workers_12', vmScaleSetName: 'workers', resourceId: '/subscriptions/8d10da13-8125-4ba9-a717-bf7490507b3d/resourceGroups/Fleet-RG/providers/Microsoft.Compute/virtualMachineScaleSets/workers/virtualMachines/12' }, 'virtualMachineScaleSets/workers/virtualMachines/12'],
    ['a flexible scale set VM named like an instance', { name: 'workers_12', vmScaleSetName: 'workers', resourceId: '/subscriptions/8d10da13-8125-4ba9-a717-bf7490507b3d/resourceGroups/Fleet-RG/providers/Microsoft.Compute/virtualMachines/workers_12' }, 'virtualMachines/workers_12'],
    ['a VM whose resource ID Azure writes in lower case', { resourceId: '/subscriptions/8d10da13-8125-4ba9-a717-bf7490507b3d/resourcegroups/fleet-rg/providers/microsoft.compute/virtualmachines/pool-vm-7' }, 'virtualMachines/pool-vm-7'],
  ])('Azure: %s gets the provider ID of its compute.resourceId', async (_, compute, tail) => {
    const metadata = azureMetadata({ osProfile: { computerName: 'workers00000c' }, ...compute });
    const { resolved } = await resolveExample('azure', await emulator('azure', { metadata }));
    expect(resolved.find((r) => r.field === 'spec.kubernetes.node.providerID')).toEqual({
      field: 'spec.kubernetes.node.providerID',
      reference: 'providerID: auto',
      value: `azure:///subscriptions/8d10da13-8125-4ba9-a717-bf7490507b3d/resourceGroups/fleet-rg/providers/Microsoft.Compute/${tail}`,
      source: 'Azure IMDS compute.resourceId',
    });
  });

  // Azure's instance document holds every tag twice (tags, tagsList) and the SSH keys: a VM with
  // Azure's 50 tags of the longest names and values is past the few KiB one metadata value may
  // take, and past what the probe for a cloud reads of another answer.
  it('Azure: a VM with 50 long tags and SSH keys still gives its values', async () => {
    const tags = Array.from({ length: 50 }, (_, i) => ({ name: `team-tag-${i}-`.padEnd(512, 'n'), value: 'v'.repeat(256) }));
    const compute = {
      tags: tags.map((t) => `${t.name}:${t.value}`).join(';'),
      tagsList: tags,
      publicKeys: [{ keyData: `ssh-rsa ${'A'.repeat(700)} ops@example`, path: '/home/azureuser/.ssh/authorized_keys' }],
    };
    const metadata = azureMetadata(compute);
    expect(JSON.stringify(metadata).length).toBeGreaterThan(64 * 1024);
    const { resolved } = await resolveExample('azure', await emulator('azure', { metadata }));
    expect(Object.fromEntries(resolved.map((r) => [r.field, [r.value, r.source]]))).toEqual(FLEET_EXPECTED.azure);
  });

  it('an Azure VM outside an availability zone is labelled with its fault domain, as the Azure cloud controller manager does', async () => {
    const { resolved } = await resolveExample('azure', await emulator('azure', { metadata: azureMetadata({ zone: '', platformFaultDomain: '1' }) }));
    expect(resolved.find((r) => r.field.includes('topology.kubernetes.io/zone'))).toMatchObject({ value: '1', source: 'Azure IMDS compute.platformFaultDomain' });
  });
});

describe('hostile or missing metadata is refused before anything runs, naming the field and the source', () => {
  const hostile: Array<[string, Cloud, ImdsBehaviour, string, RegExp]> = [
    ['a hostname that is a flag', 'aws', { metadata: { ...AWS_METADATA, 'local-hostname': '--kubeconfig=/tmp/x' } }, 'spec.kubernetes.node.name', /localHostname from AWS IMDS meta-data\/local-hostname "--kubeconfig=\/tmp\/x" starts with "-"/],
    ['an upper-case hostname', 'azure', { metadata: azureMetadata({ osProfile: { computerName: 'POOL-VM-7' } }) }, 'spec.kubernetes.node.name', /localHostname from Azure IMDS compute.osProfile.computerName "POOL-VM-7" is not lower case/],
    ['a 300-character hostname', 'aws', { metadata: { ...AWS_METADATA, 'local-hostname': 'a'.repeat(300) } }, 'spec.kubernetes.node.name', /localHostname from AWS IMDS meta-data\/local-hostname "a{77}\.\.\." must be at most 253 characters/],
    // The kubelet labels its node kubernetes.io/hostname=<node name>; the API server refuses a label value over 63 characters.
    ['a hostname longer than 63 characters (a VPC with a long DHCP domain)', 'aws', { metadata: { ...AWS_METADATA, 'local-hostname': 'ip-10-100-200-123.eks-workers.platform-engineering.internal.example.com' } }, 'spec.kubernetes.node.name', /localHostname from AWS IMDS meta-data\/local-hostname "ip-10-100-200-123\.eks-workers\.platform-engineering\.internal\.example\.com" is longer than 63 characters/],
    ['a hostname with a line break', 'gce', { metadata: { ...GCE_METADATA, 'instance/name': 'pool-a\nkubelet' } }, 'spec.kubernetes.node.name', /instanceName from GCE metadata instance\/name "pool-a\\nkubelet" is not one word/],
    ['a zone with a slash (label)', 'aws', { metadata: { ...AWS_METADATA, 'placement/availability-zone': 'us-east-1a/../i-other' } }, 'spec.kubernetes.node.labels["topology.kubernetes.io/zone"]', /zone from AWS IMDS meta-data\/placement\/availability-zone "us-east-1a\/..\/i-other" must be letters, digits/],
    ['a zone with a slash (provider ID)', 'aws', { metadata: { ...AWS_METADATA, 'placement/availability-zone': 'us-east-1a/../i-other' } }, 'spec.kubernetes.node.providerID', /zone from AWS IMDS meta-data\/placement\/availability-zone "us-east-1a\/..\/i-other" cannot be part of a provider ID/],
    ['a resource ID with a path in it', 'azure', { metadata: azureMetadata({ resourceId: '/subscriptions/s/resourceGroups/rg/../other/providers/Microsoft.Compute/virtualMachines/vm' }) }, 'spec.kubernetes.node.providerID', /azure.resourceId from Azure IMDS compute.resourceId ".*" is not the resource ID of a virtual machine/],
    ['a resource ID with a part that cannot be in a provider ID', 'azure', { metadata: azureMetadata({ resourceId: '/subscriptions/s/resourceGroups/rg name/providers/Microsoft.Compute/virtualMachines/vm' }) }, 'spec.kubernetes.node.providerID', /"rg name" cannot be part of a provider ID/],
    ['a resource ID that is missing', 'azure', { metadata: azureMetadata({ resourceId: undefined }) }, 'spec.kubernetes.node.providerID', /auto: needs compute.resourceId, which the Azure metadata service did not give/],
    ['a region that is missing (404)', 'aws', { metadata: Object.fromEntries(Object.entries(AWS_METADATA).filter(([k]) => k !== 'placement/region')) }, 'spec.kubernetes.node.labels["topology.kubernetes.io/region"]', /\{ fromMachine: region \}: this machine gave no region/],
    ['a project id that is missing', 'gce', { metadata: Object.fromEntries(Object.entries(GCE_METADATA).filter(([k]) => k !== 'project/project-id')) }, 'spec.kubernetes.node.providerID', /auto: needs gce.project, which gce did not give/],
  ];
  it.each(hostile)('%s (%s)', async (_, cloud, behaviour, field, message) => {
    const error = await problemOf(resolveExample(cloud, await emulator(cloud, behaviour)));
    const issue = error.issues.find((i) => i.path === field);
    expect(issue, error.message).toBeDefined();
    expect(issue!.message).toMatch(message);
  });
});

describe('a metadata service that refuses to answer', () => {
  it('is its own error (exit 6) naming the values it should have given, not an invalid configuration', async () => {
    const refusing = await startHttp((_, res) => res.writeHead(403).end('forbidden'));
    servers.push(refusing);
    const error = await resolveExample('aws', refusing.url, { cloud: { value: 'aws', source: '--set' } }).then(() => undefined, (e: unknown) => e);
    expect(error).toBeInstanceOf(MachineValuesUnavailableError);
    expect((error as MachineValuesUnavailableError).exitCode).toBe(ExitCode.machineValuesUnavailable);
    expect((error as Error).message).toMatch(/^cannot read localHostname, providerID, zone, region, instanceType from the machine \(the cloud named by --set cloud=aws\): aws instance metadata: .*403.*; nothing was changed$/);
  });
});

/** A scratch root whose firmware says these DMI strings (file name -> content). */
function machineWithDmi(dmi: Record<string, string>): string {
  const root = scratchDir();
  mkdirSync(join(root, 'sys/class/dmi/id'), { recursive: true });
  for (const [name, value] of Object.entries(dmi)) writeFileSync(join(root, 'sys/class/dmi/id', name), `${value}\n`);
  return root;
}

const NITRO = { sys_vendor: 'Amazon EC2', product_name: 'm5.large', bios_vendor: 'Amazon EC2', product_uuid: 'ec2e1916-9099-7caf-fd21-012345678901' };
const XEN_HVM = { sys_vendor: 'Xen', product_name: 'HVM domU', bios_vendor: 'Xen' };
const DELL = { sys_vendor: 'Dell Inc.', product_name: 'PowerEdge R650', bios_vendor: 'Dell Inc.', product_uuid: '4c4c4544-0035-4b10-8052-b4c04f4e4d32' };
const QEMU = { sys_vendor: 'QEMU', product_name: 'Standard PC (Q35 + ICH9, 2009)', bios_vendor: 'SeaBIOS', product_uuid: '0b5b3b1e-6a44-4c2a-9d3e-1f2a3b4c5d6e' };

describe('where the firmware (DMI) says this machine runs', () => {
  it.each([
    ['a Nitro EC2 instance', NITRO, 'aws', false],
    ['a Xen EC2 instance by its product_version', { ...XEN_HVM, product_version: '4.11.amazon' }, 'aws', false],
    ['a Xen EC2 instance by its bios_version', { ...XEN_HVM, bios_version: '4.2.amazon' }, 'aws', false],
    ['a Xen EC2 instance by a product_uuid starting with ec2', { ...XEN_HVM, product_uuid: 'ec2f3d3e-1c2b-4a5d-8e6f-0123456789ab' }, 'aws', false],
    ['a Xen EC2 instance by a product_uuid starting with EC2', { ...XEN_HVM, product_uuid: 'EC2F3D3E-1C2B-4A5D-8E6F-0123456789AB' }, 'aws', false],
    ['a Xen EC2 instance whose UUID the firmware reads little-endian', { ...XEN_HVM, product_uuid: '3e3d2fec-2b1c-5d4a-8e6f-0123456789ab' }, 'aws', false],
    ['a Xen guest elsewhere (not bare metal, no cloud)', { ...XEN_HVM, product_uuid: '1f2e3d4c-2b1c-4a5d-8e6f-0123456789ab' }, undefined, false],
    ['a QEMU virtual machine (not bare metal, no cloud)', QEMU, undefined, false],
    ['a Dell server (bare metal)', DELL, undefined, true],
    ['a machine without DMI strings', {}, undefined, false],
  ])('reads %s', async (_, dmi, cloud, bareMetal) => {
    const reading = await readDmi(createHost({ root: machineWithDmi(dmi) }));
    expect({ cloud: reading.cloud, bareMetal: reading.bareMetal }).toEqual({ cloud, bareMetal });
  });
});

describe('when the metadata service does not answer', () => {
  // A closed port: every request is refused at once, as on a network with no metadata service.
  const closed = 'http://127.0.0.1:9';
  const quick = { retry: { attempts: 3, baseDelayMs: 10, maxDelayMs: 20, deadlineMs: 2_000 }, timeouts: { connectMs: 300, responseMs: 300, totalMs: 500 } };
  const fleet = { apiVersion: 'v', kind: 'MachineConfig', spec: { kubernetes: { role: 'worker', bootstrap: 'join', node: { name: { fromMachine: 'localHostname' }, providerID: 'auto' } } } } as never;
  const nameOnly = { apiVersion: 'v', kind: 'MachineConfig', spec: { kubernetes: { role: 'worker', bootstrap: 'join', node: { name: { fromMachine: 'localHostname' }, labels: { 'example.com/uuid': { fromMachine: 'instanceId' } } } } } } as never;

  it.each([
    ['the firmware names no cloud (a QEMU VM)', QEMU, /^cannot read localHostname, providerID from the machine: its firmware \(DMI: sys_vendor "QEMU", .*\) names no cloud and no metadata service \(AWS, Azure, GCE\) answered within \d+ s; nothing was changed$/],
    ['there are no DMI strings', {}, /^cannot read localHostname, providerID from the machine: its firmware \(DMI: \/sys\/class\/dmi\/id names no vendor\) names no cloud/],
    ['the firmware names Xen-based EC2', { ...XEN_HVM, product_version: '4.11.amazon' }, /^cannot read localHostname, providerID from the machine \(the firmware \(DMI sys_vendor "Xen", .*product_version "4\.11\.amazon".*\) names aws\): aws instance metadata: /],
  ])('says so (exit 6) when %s, and never takes the OS hostname', async (_, dmi, message) => {
    const host = createHost({ root: machineWithDmi(dmi), env: { MACHINEADM_IMDS_ENDPOINT: closed } });
    const error = await resolveMachineValues(host, fleet, { given: {}, otherMachine: false, imds: quick }).then(() => undefined, (e: unknown) => e);
    expect(error).toBeInstanceOf(MachineValuesUnavailableError);
    expect((error as Error).message).toMatch(message);
    expect((error as MachineValuesUnavailableError).hint).toMatch(/run again once/);
  });

  it('takes the hostname and the DMI UUID on a machine the firmware marks as bare metal, and says why', async () => {
    const host = createHost({ root: machineWithDmi(DELL), env: { MACHINEADM_IMDS_ENDPOINT: closed } });
    const facts = await host.facts();
    const { resolved } = await resolveMachineValues(host, nameOnly, { given: {}, otherMachine: false });
    expect(resolved.map((r) => [r.value, r.source])).toEqual([
      [facts.hostname, `the machine's hostname (bare metal: DMI sys_vendor "Dell Inc.", product_name "PowerEdge R650", bios_vendor "Dell Inc." names no cloud, and no metadata service answered)`],
      ['4c4c4544-0035-4b10-8052-b4c04f4e4d32', '/sys/class/dmi/id/product_uuid'],
    ]);
  });

  it('reads nothing from any metadata service with --set cloud=bare-metal', async () => {
    let asked = 0;
    const counting = await startHttp((_, res) => {
      asked++;
      res.writeHead(500).end();
    });
    servers.push(counting);
    const host = createHost({ root: machineWithDmi(QEMU), env: { MACHINEADM_IMDS_ENDPOINT: counting.url } });
    const facts = await host.facts();
    const { resolved } = await resolveMachineValues(host, nameOnly, { given: { cloud: { value: 'bare-metal', source: '--set' } }, otherMachine: false });
    expect(resolved[0]).toMatchObject({ value: facts.hostname, source: "the machine's hostname (--set cloud=bare-metal)" });
    expect(asked).toBe(0);
  });
});

/** examples/fleet-aws.yaml with a drop-in that sets one field of spec.kubernetes.node, on an emulated AWS machine. */
async function awsFleetWith(nodeField: string) {
  const dropIn = join(scratchDir(), '50-node.yaml');
  writeFileSync(dropIn, `apiVersion: machineadm.cluster.x-k8s.io/v1alpha1\nkind: MachineConfig\nspec:\n  kubernetes:\n    node:\n      ${nodeField}\n`);
  const host = createHost({ root: scratchDir(), env: { MACHINEADM_IMDS_ENDPOINT: await emulator('aws', FLEET_MACHINES.aws) } });
  const { config } = await loadConfig(host, [join(REPO, 'examples', 'fleet-aws.yaml'), dropIn], { cwd: REPO });
  return { host, config };
}

describe('values given instead of read', () => {
  it('--set values win over the metadata service, and their source says so', async () => {
    const { resolved } = await resolveExample('aws', await emulator('aws', FLEET_MACHINES.aws), { localHostname: { value: 'worker-7', source: '--set' } });
    expect(resolved.find((r) => r.field === 'spec.kubernetes.node.name')).toMatchObject({ value: 'worker-7', source: '--set' });
  });

  it('a drop-in that sets a field literally replaces its reference (later sources win)', async () => {
    const { host, config } = await awsFleetWith('name: worker-7');
    const { config: resolved, resolved: values } = await resolveMachineValues(host, config, { given: {}, otherMachine: false });
    expect(resolved.spec.kubernetes!.node!.name).toBe('worker-7');
    expect(values.map((v) => v.field)).not.toContain('spec.kubernetes.node.name');
  });

  // Cluster API templates give the kubelet --node-ip={{ ds.meta_data.local_ipv4 }}; imported, that is this reference.
  it('a node IP from the machine reaches the kubelet; one that is no address, or of the same family as the other, is refused naming the field', async () => {
    const { host, config } = await awsFleetWith('ip: [{ fromMachine: privateIP }]');
    const { config: resolved, resolved: values } = await resolveMachineValues(host, config, { given: {}, otherMachine: false });
    expect(resolved.spec.kubernetes!.node!.ip).toEqual(['10.0.1.5']);
    expect(values.find((v) => v.field === 'spec.kubernetes.node.ip[0]')).toMatchObject({ value: '10.0.1.5', source: expect.stringContaining('local-ipv4') });
    const input: RenderInput = { kubernetes: resolved.spec.kubernetes!, os: 'linux', api: 'v1beta4', cgroupDriver: 'systemd', secrets: { token: 't', caCertHashes: ['h'] } };
    expect(renderKubeadm(input).config).toMatch(/name: node-ip\n\s+value: 10\.0\.1\.5\n/);
    const error = await problemOf(resolveMachineValues(host, config, { given: { privateIP: { value: 'ip-10-0-1-5', source: '--set' } }, otherMachine: false }));
    expect(error.issues.find((i) => i.path === 'spec.kubernetes.node.ip[0]')?.message).toBe('privateIP from --set "ip-10-0-1-5" is not an IP address');
    // Dual stack: the machine's address and a literal one of the same family are refused once both are known.
    const twoV4 = structuredClone(config);
    twoV4.spec.kubernetes!.node!.ip = [{ fromMachine: 'privateIP' }, '10.0.9.9'];
    const dual = await problemOf(resolveMachineValues(host, twoV4, { given: {}, otherMachine: false }));
    expect(dual.issues).toEqual([expect.objectContaining({ path: 'spec.kubernetes.node.ip', message: '10.0.1.5 and 10.0.9.9: two addresses must be one IPv4 and one IPv6 (dual stack)' })]);
    twoV4.spec.kubernetes!.node!.ip = [{ fromMachine: 'privateIP' }, 'fd00::9'];
    expect((await resolveMachineValues(host, twoV4, { given: {}, otherMachine: false })).config.spec.kubernetes!.node!.ip).toEqual(['10.0.1.5', 'fd00::9']);
  });

  it('a facts file plans for another machine from its own values only, without asking any metadata service', async () => {
    const machine = { cloud: 'gce', instanceName: 'other-vm', zone: 'europe-west1-b', region: 'europe-west1', instanceType: 'n2-standard-2', providerID: 'gce://p/europe-west1-b/other-vm' };
    const given = Object.fromEntries(Object.entries(machine).map(([k, v]) => [k, { value: v, source: '--facts other.json machine' }]));
    const { resolved } = await resolveExample('gce', 'http://127.0.0.1:9', given, true);
    expect(resolved.map((r) => r.value)).toEqual(['other-vm', 'gce://p/europe-west1-b/other-vm', 'europe-west1-b', 'europe-west1', 'n2-standard-2']);
  });

  it('a facts file that lacks a value names it and says where to add it', async () => {
    const error = await problemOf(resolveExample('aws', 'http://127.0.0.1:9', {}, true));
    expect(error.issues.find((i) => i.path === 'spec.kubernetes.node.name')?.hint).toBe('add "localHostname" to the "machine" map of the --facts file, or give --set localHostname=VALUE');
  });

  it('on bare metal (no metadata service) the hostname and the DMI product UUID are the machine values', async () => {
    const root = scratchDir();
    mkdirSync(join(root, 'sys/class/dmi/id'), { recursive: true });
    writeFileSync(join(root, 'sys/class/dmi/id/product_uuid'), '4c4c4544-0035-4b10-8052-b4c04f4e4d32\n');
    // A server that is no metadata service refuses every protocol: detection ends at once.
    const nothing = await startHttp((_, res) => res.writeHead(404).end());
    servers.push(nothing);
    const host = createHost({ root, env: { MACHINEADM_IMDS_ENDPOINT: nothing.url } });
    const config = { apiVersion: 'v', kind: 'MachineConfig', spec: { kubernetes: { role: 'worker', bootstrap: 'join', node: { name: { fromMachine: 'localHostname' }, labels: { 'example.com/uuid': { fromMachine: 'instanceId' } } } } } } as never;
    const facts = await host.facts();
    const { resolved } = await resolveMachineValues(host, config, { given: {}, otherMachine: false });
    expect(resolved.map((r) => [r.value, r.source])).toEqual([
      [facts.hostname, "the machine's hostname (bare metal: every metadata address answered, none as AWS, Azure or GCE)"],
      ['4c4c4544-0035-4b10-8052-b4c04f4e4d32', '/sys/class/dmi/id/product_uuid'],
    ]);
  });
});
