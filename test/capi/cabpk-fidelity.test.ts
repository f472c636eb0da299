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
import { ConfigError } from '../../src/errors.ts';
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
    // Left before kubeadm: the unit the template enables, no script of the envsubst lines.
    expect((spec.commands?.beforeKubeadm ?? []).map((c: Json) => c.argv ?? c.shell)).toEqual([['systemctl', 'enable', '--now', 'coreos-metadata-sshkeys@.service']]);
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

  // CABPK writes bootCommands as cloud-config's bootcmd, which cloudbase-init has no plugin for
  // (its cloud-config plugins: write_files, set_timezone, set_hostname, ntp, groups, users,
  // runcmd): it logs the key as not supported and goes on, so the lines never ran.
  it('leaves the bootCommands of a Windows template out, saying they never ran, and keeps them on Linux', () => {
    const doc = fixture('08-capz-windows-workers.yaml');
    doc.spec.template.spec.bootCommands = ['New-Item -ItemType Directory -Force C:\\boot'];
    const windows = importClusterApi(doc, { source: 'test' });
    expect((windows.config.spec as Json).commands?.boot).toBeUndefined();
    expect(windows.notes).toContainEqual({ path: 'spec.template.spec.bootCommands', message: expect.stringContaining('cloudbase-init has no bootcmd: these never ran under CABPK on Windows') });
    const linux = fixture('03-capd-quickstart-workers.yaml');
    linux.spec.template.spec.bootCommands = ['mkdir -p /boot-marker'];
    expect((importClusterApi(linux, { source: 'test' }).config.spec as Json).commands.boot[0].shell).toContain('mkdir -p /boot-marker');
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

  // CABPK writes a file's content as a YAML literal block (content: |), which ends the text with
  // exactly one newline whatever it ended with; cloud-init writes what YAML read.
  it.each([
    ['127.0.0.1 localhost kubernetes', '127.0.0.1 localhost kubernetes\n'],
    ['a\n\nb\n\n\n', 'a\n\nb\n'],
    ['line\n', 'line\n'],
    ['\n', ''],
  ])("ends a file's plain content %j with one newline, as CABPK's content: | block does", (content, written) => {
    const doc = fixture('03-capd-quickstart-workers.yaml');
    doc.spec.template.spec.files = [{ path: '/etc/kube-vip.hosts', content }, { path: '/etc/b64', content: 'aGk=', encoding: 'base64' }];
    const files = (importClusterApi(doc, { source: 'test' }).config.spec as Json).files;
    expect(files.map((f: Json) => f.content)).toEqual([written, 'aGk=']);
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

  it.each(['systemd', 'cgroupfs'])("takes the kubelet's cgroup-driver=%s as spec.containerd.cgroupDriver, the one driver of the kubelet and containerd, and the result validates", async (driver) => {
    const { config, notes } = importClusterApi(worker({ kubeletExtraArgs: { 'cgroup-driver': driver, 'cloud-provider': 'external' } }), { source: 'test' });
    const spec = config.spec as Json;
    expect(spec.kubernetes.node.kubeletExtraArgs).toEqual({ 'cloud-provider': 'external' });
    expect(spec.containerd?.cgroupDriver ?? 'systemd').toBe(driver);
    expect(notes.map((n) => `${n.path}: ${n.message}`).join('\n')).toContain('kubeletExtraArgs["cgroup-driver"]: cgroup-driver=' + driver);
    const [{ machineConfigSchema }, { parseWith }] = await Promise.all([import('../../src/config/schema/index.ts'), import('../../src/config/schema/dsl.ts')]);
    expect(parseWith(machineConfigSchema, config).issues).toEqual([]);
  });

  it("takes the kubelet configuration file a template gives with --config (Hetzner's) as a kubelet patch over kubeadm's, and the result validates", async () => {
    const content = 'apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nmaxPods: 220\nserverTLSBootstrap: true\n';
    const doc = worker({ kubeletExtraArgs: { config: '/etc/kubernetes/kubelet/config.yaml', 'cloud-provider': 'external' } });
    doc.spec.template.spec.files = [{ path: '/etc/kubernetes/kubelet/config.yaml', owner: 'root:root', permissions: '0644', content }];
    const { config, notes } = importClusterApi(doc, { source: 'test' });
    const spec = config.spec as Json;
    expect(spec.kubernetes.node.kubeletExtraArgs).toEqual({ 'cloud-provider': 'external' });
    expect(spec.kubernetes.patchesDirectory).toBe('/etc/machineadm/kubeadm-patches');
    expect(spec.files).toContainEqual(expect.objectContaining({ path: '/etc/machineadm/kubeadm-patches/kubeletconfiguration0+merge.yaml', content }));
    expect(notes.map((n) => `${n.path}: ${n.message}`).join('\n')).toContain('kubeletExtraArgs.config: /etc/kubernetes/kubelet/config.yaml');
    const [{ machineConfigSchema }, { parseWith }] = await Promise.all([import('../../src/config/schema/index.ts'), import('../../src/config/schema/dsl.ts')]);
    expect(parseWith(machineConfigSchema, config).issues).toEqual([]);
    // A file the import cannot read (from a Secret) stays a flag, which validation refuses, naming it.
    const secret = worker({ kubeletExtraArgs: { config: '/etc/kubelet.yaml' } });
    secret.spec.template.spec.files = [{ path: '/etc/kubelet.yaml', contentFrom: { secret: { name: 's', key: 'k' } } }];
    expect((importClusterApi(secret, { source: 'test' }).config.spec as Json).kubernetes.node.kubeletExtraArgs).toEqual({ config: '/etc/kubelet.yaml' });
  });

  it.each([
    ['an expression', 'oci://{{ ds["id"] | lower }}'],
    ['a template of a name outside the instance data', 'x://{{ CLUSTER_NAME }}'],
    ['a Go template', 'equinixmetal://{{ `{{ v1.instance_id }}` }}'],
    ['a Flatcar unit\'s variable that is not the SMBIOS UUID', "proxmox://'${COREOS_CUSTOM_PRIVATE_IPV4}'"],
  ])('refuses a provider ID made of %s', (_what, providerId) => {
    expect(() => importClusterApi(worker({ kubeletExtraArgs: { 'provider-id': providerId } }), { source: 'test' })).toThrow(/kubeletExtraArgs\["provider-id"\]: template .* is not a provider ID machineadm composes/);
  });

  it("makes CAPMOX's Flatcar provider ID proxmox://'${COREOS_CUSTOM_INSTANCE_ID}' from the SMBIOS UUID machineadm reads as instanceId, saying where it comes from", () => {
    const { config, notes } = importClusterApi(worker({ kubeletExtraArgs: { 'provider-id': "proxmox://'${COREOS_CUSTOM_INSTANCE_ID}'" } }), { source: 'test' });
    expect((config.spec as Json).kubernetes.node.providerID).toEqual({ template: 'proxmox://${MACHINE_INSTANCE_ID}', values: { MACHINE_INSTANCE_ID: { fromMachine: 'instanceId' } } });
    expect(notes.map((n) => `${n.path}: ${n.message}`)).toContainEqual(expect.stringMatching(/kubeletExtraArgs\["provider-id"\]: .*SMBIOS UUID.*\/sys\/class\/dmi\/id\/product_uuid given --set cloud=bare-metal/));
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


/** The problems an import refuses the document with, as "path: message". */
function refusals(doc: Json, options: { join?: boolean } = {}): string[] {
  try {
    importClusterApi(doc, { source: 'test', ...options });
  } catch (error) {
    if (error instanceof ConfigError) return error.issues.map((i) => `${i.path}: ${i.message}`);
    throw error;
  }
  return [];
}

const joining = (spec: Json): Json => ({ apiVersion: 'bootstrap.cluster.x-k8s.io/v1beta1', kind: 'KubeadmConfig', metadata: { name: 'w' }, spec: { joinConfiguration: {}, ...spec } });
const HASH_OF_PASSWORD = '$6$abc$3QXyo0Bq0Fv0Kp1mS2o1lTqzWmVx8m0d0y5oW7kqW8Jc1b9qf1pJ0Gq8Vb5a9m2nV8y0oQ2wX7cZ1e3f4g5h6.';

// cloud-init's users: lock_passwd defaults to true, and CABPK writes it only when lockPassword is
// set: a passwd is set and then locked, so it logs no one in, unless lockPassword is false.
describe('an import gives users the password state cloud-init leaves them', () => {
  it.each([
    ['lockPassword: true', { lockPassword: true }],
    ['no lockPassword (cloud-init locks by default)', {}],
  ])('leaves passwd out and keeps the password locked with %s, saying so', (_what, lock) => {
    const { config, notes } = importClusterApi(joining({ users: [{ name: 'ops', passwd: HASH_OF_PASSWORD, ...lock }] }), { source: 'test' });
    expect((config.spec as Json).users).toEqual([{ name: 'ops', lockPassword: true }]);
    expect(notes).toContainEqual({ path: 'spec.users[0].passwd', message: expect.stringMatching(/^cloud-init sets this password and locks it .*not carried; the password stays locked .*set lockPassword: false$/) });
  });

  // CABPK writes sudo unquoted (sudo: false), which cloud-init's YAML reads as false or null: no rule.
  it.each(['false', 'False', 'no', 'off', 'null', '~'])('gives no sudo rule for sudo %j, as cloud-init does, saying so', (sudo) => {
    const doc = fixture('03-capd-quickstart-workers.yaml');
    doc.spec.template.spec.users = [{ name: 'ops', sudo }];
    const { config, notes } = importClusterApi(doc, { source: 'test' });
    expect((config.spec as Json).users[0].sudo).toBeUndefined();
    expect(notes.map((n) => n.path)).toContain('spec.template.spec.users[0].sudo');
  });

  it('carries passwd, or passwdFrom, as passwordHash when lockPassword is false', () => {
    const users = (importClusterApi(joining({ users: [{ name: 'ops', passwd: HASH_OF_PASSWORD, lockPassword: false }, { name: 'dev', lockPassword: false, passwdFrom: { secret: { name: 'dev-password', key: 'hash' } } }] }), { source: 'test' }).config.spec as Json).users;
    expect(users[0]).toEqual({ name: 'ops', lockPassword: false, passwordHash: HASH_OF_PASSWORD });
    expect(users[1].passwordHash).toEqual({ valueFrom: { file: '/etc/machineadm/capi-secrets/dev-password/hash' } });
    const locked = importClusterApi(joining({ users: [{ name: 'dev', passwdFrom: { secret: { name: 'dev-password', key: 'hash' } } }] }), { source: 'test' });
    expect((locked.config.spec as Json).users).toEqual([{ name: 'dev', lockPassword: true }]);
    expect(locked.notes.map((n) => n.path)).toContain('spec.users[0].passwdFrom');
  });
});

// cloud-init's write_files chowns with the user and group it is given, leaving out what is not
// given: the file it has just written as root keeps root there.
describe("an import gives files the owner cloud-init's write_files gives them", () => {
  it.each([
    ['ops', 'ops:root'],
    ['ops:', 'ops:root'],
    [':adm', 'root:adm'],
    ['ops:adm', 'ops:adm'],
    [' ops : adm ', 'ops:adm'],
    ['-1:adm', 'root:adm'],
    ['root:root', 'root:root'],
  ])('carries the owner %j as %s', (written, owner) => {
    const { config } = importClusterApi(joining({ files: [{ path: '/etc/x', content: 'x', owner: written }] }), { source: 'test' });
    expect((config.spec as Json).files[0].owner).toBe(owner);
  });
});

// CABPK's Ignition additionalConfig is a Container Linux Config, read by a YAML 1.1 parser.
describe("an import reads Ignition's files as the Container Linux Config transpiler does", () => {
  const ignitionFiles = (files: string): Json => joining({ format: 'ignition', ignition: { containerLinuxConfig: { additionalConfig: `storage:\n  files:\n${files}` } } });
  const file = (extra: string) => `  - path: /etc/x\n    contents: {inline: "x"}\n${extra}`;

  it.each([
    ['0744', '0744'],
    ['0600', '0600'],
    ['0644', '0644'],
    ['420', '0644'],
    ['04755', '04755'],
  ])('reads mode: %s as %s (a leading zero is octal in YAML 1.1)', (written, mode) => {
    expect((importClusterApi(ignitionFiles(file(`    mode: ${written}\n`)), { source: 'test' }).config.spec as Json).files[0].mode).toBe(mode);
  });

  it.each([
    ['user: {id: 500}\n    group: {id: 500}', '500:500'],
    ['user: {id: 0}', '0:root'],
    ['user: {name: core}', 'core:root'],
    ['user: {name: core}\n    group: {name: core}', 'core:core'],
    ['group: {id: 1000}', 'root:1000'],
    ['user: {id: 500, name: core}', '500:root'],
  ])('carries the owner %s as %s (Ignition takes the id first, and root for what is not given)', (written, owner) => {
    expect((importClusterApi(ignitionFiles(file(`    ${written}\n`)), { source: 'test' }).config.spec as Json).files[0].owner).toBe(owner);
  });

  it('refuses a mode that is no integer, and an owner that is neither an id nor a name, naming the field', () => {
    const said = refusals(ignitionFiles(`${file('    mode: 0o644\n')}  - path: /etc/y\n    contents: {inline: "y"}\n    user: {id: "500"}\n`));
    expect(said).toContainEqual(expect.stringMatching(/additionalConfig: storage\.files\[0\]\.mode: "0o644" is not a file mode: give an integer, octal with a leading zero \(0644\) or decimal \(420\)/));
    expect(said).toContainEqual(expect.stringMatching(/additionalConfig: storage\.files\[1\]\.user: expected \{ id: NUMBER \} or \{ name: NAME \}/));
  });
});

// cloud-init renders the templates of the whole of CABPK's user data, the kubeadm configuration
// included; machineadm fills in only those an import turned into machine values.
describe('an import refuses a cloud-init template where machineadm would pass it on as text', () => {
  it("refuses one in a control-plane component's flags (either extraArgs form) and in a file's path, naming the field", () => {
    const doc = fixture('01-capd-quickstart-kcp.yaml');
    const spec = doc.spec.kubeadmConfigSpec;
    spec.clusterConfiguration = { ...spec.clusterConfiguration, apiServer: { extraArgs: { 'advertise-address': '{{ ds.meta_data.local_ipv4 }}', 'v': '2' } }, etcd: { local: { extraArgs: [{ name: 'listen-metrics-urls', value: 'http://{{ ds.meta_data.local_ipv4 }}:2381' }] } }, scheduler: { extraArgs: { 'bind-address': '{{ v1.local_ipv4 }}' } } };
    spec.files = [{ path: '/etc/{{ v1.local_hostname }}.conf', content: 'hi' }];
    const said = refusals(doc);
    expect(said).toEqual(expect.arrayContaining([
      'spec.kubeadmConfigSpec.clusterConfiguration.apiServer.extraArgs["advertise-address"]: flag advertise-address: {{ ds.meta_data.local_ipv4 }} holds a cloud-init template, which cloud-init fills in and machineadm does not in a component\'s flags',
      'spec.kubeadmConfigSpec.clusterConfiguration.etcd.local.extraArgs[0].value: flag listen-metrics-urls: http://{{ ds.meta_data.local_ipv4 }}:2381 holds a cloud-init template, which cloud-init fills in and machineadm does not in a component\'s flags',
      'spec.kubeadmConfigSpec.clusterConfiguration.scheduler.extraArgs["bind-address"]: flag bind-address: {{ v1.local_ipv4 }} holds a cloud-init template, which cloud-init fills in and machineadm does not in a component\'s flags',
      "spec.kubeadmConfigSpec.files[0].path: /etc/{{ v1.local_hostname }}.conf holds a cloud-init template, which cloud-init fills in and machineadm's file paths do not",
    ]));
    expect(said).toHaveLength(4);
  });

  it('refuses one left in any other field of a Linux import, naming where it is in the MachineConfig', () => {
    const said = refusals(joining({
      joinConfiguration: { nodeRegistration: { taints: [{ key: 'example.com/host', value: '{{ v1.instance_id }}', effect: 'NoSchedule' }] } },
      ntp: { servers: ['{{ ds.meta_data.ntp_server }}'] },
      users: [{ name: 'ops', gecos: 'ops on {{ v1.local_hostname }}' }],
      mounts: [['{{ ds.meta_data.data_disk }}', '/data']],
    }));
    expect(said).toEqual(expect.arrayContaining([
      'spec.kubernetes.node.taints[0].value of the MachineConfig made: holds a cloud-init template ({{ v1.instance_id }}), which cloud-init fills in and machineadm would pass on as text',
      'spec.timeServers.servers[0] of the MachineConfig made: holds a cloud-init template ({{ ds.meta_data.ntp_server }}), which cloud-init fills in and machineadm would pass on as text',
      'spec.users[0].gecos of the MachineConfig made: holds a cloud-init template ({{ v1.local_hostname }}), which cloud-init fills in and machineadm would pass on as text',
      'spec.storage.mounts[0].device of the MachineConfig made: holds a cloud-init template ({{ ds.meta_data.data_disk }}), which cloud-init fills in and machineadm would pass on as text',
    ]));
    expect(said).toHaveLength(4);
  });

  it('says what it does where CABPK and cloud-init do something else: a Windows worker\'s os taint, ntp enabled without servers', () => {
    const windows = importClusterApi(fixture('08-capz-windows-workers.yaml'), { source: 'test' });
    expect(windows.notes).toContainEqual(expect.objectContaining({ path: '(Windows worker)', message: expect.stringContaining('machineadm adds os=windows:NoSchedule') }));
    const ntp = importClusterApi(joining({ ntp: { enabled: true } }), { source: 'test' });
    expect(ntp.notes).toContainEqual(expect.objectContaining({ path: 'spec.ntp.enabled', message: expect.stringContaining("cloud-init sets up its NTP client with the distribution's default pools") }));
    expect((ntp.config.spec as Json).timeServers).toBeUndefined();
  });

  it('keeps the text of an Ignition import (CABPK\'s Ignition data renders no template either)', () => {
    const doc = joining({ format: 'ignition', users: [{ name: 'ops', gecos: 'ops on {{ v1.local_hostname }}' }] });
    expect((importClusterApi(doc, { source: 'test' }).config.spec as Json).users[0].gecos).toBe('ops on {{ v1.local_hostname }}');
  });

  it('keeps the text of a Windows import (cloudbase-init renders no template)', () => {
    const doc = fixture('08-capz-windows-workers.yaml');
    doc.spec.template.spec.joinConfiguration.nodeRegistration.taints = [{ key: 'example.com/host', value: '{{ v1.instance_id }}', effect: 'NoSchedule' }];
    expect(kubernetesOf(doc).node.taints[0]).toEqual({ key: 'example.com/host', value: '{{ v1.instance_id }}', effect: 'NoSchedule' });
  });
});

describe('kubeadm verbosity', () => {
  it.each([
    [5, 5, false],
    [8, 6, true],
  ])('imports verbosity %i as %i, saying why when it is lowered', (given, imported, noted) => {
    const { config, notes } = importClusterApi(joining({ verbosity: given }), { source: 'test', join: true });
    expect(((config.spec as Json).kubernetes as Json).verbosity).toBe(imported);
    const note = notes.find((n) => n.path === 'spec.verbosity');
    if (noted) expect(note?.message).toContain('prints API request headers and bodies, which carry the bootstrap token: machineadm passes --v=6 at most');
    else expect(note).toBeUndefined();
  });
});

// What cloud-init does with CABPK's cloud-config that machineadm's run, started once by the
// recipe's runcmd, does not do by itself: each is said to the operator in a note.
describe('an import says where cloud-init does more than a machineadm run', () => {
  const said = (doc: Json): string[] => importClusterApi(doc, { source: 'test' }).notes.map((n) => `${n.path}: ${n.message}`);

  // cloud-init's bootcmd runs at every boot (cc_bootcmd: PER_ALWAYS); the recipe runs machineadm
  // from runcmd, once per instance.
  it('says that bootCommands ran at every boot under cloud-init, and run only when machineadm runs', () => {
    const { config, notes } = importClusterApi(joining({ bootCommands: ['sysctl -w vm.max_map_count=262144'] }), { source: 'test' });
    expect((config.spec as Json).commands.boot[0].shell).toContain('sysctl -w vm.max_map_count=262144');
    expect(notes).toContainEqual({ path: 'spec.bootCommands', message: expect.stringMatching(/^cloud-init runs bootcmd at every boot; machineadm runs spec\.commands\.boot when it runs .*not at the boots after/) });
  });

  // CABPK writes a Secret's value into a content: | block too, which cloud-init reads back ending
  // with exactly one newline; machineadm writes the value it reads byte for byte.
  it.each([
    ['plain', undefined, true],
    ['base64', 'base64', false],
  ])("says that a %s contentFrom file ended with exactly one newline under cloud-init", (_what, encoding, noted) => {
    const notes = said(joining({ files: [{ path: '/etc/s.conf', contentFrom: { secret: { name: 's', key: 'k' } }, ...(encoding ? { encoding } : {}) }] }));
    const newline = notes.filter((n) => n.startsWith('spec.files[0].contentFrom: ') && /exactly one newline/.test(n));
    expect(newline).toHaveLength(noted ? 1 : 0);
  });

  it("says that ntp: {} has cloud-init's default pools set up by CABPK before v1.11, and leaves the time service as it is", () => {
    const { config, notes } = importClusterApi(joining({ ntp: {} }), { source: 'test' });
    expect((config.spec as Json).timeServers).toBeUndefined();
    expect(notes).toContainEqual({ path: 'spec.ntp', message: expect.stringMatching(/default pools/) });
    // cloud-init's ntp enabled defaults to true: servers without it are set up.
    expect((importClusterApi(joining({ ntp: { servers: ['time.example'] } }), { source: 'test' }).config.spec as Json).timeServers).toEqual({ servers: ['time.example'] });
  });

  // CABPK's Ignition writes /etc/ntp.conf only `if and .NTP.Enabled .NTP.Servers`.
  it('leaves ntp servers without enabled: true out of an Ignition import, as CABPK does, saying so', () => {
    const { config, notes } = importClusterApi(joining({ format: 'ignition', ntp: { servers: ['time.example'] } }), { source: 'test' });
    expect((config.spec as Json).timeServers).toBeUndefined();
    expect(notes).toContainEqual({ path: 'spec.ntp.servers', message: expect.stringContaining('enabled: true') });
    expect((importClusterApi(joining({ format: 'ignition', ntp: { enabled: true, servers: ['time.example'] } }), { source: 'test' }).config.spec as Json).timeServers).toEqual({ servers: ['time.example'] });
  });

  // CABPK's users: replace cloud-init's users: [default]; the recipe's cloud-config has no users:.
  it.each([
    ['cloud-config', {}, true],
    ['Ignition (Flatcar keeps its core user either way)', { format: 'ignition' }, false],
  ])("says, for %s, that cloud-init makes the image's default user under the recipe but not under CABPK", (_what, format, noted) => {
    const notes = said(joining({ ...format, users: [{ name: 'ops' }] }));
    expect(notes.filter((n) => n.startsWith('spec.users: ') && /default user/.test(n) && /users: \[\]/.test(n))).toHaveLength(noted ? 1 : 0);
  });
});
