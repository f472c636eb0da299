// Where kubeadm's and machineadm's files are on each OS (machine paths, mapped under --root by the host).
import type { OperatingSystem } from '../host/index.ts';

export interface KubeadmPaths {
  /** Rendered kubeadm configuration lives here only while kubeadm runs (it holds the token). */
  runDir: string;
  configFile(command: 'init' | 'join'): string;
  patchesDir: string;
  kubeletConf: string;
  manifestsDir: string;
  /** kubeadm's default certificatesDir. */
  pkiDir: string;
  criSocket: string;
  /**
   * Files kubeadm writes that its preflight refuses to find (FileAvailable checks): any of them on
   * the machine means a kubeadm ran here, finished or not, and must be reset before it runs again.
   */
  takenFiles(command: 'init' | 'join', controlPlane: boolean): string[];
  /**
   * Windows: directories created with an ACL for SYSTEM and Administrators only before anything
   * is written (the run directory for the rendered configuration, and where kubeadm writes the
   * kubelet's credentials, which then inherit it). Linux uses mode 0700 on the run directory.
   */
  privateDirs: string[];
  /** Folders whose contents `kubeadm reset` deletes (its own and the kubelet's, the certificates, etcd's data). */
  resetEmpties: string[];
}

export function kubeadmPaths(os: OperatingSystem): KubeadmPaths {
  if (os === 'windows') {
    const runDir = 'C:\\ProgramData\\machineadm\\run';
    return {
      runDir,
      configFile: (command) => `${runDir}\\kubeadm-${command}.yaml`,
      patchesDir: `${runDir}\\kubeadm-patches`,
      kubeletConf: 'C:\\etc\\kubernetes\\kubelet.conf',
      manifestsDir: 'C:\\etc\\kubernetes\\manifests',
      pkiDir: 'C:\\etc\\kubernetes\\pki',
      criSocket: 'npipe:////./pipe/containerd-containerd',
      takenFiles: (command, controlPlane) => takenFiles('C:\\etc\\kubernetes', '\\', command, controlPlane),
      privateDirs: [runDir, 'C:\\etc\\kubernetes', 'C:\\var\\lib\\kubelet\\pki'],
      resetEmpties: ['C:\\etc\\kubernetes', 'C:\\var\\lib\\kubelet', 'C:\\var\\lib\\etcd'],
    };
  }
  return {
    runDir: '/run/machineadm',
    configFile: (command) => `/run/machineadm/kubeadm-${command}.yaml`,
    patchesDir: '/run/machineadm/kubeadm-patches',
    kubeletConf: '/etc/kubernetes/kubelet.conf',
    manifestsDir: '/etc/kubernetes/manifests',
    pkiDir: '/etc/kubernetes/pki',
    criSocket: 'unix:///var/run/containerd/containerd.sock',
    takenFiles: (command, controlPlane) => takenFiles('/etc/kubernetes', '/', command, controlPlane),
    privateDirs: [],
    resetEmpties: ['/etc/kubernetes', '/var/lib/kubelet', '/var/lib/etcd'],
  };
}

// kubeadm's RunJoinNodeChecks and RunInitNodeChecks (cmd/kubeadm/app/preflight/checks.go): the
// kubelet's kubeconfig files always; a worker's join also writes the cluster CA (a control plane
// brings its own, often as files written before kubeadm runs); a control plane its manifests.
function takenFiles(dir: string, sep: string, command: 'init' | 'join', controlPlane: boolean): string[] {
  const files = [`${dir}${sep}kubelet.conf`, `${dir}${sep}bootstrap-kubelet.conf`];
  if (command === 'join' && !controlPlane) files.push(`${dir}${sep}pki${sep}ca.crt`);
  if (command === 'init' || controlPlane) files.push(`${dir}${sep}admin.conf`, `${dir}${sep}manifests${sep}kube-apiserver.yaml`);
  return files;
}
