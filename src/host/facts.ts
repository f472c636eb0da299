// Platform facts: what machine this is and which versions of the tools machineadm drives are
// installed. Facts are plain data so a plan can be computed from facts given for another machine.
import * as os from 'node:os';
import { readFile } from './fs-calls.ts';
import type { ProcessRunner } from './exec.ts';
import type { RootedFileSystem } from './fs.ts';
import type { WindowsHost } from './windows/index.ts';
import { bootIdOf } from './windows/boot-id.ts';

export type OperatingSystem = 'linux' | 'windows';

export interface Facts {
  os: OperatingSystem;
  arch: string;
  hostname: string;
  /** Running with administrative rights (uid 0 / elevated). */
  privileged: boolean;
  /** True when machineadm works on the live machine (--root /), so live changes are possible. */
  liveRoot: boolean;
  kernelRelease?: string;
  /** Windows build number, e.g. "20348" for Windows Server 2022. */
  windowsBuild?: string;
  /**
   * Tells a reboot apart from a rerun. Linux: /proc/sys/kernel/random/boot_id. Windows: the
   * BootId registry value and LastBootUpTime together ("<BootId>@<time>"), so either changing
   * means a reboot.
   */
  bootId?: string;
  /** "1.6.20" when containerd is installed. */
  containerdVersion?: string;
  /** "v1.31.2" when kubeadm is installed. */
  kubeadmVersion?: string;
}

export function parseContainerdVersion(output: string): string | undefined {
  // "containerd github.com/containerd/containerd 1.6.20~ds1 1.6.20~ds1-1+b1" or "... v2.1.9 <commit>"
  const match = /\bv?(\d+\.\d+\.\d+)/.exec(output.replace(/^containerd\s+\S+\s*/, ''));
  return match?.[1];
}

export function parseKubeadmVersion(output: string): string | undefined {
  const match = /\bv?(\d+\.\d+\.\d+[-+.\w]*)/.exec(output.trim());
  return match ? `v${match[1]}` : undefined;
}

const BOOT_ID = '/proc/sys/kernel/random/boot_id';

/** What `containerd --version` and `kubeadm version -o short` printed (undefined: not installed, or it failed). */
export type ToolVersions = Promise<[containerd: string | undefined, kubeadm: string | undefined]>;

/**
 * Runs the version probes, both at once: each is mostly a process starting up (containerd's Go
 * runtime takes 20-75 ms here), which runs on another core while machineadm's own code loads.
 */
export function probeToolVersions(proc: ProcessRunner): ToolVersions {
  return Promise.all([versionOf(proc, ['containerd', '--version']), versionOf(proc, ['kubeadm', 'version', '-o', 'short'])]);
}

/** `versions`: the probes, when the command started them before it got here (src/cli/main.ts). */
export async function detectFacts(fs: RootedFileSystem, proc: ProcessRunner, windows?: WindowsHost, versions: ToolVersions = probeToolVersions(proc)): Promise<Facts> {
  const platform: OperatingSystem = process.platform === 'win32' ? 'windows' : 'linux';
  const facts: Facts = {
    os: platform,
    arch: process.arch,
    hostname: os.hostname(),
    privileged: typeof process.getuid === 'function' ? process.getuid() === 0 : false,
    liveRoot: fs.isLiveRoot,
    kernelRelease: os.release(),
  };
  if (platform === 'windows') {
    facts.windowsBuild = os.release().split('.')[2];
    const boot = await windows?.bootIdentity().catch(() => undefined);
    if (boot) {
      facts.bootId = bootIdOf(boot);
      if (boot.build) facts.windowsBuild = boot.build;
    }
  } else {
    // The running kernel's boot id; under a scratch root, the root's own proc/sys/kernel/random/boot_id
    // when it has one (an image being built, or a test, says so when "the machine" rebooted).
    const underRoot = fs.isLiveRoot ? undefined : await fs.readText(BOOT_ID).catch(() => undefined);
    facts.bootId = (underRoot ?? (await readFile(BOOT_ID).then((bytes) => bytes.toString('utf8'), () => undefined)))?.trim();
  }
  const [containerd, kubeadm] = await versions;
  if (containerd) facts.containerdVersion = parseContainerdVersion(containerd);
  if (kubeadm) facts.kubeadmVersion = parseKubeadmVersion(kubeadm);
  return facts;
}

async function versionOf(proc: ProcessRunner, argv: [string, ...string[]]): Promise<string | undefined> {
  if (!(await proc.which(argv[0]))) return undefined;
  const result = await proc.run(argv, { timeoutMs: 15_000, allowFailure: true }).catch(() => undefined);
  return result && result.exitCode === 0 ? result.stdout : undefined;
}
