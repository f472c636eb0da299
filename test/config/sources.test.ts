// Network sources against real servers on 127.0.0.1: HTTPS with a CA made in the test, and
// metadata services that speak each cloud's protocol.
import { createHash } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHost } from '../../src/host/index.ts';
import { loadConfig, NoMachineConfigError, type LoadOptions } from '../../src/config/load.ts';
import { MACHINECONFIG_CONTENT_TYPE } from '../../src/config/mime.ts';
import { ConfigError, formatIssue, type ConfigIssue } from '../../src/errors.ts';
import { freePort, imdsHandler, makeTestCa, multipart, startHttp, startHttps, type Cloud, type ImdsBehaviour, type RunningServer, type TestCa } from './helpers/servers.ts';
import { missingRequirement } from '../support/environment.ts';
import { streamChunks } from '../support/stream.ts';
import { scratchDir } from '../support/tmp.ts';

const HEAD = 'apiVersion: machineadm.cluster.x-k8s.io/v1alpha1\nkind: MachineConfig\n';
const CONFIG = `${HEAD}spec:\n  kernelModules: [overlay]\n  domainJoin: { domain: corp.example, credentials: { username: a, password: "pa55word-literal" } }\n`;
const quick: LoadOptions = {
  http: { retry: { attempts: 4, baseDelayMs: 20, maxDelayMs: 200, deadlineMs: 5000 } },
  imds: { retry: { attempts: 8, baseDelayMs: 50, maxDelayMs: 300, deadlineMs: 8000 }, timeouts: { connectMs: 500, responseMs: 1000, totalMs: 3000 } },
};

function host(env: Record<string, string> = {}) {
  return createHost({ root: scratchDir(), env });
}

async function failure(promise: Promise<unknown>): Promise<ConfigIssue[]> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(error instanceof ConfigError)) throw new Error(`expected a ConfigError, got ${String(error)}`);
  return error.issues;
}

const skip = missingRequirement({ commands: ['openssl'] });

