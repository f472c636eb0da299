// spec.kubernetes.controlPlane: what a control-plane machine runs besides the kubelet (the API
// server, controller manager, scheduler, etcd, cluster DNS) and where it listens. The init
// machine writes these settings into the cluster; a joining control plane takes them from it and
// keeps only its own listening address.
import { ipFamily } from './ip.ts';
import { array, boolean, enumOf, integer, object, optional, record, scalarString, string } from './dsl.ts';

const ABSOLUTE_PATH = /^\/(?!.*\/\.\.?(\/|$))[^\0]*$/;
const absolutePath = (description: string, example: string) =>
  string({ pattern: ABSOLUTE_PATH, patternHint: 'an absolute path on the machine, e.g. /etc/kubernetes/pki (no "." or ".." parts)', description, example });

const flagName = { pattern: /^[a-z0-9][a-z0-9-]*$/, patternHint: 'a flag name without the leading dashes, e.g. max-requests-inflight' };

/** Flags for a control-plane component, by name without dashes; kubeadm writes them into its static pod. */
const componentFlags = (example: Record<string, string>) => record(scalarString({ check: (v) => (/[\r\n\0]/.test(v) ? 'a flag value must be one line|remove the line break' : undefined) }), {
  key: flagName,
  description: 'command-line flags of the component, by name without the leading dashes',
  example,
});

const hostPathMount = object(
  {
    name: string({ pattern: /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, patternHint: 'a lower-case DNS label, e.g. audit-policy', description: 'the volume name in the static pod', example: 'audit' }),
    hostPath: absolutePath('the path on the machine', '/etc/kubernetes/audit'),
    mountPath: absolutePath('where the component sees it', '/etc/kubernetes/audit'),
    readOnly: optional(boolean({ description: 'mount read-only', example: true })),
    pathType: optional(enumOf(['DirectoryOrCreate', 'Directory', 'FileOrCreate', 'File', 'Socket', 'CharDevice', 'BlockDevice'] as const, { description: 'what must be at hostPath (Kubernetes HostPathType)', example: 'DirectoryOrCreate' })),
  },
  { description: 'a directory or file of the machine mounted into the component', example: { name: 'audit', hostPath: '/etc/kubernetes/audit', mountPath: '/etc/kubernetes/audit', readOnly: true } },
);

const envVar = object(
  {
    name: string({ pattern: /^[A-Za-z_][A-Za-z0-9_.-]*$/, patternHint: 'an environment variable name, e.g. HTTPS_PROXY', description: 'the variable\'s name', example: 'HTTPS_PROXY' }),
    value: scalarString({ description: 'the value (kubeadm v1.31 and later)', example: 'http://proxy.example:3128' }),
  },
  { description: 'an environment variable of the component (kubeadm v1.31 and later)', example: { name: 'HTTPS_PROXY', value: 'http://proxy.example:3128' } },
);

const VOLUME = { name: 'audit', hostPath: '/etc/kubernetes/audit', mountPath: '/etc/kubernetes/audit', readOnly: true, pathType: 'DirectoryOrCreate' };
const ENV = { name: 'HTTPS_PROXY', value: 'http://proxy.example:3128' };

const component = (what: string, flags: Record<string, string>) =>
  object(
    {
      extraArgs: optional(componentFlags(flags)),
      extraVolumes: optional(array(hostPathMount, { description: `host paths mounted into the ${what}`, example: [VOLUME] })),
      extraEnvs: optional(array(envVar, { description: `environment of the ${what} (kubeadm v1.31 and later)`, example: [ENV] })),
    },
    { description: `the ${what}'s static pod`, example: { extraArgs: flags } },
  );

function sanProblem(value: string): string | undefined {
  if (ipFamily(value)) return undefined;
  const name = (value.startsWith('*.') ? value.slice(2) : value).toLowerCase();
  return name.split('.').every((part) => /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(part)) ? undefined : 'is not an IP address, a DNS name or a wildcard DNS name (*.example.com)';
}
const sans = (description: string, example: string[]) => optional(array(string({ minLength: 1, check: sanProblem }), { description, example }));

const image = {
  imageRepository: optional(string({ minLength: 1, description: 'registry and path its image is pulled from, e.g. registry.example.com/k8s', example: 'registry.example.com/k8s' })),
  imageTag: optional(string({ pattern: /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$/, patternHint: 'an image tag, e.g. 3.5.15-0', description: 'the image tag, instead of the one kubeadm picks', example: 'v1.11.3' })),
};

const localEtcd = object(
  {
    dataDir: optional(absolutePath('where etcd keeps its data (default /var/lib/etcd); a mount in spec.storage usually holds it', '/var/lib/etcddisk/etcd')),
    ...image,
    extraArgs: optional(componentFlags({ 'quota-backend-bytes': '8589934592' })),
    extraEnvs: optional(array(envVar, { description: 'environment of etcd (kubeadm v1.31 and later)', example: [{ name: 'ETCD_SNAPSHOT_COUNT', value: '10000' }] })),
    serverCertSANs: sans('extra names in the etcd server certificate', ['etcd.example.internal']),
    peerCertSANs: sans('extra names in the etcd peer certificate', ['10.0.0.11']),
  },
  { description: 'etcd as a static pod on each control-plane machine (kubeadm\'s default)', example: { dataDir: '/var/lib/etcddisk/etcd' } },
);

