// The config commands as users run them: the real entry point in a child process.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { load } from 'js-yaml';
import { MACHINECONFIG_CONTENT_TYPE } from '../../src/config/mime.ts';
import { imdsHandler, makeTestCa, multipart, startHttp, startHttps, type RunningServer, type TestCa } from './helpers/servers.ts';
import { missingRequirement } from '../support/environment.ts';
import { scratchDir } from '../support/tmp.ts';

const NODE = resolve('node_modules/.bin/node');
const BIN = resolve('bin/machineadm.js');
const HEAD = 'apiVersion: machineadm.cluster.x-k8s.io/v1alpha1\nkind: MachineConfig\n';
const BASE = `${HEAD}spec:
  kernelModules: [overlay, br_netfilter]
  sysctls: { net.ipv4.ip_forward: "1", vm.swappiness: "10" }
  domainJoin:
    domain: corp.example
    credentials: { username: joiner, password: "Base-Pa55word!" }
`;
const OVERRIDE = `${HEAD}spec:
  kernelModules: [overlay]
  sysctls: { vm.swappiness: null, net.core.somaxconn: "1024" }
  report:
    endpoints:
      - url: https://collector.example/events
        bearerToken: "bearer-literal-token"
`;

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function machineadm(args: string[], options: { cwd: string; env?: Record<string, string>; input?: string }): Promise<Run> {
  return new Promise((done) => {
    const child = execFile(NODE, [BIN, ...args], { cwd: options.cwd, env: { PATH: process.env.PATH ?? '', ...options.env }, timeout: 30_000 }, (error, stdout, stderr) => {
      done({ code: error ? ((error as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
    child.stdin!.end(options.input ?? '');
  });
}

const dir = scratchDir();
const skip = missingRequirement({ commands: ['openssl'] });

describe.skipIf(skip)('machineadm config view', () => {
  let ca: TestCa;
  let https: RunningServer;
  let aws: RunningServer;
  beforeAll(async () => {
    ca = makeTestCa(scratchDir());
    writeFileSync(join(dir, 'ca.pem'), ca.caPem);
    writeFileSync(join(dir, 'override.yaml'), OVERRIDE);
    https = await startHttps(ca, (req, res) => (req.url === '/cfg.yaml' ? res.end(BASE) : (res.writeHead(404), res.end())));
    const userData = multipart([
      { type: 'text/x-shellscript', body: '#!/bin/bash\nset -e\necho "hello from a script"\n' },
      { type: 'text/cloud-config', body: '#cloud-config\npackages: [curl]\nruncmd: [[machineadm, init, -c, "imds://aws/user-data"]]\n' },
      { type: MACHINECONFIG_CONTENT_TYPE, body: BASE },
    ]);
    aws = await startHttp(imdsHandler('aws', { userData }));
  });
  afterAll(async () => {
    await https?.close();
    await aws?.close();
  });

  it('prints the merged configuration of a pinned https source and a local override, secrets redacted', async () => {
    const sha = createHash('sha256').update(BASE).digest('hex');
    const run = await machineadm(['config', 'view', '-c', `${https.url}/cfg.yaml#sha256=${sha}&ca=ca.pem`, '-c', './override.yaml'], { cwd: dir });
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const shown = load(run.stdout) as { spec: Record<string, any> };
    expect(shown.spec.kernelModules).toEqual(['overlay']);
    expect(shown.spec.sysctls).toEqual({ 'net.ipv4.ip_forward': '1', 'net.core.somaxconn': '1024' });
    expect(shown.spec.domainJoin.credentials).toEqual({ username: 'joiner', password: '<redacted>' });
    expect(shown.spec.report.endpoints[0].bearerToken).toBe('<redacted>');
    expect(run.stdout).not.toMatch(/Pa55word|bearer-literal/);
  });

  it('refuses the https source when the pin is wrong (exit 2), naming it', async () => {
    const run = await machineadm(['config', 'view', '-c', `${https.url}/cfg.yaml#sha256=${'0'.repeat(64)}&ca=ca.pem`, '-c', './override.yaml'], { cwd: dir });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(`${https.url}/cfg.yaml: the content's sha256 is`);
    expect(run.stdout).toBe('');
  });

  it('extracts the MachineConfig part from multipart AWS user data that also carries a script and a cloud-config', async () => {
    const run = await machineadm(['config', 'view', '-c', 'imds://aws/user-data', '-o', 'json'], { cwd: dir, env: { MACHINEADM_IMDS_ENDPOINT: aws.url } });
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const shown = JSON.parse(run.stdout);
    expect(shown.spec.kernelModules).toEqual(['overlay', 'br_netfilter']);
    expect(shown.spec.domainJoin.credentials.password).toBe('<redacted>');
    expect(aws.requests.map((r) => `${r.method} ${r.url}`)).toEqual(['PUT /latest/api/token', 'GET /latest/user-data', 'GET /latest/meta-data/instance-id']);
  });

  it('refuses network sources with --offline before touching the network (exit 2)', async () => {
    const before = aws.requests.length;
    const run = await machineadm(['config', 'view', '--offline', '-c', 'imds://aws/user-data', '-c', `${https.url}/cfg.yaml`], { cwd: dir, env: { MACHINEADM_IMDS_ENDPOINT: aws.url } });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('imds://aws/user-data: refused: this source needs the network');
    expect(run.stderr).toContain(`${https.url}/cfg.yaml: refused`);
    expect(aws.requests.length).toBe(before);
  });
});

describe('machineadm config validate', () => {
  it('lists every problem with file, line, column and field path (exit 2)', async () => {
    writeFileSync(join(dir, 'bad.yaml'), `${HEAD}spec:\n  sysctls:\n    net/ipv4/ip_forward: "1"\n  containerd:\n    registries:\n      docker.io:\n        mirrors:\n          - url: ftp://mirror\n  kernelModuls: []\n`);
    const run = await machineadm(['config', 'validate', '-c', 'bad.yaml'], { cwd: dir });
    expect(run.code).toBe(2);
    const file = join(dir, 'bad.yaml');
    expect(run.stderr).toContain('invalid configuration (3 problems)');
    expect(run.stderr).toContain(`${file}:5:5: spec.sysctls["net/ipv4/ip_forward"]:`);
    expect(run.stderr).toContain(`${file}:10:13: spec.containerd.registries["docker.io"].mirrors[0].url:`);
    expect(run.stderr).toContain(`${file}:11:3: spec.kernelModuls: unknown field\n    hint: did you mean "kernelModules"?`);
    expect(run.stderr).not.toMatch(/at .*\.ts:\d+/);
  });

  it('prints the problems as JSON with -o json', async () => {
    writeFileSync(join(dir, 'dup.yaml'), `${HEAD}spec: {}\nspec: {}\n`);
    const run = await machineadm(['config', 'validate', '-c', 'dup.yaml', '-o', 'json'], { cwd: dir });
    expect(run.code).toBe(2);
    expect(JSON.parse(run.stdout)).toEqual({ valid: false, issues: [{ source: join(dir, 'dup.yaml'), line: 4, column: 1, path: '', message: 'key "spec" appears twice in the same map', hint: expect.any(String) }] });
  });

  it('reads the configuration from stdin with -c -', async () => {
    const run = await machineadm(['config', 'validate', '-c', '-'], { cwd: dir, input: `${HEAD}spec:\n  kernelModules: [overlay]\n` });
    expect(run).toMatchObject({ code: 0, stdout: 'configuration is valid (stdin)\n' });
  });

  it('says "nothing to do" and exits 0 for user data without a MachineConfig', async () => {
    writeFileSync(join(dir, 'user-data'), multipart([{ type: 'text/x-shellscript', body: '#!/bin/sh\n' }]));
    const run = await machineadm(['config', 'validate', '-c', 'user-data'], { cwd: dir });
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^nothing to do: the user data holds no MachineConfig/);
  });
});
