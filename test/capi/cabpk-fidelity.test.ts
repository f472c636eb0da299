// What the kubeadm bootstrap provider and KubeadmControlPlane do beyond copying the template, done
// by an import the same way: the uninitialized taint on workers only (CABPK's joinWorker), kubeadm's
// ControlPlaneKubeletLocalMode on a control plane of 1.31 to 1.35 (KubeadmControlPlane's
// DefaultFeatureGates), certificates uploaded by the first control plane with the key the others
// join with, and cloud-init's default mount fields (nofail, fsck pass 2).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { load } from 'js-yaml';
import { describe, expect, it } from 'vitest';
import { importClusterApi, UNINITIALIZED_TAINT } from '../../src/capi/import.ts';
import { CAPI_ENV } from '../../src/capi/kubeadm.ts';
import { REPO } from '../kubeadm/standin.ts';

type Json = Record<string, any>;
const fixture = (name: string): Json => load(readFileSync(join(REPO, 'test/capi/fixtures', name), 'utf8')) as Json;
const kubernetesOf = (doc: Json, options: { join?: boolean } = {}): Json => (importClusterApi(doc, { source: 'test', ...options }).config.spec as Json).kubernetes;

function controlPlane(version: string, featureGates?: Json): Json {
  const doc = fixture('01-capd-quickstart-kcp.yaml');
  doc.spec.version = version;
  if (featureGates) doc.spec.kubeadmConfigSpec.clusterConfiguration = { ...doc.spec.kubeadmConfigSpec.clusterConfiguration, featureGates };
  return doc;
}

