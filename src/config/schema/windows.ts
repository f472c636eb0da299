// spec.windows: Windows-only preparation (builds, binaries, host agents). The domain join is
// spec.domainJoin, for both systems.
import { array, boolean, enumOf, integer, object, optional, string, withDefault } from './dsl.ts';
import { networkUrlProblem } from './url.ts';
import { isLocalSource, sourceUrl } from './source.ts';

// A drive-letter path without "..", and without the characters Windows refuses in file names.
export function windowsPath(description: string) {
  return string({
    minLength: 1,
    description,
    check: (p) =>
      !/^[A-Za-z]:\\/.test(p)
        ? `"${p}" is not an absolute Windows path|give the full path with its drive letter, e.g. C:\\k\\kubelet.exe`
        : p.split(/[\\/]/).includes('..')
          ? `"${p}" contains ".."|write the path without ".." segments`
          : /[<>"|?*\0]/.test(p.slice(2))
            ? `"${p}" contains a character Windows does not allow in a path (< > " | ? *)|remove it`
            : undefined,
  });
}

const serviceName = string({ pattern: /^[A-Za-z0-9][A-Za-z0-9._-]{0,79}$/, patternHint: 'letters, digits, ".", "_" and "-" (up to 80), e.g. csiproxy' });

export const hostAgent = object(
  {
    name: serviceName,
    displayName: optional(string({ minLength: 1, description: 'shown in the Services console; default the name' })),
    source: object({
      url: sourceUrl({ description: 'where the agent\'s binary comes from' }),
      sha256: optional(string({ pattern: /^[a-f0-9]{64}$/, patternHint: '64 lowercase hex digits (sha256sum or Get-FileHash prints them)' })),
      signature: optional(
        object({
          publicKey: string({ minLength: 1, description: 'minisign public key (base64 key line) the binary is signed with' }),
          url: optional(string({ check: networkUrlProblem, pattern: /^https?:\/\//, patternHint: 'an http:// or https:// URL', description: 'default: the binary URL with .minisig appended' })),
        }),
      ),
    }, {
      check: (s, report) => {
        if (s.sha256 === undefined && s.signature === undefined) report([], 'give sha256, signature, or both', 'machineadm runs nothing it has not verified');
        // A signature is checked against a download; a copy from this machine (a bundle, whose
        // builder checked the signature) against its sha256.
        else if (s.url !== undefined && isLocalSource(s.url) && s.sha256 === undefined) report('sha256', 'is required for a file on this machine', 'a local file is checked by its sha256 (machineadm bundle writes it)');
        else if (s.url !== undefined && isLocalSource(s.url) && s.signature !== undefined) report('signature', 'applies only to a download', 'leave it out: a local file is checked by its sha256');
      },
    }),
    installPath: windowsPath('where the binary is installed, e.g. C:\\etc\\kubernetes\\node\\bin\\csi-proxy.exe'),
    args: withDefault(array(string()), []),
    kubeletDependsOn: withDefault(boolean({ description: 'the kubelet service depends on this one (starts after it)' }), false),
    log: withDefault(
      enumOf(['kube-log-runner', 'own'] as const, {
        description:
          'where the agent\'s output goes (a service has no console): kube-log-runner runs it under kube-log-runner.exe (beside kubelet.exe) writing C:\\var\\log\\<name>\\<name>.log; own: the agent writes its own log (give its log flag in args, e.g. -log_file=C:\\var\\log\\csi-proxy.log)',
      }),
      'kube-log-runner',
    ),
  },
);

export const windowsSection = object({
  supportedBuilds: optional(
    array(integer({ min: 14393, description: 'a Windows build number, e.g. 17763 (ltsc2019), 20348 (ltsc2022), 26100 (ltsc2025)' }), { minItems: 1, unique: true }),
  ),
  kubeletPath: withDefault(windowsPath('the kubelet binary'), 'C:\\k\\kubelet.exe'),
  containerdPath: withDefault(windowsPath('the containerd binary'), 'C:\\Program Files\\containerd\\containerd.exe'),
  hostAgents: optional(
    array(hostAgent, {}),
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
