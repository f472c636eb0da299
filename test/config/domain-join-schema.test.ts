// spec.domainJoin: one section for both systems; each wrong field is reported with its source line
// and path, and the retired spec.windows.domainJoin is an unknown field, not silently accepted.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createHost } from '../../src/host/index.ts';
import { loadConfig } from '../../src/config/load.ts';
import { ConfigError, type ConfigIssue } from '../../src/errors.ts';
import { scratchDir } from '../support/tmp.ts';

const dir = scratchDir();
const HEAD = 'apiVersion: machineadm.cluster.x-k8s.io/v1alpha1\nkind: MachineConfig\nspec:\n';
let n = 0;

async function load(body: string) {
  const path = join(dir, `c${++n}.yaml`);
  writeFileSync(path, HEAD + body);
  return (await loadConfig(createHost({ root: dir, env: {} }), [path], {})).config;
}

async function issuesOf(body: string): Promise<ConfigIssue[]> {
  const error = await load(body).then(() => undefined, (e: unknown) => e);
  if (!(error instanceof ConfigError)) throw new Error(`expected a ConfigError, got ${String(error)}`);
  expect(error.exitCode).toBe(2);
  return error.issues;
}

const CREDS = '    credentials: { username: joiner, password: { valueFrom: { file: /etc/machineadm/join-password } } }\n';

describe('spec.domainJoin', () => {
  it('takes a full Linux join and fills the Linux defaults', async () => {
    const config = await load(`  domainJoin:\n    domain: corp.example\n    organizationalUnit: OU=Nodes,DC=corp,DC=example\n    computerName: NODE-01\n${CREDS}`);
    expect(config.spec.domainJoin).toMatchObject({ domain: 'corp.example', organizationalUnit: 'OU=Nodes,DC=corp,DC=example', computerName: 'NODE-01', linux: { keytab: '/etc/krb5.keytab', tool: 'adcli' } });
  });

  it.each([
    ['a file', '      offlineBlob: { file: "C:\\\\machineadm\\\\odj.txt" }\n'],
    ['a verified URL', `      offlineBlob: { url: https://blobs.example/odj.txt, sha256: ${'a'.repeat(64)} }\n`],
  ])('takes a Windows offline join blob from %s without credentials', async (_name, blob) => {
    const config = await load(`  domainJoin:\n    domain: corp.example\n    windows:\n${blob}`);
    expect(config.spec.domainJoin?.windows?.offlineBlob).toBeDefined();
  });

  it.each([
    ['a domain that is not a DNS name', `  domainJoin:\n    domain: "corp example"\n${CREDS}`, 5, 'spec.domainJoin.domain', /is not valid/],
    ['a computer name longer than 15 characters', `  domainJoin:\n    domain: corp.example\n    computerName: NODE-0123456789AB\n${CREDS}`, 6, 'spec.domainJoin.computerName', /is not valid/],
    ['a computer name of digits only, which Windows refuses as a new name', `  domainJoin:\n    domain: corp.example\n    computerName: "20481"\n${CREDS}`, 6, 'spec.domainJoin.computerName', /digits only/],
    ['an OU that is not a distinguished name', `  domainJoin:\n    domain: corp.example\n    organizationalUnit: Nodes\n${CREDS}`, 6, 'spec.domainJoin.organizationalUnit', /is not valid/],
    ['no credentials and no offline blob', '  domainJoin:\n    domain: corp.example\n', undefined, 'spec.domainJoin.credentials', /is required/],
    ['a blob URL without sha256', '  domainJoin:\n    domain: corp.example\n    windows:\n      offlineBlob: { url: https://blobs.example/odj.txt }\n', undefined, 'spec.domainJoin.windows.offlineBlob.sha256', /is required with url/],
    ['a blob from both a file and a URL', `  domainJoin:\n    domain: corp.example\n    windows:\n      offlineBlob: { file: "C:\\\\odj.txt", url: https://b.example/odj, sha256: ${'b'.repeat(64)} }\n`, 7, 'spec.domainJoin.windows.offlineBlob', /exactly one of file or url/],
    ['an unknown membership tool', `  domainJoin:\n    domain: corp.example\n${CREDS}    linux: { tool: sssd }\n`, 7, 'spec.domainJoin.linux.tool', /is not one of "adcli", "realm"/],
    ['a relative keytab path', `  domainJoin:\n    domain: corp.example\n${CREDS}    linux: { keytab: krb5.keytab }\n`, 7, 'spec.domainJoin.linux.keytab', /is not valid/],
    ['both dnsServers and domainController', `  domainJoin:\n    domain: corp.example\n${CREDS}    dnsServers: [10.0.0.2]\n    domainController: dc1.corp.example\n`, 7, 'spec.domainJoin.dnsServers', /not used when domainController is given/],
    ['the retired spec.windows.domainJoin', '  windows:\n    domainJoin: { domain: corp.example }\n', 5, 'spec.windows.domainJoin', /unknown field/],
  ])('refuses %s, naming the line and field', async (_name, body, line, path, message) => {
    const found = await issuesOf(body);
    const issue = found.find((i) => i.path === path);
    expect(issue, JSON.stringify(found)).toBeDefined();
    expect(issue!.message).toMatch(message);
    if (line !== undefined) expect(issue!.line).toBe(line);
  });
});
