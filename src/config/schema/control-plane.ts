// spec.kubernetes.controlPlane: what a control-plane machine runs besides the kubelet (the API
// server, controller manager, scheduler, etcd, cluster DNS) and where it listens. The init
// machine writes these settings into the cluster; a joining control plane takes them from it and
// keeps only its own listening address.
import { ipFamily } from './ip.ts';
import { array, boolean, enumOf, integer, object, optional, record, scalarString, string } from './dsl.ts';

const ABSOLUTE_PATH = /^\/(?!.*\/\.\.?(\/|$))[^\0]*$/;
const absolutePath = (description: string) =>
  string({ pattern: ABSOLUTE_PATH, patternHint: 'an absolute path on the machine, e.g. /etc/kubernetes/pki (no "." or ".." parts)', description });

const flagName = { pattern: /^[a-z0-9][a-z0-9-]*$/, patternHint: 'a flag name without the leading dashes, e.g. max-requests-inflight' };

/** Flags for a control-plane component, by name without dashes; kubeadm writes them into its static pod. */
export const componentFlags = record(scalarString({ check: (v) => (/[\r\n\0]/.test(v) ? 'a flag value must be one line|remove the line break' : undefined) }), {
  key: flagName,
  description: 'command-line flags of the component, by name without the leading dashes',
});

const hostPathMount = object(
  {
    name: string({ pattern: /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, patternHint: 'a lower-case DNS label, e.g. audit-policy', description: 'the volume name in the static pod' }),
    hostPath: absolutePath('the path on the machine'),
    mountPath: absolutePath('where the component sees it'),
    readOnly: optional(boolean({ description: 'mount read-only' })),
    pathType: optional(enumOf(['DirectoryOrCreate', 'Directory', 'FileOrCreate', 'File', 'Socket', 'CharDevice', 'BlockDevice'] as const, { description: 'what must be at hostPath (Kubernetes HostPathType)' })),
  },
  { description: 'a directory or file of the machine mounted into the component' },
);

const envVar = object(
  {
    name: string({ pattern: /^[A-Za-z_][A-Za-z0-9_.-]*$/, patternHint: 'an environment variable name, e.g. HTTPS_PROXY' }),
    value: scalarString({ description: 'the value (kubeadm v1.31 and later)' }),
  },
  { description: 'an environment variable of the component (kubeadm v1.31 and later)' },
);

const component = (what: string) =>
  object(
    {
      extraArgs: optional(componentFlags),
      extraVolumes: optional(array(hostPathMount, { description: `host paths mounted into the ${what}` })),
      extraEnvs: optional(array(envVar, { description: `environment of the ${what} (kubeadm v1.31 and later)` })),
    },
    { description: `the ${what}'s static pod` },
  );

function sanProblem(value: string): string | undefined {
  if (ipFamily(value)) return undefined;
  const name = (value.startsWith('*.') ? value.slice(2) : value).toLowerCase();
  return name.split('.').every((part) => /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(part)) ? undefined : 'is not an IP address, a DNS name or a wildcard DNS name (*.example.com)';
}
const sans = (description: string) => optional(array(string({ minLength: 1, check: sanProblem }), { description }));

const image = {
  imageRepository: optional(string({ minLength: 1, description: 'registry and path its image is pulled from, e.g. registry.example.com/k8s' })),
  imageTag: optional(string({ pattern: /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$/, patternHint: 'an image tag, e.g. 3.5.15-0' })),
};

const localEtcd = object(
  {
    dataDir: optional(absolutePath('where etcd keeps its data (default /var/lib/etcd); a mount in spec.storage usually holds it')),
    ...image,
    extraArgs: optional(componentFlags),
    extraEnvs: optional(array(envVar)),
    serverCertSANs: sans('extra names in the etcd server certificate'),
    peerCertSANs: sans('extra names in the etcd peer certificate'),
  },
  { description: 'etcd as a static pod on each control-plane machine (kubeadm\'s default)' },
);

const externalEtcd = object(
  {
    endpoints: array(string({ pattern: /^https?:\/\/\S+$/, patternHint: 'a URL such as https://10.0.0.5:2379' }), { minItems: 1, description: 'client URLs of the etcd cluster' }),
    caFile: optional(absolutePath('CA bundle that signed the etcd server certificates')),
    certFile: optional(absolutePath('client certificate for the API server')),
    keyFile: optional(absolutePath('key of the client certificate')),
  },
  { description: 'an etcd cluster outside Kubernetes' },
);

export const controlPlaneSection = object(
  {
    localAPIEndpoint: optional(
      object(
        {
          advertiseAddress: optional(string({ check: (v) => (ipFamily(v) === 0 ? `"${v}" is not an IP address|an address of this machine the other members reach, e.g. 10.0.0.11` : undefined), description: 'the address this machine\'s API server advertises' })),
          bindPort: optional(integer({ min: 1, max: 65535, description: 'the port this machine\'s API server listens on (default 6443)' })),
        },
        { description: 'where this machine\'s API server listens (init and control-plane join)' },
      ),
    ),
    apiServer: optional(
      object(
        {
          certSANs: sans('extra names and addresses in the API server certificate'),
          extraArgs: optional(componentFlags),
          extraVolumes: optional(array(hostPathMount)),
          extraEnvs: optional(array(envVar)),
        },
        { description: "the API server's static pod and certificate" },
      ),
    ),
    controllerManager: optional(component('controller manager')),
    scheduler: optional(component('scheduler')),
    etcd: optional(
      object(
        { local: optional(localEtcd), external: optional(externalEtcd) },
        {
          description: 'etcd: local (static pods, the default) or external',
          check: (e, report) => {
            if (e.local !== undefined && e.external !== undefined) report([], 'give local or external, not both');
          },
        },
      ),
    ),
    dns: optional(object(image, { description: 'the cluster DNS add-on image' })),
    imageRepository: optional(string({ minLength: 1, description: 'registry the control-plane images are pulled from (default registry.k8s.io)' })),
    featureGates: optional(record(boolean(), { key: { pattern: /^[A-Za-z][A-Za-z0-9]*$/, patternHint: 'a kubeadm feature gate name, e.g. ControlPlaneKubeletLocalMode' }, description: "kubeadm's own feature gates (not the components')" })),
    clusterName: optional(string({ pattern: /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/, patternHint: 'a lower-case DNS name, e.g. prod-eu1', description: 'the cluster name in kubeconfig files (default kubernetes)' })),
    certificatesDir: optional(absolutePath('where the cluster certificates are (default /etc/kubernetes/pki)')),
    certificateValidityDays: optional(integer({ min: 1, max: 36500, description: 'validity of the certificates kubeadm signs, in days (kubeadm v1.31 and later; default 365)' })),
    caCertificateValidityDays: optional(integer({ min: 1, max: 36500, description: 'validity of the CA certificates kubeadm makes, in days (kubeadm v1.31 and later; default 3650)' })),
    encryptionAlgorithm: optional(enumOf(['RSA-2048', 'RSA-3072', 'RSA-4096', 'ECDSA-P256', 'ECDSA-P384'] as const, { description: 'key type of the certificates kubeadm makes (kubeadm v1.31 and later; ECDSA-P384 from v1.34)' })),
  },
  { description: 'the control-plane components of a control-plane machine' },
);
