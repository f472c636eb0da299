// spec.domainJoin: membership of an Active Directory domain, for both operating systems. The
// directory itself (accounts, OUs, DNS records) is prepared by its administrators; machineadm only
// joins this machine to it.
import { array, enumOf, object, optional, string, withDefault } from './dsl.ts';
import { secret } from './secret-field.ts';
import { sourceUrl } from './source.ts';
import { windowsPath } from './windows.ts';

// A DNS domain name: labels of letters, digits and "-", at least two of them.
const DOMAIN_NAME = /^(?=.{1,253}$)([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?$/;
// NetBIOS computer names: at most 15 characters, no dots (AD truncates longer names silently).
const COMPUTER_NAME = /^[A-Za-z0-9]([A-Za-z0-9-]{0,13}[A-Za-z0-9])?$/;
const HOST = /^([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$|^[0-9.]+$|^[0-9A-Fa-f:]+$/;
const LINE = (v: string): string | undefined => (/[\r\n\0]/.test(v) ? 'must be one line|remove the line break' : undefined);
// Windows takes no new computer name of digits only, which resolvers read as an IP address; Add-Computer
// -NewName renames after the join, so such a name would leave a member under its old name. [KB244412]
const NOT_ONLY_DIGITS = (v: string): string | undefined => (/^[0-9]+$/.test(v) ? 'is digits only, which Windows refuses as a computer name|add a letter, e.g. NODE-01' : undefined);

/**
 * The domain an OU's distinguished name is in, from its DC= parts (an escaped "\," belongs to a
 * value): Active Directory names a domain's own DN after its DNS name, corp.example being
 * DC=corp,DC=example, so an OU with other DC= parts is in another domain, where no join can go.
 */
function domainOfDn(dn: string): string {
  return dn.split(/(?<!\\),/).map((part) => part.trim()).filter((part) => /^DC=/i.test(part)).map((part) => part.slice(3).trim().toLowerCase()).join('.');
}

const domainDn = (domain: string): string => domain.split('.').map((label) => `DC=${label}`).join(',');

const absolutePath = (example: string) =>
  string({ minLength: 1, pattern: /^(\/|[A-Za-z]:\\)/, patternHint: `an absolute path, e.g. ${example}` });

const offlineBlob = object(
  {
    file: optional(windowsPath('the blob as a file on the machine', 'C:\\machineadm\\odj.txt'), { description: 'the blob as a file on the machine', example: 'C:\\machineadm\\odj.txt' }),
    url: optional(sourceUrl({ description: 'where the djoin blob comes from', httpsOnly: true, example: 'https://config.example/odj/node-01.txt' })),
    sha256: optional(string({ pattern: /^[a-f0-9]{64}$/, patternHint: '64 lowercase hex digits (sha256sum prints them)', description: 'the sha256 of the blob at url (required with url)', example: 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855' })),
  },
  {
    description: 'a djoin /provision blob: the computer account is pre-staged, so no domain credential reaches the machine',
    example: { file: 'C:\\machineadm\\odj.txt' },
    check: (v, report) => {
      if ((v.file === undefined) === (v.url === undefined)) report([], 'give exactly one of file or url');
      if (v.url !== undefined && v.sha256 === undefined) report('sha256', 'is required with url', 'the blob holds the machine account secret: it is used only when its sha256 matches');
      if (v.file !== undefined && v.sha256 !== undefined) report('sha256', 'applies only to url', 'leave it out for a local file');
    },
  },
);

export const domainJoinSection = object(
  {
    domain: string({ pattern: DOMAIN_NAME, patternHint: 'the DNS name of the Active Directory domain, e.g. corp.example', description: 'the Active Directory domain (DNS name) to join', example: 'corp.example' }),
    organizationalUnit: optional(string({ minLength: 1, pattern: /^(OU|CN)=/i, patternHint: 'the full distinguished name, e.g. OU=Nodes,DC=corp,DC=example', check: LINE, description: 'the OU the computer account is created in (default: the domain\'s Computers container)', example: 'OU=Nodes,DC=corp,DC=example' })),
    computerName: optional(string({ pattern: COMPUTER_NAME, check: NOT_ONLY_DIGITS, patternHint: 'at most 15 letters, digits and "-" (a NetBIOS name), e.g. NODE-01', description: 'the computer account name (default: the first label of the host name)', example: 'NODE-01' })),
    credentials: optional(
      object({
        username: string({ minLength: 1, check: LINE, description: 'an account allowed to join computers to the OU', example: 'joiner' }),
        password: secret({ description: 'the account\'s password; read through valueFrom, sent to the join tool on standard input only', example: { valueFrom: { file: '/etc/machineadm/join-password' } } }),
      }),
      { description: 'the account that joins the machine (or windows.offlineBlob instead)', example: { username: 'joiner', password: { valueFrom: { file: '/etc/machineadm/join-password' } } } },
    ),
    dnsServers: optional(array(string({ pattern: HOST, patternHint: 'an IP address' }), { minItems: 1, description: 'DNS servers that serve the domain\'s SRV records, for a machine whose resolver does not', example: ['10.0.0.2'] })),
    domainController: optional(string({ pattern: HOST, patternHint: 'a host name or IP address, e.g. dc1.corp.example', description: 'the domain controller to join through, instead of finding one in DNS', example: 'dc1.corp.example' })),
    windows: optional(object({ offlineBlob: optional(offlineBlob) }), { description: 'Windows-only ways to join', example: { offlineBlob: { file: 'C:\\machineadm\\odj.txt' } } }),
    linux: withDefault(
      object({
        keytab: withDefault(absolutePath('/etc/krb5.keytab'), '/etc/krb5.keytab', { description: 'where the machine\'s Kerberos keytab is written', example: '/etc/krb5.keytab' }),
        tool: withDefault(enumOf(['adcli', 'realm'] as const, { description: 'adcli joins and writes the keytab only; realm (realmd) also configures sssd', example: 'realm' }), 'adcli'),
      }),
      { keytab: '/etc/krb5.keytab', tool: 'adcli' },
      { description: 'Linux-only settings of the join', example: { tool: 'realm' } },
    ),
  },
  {
    check: (v, report) => {
      // Linux always joins online; Windows may join offline with a pre-staged account instead.
      if (v.credentials === undefined && v.windows?.offlineBlob === undefined) report('credentials', 'is required', 'give credentials (an account allowed to join computers), or windows.offlineBlob for an offline join of a Windows machine');
      if (v.dnsServers !== undefined && v.domainController !== undefined) report('dnsServers', 'is not used when domainController is given', 'give one of them');
      if (typeof v.organizationalUnit === 'string' && typeof v.domain === 'string' && DOMAIN_NAME.test(v.domain)) {
        const inDomain = domainOfDn(v.organizationalUnit);
        if (inDomain !== v.domain.toLowerCase()) {
          report('organizationalUnit', `is not in ${v.domain} (${domainDn(v.domain)}): it names ${inDomain === '' ? 'no domain' : domainDn(inDomain)}`, `give the OU's full distinguished name, ending with ${domainDn(v.domain)}`);
        }
      }
    },
  },
);
