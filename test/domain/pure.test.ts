// The pure parts of the domain join: keytab principals, adcli's command lines and its failures,
// and the Win32 codes of the Windows join.
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { keytabPrincipals, machineAccount } from '../../src/domain/keytab.ts';
import { adcliJoinArgv, classifyJoinFailure, describeJoinFailure } from '../../src/domain/adcli.ts';
import { classifyWindowsJoinFailure } from '../../src/domain/windows-join.ts';
import { JOIN_ERROR_CODES } from '../../src/host/windows/scripts.ts';
import { renderKrb5Conf } from '../../src/domain/krb5-conf.ts';
import type { DomainJoinSpec } from '../../src/config/schema/index.ts';
import { formatPath, parseWith } from '../../src/config/schema/dsl.ts';
import { machineConfigSchema } from '../../src/config/schema/index.ts';

const FIXTURES = resolve(import.meta.dirname, 'fixtures');
const DJ: DomainJoinSpec = { domain: 'corp.test', credentials: { username: 'joiner', password: 'x' }, linux: { keytab: '/etc/krb5.keytab', tool: 'adcli' } };

describe('keytabPrincipals', () => {
  it.each([
    ['corp-node-01.keytab', { computerName: 'NODE-01', realm: 'CORP.TEST' }],
    ['other-web-7.keytab', { computerName: 'WEB-7', realm: 'OTHER.TEST' }],
  ])('reads the machine account of %s, written by MIT ktutil', (file, account) => {
    const principals = keytabPrincipals(readFileSync(join(FIXTURES, file)));
    expect(machineAccount(principals!)).toEqual(account);
  });

  it('skips a hole left by a removed entry', () => {
    const real = readFileSync(join(FIXTURES, 'other-web-7.keytab'));
    const hole = Buffer.alloc(4 + 8);
    hole.writeInt32BE(-8, 0);
    const withHole = Buffer.concat([real.subarray(0, 2), hole, real.subarray(2)]);
    expect(machineAccount(keytabPrincipals(withHole)!)).toEqual({ computerName: 'WEB-7', realm: 'OTHER.TEST' });
  });

  it.each([
    ['an empty file', Buffer.alloc(0)],
    ['text', Buffer.from('partial')],
    ['a truncated entry', readFileSync(join(FIXTURES, 'corp-node-01.keytab')).subarray(0, 20)],
  ])('says %s is not a keytab', (_name, bytes) => {
    expect(keytabPrincipals(bytes)).toBeUndefined();
  });
});

describe('adcli', () => {
  it('puts OU, computer name and domain controller on the command line, and never a password', () => {
    const argv = adcliJoinArgv({ ...DJ, organizationalUnit: 'OU=Nodes,DC=corp,DC=test', computerName: 'NODE-01', domainController: 'dc1.corp.test' }, 'joiner');
    expect(argv).toEqual(['adcli', 'join', '--domain', 'corp.test', '--domain-ou', 'OU=Nodes,DC=corp,DC=test', '--computer-name', 'NODE-01', '--domain-controller', 'dc1.corp.test', '--login-user', 'joiner', '--stdin-password', '--host-keytab', '/etc/krb5.keytab', '--verbose']);
    expect(argv).not.toContain('x');
  });

  // Texts as adcli 0.9.1 and MIT krb5 print them (the first two seen against Samba 4.17 here).
  it.each([
    ["adcli: couldn't connect to corp.test domain: Couldn't authenticate as: Administrator@CORP.TEST: Preauthentication failed", 'credentials'],
    ["adcli: couldn't connect to corp.test domain: Couldn't connect to host: 10.99.0.7: Network is unreachable", 'unreachable'],
    ["adcli: couldn't connect to nope.test domain: Couldn't find usable domain controller to connect to", 'unreachable'],
    ["adcli: couldn't connect to corp.test domain: Couldn't get kerberos ticket for: joiner@CORP.TEST: Clock skew too great", 'clock-skew'],
    ['adcli: joining domain corp.test failed: The computer account NODE-01 already exists, but is not in the desired organizational unit.', 'account-exists'],
    // The user's rights, on a new or an existing account: never "the account exists".
    ["adcli: joining domain corp.test failed: Insufficient permissions to modify computer account: CN=NODE-01,CN=Computers,DC=corp,DC=test", 'not-permitted'],
    ['adcli: joining domain corp.test failed: Insufficient permissions to set account password', 'not-permitted'],
    ['adcli: joining domain corp.test failed: Couldn\'t create computer account: CN=NODE-01,OU=Nodes,DC=corp,DC=test: Insufficient access', 'not-permitted'],
    ['adcli: something new', 'other'],
  ])('names "%s" as %s', (output, kind) => {
    expect(classifyJoinFailure(output, DJ, 'joiner').kind).toBe(kind);
  });

  it("says a refused write is the user's insufficient permissions, not an existing computer account", () => {
    const failure = classifyJoinFailure('adcli: joining domain corp.test failed: Insufficient permissions to modify computer account: CN=NODE-01,CN=Computers,DC=corp,DC=test', { ...DJ, computerName: 'NODE-01' }, 'joiner');
    expect(failure.message).toBe('joiner has insufficient permissions to create or change the computer account NODE-01 in corp.test (the directory denied the write, or the user\'s quota of computer accounts is used up)');
    expect(failure.message).not.toMatch(/exists/);
  });

  // As adcli 0.9.1 prints Samba 4.17's refusal when another computer account holds host/<host name>.
  it("says a host name another computer account holds as a service principal name is the name's conflict, not the user's permissions", () => {
    const output = "adcli: joining domain corp.test failed: Insufficient permissions to modify computer account: CN=NODE-02,OU=Nodes,DC=corp,DC=test: 0000202F: samldb: spn[host/node.corp.test] would cause a conflict";
    const failure = classifyJoinFailure(output, { ...DJ, computerName: 'NODE-02' }, 'joiner');
    expect(failure.kind).toBe('name-in-use');
    expect(failure.message).toBe('the service principal name host/node.corp.test, which adcli registers for this machine\'s host name, belongs to another computer account in corp.test');
    expect(failure.hint).toMatch(/unique host name/);
  });
});