const externalEtcd = object(
  {
    endpoints: array(string({ pattern: /^https?:\/\/\S+$/, patternHint: 'a URL such as https://10.0.0.5:2379' }), { minItems: 1, description: 'client URLs of the etcd cluster', example: ['https://10.0.0.230:2379'] }),
    caFile: optional(absolutePath('CA bundle that signed the etcd server certificates', '/etc/kubernetes/pki/etcd/ca.crt')),
    certFile: optional(absolutePath('client certificate for the API server', '/etc/kubernetes/pki/apiserver-etcd-client.crt')),
    keyFile: optional(absolutePath('key of the client certificate', '/etc/kubernetes/pki/apiserver-etcd-client.key')),
  },
  { description: 'an etcd cluster outside Kubernetes', example: { endpoints: ['https://10.0.0.230:2379'], caFile: '/etc/kubernetes/pki/etcd/ca.crt', certFile: '/etc/kubernetes/pki/apiserver-etcd-client.crt', keyFile: '/etc/kubernetes/pki/apiserver-etcd-client.key' } },
);

export const controlPlaneSection = object(
  {
    localAPIEndpoint: optional(
      object(
        {
          advertiseAddress: optional(string({ check: (v) => (ipFamily(v) === 0 ? `"${v}" is not an IP address|an address of this machine the other members reach, e.g. 10.0.0.11` : undefined), description: 'the address this machine\'s API server advertises', example: '10.0.0.11' })),
          bindPort: optional(integer({ min: 1, max: 65535, description: 'the port this machine\'s API server listens on (default 6443)', example: 6443 })),
        },
        { description: 'where this machine\'s API server listens (init and control-plane join)', example: { advertiseAddress: '10.0.0.11', bindPort: 6443 } },
      ),
    ),
    apiServer: optional(
      object(
        {
          certSANs: sans('extra names and addresses in the API server certificate', ['cp.example.com', '10.0.0.10']),
          extraArgs: optional(componentFlags({ 'audit-log-maxage': '30' })),
          extraVolumes: optional(array(hostPathMount, { description: 'host paths mounted into the API server', example: [VOLUME] })),
          extraEnvs: optional(array(envVar, { description: 'environment of the API server (kubeadm v1.31 and later)', example: [ENV] })),
        },
        { description: "the API server's static pod and certificate", example: { certSANs: ['cp.example.com'], extraArgs: { 'audit-log-maxage': '30' } } },
      ),
    ),
    controllerManager: optional(component('controller manager', { 'cloud-provider': 'external' })),
    scheduler: optional(component('scheduler', { 'bind-address': '0.0.0.0' })),
    etcd: optional(
      object(
        { local: optional(localEtcd), external: optional(externalEtcd) },
        {
          description: 'etcd: local (static pods, the default) or external', example: { local: { dataDir: '/var/lib/etcddisk/etcd' } },
          check: (e, report) => {
            if (e.local !== undefined && e.external !== undefined) report([], 'give local or external, not both');
          },
        },
      ),
    ),
    dns: optional(object(image, { description: 'the cluster DNS add-on image', example: { imageRepository: 'registry.example.com/k8s/coredns', imageTag: 'v1.11.3' } })),
    imageRepository: optional(string({ minLength: 1, description: 'registry the control-plane images are pulled from (default registry.k8s.io)', example: 'registry.example.com/k8s' })),
    featureGates: optional(record(boolean(), { key: { pattern: /^[A-Za-z][A-Za-z0-9]*$/, patternHint: 'a kubeadm feature gate name, e.g. ControlPlaneKubeletLocalMode' }, description: "kubeadm's own feature gates (not the components')", example: { ControlPlaneKubeletLocalMode: true } })),
    clusterName: optional(string({ pattern: /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/, patternHint: 'a lower-case DNS name, e.g. prod-eu1', description: 'the cluster name in kubeconfig files (default kubernetes)', example: 'prod-eu1' })),
    certificatesDir: optional(absolutePath('where the cluster certificates are (default /etc/kubernetes/pki)', '/etc/kubernetes/pki')),
    certificateValidityDays: optional(integer({ min: 1, max: 36500, description: 'validity of the certificates kubeadm signs, in days (kubeadm v1.31 and later; default 365)', example: 365 })),
    caCertificateValidityDays: optional(integer({ min: 1, max: 36500, description: 'validity of the CA certificates kubeadm makes, in days (kubeadm v1.31 and later; default 3650)', example: 3650 })),
    encryptionAlgorithm: optional(enumOf(['RSA-2048', 'RSA-3072', 'RSA-4096', 'ECDSA-P256', 'ECDSA-P384'] as const, { description: 'key type of the certificates kubeadm makes (kubeadm v1.31 and later; ECDSA-P384 from v1.34)', example: 'ECDSA-P256' })),
  },
  { description: 'the control-plane components of a control-plane machine', example: { apiServer: { certSANs: ['cp.example.com'] }, etcd: { local: { dataDir: '/var/lib/etcddisk/etcd' } } } },
);