describe.skipIf(skip)('https:// sources', () => {
  let ca: TestCa;
  let server: RunningServer;
  let flaky = 0;
  const sha = createHash('sha256').update(CONFIG).digest('hex');
  beforeAll(async () => {
    ca = makeTestCa(scratchDir());
    server = await startHttps(ca, (req, res) => {
      const path = new URL(req.url ?? '/', 'https://x').pathname;
      if (path === '/cfg.yaml') return res.end(CONFIG);
      if (path === '/flaky.yaml') {
        if (flaky++ < 2) {
          res.writeHead(503, { 'retry-after': '0' });
          return res.end();
        }
        return res.end(CONFIG);
      }
      if (path === '/login') {
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
        return res.end('<html><body>Please sign in</body></html>');
      }
      if (path === '/html-as-text') {
        res.writeHead(200, { 'content-type': 'text/plain' });
        return res.end('\n\n<!DOCTYPE html>\n<html><body>Error</body></html>');
      }
      if (path === '/huge') return streamChunks(res, 1600, 0x20); // 100 MB
      if (path === '/moved.yaml') {
        res.writeHead(302, { location: '/gone.yaml' });
        return res.end();
      }
      if (path === '/multipart') return res.end(multipart([{ type: 'text/x-shellscript', body: '#!/bin/sh\n' }, { type: MACHINECONFIG_CONTENT_TYPE, body: CONFIG }]));
      res.writeHead(404);
      res.end();
    });
  });
  afterAll(() => server?.close());

  it('reads a pinned source over TLS with the CA given in the fragment', async () => {
    const { config, sources } = await loadConfig(host(), [`${server.url}/cfg.yaml?sig=abc#sha256=${sha}&ca=${ca.caFile}`], quick);
    expect(config.spec.kernelModules).toEqual(['overlay']);
    expect(sources).toEqual([`${server.url}/cfg.yaml?sig=<redacted>`]);
    // The fragment is never sent.
    expect(server.requests.at(-1)!.url).toBe('/cfg.yaml?sig=abc');
  });

  it('refuses content that does not match the pin, before parsing it', async () => {
    const wrong = 'a'.repeat(64);
    const [first] = await failure(loadConfig(host(), [`${server.url}/cfg.yaml#sha256=${wrong}&ca=${ca.caFile}`], quick));
    expect(first).toMatchObject({ source: `${server.url}/cfg.yaml` });
    expect(first!.message).toBe(`the content's sha256 is ${sha}, not the pinned ${wrong}`);
  });

  it('refuses a server whose certificate is not trusted, naming the source and what to do', async () => {
    const [first] = await failure(loadConfig(host(), [`${server.url}/cfg.yaml`], quick));
    expect(first!.message).toMatch(/TLS certificate is not trusted/);
    expect(first!.hint).toMatch(/#ca=<path of a PEM file>/);
  });

  it.each([
    ['served as text/html', '/login', /answered 200 with an HTML page/],
    ['served as text/plain', '/html-as-text', /HTML page, not a configuration/],
  ])('refuses an HTML page %s with status 200', async (_name, path, message) => {
    const [first] = await failure(loadConfig(host(), [`${server.url}${path}#ca=${ca.caFile}`], quick));
    expect(first!.message).toMatch(message);
  });

  it('stops a 100 MB payload at the size limit, quickly', async () => {
    const started = Date.now();
    const [first] = await failure(loadConfig(host(), [`${server.url}/huge#ca=${ca.caFile}`], quick));
    expect(first!.message).toMatch(/larger than the limit of 8 MiB/);
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it('retries a server that is busy at first', async () => {
    const { config } = await loadConfig(host(), [`${server.url}/flaky.yaml#ca=${ca.caFile}`], quick);
    expect(config.spec.kernelModules).toEqual(['overlay']);
  });

  it('takes the MachineConfig out of multipart content served over https', async () => {
    const { sources } = await loadConfig(host(), [`${server.url}/multipart#ca=${ca.caFile}`], quick);
    expect(sources).toEqual([`${server.url}/multipart (part 2)`]);
  });

  it.each([
    ['answers 404', '/gone.yaml'],
    ['redirects to a page that answers 404', '/moved.yaml'],
  ])('names a source URL that %s once, with what the server answered', async (_name, path) => {
    const [first] = await failure(loadConfig(host(), [`${server.url}${path}?sig=abc#ca=${ca.caFile}`], quick));
    expect(first).toMatchObject({ source: `${server.url}${path}?sig=<redacted>`, unreadable: true });
    expect(first!.message).toMatch(/^the server answered 404/);
    expect(formatIssue(first!).split(server.url)).toHaveLength(2);
  });

  it('names a CA file that does not exist', async () => {
    const [first] = await failure(loadConfig(host(), [`${server.url}/cfg.yaml#ca=/nonexistent/ca.pem`], quick));
    expect(first!.message).toMatch(/the CA file \/nonexistent\/ca.pem does not exist/);
  });
});

const userData = multipart([
  { type: 'text/x-shellscript', body: '#!/bin/bash\necho "configured by a script"\n' },
  { type: 'text/cloud-config', body: '#cloud-config\npackages: [curl]\n' },
  { type: MACHINECONFIG_CONTENT_TYPE, body: CONFIG },
]);

describe('imds:// sources', () => {
  const servers: RunningServer[] = [];
  afterAll(async () => {
    for (const s of servers) await s.close();
  });
  async function imds(cloud: Cloud, behaviour: ImdsBehaviour): Promise<RunningServer> {
    const s = await startHttp(imdsHandler(cloud, behaviour));
    servers.push(s);
    return s;
  }

  it.each(['aws', 'azure', 'gce'] as const)('reads %s user data with its own protocol and takes the MachineConfig part', async (cloud) => {
    const s = await imds(cloud, { userData });
    const { config, sources } = await loadConfig(host({ MACHINEADM_IMDS_ENDPOINT: s.url }), [`imds://${cloud}/user-data`], quick);
    expect(config.spec.kernelModules).toEqual(['overlay']);
    expect(sources).toEqual([`imds://${cloud}/user-data (part 3)`]);
  });

  it.each(['aws', 'azure', 'gce'] as const)('detects %s when the source does not name the cloud', async (cloud) => {
    const s = await imds(cloud, { userData });
    const { sources } = await loadConfig(host({ MACHINEADM_IMDS_ENDPOINT: s.url }), ['imds://user-data'], quick);
    expect(sources).toEqual([`imds://user-data (${cloud}) (part 3)`]);
  });

  it.each(['aws', 'azure', 'gce'] as const)('detects %s while its metadata service still answers 503 at boot', async (cloud) => {
    const s = await imds(cloud, { userData, failFirst: 3 });
    const { sources } = await loadConfig(host({ MACHINEADM_IMDS_ENDPOINT: s.url }), ['imds://user-data'], quick);
    expect(sources).toEqual([`imds://user-data (${cloud}) (part 3)`]);
  });

  it.each(['aws', 'azure', 'gce'] as const)('treats %s without user data as "nothing to do"', async (cloud) => {
    const s = await imds(cloud, {});
    const error = await loadConfig(host({ MACHINEADM_IMDS_ENDPOINT: s.url }), [`imds://${cloud}/user-data`], quick).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(NoMachineConfigError);
  });

  it.each([
    ['a shell script', '#!/bin/sh\necho hi\n'],
    ['a cloud-config', '#cloud-config\nruncmd: [ls]\n'],
    ['multipart without our part', multipart([{ type: 'text/x-shellscript', body: '#!/bin/sh\n' }])],
    ['a cloud-config that writes a MachineConfig file', `#cloud-config\nwrite_files:\n  - path: /etc/machineadm/config.yaml\n    content: |\n${CONFIG.replace(/^/gm, '      ')}\n`],
  ])('treats user data holding only %s as "nothing to do"', async (_name, data) => {
    const s = await imds('aws', { userData: data });
    const error = await loadConfig(host({ MACHINEADM_IMDS_ENDPOINT: s.url }), ['imds://aws/user-data'], quick).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(NoMachineConfigError);
    expect((error as Error).message).toMatch(/nothing to do: the user data holds no MachineConfig \(imds:\/\/aws\/user-data\)/);
  });

  it.each([
    ['a jinja template of a cloud-config that writes a MachineConfig file', `## template: jinja\n#cloud-config\nwrite_files:\n  - path: /etc/machineadm/config.yaml\n    content: |\n${CONFIG.replace(/^/gm, '      ')}\n`],
    ['a cloud-config after a blank line, its marker in capitals, that writes a MachineConfig file', `\n#Cloud-Config\nwrite_files:\n  - path: /etc/machineadm/config.yaml\n    content: |\n${CONFIG.replace(/^/gm, '      ')}\n`],
  ])('leaves to cloud-init user data whose marker cloud-init reads: %s', async (_name, data) => {
    const s = await imds('aws', { userData: data });
    const error = await loadConfig(host({ MACHINEADM_IMDS_ENDPOINT: s.url }), ['imds://aws/user-data'], quick).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(NoMachineConfigError);
  });

  it('takes non-multipart user data that is a MachineConfig whole', async () => {
    const s = await imds('gce', { userData: CONFIG });
    const { sources } = await loadConfig(host({ MACHINEADM_IMDS_ENDPOINT: s.url }), ['imds://gce/user-data'], quick);
    expect(sources).toEqual(['imds://gce/user-data']);
  });

  it('reports a MachineConfig in user data that does not parse', async () => {
    const s = await imds('azure', { userData: `${HEAD}spec:\n  kernelModules: [overlay\n` });
    const [first] = await failure(loadConfig(host({ MACHINEADM_IMDS_ENDPOINT: s.url }), ['imds://azure/user-data'], quick));
    expect(first).toMatchObject({ source: 'imds://azure/user-data' });
    expect(first!.message).toMatch(/not valid YAML/);
  });

  it.each(['aws', 'azure', 'gce'] as const)('waits for a %s metadata service that answers 503 while starting', async (cloud) => {
    const s = await imds(cloud, { userData, failFirst: 3 });
    const { config } = await loadConfig(host({ MACHINEADM_IMDS_ENDPOINT: s.url }), [`imds://${cloud}/user-data`], quick);
    expect(config.spec.kernelModules).toEqual(['overlay']);
  });

  it.each(['aws', 'azure', 'gce'] as const)('asks %s again when the first answer is too slow', async (cloud) => {
    const s = await imds(cloud, { userData, firstAnswerDelayMs: 2500 });
    const { config } = await loadConfig(host({ MACHINEADM_IMDS_ENDPOINT: s.url }), [`imds://${cloud}/user-data`], quick);
    expect(config.spec.kernelModules).toEqual(['overlay']);
    expect(s.requests.length).toBeGreaterThan(cloud === 'aws' ? 2 : 1);
  });

  it('waits for a metadata service that is not listening yet', async () => {
    const port = await freePort();
    const late = new Promise<RunningServer>((resolve) => setTimeout(() => void startHttp(imdsHandler('aws', { userData }), port).then(resolve), 700));
    const { config } = await loadConfig(host({ MACHINEADM_IMDS_ENDPOINT: `http://127.0.0.1:${port}` }), ['imds://aws/user-data'], quick);
    servers.push(await late);
    expect(config.spec.kernelModules).toEqual(['overlay']);
  });

  it('never follows a redirect from the metadata service, so its token header stays there', async () => {
    const elsewhere = await startHttp((_req, res) => void res.end(userData));
    servers.push(elsewhere);
    const aws = imdsHandler('aws', { userData });
    const s = await startHttp((req, res) => {
      if (req.url?.startsWith('/latest/user-data')) {
        res.writeHead(302, { location: `${elsewhere.url}/user-data` });
        return void res.end();
      }
      aws(req, res);
    });
    servers.push(s);
    const [first] = await failure(loadConfig(host({ MACHINEADM_IMDS_ENDPOINT: s.url }), ['imds://aws/user-data'], quick));
    expect(first!.source).toBe('imds://aws/user-data');
    expect(first!.message).toMatch(/302/);
    expect(elsewhere.requests).toEqual([]);
  });

  it('gives up on a metadata service that keeps failing, naming the source', async () => {
    const s = await imds('gce', { broken: true });
    const started = Date.now();
    const [first] = await failure(loadConfig(host({ MACHINEADM_IMDS_ENDPOINT: s.url }), ['imds://gce/user-data'], quick));
    expect(first!.source).toBe('imds://gce/user-data');
    expect(first!.message).toMatch(/gce instance metadata: .* answered 500 \(after 8 attempts\)/);
    expect(Date.now() - started).toBeLessThan(8000);
  });

  it('detects the cloud from the firmware (DMI under --root) without probing other clouds', async () => {
    const s = await imds('aws', { userData });
    const root = scratchDir();
    mkdirSync(join(root, 'sys/class/dmi/id'), { recursive: true });
    writeFileSync(join(root, 'sys/class/dmi/id/sys_vendor'), 'Amazon EC2\n');
    const { sources } = await loadConfig(createHost({ root, env: { MACHINEADM_IMDS_ENDPOINT: s.url } }), ['imds://user-data'], quick);
    expect(sources).toEqual(['imds://user-data (aws) (part 3)']);
    expect(s.requests.map((r) => `${r.method} ${r.url}`)).toEqual(['PUT /latest/api/token', 'GET /latest/user-data', 'GET /latest/meta-data/instance-id']);
  });

  it('says it cannot tell the cloud when no service answers like a metadata service', async () => {
    const s = await startHttp((_req, res) => {
      res.writeHead(404);
      res.end();
    });
    servers.push(s);
    const [first] = await failure(loadConfig(host({ MACHINEADM_IMDS_ENDPOINT: s.url }), ['imds://user-data'], quick));
    expect(first!.message).toMatch(/cannot tell which cloud/);
    expect(first!.hint).toMatch(/imds:\/\/aws\/user-data/);
  });

  it('never shows a secret of the user data in an error', async () => {
    const s = await imds('aws', { userData: multipart([{ type: MACHINECONFIG_CONTENT_TYPE, body: CONFIG.replace('kernelModules: [overlay]', 'kernelModules: "pa55word-literal"') }]) });
    const found = await failure(loadConfig(host({ MACHINEADM_IMDS_ENDPOINT: s.url }), ['imds://aws/user-data'], quick));
    expect(JSON.stringify(found)).not.toContain('pa55word');
  });
});
