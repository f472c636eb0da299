// spec.windows: Windows-only preparation (builds, binaries, host agents). The domain join is
// spec.domainJoin, for both systems.
import { array, boolean, documented, enumOf, integer, object, optional, string, withDefault } from './dsl.ts';
import { networkUrlProblem } from './url.ts';
import { isLocalSource, sourceUrl } from './source.ts';

/**
 * Why a string is not a drive-letter path without "..", without the characters Windows refuses in
 * file names (also line breaks and NUL), and without segments Windows reads as another path.
 */
export function windowsPathProblem(p: string): string | undefined {
  // Quoted as JSON: a line break or NUL shows as \n or \u0000, not as a broken message.
  const shown = JSON.stringify(p);
  if (!/^[A-Za-z]:\\/.test(p)) return `${shown} is not an absolute Windows path|give the full path with its drive letter, e.g. C:\\k\\kubelet.exe`;
  if (p.split(/[\\/]/).includes('..')) return `${shown} contains ".."|write the path without ".." segments`;
  if (/[\x00-\x1f]/.test(p)) return `${shown} contains a control character (a line break, a tab or NUL), which Windows does not allow in a path|remove it`;
  if (/[<>"|?*]/.test(p.slice(2))) return `${shown} contains a character Windows does not allow in a path (< > " | ? *)|remove it`;
  return aliasProblem(shown, p.slice(3).split('\\'));
}

// Windows reads these segments as another folder than they show (C:\. and C:\\ are C:\,
// C:\Windows. is C:\Windows, PROGRA~1 is Program Files), so the check for Windows' own folders
// and the folder locked (with icacls /reset /T on what it holds) could differ. [Naming Files,
// Paths, and Namespaces: "." segments, empty segments, trailing dots and spaces, short names]
function aliasProblem(shown: string, segments: readonly string[]): string | undefined {
  const hint = 'write each folder by its full name, as Explorer shows it, e.g. C:\\Program Files\\containerd\\containerd.exe';
  if (segments.some((s) => s.includes('/'))) return `${shown} has a "/", which Windows reads as a "\\": the folder it names is not the one checked|${hint}`;
  if (segments.includes('.')) return `${shown} has a "." segment, which Windows drops: it names another folder than it shows|${hint}`;
  if (segments.includes('')) return `${shown} has an empty segment (two backslashes), which Windows drops: it names another folder than it shows|${hint}`;
  const trailing = segments.find((s) => /[. ]$/.test(s));
  if (trailing !== undefined) return `${shown} has a segment ending in a dot or a space (${JSON.stringify(trailing)}), which Windows drops: it names another folder than it shows|${hint}`;
  const short = segments.find((s) => /~\d/.test(s));
  if (short !== undefined) return `${shown} has a short (8.3) name (${JSON.stringify(short)}), another name of a folder or file than it shows|${hint}`;
  return undefined;
}

export function windowsPath(description: string, example?: string) {
  return string({ minLength: 1, description, ...(example ? { example } : {}), check: windowsPathProblem });
}

/**
 * Windows' own folders, where any user may create files (C:\, C:\ProgramData, C:\Users\Public,
 * C:\Windows\Temp) or which machineadm must not lock for SYSTEM alone (it would take away what
 * Windows and other programs need there): never locked.
 */
export const WINDOWS_OWNED_FOLDER = /^[a-z]:\\?$|^[a-z]:\\(windows(\\.*)?|program files|program files \(x86\)|programdata|users(\\.*)?)$/i;

/**
 * A binary a SYSTEM service runs must be in a folder machineadm locks (prepare/windows/private-paths):
 * not in a drive root nor in one of Windows' own folders, where another user could replace it.
 */
export function serviceBinaryPath(description: string, example: string) {
  return string({
    minLength: 1,
    description,
    example,
    check: (p) => {
      const problem = windowsPathProblem(p);
      if (problem) return problem;
      const folder = p.slice(0, Math.max(p.lastIndexOf('\\'), 3));
      if (WINDOWS_OWNED_FOLDER.test(folder)) return `${JSON.stringify(p)} is in ${folder}, a folder of Windows' own that other users may write into and machineadm does not lock|give the binary a folder of its own, e.g. C:\\Program Files\\<name>\\<name>.exe or C:\\etc\\kubernetes\\node\\bin\\<name>.exe`;
      return undefined;
    },
  });
}

// A value that reaches a command line or a script as one argument: one line, no NUL.
const oneLine = (description: string, example?: string) =>
  string({ description, ...(example ? { example } : {}), check: (v) => (/[\r\n\0]/.test(v) ? `${JSON.stringify(v)} holds a line break or NUL|give it on one line, without NUL` : undefined) });

const serviceName = string({ pattern: /^[A-Za-z0-9][A-Za-z0-9._-]{0,79}$/, patternHint: 'letters, digits, ".", "_" and "-" (up to 80), e.g. csiproxy' });