describe('renderKrb5Conf', () => {
  it('names the realm, and the domain controller when one is given', () => {
    expect(renderKrb5Conf(DJ)).toContain('default_realm = CORP.TEST\n    dns_lookup_realm = false\n    dns_lookup_kdc = true');
    const withDc = renderKrb5Conf({ ...DJ, domainController: 'dc1.corp.test' });
    expect(withDc).toContain('dns_lookup_kdc = false');
    expect(withDc).toContain('CORP.TEST = {\n        kdc = dc1.corp.test\n        admin_server = dc1.corp.test\n    }');
  });
});

describe('classifyWindowsJoinFailure', () => {
  const WIN: DomainJoinSpec = { ...DJ, domain: 'corp.example', computerName: 'NODE-07', domainController: 'dc1.corp.example' };

  it.each([
    [1326, 'credentials', 'the domain rejected the credentials of joiner@CORP.EXAMPLE'],
    [1909, 'credentials', 'the domain rejected the credentials of joiner@CORP.EXAMPLE'],
    [1355, 'unreachable', 'no domain controller of corp.example could be reached at dc1.corp.example'],
    [2453, 'unreachable', 'no domain controller of corp.example could be reached at dc1.corp.example'],
    [2224, 'account-exists', 'the computer account NODE-07 exists in corp.example and may not be reused by joiner'],
    [2732, 'account-exists', 'the computer account NODE-07 exists in corp.example and may not be reused by joiner'],
    [8557, 'not-permitted', 'joiner has insufficient permissions to create or change the computer account NODE-07 in corp.example (the directory denied the write, or the user\'s quota of computer accounts is used up)'],
    [5, 'not-permitted', 'joiner has insufficient permissions to create or change the computer account NODE-07 in corp.example (the directory denied the write, or the user\'s quota of computer accounts is used up)'],
    [1398, 'clock-skew', "this machine's clock differs from the domain controller's by more than Kerberos allows (5 minutes)"],
    [2691, 'other', 'Add-Computer could not join corp.example'],
  ])('names Win32 code %i as %s, with the message Linux gives', (code, kind, message) => {
    const failure = classifyWindowsJoinFailure({ joined: false, code }, WIN, 'Add-Computer');
    expect(failure).toMatchObject({ kind, message });
    if (kind !== 'other' && kind !== 'not-permitted') expect(failure.message).toBe(describeJoinFailure(failure.kind, WIN, 'joiner', { tool: 'adcli', otherHint: '' }).message);
  });

  it('looks for every code it names in the message of a failed Add-Computer', () => {
    const named = [5, 53, 86, 1311, 1326, 1327, 1330, 1331, 1355, 1398, 1722, 1909, 2224, 2453, 2732, 8557];
    expect(named.filter((code) => !(JOIN_ERROR_CODES as readonly number[]).includes(code))).toEqual([]);
    expect(named.filter((code) => classifyWindowsJoinFailure({ joined: false, code }, WIN, 'Add-Computer').kind === 'other')).toEqual([]);
  });

  it('says what the offline join could not do without naming a user', () => {
    const failure = classifyWindowsJoinFailure({ joined: false, code: 2, message: 'The system cannot find the file specified.' }, { ...WIN, credentials: undefined }, 'djoin');
    expect(failure).toMatchObject({ kind: 'other', message: 'djoin could not join corp.example' });
  });
});

describe('spec.domainJoin.organizationalUnit', () => {
  const issuesFor = (organizationalUnit: string): string => {
    const { issues } = parseWith(machineConfigSchema, { apiVersion: 'machineadm.cluster.x-k8s.io/v1alpha1', kind: 'MachineConfig', spec: { domainJoin: { domain: 'corp.test', organizationalUnit, credentials: { username: 'joiner', password: 'x' } } } });
    return issues.map((i) => `${formatPath(i.path)}: ${i.message}`).join('\n');
  };

  it.each([
    ['another domain', 'OU=Nodes,DC=other,DC=test', 'DC=other,DC=test'],
    ['a parent of the domain', 'OU=Nodes,DC=test', 'DC=test'],
    ['no domain at all', 'OU=Nodes', 'no domain'],
  ])('refuses an OU in %s, naming the domain it is in', (_what, ou, named) => {
    expect(issuesFor(ou)).toContain(`spec.domainJoin.organizationalUnit: is not in corp.test (DC=corp,DC=test): it names ${named}`);
  });

  it.each([
    'OU=Nodes,DC=corp,DC=test',
    'ou=Linux\\, Nodes, OU=Servers, dc=CORP, dc=Test',
    'CN=Computers,DC=corp,DC=test',
  ])('accepts %s in corp.test', (ou) => {
    expect(issuesFor(ou)).toBe('');
  });
});
