// The published JSON Schema and the CLI agree: every document `machineadm config validate` accepts
// the schema accepts (the shipped examples and recipes, drop-ins with explicit null deletions), and
// what the CLI refuses for endpoint URL schemes, files[].path, host:port endpoints and CIDRs the
// schema refuses too. Checked with a real draft 2020-12 validator (ajv).
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { load as loadYaml } from 'js-yaml';
import { describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.ts';
import { splitMultipart } from '../../src/config/mime.ts';
import { endpointProblem } from '../../src/config/schema/kubernetes.ts';
import { filePathProblem } from '../../src/config/schema/file-content.ts';
import { scratchDir } from '../support/tmp.ts';

const schema = JSON.parse(readFileSync('docs/schema/machineconfig-v1alpha1.json', 'utf8'));
const validate = new Ajv2020({ strict: false, allErrors: true }).compile(schema);
const validateDropIn = new Ajv2020({ strict: false, allErrors: true }).compile(JSON.parse(readFileSync('docs/schema/machineconfig-dropin-v1alpha1.json', 'utf8')));
const dir = scratchDir();
let n = 0;

async function cliAccepts(...documents: unknown[]): Promise<boolean> {
  const args = documents.flatMap((d) => {
    const path = join(dir, `d${++n}.json`);
    writeFileSync(path, JSON.stringify(d));
    return ['-c', path];
  });
  const code = await main(['config', 'validate', ...args], { stdout: () => {}, stderr: () => {}, readStdin: async () => Buffer.alloc(0), env: {}, cwd: process.cwd(), interactive: false });
  expect([0, 2]).toContain(code);
  return code === 0;
}

function schemaAccepts(document: unknown): boolean {
  return validate(document) as boolean;
}

const recipes = 'docs/recipes';
const shipped: [string, unknown][] = [
  ...readdirSync('examples').filter((f) => f.endsWith('.yaml')).map((f): [string, unknown] => [`examples/${f}`, loadYaml(readFileSync(`examples/${f}`, 'utf8'))]),
  [`${recipes}/user-data/machineconfig.yaml`, loadYaml(readFileSync(`${recipes}/user-data/machineconfig.yaml`, 'utf8'))],
  [`${recipes}/cloud-config.yaml`, loadYaml((loadYaml(readFileSync(`${recipes}/cloud-config.yaml`, 'utf8')) as { write_files: { content: string }[] }).write_files[0]!.content)],
  [`${recipes}/ignition.json`, loadYaml(Buffer.from((JSON.parse(readFileSync(`${recipes}/ignition.json`, 'utf8')) as { storage: { files: { contents: { source: string } }[] } }).storage.files[0]!.contents.source.replace(/^data:[^,]*,/, ''), 'base64').toString('utf8'))],
  [`${recipes}/user-data.mime`, loadYaml(splitMultipart(readFileSync(`${recipes}/user-data.mime`), 1 << 20).find((p) => p.contentType.includes('machineadm'))!.body.toString('utf8'))],
];

const worker = shipped.find(([name]) => name === 'examples/linux-worker.yaml')![1];
// The example where every field below is allowed (podSubnet and serviceSubnet only for kubeadm init).
const controlPlane = shipped.find(([name]) => name === 'examples/control-plane-init.yaml')![1];
const HEAD = { apiVersion: 'machineadm.cluster.x-k8s.io/v1alpha1', kind: 'MachineConfig' };

/** The control plane example with one field under spec set (a dotted path). */
function withField(path: string, value: unknown): unknown {
  const doc = structuredClone(controlPlane) as Record<string, unknown>;
  const keys = path.split('.');
  let at = doc.spec as Record<string, unknown>;
  for (const key of keys.slice(0, -1)) at = (at[key] ??= {}) as Record<string, unknown>;
  at[keys.at(-1)!] = value;
  return doc;
}

describe('the published JSON Schema and the CLI', () => {
  it.each(shipped)('both accept %s', async (_name, document) => {
    expect(await cliAccepts(document)).toBe(true);
    expect(validate(document), JSON.stringify(validate.errors)).toBe(true);
  });

  it.each([
    ['a sysctl', { spec: { sysctls: { 'vm.swappiness': null } } }],
    ['the node name and a label', { spec: { kubernetes: { node: { name: null, labels: { 'example.com/role': null } } } } }],
    ['the whole containerd section and the report', { spec: { containerd: null, report: null } }],
  ])('both accept a drop-in that deletes %s with an explicit null', async (_name, dropIn) => {
    const document = { ...HEAD, ...dropIn };
    // The drop-in alone is not a whole configuration: the CLI accepts it merged over the example.
    expect(await cliAccepts(worker, document)).toBe(true);
    expect(validate(document), JSON.stringify(validate.errors)).toBe(true);
  });

  it.each([
    ['a report endpoint with an ftp:// URL', 'report.endpoints', [{ url: 'ftp://collector.example/events' }]],
    ['a report endpoint that is no URL', 'report.endpoints', [{ url: 'collector.example/events' }]],
    ['a relative files[].path', 'files', [{ path: 'etc/example.conf', content: 'x' }]],
    ['a files[].path with ".."', 'files', [{ path: '/etc/../root/.ssh/authorized_keys', content: 'x' }]],
    ['a files[].path naming a directory', 'files', [{ path: '/etc/example/', content: 'x' }]],
    ['a control plane endpoint without a port', 'kubernetes.controlPlaneEndpoint', '10.0.0.10'],
    ['a control plane endpoint that is a URL', 'kubernetes.controlPlaneEndpoint', 'https://10.0.0.10:6443'],
    ['a pod subnet that is no CIDR', 'kubernetes.podSubnet', '10.244.0.0'],
    ['a service subnet with three CIDRs', 'kubernetes.serviceSubnet', '10.96.0.0/16,fd00::/112,10.97.0.0/16'],
    ['a service subnet that is a host name', 'kubernetes.serviceSubnet', 'services.example/16'],
  ])('both refuse %s', async (_name, path, value) => {
    const document = withField(path, value);
    expect(await cliAccepts(document)).toBe(false);
    expect(schemaAccepts(document)).toBe(false);
  });

  it.each([
    ['an upper-case HTTPS:// report URL', 'report.endpoints', [{ url: 'HTTPS://collector.example/events' }]],
    ['a dual-stack pod subnet with a space after the comma', 'kubernetes.podSubnet', '10.244.0.0/16, fd00:10:244::/56'],
    ['a bracketed IPv6 control plane endpoint', 'kubernetes.controlPlaneEndpoint', '[fd00::10]:6443'],
  ])('both accept %s', async (_name, path, value) => {
    const document = withField(path, value);
    expect(await cliAccepts(document)).toBe(true);
    expect(validate(document), JSON.stringify(validate.errors)).toBe(true);
  });

  const files = schema.properties.spec.properties.files;
  const pathPattern = new RegExp((files.items ?? files.anyOf?.[0]?.items).properties.path.pattern, 'u');
  it('refuses in the schema exactly the files[].path values the CLI refuses', () => {
    const path = fc.array(fc.constantFrom('/', '/', 'a', '.', '\\', '\0'), { maxLength: 10 }).map((c) => c.join(''));
    fc.assert(fc.property(path, (p) => pathPattern.test(p) === (filePathProblem(p) === undefined)), { numRuns: 2000, seed: 7 });
  });

  const endpointPattern = new RegExp(schema.properties.spec.properties.kubernetes.properties.controlPlaneEndpoint.pattern, 'u');
  it('never refuses in the schema a control plane endpoint the CLI accepts', () => {
    const endpoint = fc.array(fc.constantFrom('a', '1', '.', ':', '[', ']', 'f', '-', '6443'), { maxLength: 8 }).map((c) => c.join(''));
    fc.assert(fc.property(endpoint, (e) => endpointProblem(e) !== undefined || endpointPattern.test(e)), { numRuns: 2000, seed: 7 });
  });
});

describe('the published drop-in schema and the CLI', () => {
  // A base that joins a domain, so a drop-in can change one field of spec.domainJoin.
  const base = structuredClone(worker) as { spec: Record<string, unknown> };
  base.spec.domainJoin = { domain: 'corp.example', credentials: { username: 'k8s-joiner', password: 'S3cret' } };

  it.each(shipped)('accepts %s, as a whole configuration is a drop-in too', (_name, document) => {
    expect(validateDropIn(document), JSON.stringify(validateDropIn.errors)).toBe(true);
  });

  it.each([
    ['no spec at all', {}],
    ['the OU only, without the domain', { spec: { domainJoin: { organizationalUnit: 'OU=Nodes,DC=corp,DC=example' } } }],
    ['another join account, without its password', { spec: { domainJoin: { credentials: { username: 'other-joiner' } } } }],
  ])('accepts a drop-in with %s, which the CLI accepts merged over a base, while the full schema refuses it alone', async (_name, dropIn) => {
    const document = { ...HEAD, ...dropIn };
    expect(await cliAccepts(base, document)).toBe(true);
    expect(validateDropIn(document), JSON.stringify(validateDropIn.errors)).toBe(true);
    // The full schema stays strict: a whole configuration needs its required fields.
    expect(schemaAccepts(document)).toBe(false);
  });

  it.each([
    ['a misspelled field', { spec: { kubernetes: { node: { lables: { a: 'b' } } } } }],
    ['a list where a sysctl value goes', { spec: { sysctls: { 'net.ipv4.ip_forward': ['1'] } } }],
    ['a report endpoint with an ftp:// URL', { spec: { report: { endpoints: [{ url: 'ftp://collector.example/events' }] } } }],
    ['a relative files[].path', { spec: { files: [{ path: 'etc/example.conf', content: 'x' }] } }],
    ['a control plane endpoint without a port', { spec: { kubernetes: { controlPlaneEndpoint: '10.0.0.10' } } }],
    ['an empty list of DNS servers', { spec: { domainJoin: { dnsServers: [] } } }],
    ['a machine reference without its name', { spec: { kubernetes: { node: { name: {} } } } }],
  ])('refuses, as the CLI does, a drop-in with %s', async (_name, dropIn) => {
    const document = { ...HEAD, ...dropIn };
    expect(await cliAccepts(base, document)).toBe(false);
    expect(validateDropIn(document)).toBe(false);
  });

  it.each([
    ['no apiVersion', { kind: 'MachineConfig', spec: {} }],
    ['another kind', { apiVersion: HEAD.apiVersion, kind: 'NodeConfig' }],
  ])('refuses, as the CLI does, a drop-in with %s', async (_name, document) => {
    expect(await cliAccepts(base, document)).toBe(false);
    expect(validateDropIn(document)).toBe(false);
  });
});
