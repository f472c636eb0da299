// Which kubeadm configuration API to write. kubeadm v1.31 enabled v1beta4 and deprecated v1beta3
// (removed in v1.36), so the kubeadm on the machine decides; spec.kubernetes.version stands in
// when kubeadm is not installed yet (a plan made before the prepare phase installs it).
import { OLDEST_KUBERNETES_MINOR } from '../config/schema/kubernetes-version.ts';

export type KubeadmApi = 'v1beta3' | 'v1beta4';

export const KUBEADM_GROUP = 'kubeadm.k8s.io';
/** The first kubeadm minor with v1beta3 (v1.22) and with v1beta4 (v1.31). */
export const V1BETA3_SINCE = OLDEST_KUBERNETES_MINOR;
export const V1BETA4_SINCE = 31;
/** kubeadm v1.25 added the kubeletconfiguration patch target (per-node kubelet settings on join). */
export const KUBELET_PATCH_SINCE = 25;
/** kubeadm v1.34 added encryptionAlgorithm ECDSA-P384 (v1.31 to v1.33 refuse it at validation). */
export const ECDSA_P384_SINCE = 34;

export interface ApiChoice {
  api: KubeadmApi;
  apiVersion: string;
  /** Where the decision came from, for the plan: "kubeadm v1.31.2", "spec.kubernetes.version v1.30.4", "default". */
  basedOn: string;
  /** Whether kubeadm join can patch the kubelet configuration; older kubeadm gets kubelet flags instead. */
  kubeletPatches: boolean;
  /** The minor of the version the choice was based on; undefined by default (nothing to go by). */
  minor?: number;
}

export function parseMinor(version: string): { major: number; minor: number } | undefined {
  const match = /^v?(\d+)\.(\d+)/.exec(version.trim());
  return match ? { major: Number(match[1]), minor: Number(match[2]) } : undefined;
}

/** Throws a plain Error (the caller wraps it) for a kubeadm older than any API machineadm writes. */
export function chooseApi(kubeadmVersion: string | undefined, kubernetesVersion: string | undefined): ApiChoice {
  const source = kubeadmVersion ? `kubeadm ${kubeadmVersion}` : kubernetesVersion ? `spec.kubernetes.version ${kubernetesVersion}` : undefined;
  const version = kubeadmVersion ?? kubernetesVersion;
  if (!version || !source) return { api: 'v1beta4', apiVersion: `${KUBEADM_GROUP}/v1beta4`, basedOn: 'default (no kubeadm installed and no spec.kubernetes.version)', kubeletPatches: true };
  const parsed = parseMinor(version);
  if (!parsed || parsed.major !== 1) throw new Error(`cannot read a Kubernetes 1.x version from ${source}`);
  if (parsed.minor < V1BETA3_SINCE) throw new Error(`${source} is older than v1.${V1BETA3_SINCE}, the oldest kubeadm machineadm can configure`);
  const api: KubeadmApi = parsed.minor >= V1BETA4_SINCE ? 'v1beta4' : 'v1beta3';
  return { api, apiVersion: `${KUBEADM_GROUP}/${api}`, basedOn: source, kubeletPatches: parsed.minor >= KUBELET_PATCH_SINCE, minor: parsed.minor };
}