export const hostAgent = object(
  {
    name: documented(serviceName, { description: 'the Windows service name the agent runs as', example: 'csiproxy' }),
    displayName: optional(string({ minLength: 1, description: 'shown in the Services console; default the name', example: 'CSI Proxy', check: (v) => (/[\x00-\x1f]/.test(v) ? `${JSON.stringify(v)} holds a control character (a line break, a tab or NUL)|give it on one line` : undefined) })),
    source: object({
      url: sourceUrl({ description: 'where the agent\'s binary comes from', example: 'https://downloads.example/csi-proxy/v1.1.3/csi-proxy.exe' }),
      sha256: optional(string({ pattern: /^[a-f0-9]{64}$/, patternHint: '64 lowercase hex digits (sha256sum or Get-FileHash prints them)', description: 'the sha256 of the binary', example: 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855' })),
      signature: optional(
        object({
          publicKey: string({ minLength: 1, description: 'minisign public key (base64 key line) the binary is signed with', example: 'RWQf6LRCGA9i53mlYecO4IzT51TGPpvWucNSCh1CBM0QTaLn73Y7GFO3' }),
          url: optional(string({ check: networkUrlProblem, pattern: /^https?:\/\//, patternHint: 'an http:// or https:// URL', description: 'default: the binary URL with .minisig appended', example: 'https://downloads.example/csi-proxy/v1.1.3/csi-proxy.exe.minisig' })),
        }),
        { description: 'a minisign signature the binary is checked against', example: { publicKey: 'RWQf6LRCGA9i53mlYecO4IzT51TGPpvWucNSCh1CBM0QTaLn73Y7GFO3' } },
      ),
    }, {
      description: 'where the binary comes from and how it is verified (sha256, signature, or both)',
      example: { url: 'https://downloads.example/csi-proxy/v1.1.3/csi-proxy.exe', sha256: 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855' },
      check: (s, report) => {
        if (s.sha256 === undefined && s.signature === undefined) report([], 'give sha256, signature, or both', 'machineadm runs nothing it has not verified');
        // A signature is checked against a download; a copy from this machine (a bundle, whose
        // builder checked the signature) against its sha256.
        else if (s.url !== undefined && isLocalSource(s.url) && s.sha256 === undefined) report('sha256', 'is required for a file on this machine', 'a local file is checked by its sha256 (machineadm bundle writes it)');
        else if (s.url !== undefined && isLocalSource(s.url) && s.signature !== undefined) report('signature', 'applies only to a download', 'leave it out: a local file is checked by its sha256');
      },
    }),
    installPath: serviceBinaryPath('where the binary is installed, e.g. C:\\etc\\kubernetes\\node\\bin\\csi-proxy.exe', 'C:\\etc\\kubernetes\\node\\bin\\csi-proxy.exe'),
    args: withDefault(array(oneLine('an argument')), [], { description: 'the service\'s command-line arguments', example: ['-v=2'] }),
    kubeletDependsOn: withDefault(boolean({ description: 'the kubelet service depends on this one (starts after it)', example: true }), false),
    log: withDefault(
      enumOf(['kube-log-runner', 'own'] as const, {
        description:
          'where the agent\'s output goes (a service has no console): kube-log-runner runs it under kube-log-runner.exe (beside kubelet.exe) writing C:\\var\\log\\<name>\\<name>.log; own: the agent writes its own log (give its log flag in args, e.g. -log_file=C:\\var\\log\\csi-proxy.log)',
        example: 'own',
      }),
      'kube-log-runner',
    ),
  },
);

export const windowsSection = object({
  supportedBuilds: optional(
    array(integer({ min: 14393, description: 'a Windows build number, e.g. 17763 (ltsc2019), 20348 (ltsc2022), 26100 (ltsc2025)' }), { minItems: 1, unique: true, description: 'Windows builds of the container images the cluster runs; a machine that runs none of them (below 20348 its own build only; from 20348 the last LTSC build before its own up to its own) stops before any change', example: [20348, 26100] }),
  ),
  kubeletPath: withDefault(serviceBinaryPath('the kubelet binary', 'C:\\k\\kubelet.exe'), 'C:\\k\\kubelet.exe'),
  containerdPath: withDefault(serviceBinaryPath('the containerd binary', 'C:\\Program Files\\containerd\\containerd.exe'), 'C:\\Program Files\\containerd\\containerd.exe'),
  hostAgents: optional(
    array(hostAgent, { description: 'programs run as Windows services beside the kubelet (e.g. csi-proxy), downloaded and verified first', example: [{ name: 'csiproxy', source: { url: 'https://downloads.example/csi-proxy/v1.1.3/csi-proxy.exe', sha256: 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855' }, installPath: 'C:\\etc\\kubernetes\\node\\bin\\csi-proxy.exe' }] }),
  ),
}, {
  check: (w, report) => {
    const seen = new Map<string, number>();
    w.hostAgents?.forEach((a, i) => {
      const key = a.name.toLowerCase();
      if (['containerd', 'kubelet'].includes(key)) report(['hostAgents', i, 'name'], `"${a.name}" is the name of a service machineadm registers itself`, 'choose another name');
      const first = seen.get(key);
      if (first !== undefined) report(['hostAgents', i, 'name'], `the same service name as hostAgents[${first}]`, 'service names are not case-sensitive on Windows: give each agent its own');
      else seen.set(key, i);
    });
  },
});
