// spec.kubernetes: how this machine becomes a node, in machineadm's own terms (never kubeadm's).
import { array, enumOf, integer, object, optional, record, scalarString, secret, string, withDefault } from './dsl.ts';

export const taint = object({
  key: string({ minLength: 1 }),
  value: optional(string()),
  effect: enumOf(['NoSchedule', 'PreferNoSchedule', 'NoExecute'] as const),
});

export const kubernetesSection = object({
  role: withDefault(enumOf(['worker', 'control-plane'] as const), 'worker'),
  bootstrap: withDefault(enumOf(['join', 'init'] as const), 'join'),
  version: optional(string({ pattern: /^v?\d+\.\d+(\.\d+)?$/, patternHint: 'a Kubernetes version such as v1.31.2' })),
  controlPlaneEndpoint: optional(string({ minLength: 1 })),
  token: optional(secret({ description: 'bootstrap token [a-z0-9]{6}.[a-z0-9]{16}' })),
  caCertHashes: optional(array(string({ minLength: 1 }))),
  certificateKey: optional(secret()),
  podSubnet: optional(string()),
  serviceSubnet: optional(string()),
  certSANs: optional(array(string({ minLength: 1 }))),
  apiServerExtraArgs: optional(record(scalarString())),
  node: optional(
    object({
      name: optional(string({ minLength: 1 })),
      labels: optional(record(scalarString())),
      taints: optional(array(taint)),
      kubeletExtraArgs: optional(record(scalarString())),
    }),
  ),
  kubelet: optional(
    object({
      maxPods: optional(integer({ min: 1 })),
      systemReserved: optional(record(scalarString())),
      kubeReserved: optional(record(scalarString())),
      evictionHard: optional(record(scalarString())),
    }),
  ),
  staticPods: optional(array(object({ name: string({ minLength: 1 }), manifest: string({ minLength: 1 }) }))),
  retries: withDefault(integer({ min: 0, max: 20 }), 3),
  timeoutSeconds: withDefault(integer({ min: 30 }), 600),
});
