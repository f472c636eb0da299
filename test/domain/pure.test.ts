// The pure parts of the domain join: keytab principals, adcli's command lines and its failures.
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { keytabPrincipals, machineAccount } from '../../src/domain/keytab.ts';
import { adcliJoinArgv, classifyJoinFailure } from '../../src/domain/adcli.ts';
import { renderKrb5Conf } from '../../src/domain/krb5-conf.ts';
import type { DomainJoinSpec } from '../../src/config/schema/index.ts';

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
    ["adcli: joining domain corp.test failed: Insufficient permissions to modify computer account: CN=NODE-01,CN=Computers,DC=corp,DC=test", 'account-exists'],
    ['adcli: something new', 'other'],
  ])('names "%s" as %s', (output, kind) => {
    expect(classifyJoinFailure(output, DJ, 'joiner').kind).toBe(kind);
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
