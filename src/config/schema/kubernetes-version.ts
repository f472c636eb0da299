// Which Kubernetes versions spec.kubernetes.version may name: releases (v1.31.2, and the
// pre-releases kubeadm deploys the same way: v1.37.0-alpha.1, -beta.N, -rc.N) from the oldest
// kubeadm machineadm can configure. kubeadm also takes CI builds (ci/latest), which are not
// releases: no release mirror, signature or .sha256 files stand behind them.

/** The first kubeadm minor with the v1beta3 configuration API, the oldest machineadm writes. */
export const OLDEST_KUBERNETES_MINOR = 22;

/** Major.minor[.patch[-alpha|beta|rc.N]], with or without the v: the JSON Schema's pattern too. */
export const KUBERNETES_VERSION_SHAPE = /^v?\d+\.\d+(\.\d+(-(alpha|beta|rc)\.\d+)?)?$/;

/** Undefined for a version machineadm can deploy or join with; else what is wrong with it. */
export function kubernetesVersionProblem(version: string): string | undefined {
  if (/^ci(-cross)?\//.test(version)) return `"${version}" is a CI build, not a Kubernetes release: give a release such as v1.31.2 (or a pre-release such as v1.37.0-rc.1)`;
  if (!KUBERNETES_VERSION_SHAPE.test(version)) return `"${version}" is not a Kubernetes version: give one such as v1.31.2 (pre-releases such as v1.37.0-rc.1 too)`;
  const [major, minor] = version.replace(/^v/, '').split('.').map(Number) as [number, number];
  if (major !== 1 || minor < OLDEST_KUBERNETES_MINOR) return `${version} is older than v1.${OLDEST_KUBERNETES_MINOR}, the oldest kubeadm machineadm can configure`;
  return undefined;
}

/** Whether a version names a patch release exactly (what init deploys), pre-releases included. */
export function isExactKubernetesVersion(version: string): boolean {
  return /^v?\d+\.\d+\.\d+(-(alpha|beta|rc)\.\d+)?$/.test(version);
}
