// adcli's command lines and the failures it reports, named for the operator. Pure. The password
// never appears here: adcli reads it from standard input (--stdin-password, up to end of input).
import type { DomainJoinSpec } from '../config/schema/index.ts';

export function realmOf(domain: string): string {
  return domain.toUpperCase();
}

export function adcliJoinArgv(dj: DomainJoinSpec, username: string): [string, ...string[]] {
  return [
    'adcli',
    'join',
    '--domain',
    dj.domain,
    ...(dj.organizationalUnit !== undefined ? ['--domain-ou', dj.organizationalUnit] : []),
    ...(dj.computerName !== undefined ? ['--computer-name', dj.computerName] : []),
    ...(dj.domainController !== undefined ? ['--domain-controller', dj.domainController] : []),
    '--login-user',
    username,
    '--stdin-password',
    '--host-keytab',
    dj.linux.keytab,
    '--verbose',
  ];
}

export function adcliTestjoinArgv(dj: DomainJoinSpec): [string, ...string[]] {
  return ['adcli', 'testjoin', '--domain', dj.domain, ...(dj.domainController !== undefined ? ['--domain-controller', dj.domainController] : []), '--host-keytab', dj.linux.keytab];
}

export type JoinFailureKind = 'credentials' | 'unreachable' | 'account-exists' | 'not-permitted' | 'name-in-use' | 'clock-skew' | 'other';

export interface JoinFailure {
  kind: JoinFailureKind;
  message: string;
  hint: string;
}

// Matched on adcli's own texts (its exit codes do not tell these apart: a wrong password and a
// clock skew both end with 3 or 4 depending on the version).
const PATTERNS: readonly [JoinFailureKind, RegExp][] = [
  ['clock-skew', /clock skew too great/i],
  ['credentials', /couldn't authenticate as|preauthentication failed|password incorrect|client '[^']*' not found in kerberos database|client not found in kerberos database|password has expired|clients credentials have been revoked/i],
  // Before not-permitted: adcli words the directory's refusal of a service principal name another
  // account holds (Samba: "samldb: spn[host/NAME] would cause a conflict") as insufficient
  // permissions, though no right of the user's would let the write through.
  ['name-in-use', /spn\[[^\]]*\] would cause a conflict/i],
  // Before account-exists: adcli says "Insufficient permissions to modify computer account" when
  // the directory refused the user a write (on a new account or an existing one), which is the
  // user's rights, not the account's existence.
  ['not-permitted', /insufficient (permissions|access)|insufficient_access|access denied|access is denied/i],
  ['account-exists', /already exists|not in the desired organizational unit|couldn't (create|modify) computer account|constraint violation|entry already exists/i],
  ['unreachable', /couldn't find usable domain controller|couldn't connect to host|can't contact ldap server|no ldap srv records|couldn't discover domain|couldn't lookup domain|network is unreachable|connection refused|no route to host|cannot resolve network address|cannot contact any kdc/i],
];

/**
 * Whether a failed adcli testjoin says the machine account itself is gone or no longer has the
 * keytab's key (deleted or reset in the directory), rather than that no domain controller answered:
 * adcli words a KDC it cannot reach as a failure to authenticate too.
 */
export function testjoinSaysAccountGone(output: string): boolean {
  const unreachable = PATTERNS.find(([kind]) => kind === 'unreachable')![1];
  return !unreachable.test(output) && /not found in kerberos database|preauthentication failed|password incorrect|couldn't authenticate as machine account/i.test(output);
}

export function classifyJoinFailure(output: string, dj: DomainJoinSpec, username: string): JoinFailure {
  const kind = PATTERNS.find(([, pattern]) => pattern.test(output))?.[0] ?? 'other';
  const spn = /spn\[([^\]]*)\] would cause a conflict/i.exec(output)?.[1];
  return describeJoinFailure(kind, dj, username, { tool: 'adcli', otherHint: 'read the output tail; adcli --verbose names the operation that failed', ...(spn !== undefined ? { spn } : {}) });
}

/** Where the computer account goes, for plans on both systems: the OU and the computer name. */
export function joinPlacement(dj: DomainJoinSpec): string {
  return [`OU ${dj.organizationalUnit ?? "(the domain's Computers container)"}`, ...(dj.computerName !== undefined ? [`computer name ${dj.computerName}`] : [])].join(', ');
}

/** The operator's message for a kind of join failure, the same on both systems. */
export function describeJoinFailure(kind: JoinFailureKind, dj: DomainJoinSpec, username: string | undefined, how: { tool: string; otherHint: string; spn?: string }): JoinFailure {
  const realm = realmOf(dj.domain);
  const user = username ?? 'the account that pre-staged the computer';
  switch (kind) {
    case 'credentials':
      return { kind, message: `the domain rejected the credentials of ${user}@${realm}`, hint: 'check spec.domainJoin.credentials: the user name, and the password file or variable (a wrong, expired or locked password)' };
    case 'unreachable':
      return {
        kind,
        message: `no domain controller of ${dj.domain} could be reached${dj.domainController !== undefined ? ` at ${dj.domainController}` : ''}`,
        hint: dj.domainController !== undefined
          ? 'check that spec.domainJoin.domainController is up and reachable from this machine (LDAP 389 TCP/UDP, Kerberos 88)'
          : `check the domain name, and that this machine's resolver finds the SRV records _ldap._tcp.${dj.domain} (or set spec.domainJoin.domainController)`,
      };
    case 'account-exists':
      return {
        kind,
        message: `the computer account${dj.computerName !== undefined ? ` ${dj.computerName}` : ''} exists in ${dj.domain} and may not be reused by ${user}`,
        hint: 'ask the directory administrators to delete the stale account or to let this user reset it (and, with organizationalUnit, to move it there), or set spec.domainJoin.computerName',
      };
    case 'not-permitted':
      return {
        kind,
        message: `${user} has insufficient permissions to create or change the computer account${dj.computerName !== undefined ? ` ${dj.computerName}` : ''} in ${dj.organizationalUnit ?? dj.domain} (the directory denied the write, or the user's quota of computer accounts is used up)`,
        hint: 'ask the directory administrators to delegate "create computer objects" on the OU to this account (and "reset password" and "write all properties" on computer objects, to reuse an existing one), or to pre-stage the computer account',
      };
    case 'name-in-use':
      return {
        kind,
        message: `the service principal name ${how.spn ?? 'host/<host name>'}, which adcli registers for this machine's host name, belongs to another computer account in ${dj.domain}`,
        hint: 'give every machine a unique host name (cloned images keep theirs), or ask the directory administrators to remove the stale computer account that holds the name',
      };
    case 'clock-skew':
      return { kind, message: `this machine's clock differs from the domain controller's by more than Kerberos allows (5 minutes)`, hint: 'synchronise the clock (NTP, e.g. with the domain controllers) before the provision phase' };
    default:
      return { kind, message: `${how.tool} could not join ${dj.domain}`, hint: how.otherHint };
  }
}
