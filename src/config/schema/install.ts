// spec.kubernetes.install: what a standard image lacks to become a node, installed at first boot
// from the official release layout (or a mirror of it): kubeadm, the kubelet and kubectl, crictl
// and the CNI plugins, each checked against a sha256 pinned here or published beside it.
import { array, boolean, enumOf, object, optional, string, withDefault } from './dsl.ts';
import { sourceUrl } from './source.ts';

export const KUBERNETES_BINARIES = ['kubeadm', 'kubelet', 'kubectl'] as const;
export type KubernetesBinary = (typeof KUBERNETES_BINARIES)[number];

const SHA256 = /^[a-f0-9]{64}$/;
const sha256 = (description: string) => string({ pattern: SHA256, patternHint: '64 lowercase hex digits (sha256sum prints them)', description, example: 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855' });

const releaseVersion = (what: string, example: string) => string({ pattern: /^v\d+\.\d+\.\d+$/, patternHint: `a release of ${what}, e.g. ${example}`, description: `the release of ${what}`, example });

const archive = (what: string, version: string, url: string, field: string) =>
  optional(
    object({
      version: releaseVersion(what, version),
      url: optional(sourceUrl({ description: `the archive, {arch} and {os} standing for the machine's (amd64 or arm64, linux or windows; default: the project's release on GitHub, ${url})`, example: `https://mirror.example/${field}-{arch}.tar.gz` })),
      sha256: optional(sha256('the archive\'s sha256 (default: read from URL.sha256, which is integrity, not authenticity)')),
    }),
    { description: `${what}, from its release archive`, example: { version } },
  );

export const installSection = object(
  {
    baseUrl: withDefault(
      sourceUrl({ description: 'where the Kubernetes release is, in its layout: BASE/VERSION/bin/linux/ARCH/NAME and NAME.sha256 (a mirror of dl.k8s.io, or a folder of a bundle)', example: 'https://mirror.example/kubernetes-release/release' }),
      'https://dl.k8s.io/release',
    ),
    binaries: withDefault(
      array(enumOf(KUBERNETES_BINARIES), { unique: true, description: 'which of kubeadm, kubelet and kubectl to install (the kubelet comes with its systemd unit; none, for images alone on an image that has them)', example: ['kubeadm', 'kubelet'] }),
      [...KUBERNETES_BINARIES],
    ),
    urls: optional(
      object({
        kubeadm: optional(sourceUrl({ description: 'where kubeadm comes from instead of BASE/VERSION/bin/OS/ARCH/kubeadm ({arch} and {os} stand for the machine\'s)', example: 'https://mirror.example/k8s/{os}/{arch}/kubeadm' })),
        kubelet: optional(sourceUrl({ description: 'where the kubelet comes from instead of the release layout', example: 'https://mirror.example/k8s/{os}/{arch}/kubelet' })),
        kubectl: optional(sourceUrl({ description: 'where kubectl comes from instead of the release layout', example: 'https://mirror.example/k8s/{os}/{arch}/kubectl' })),
      }),
      { description: 'a source of its own for a binary (a file on this machine, another mirror); its sha256 is pinned under sha256 or read from URL.sha256', example: { kubelet: 'file:///opt/images/kubelet' } },
    ),
    sha256: optional(
      object({ kubeadm: optional(sha256('kubeadm\'s sha256')), kubelet: optional(sha256('the kubelet\'s sha256')), kubectl: optional(sha256('kubectl\'s sha256')) }),
      {
        description: 'pinned sha256 of each binary (default: read from BASE/.../NAME.sha256 on the same server, which checks integrity, not authenticity)',
        example: { kubeadm: 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855' },
      },
    ),
    directory: optional(
      // systemd refuses a program's name with a quote or a backslash in it: the kubelet's unit names the kubelet here.
      string({ pattern: /^(\/[^\0\s"'\\]*|[A-Za-z]:\\[^\0"\r\n]*)$/, patternHint: 'an absolute path without quotes or backslashes, e.g. /opt/bin (C:\\k on Windows)', description: 'where the binaries go (default: /usr/local/bin, or /opt/bin when /usr is read-only, as on Flatcar; on Windows the folder of spec.windows.kubeletPath, C:\\k)', example: '/opt/bin' }),
    ),
    crictl: archive('crictl (cri-tools)', 'v1.31.1', 'https://github.com/kubernetes-sigs/cri-tools/releases/download/VERSION/crictl-VERSION-linux-ARCH.tar.gz', 'crictl'),
    cniPlugins: archive('the CNI plugins, into /opt/cni/bin', 'v1.5.1', 'https://github.com/containernetworking/plugins/releases/download/VERSION/cni-plugins-linux-ARCH-VERSION.tgz', 'cni-plugins'),
    replace: withDefault(boolean({ description: 'replace a binary of another version already at the destination (otherwise the run is refused before any change)', example: true }), false),
    images: optional(
      array(
        object({
          url: sourceUrl({ description: 'where the image archive comes from (an OCI layout tar or a docker-archive tar, as skopeo copy ... oci-archive: or docker-archive: writes it)', example: 'https://downloads.example/images/kube-proxy-v1.31.2.tar' }),
          sha256: sha256('the archive\'s sha256: it is imported only when its bytes match'),
        }),
        { minItems: 1, description: 'image archives imported into containerd\'s k8s.io namespace (the one the kubelet uses) before kubeadm runs, for machines that cannot pull; an archive is skipped when every image it holds is there already', example: [{ url: 'images/kube-proxy-v1.31.2.tar', sha256: 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855' }] },
      ),
    ),
  },
  {
    description: 'install what a standard image lacks at first boot: kubeadm, the kubelet (with its systemd unit) and kubectl of spec.kubernetes.version, optionally crictl and the CNI plugins',
    example: { crictl: { version: 'v1.31.1' }, cniPlugins: { version: 'v1.5.1' } },
  },
);