describe('an import does what CABPK and KubeadmControlPlane add', () => {
  it('taints workers with node.cluster.x-k8s.io/uninitialized, never a control plane (init or join)', () => {
    expect(kubernetesOf(fixture('03-capd-quickstart-workers.yaml')).node.taints).toContainEqual(UNINITIALIZED_TAINT);
    for (const k of [kubernetesOf(fixture('01-capd-quickstart-kcp.yaml')), kubernetesOf(fixture('02-capd-quickstart-kcp-join.yaml'), { join: true })]) {
      expect(k.node?.taints ?? []).not.toContainEqual(UNINITIALIZED_TAINT);
    }
  });

  it.each([
    ['v1.30.4', undefined],
    ['v1.31.0', true],
    ['v1.35.2', true],
    ['v1.36.0', undefined],
  ])('turns ControlPlaneKubeletLocalMode on for a control plane of %s: %s', (version, gate) => {
    expect(kubernetesOf(controlPlane(version)).controlPlane?.featureGates?.ControlPlaneKubeletLocalMode).toBe(gate);
  });

  it('keeps ControlPlaneKubeletLocalMode as the template sets it, and the other gates beside it', () => {
    expect(kubernetesOf(controlPlane('v1.32.1', { ControlPlaneKubeletLocalMode: false, EtcdLearnerMode: true })).controlPlane.featureGates).toEqual({ ControlPlaneKubeletLocalMode: false, EtcdLearnerMode: true });
  });

  it('has the first control plane upload its certificates with the key the joining ones download them with', () => {
    const key = { valueFrom: { env: CAPI_ENV.certificateKey } };
    expect(kubernetesOf(fixture('01-capd-quickstart-kcp.yaml')).certificateKey).toEqual(key);
    expect(kubernetesOf(fixture('02-capd-quickstart-kcp-join.yaml'), { join: true }).certificateKey).toEqual(key);
    expect(kubernetesOf(fixture('03-capd-quickstart-workers.yaml')).certificateKey).toBeUndefined();
  });

  it("drops Flatcar's envsubst of CABPK's /etc/kubeadm.yml and its kubeadm.service (machineadm renders and runs kubeadm itself), saying so", () => {
    const { config, notes } = importClusterApi(fixture('06-capa-flatcar-ignition-workers.yaml'), { source: 'test' });
    const spec = config.spec as Json;
    expect(spec.commands?.beforeKubeadm ?? []).toEqual([]);
    expect((spec.files ?? []).map((f: Json) => f.path)).not.toContainEqual(expect.stringContaining('kubeadm.service'));
    expect(JSON.stringify(spec.commands ?? {})).not.toContain('kubeadm.service');
    const said = notes.map((n) => `${n.path}: ${n.message}`);
    expect(said).toContainEqual(expect.stringMatching(/preKubeadmCommands\[0\]: puts the machine's values into \/etc\/kubeadm\.yml, CABPK's kubeadm configuration.*dropped/));
    expect(said).toContainEqual(expect.stringMatching(/systemd\.units\[1\]: kubeadm\.service is the unit that runs kubeadm in CABPK's Ignition.*not written/));
  });

  // Flatcar templates name the node with Afterburn's variables, which their envsubst (dropped
  // above) put into CABPK's file: machineadm reads the same values from the machine.
  it("reads a Flatcar template's Afterburn variables (${COREOS_EC2_HOSTNAME}) from the machine, takes cp as mv after the envsubst, and refuses one it does not know", () => {
    const doc = fixture('06-capa-flatcar-ignition-workers.yaml');
    const registration = doc.spec.template.spec.joinConfiguration.nodeRegistration;
    registration.name = '${COREOS_EC2_HOSTNAME}';
    registration.kubeletExtraArgs['provider-id'] = 'aws:///${COREOS_EC2_AVAILABILITY_ZONE}/${COREOS_EC2_INSTANCE_ID}';
    doc.spec.template.spec.preKubeadmCommands = ['envsubst < /etc/kubeadm.yml > /etc/kubeadm.yml.tmp', 'cp /etc/kubeadm.yml.tmp /etc/kubeadm.yml'];
    const { config, notes } = importClusterApi(doc, { source: 'test' });
    expect((config.spec as Json).kubernetes.node).toMatchObject({ name: { fromMachine: 'localHostname' }, providerID: 'auto' });
    expect(notes.map((n) => n.path)).toContain('spec.template.spec.preKubeadmCommands[1]');
    registration.name = '${COREOS_EC2_UNKNOWN}';
    expect(() => importClusterApi(doc, { source: 'test' })).toThrow(/nodeRegistration\.name: template \$\{COREOS_EC2_UNKNOWN\} is not a value machineadm reads from the machine/);
  });

  it("reads a provider ID of a cloud `auto` does not compose from cloud-init's instance data, and says that auto needs the ID given where there is none (Flatcar)", () => {
    const idOf = (providerId: string) => {
      const doc = fixture('03-capd-quickstart-workers.yaml');
      doc.spec.template.spec.joinConfiguration.nodeRegistration.kubeletExtraArgs = { 'provider-id': providerId };
      const { config, notes } = importClusterApi(doc, { source: 'test' });
      return { providerID: (config.spec as Json).kubernetes.node.providerID, said: notes.filter((n) => n.path.endsWith('["provider-id"]')).map((n) => n.message) };
    };
    for (const [written, template, name, key] of [
      ["vultr://'{{ ds.meta_data[\"instance_id\"] }}'", 'vultr://${INSTANCE_DATA_DS_META_DATA_INSTANCE_ID}', 'INSTANCE_DATA_DS_META_DATA_INSTANCE_ID', 'ds.meta_data["instance_id"]'],
      ["cloudstack:///'{{ ds.meta_data.instance_id }}'", 'cloudstack:///${INSTANCE_DATA_DS_META_DATA_INSTANCE_ID}', 'INSTANCE_DATA_DS_META_DATA_INSTANCE_ID', 'ds.meta_data.instance_id'],
      ["openstack:///'{{ instance_id }}'", 'openstack:///${INSTANCE_DATA_V1_INSTANCE_ID}', 'INSTANCE_DATA_V1_INSTANCE_ID', 'v1.instance_id'],
    ] as const) {
      expect(idOf(written)).toEqual({ providerID: { template, values: { [name]: { fromInstanceData: key } } }, said: [] });
    }
    expect(idOf('openstack:///${COREOS_OPENSTACK_INSTANCE_UUID}')).toEqual({ providerID: 'auto', said: [expect.stringContaining('providerID: auto composes AWS, Azure and GCE IDs from their metadata services only; on this cloud give each machine\'s ID with --set providerID=')] });
    expect(idOf('aws:///{{ v1.availability_zone }}/{{ v1.instance_id }}')).toEqual({ providerID: 'auto', said: [] });
    expect(idOf("aws:///'{{ ds.meta_data.placement.availability_zone }}'/'{{ ds.meta_data.instance_id }}'")).toEqual({ providerID: 'auto', said: [] });
  });

  // CAPZ's Windows templates have cloudbase-init make an SSH user in Administrators; imported as a
  // Linux user it made a configuration that no validation passes and a Windows run refuses.
  it('leaves the users of a Windows template out, saying so', () => {
    const doc = fixture('08-capz-windows-workers.yaml');
    doc.spec.template.spec.users = [{ name: 'capi', groups: 'Administrators', sshAuthorizedKeys: ['ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIExample capi@example'] }];
    const { config, notes } = importClusterApi(doc, { source: 'test' });
    expect((config.spec as Json).users).toBeUndefined();
    expect(notes).toContainEqual({ path: 'spec.template.spec.users[0]', message: expect.stringContaining('capi: local users are managed on Linux only: not carried') });
  });

  it("refuses any other work on CABPK's kubeadm configuration file, naming the line", () => {
    const doc = fixture('03-capd-quickstart-workers.yaml');
    doc.spec.template.spec.preKubeadmCommands = ['echo ok', 'sed -i "s/old/new/" /run/kubeadm/kubeadm-join-config.yaml'];
    expect(() => importClusterApi(doc, { source: 'test' })).toThrow(/preKubeadmCommands\[1\]: works on \/run\/kubeadm\/kubeadm-join-config\.yaml, CABPK's kubeadm configuration, which machineadm does not write/);
  });

  it("fills a mount's missing fields as cloud-init does (defaults,nofail, dump 0, fsck pass 2), says so, and keeps given ones", () => {
    const { config, notes } = importClusterApi(fixture('15-workers-disks-dualstack.yaml'), { source: 'test' });
    expect((config.spec as Json).storage.mounts).toEqual([
      { device: 'LABEL=containerd', path: '/var/lib/containerd', format: 'xfs', options: ['defaults', 'noatime'], dump: 0, pass: 2 },
      { device: 'LABEL=logs', path: '/var/log/pods', options: ['defaults', 'nofail'], dump: 0, pass: 2 },
    ]);
    expect(notes.map((n) => `${n.path}: ${n.message}`)).toContainEqual(expect.stringMatching(/mounts\[1\]: takes cloud-init's default options defaults,nofail and fsck pass 2/));
  });
});

// Providers whose machines cloud-init names from their own datasource's keys (Linode's label,
// Metal3's name and uuid, OCI's id, MicroVM's vm_host): machineadm reads the same keys from the
// instance data cloud-init wrote. CAPZ's Flatcar template fills a placeholder name with sed.
describe('an import reads the instance data where cloud-init\'s templates did', () => {
  const worker = (registration: Json, commands: string[] = []): Json => {
    const doc = fixture('03-capd-quickstart-workers.yaml');
    Object.assign(doc.spec.template.spec.joinConfiguration.nodeRegistration, registration);
    if (commands.length > 0) doc.spec.template.spec.preKubeadmCommands = commands;
    return doc;
  };

  it("names the node, labels it and makes its provider ID from the datasource's keys", () => {
    const node = kubernetesOf(worker({ name: '{{ ds.meta_data.name }}', kubeletExtraArgs: { 'node-labels': 'metal3.io/uuid={{ ds.meta_data.uuid }}', 'provider-id': 'microvm://{{ ds.meta_data.vm_host }}/{{ ds.meta_data.instance_id }}' } })).node;
    expect(node.name).toEqual({ fromInstanceData: 'ds.meta_data.name' });
    expect(node.labels).toEqual({ 'metal3.io/uuid': { fromInstanceData: 'ds.meta_data.uuid' } });
    expect(node.providerID).toEqual({
      template: 'microvm://${INSTANCE_DATA_DS_META_DATA_VM_HOST}/${INSTANCE_DATA_DS_META_DATA_INSTANCE_ID}',
      values: { INSTANCE_DATA_DS_META_DATA_VM_HOST: { fromInstanceData: 'ds.meta_data.vm_host' }, INSTANCE_DATA_DS_META_DATA_INSTANCE_ID: { fromInstanceData: 'ds.meta_data.instance_id' } },
    });
    expect(kubernetesOf(worker({ kubeletExtraArgs: { 'provider-id': 'oci://{{ ds["id"] }}' } })).node.providerID).toEqual({ template: 'oci://${INSTANCE_DATA_DS_ID}', values: { INSTANCE_DATA_DS_ID: { fromInstanceData: 'ds["id"]' } } });
  });

  it.each([
    ['an expression', 'oci://{{ ds["id"] | lower }}'],
    ['a template of a name outside the instance data', 'x://{{ CLUSTER_NAME }}'],
    ['a Go template', 'equinixmetal://{{ `{{ v1.instance_id }}` }}'],
    ['a value in quotes of a Flatcar unit', "proxmox://'${COREOS_CUSTOM_INSTANCE_ID}'"],
  ])('refuses a provider ID made of %s', (_what, providerId) => {
    expect(() => importClusterApi(worker({ kubeletExtraArgs: { 'provider-id': providerId } }), { source: 'test' })).toThrow(/kubeletExtraArgs\["provider-id"\]: template .* is not a provider ID machineadm composes/);
  });

  it("names the node from Azure's metadata where CAPZ's Flatcar template fills '@@HOSTNAME@@' with sed, dropping the sed and saying so", () => {
    const sed = `sed -i "s/@@HOSTNAME@@/$(curl -s -H Metadata:true --noproxy '*' 'http://169.254.169.254/metadata/instance?api-version=2020-09-01' | jq -r .compute.name)/g" /etc/kubeadm.yml`;
    const { config, notes } = importClusterApi(worker({ name: '@@HOSTNAME@@' }, [sed]), { source: 'test' });
    const spec = config.spec as Json;
    expect(spec.kubernetes.node.name).toEqual({ fromMachine: 'instanceName' });
    expect(spec.commands?.beforeKubeadm ?? []).toEqual([]);
    expect(notes.map((n) => `${n.path}: ${n.message}`)).toContainEqual(expect.stringMatching(/preKubeadmCommands\[0\]: puts the VM's name from Azure's metadata service into \/etc\/kubeadm\.yml in place of @@HOSTNAME@@.*dropped$/));
    // Without the sed the placeholder is only a name, which is no node name.
    expect(kubernetesOf(worker({ name: '@@HOSTNAME@@' })).node.name).toBe('@@HOSTNAME@@');
  });
});

