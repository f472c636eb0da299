// Secrets planted in every URL-bearing field (user info, presigned queries, proxy passwords,
// tokens in endpoint and source URLs) and in every secret field, then every command that shows
// the configuration or reports on a run: no planted string may reach standard output, standard
// error, a file machineadm wrote (but the files whose job is to hold those URLs), or an event a
// collector received.
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, type CliRun } from '../support/cli.ts';
import { scratchDir } from '../support/tmp.ts';
import { makeTestCa, startHttp, startHttps, type RunningServer } from '../config/helpers/servers.ts';
import { startCollector, type Collector } from './collector.ts';
import { displayUrl } from '../../src/redaction.ts';

const SECRETS = {
  fileUrlPassword: 'fpw-9c41e0d7a2b6',
  fileUrlSignature: 'amzsig-5b8e11f0c3d94a27',
  fileUrlCredential: 'AKIAQ7SECRETCRED%2F20261130%2Fus-east-1',
  failingFileSig: 'sassig-77d0aa1e9f',
  fetchToken: 'fetchtok-2f6e0c9b81',
  mirrorPassword: 'mirrorpw-31a7c9e2',
  mirrorQueryToken: 'mirrortok-c8d2e4f6a0',
  httpProxyPassword: 'hproxypw-6e1d90b3',
  httpsProxyPassword: 'sproxypw-0b7a58c4',
  endpointQueryToken: 'eptok-4a9c2e7d15',
  sourceQueryToken: 'srctok-e3b1d7f925',
  kubernetesToken: 'k8stok.zq9r7w5v3t1s0p2m',
  caCertHash: 'sha256:7e3f1a9c5b2d8e4f6a0c1b3d5e7f9a2c4b6d8e0f1a3c5b7d9e2f4a6c8b0d1e3f',
  certificateKey: 'c0ffee00d15ea5e5c0ffee00d15ea5e5c0ffee00d15ea5e5c0ffee00d15ea5e5',
  bearerToken: 'bearer-8d6f4b2a0e',
  domainJoinPassword: 'djpw-1c3e5a7b9d',
  invalidUrlPassword: 'badurlpw-58e0c2a4',
};

// What a file holds when the decoded form of a secret is what the tool needs.
const decoded = (value: string) => decodeURIComponent(value);
const PAYLOAD = Buffer.from('payload served by the test\n');
const PAYLOAD_SHA = createHash('sha256').update(PAYLOAD).digest('hex');
const WRONG_SHA = 'f'.repeat(64);

// The files whose job is to hold these URLs for containerd: they keep them (the proxy drop-in is
// 0600); the test checks they do, so it knows the planted values reached the machine at all.
// (Mirror URLs with a login or token are refused, so those reach only the validation errors.)
const HOLDERS = ['etc/systemd/system/containerd.service.d/machineadm-proxy.conf', 'etc/containerd/certs.d/docker.io/hosts.toml'];

function filesUnder(dir: string): { path: string; text: string }[] {
  const out: { path: string; text: string }[] = [];
  const walk = (d: string): void => {
    for (const name of readdirSync(d)) {
      const path = join(d, name);
      const info = statSync(path);
      if (info.isDirectory()) walk(path);
      else if (info.isFile()) out.push({ path: relative(dir, path), text: readFileSync(path, 'latin1') });
    }
  };
  if (existsSync(dir)) walk(dir);
  return out;
}

function hitsIn(text: string): string[] {
  return Object.entries(SECRETS).flatMap(([name, value]) => [value, decoded(value)].filter((v, i, all) => all.indexOf(v) === i && text.includes(v)).map(() => name));
}

describe('secrets in URLs and secret fields', () => {
  let files: RunningServer;
  let source: RunningServer;
  let collector: Collector;
  const dir = scratchDir();
  const root = join(dir, 'root');
  const ca = makeTestCa(dir);
  beforeAll(async () => {
    files = await startHttp((req, res) => {
      const path = new URL(req.url ?? '/', 'http://x').pathname;
      if (path === '/payload.bin') res.writeHead(200, { 'content-length': PAYLOAD.length }).end(PAYLOAD);
      else res.writeHead(404).end();
    });
    source = await startHttps(ca, (_req, res) => res.writeHead(200, { 'content-type': 'application/yaml' }).end('apiVersion: machineadm.cluster.x-k8s.io/v1alpha1\nkind: MachineConfig\nspec:\n  report:\n    deadlineSeconds: 5\n'));
    collector = await startCollector();
  });
  afterAll(async () => Promise.all([files.close(), source.close(), collector.close()]));

  function writeConfigs(): { base: string; failing: string; invalid: string; https: string } {
    const port = new URL(files.url).port;
    const spec = {
      files: [
        {
          path: '/opt/payload.bin',
          source: { url: `http://fetcher:${SECRETS.fileUrlPassword}@127.0.0.1:${port}/payload.bin?X-Amz-Credential=${SECRETS.fileUrlCredential}&X-Amz-Expires=3600&X-Amz-Signature=${SECRETS.fileUrlSignature}`, sha256: PAYLOAD_SHA },
        },
      ],
      containerd: {
        version: '1.7',
        registries: { 'docker.io': { mirrors: [{ url: 'https://mirror.internal:5000' }] } },
        proxy: { httpProxy: `http://proxyuser:${SECRETS.httpProxyPassword}@proxy.internal:3128`, httpsProxy: `http://proxyuser:${SECRETS.httpsProxyPassword}@proxy.internal:3128`, noProxy: ['10.0.0.0/8'] },
      },
      kubernetes: {
        role: 'control-plane',
        bootstrap: 'join',
        version: 'v1.31.2',
        controlPlaneEndpoint: '10.0.0.10:6443',
        token: SECRETS.kubernetesToken,
        caCertHashes: [SECRETS.caCertHash],
        certificateKey: SECRETS.certificateKey,
      },
      domainJoin: { domain: 'corp.example', credentials: { username: 'joiner', password: SECRETS.domainJoinPassword } },
      report: { deadlineSeconds: 5, endpoints: [{ url: `${collector.url}?token=${SECRETS.endpointQueryToken}`, bearerToken: SECRETS.bearerToken }] },
    };
    const write = (name: string, value: unknown) => (writeFileSync(join(dir, name), JSON.stringify(value)), join(dir, name));
    const base = write('base.json', { apiVersion: 'machineadm.cluster.x-k8s.io/v1alpha1', kind: 'MachineConfig', spec });
    // Lists replace: the failing run downloads a file whose checksum cannot match.
    const failing = write('failing.json', {
      apiVersion: 'machineadm.cluster.x-k8s.io/v1alpha1',
      kind: 'MachineConfig',
      spec: { files: [{ path: '/opt/other.bin', source: { url: `http://127.0.0.1:${port}/payload.bin?sv=2024-01-01&sig=${SECRETS.failingFileSig}`, sha256: WRONG_SHA } }] },
    });
    const invalid = write('invalid.json', {
      apiVersion: 'machineadm.cluster.x-k8s.io/v1alpha1',
      kind: 'MachineConfig',
      // A login or token in a mirror URL is refused (containerd never sends it): the refusals must not quote them.
      spec: {
        containerd: {
          registries: {
            'docker.io': {
              mirrors: [{ url: `https://mirror:${SECRETS.invalidUrlPassword}@mirror internal:5000` }, { url: `https://mirror:${SECRETS.mirrorPassword}@mirror.internal:5000` }, { url: `https://mirror2.internal:5000/v2?token=${SECRETS.mirrorQueryToken}` }],
            },
          },
        },
      },
    });
    return { base, failing, invalid, https: `${source.url}/node.yaml?token=${SECRETS.sourceQueryToken}#ca=${ca.caFile}` };
  }

  it('no planted secret reaches standard output or error, a file, or an event (but the files that hold the URLs for containerd)', async () => {
    const { base, failing, invalid, https } = writeConfigs();
    const common = ['-c', base, '-c', https, '--root', root];
    const env = {};
    const runs: [string, CliRun, number][] = [];
    // Later runs rewrite status.json and result.json: every version of every file is searched.
    const versions = new Map<string, { path: string; text: string }>();
    const run = async (expected: number, ...args: string[]) => {
      runs.push([args.slice(0, 3).join(' '), await runCli(args, { env, cwd: dir }), expected]);
      for (const f of filesUnder(root)) versions.set(`${f.path}\0${f.text}`, f);
    };
    const fetchUrl = `http://127.0.0.1:${new URL(files.url).port}/payload.bin?token=${SECRETS.fetchToken}`;

    await run(0, 'plan', ...common);
    await run(0, 'plan', ...common, '-o', 'json');
    await run(0, 'init', ...common, '--skip', 'provision');
    await run(3, 'init', ...common, '-c', failing, '--skip', 'provision');
    await run(3, 'init', ...common, '-c', failing, '--skip', 'provision', '-o', 'json');
    await run(0, 'status', '--root', root);
    await run(0, 'status', '--root', root, '-o', 'json');
    await run(0, 'config', 'view', ...common, '-o', 'text');
    await run(0, 'config', 'view', ...common, '-o', 'json');
    await run(2, 'config', 'validate', '-c', invalid);
    await run(0, 'fetch', fetchUrl, '-d', join(root, 'opt/fetched.bin'), '--sha256', PAYLOAD_SHA);
    await run(3, 'fetch', fetchUrl, '-d', join(root, 'opt/refused.bin'), '--sha256', WRONG_SHA);

    for (const [name, result, expected] of runs) expect({ name, code: result.code, stderr: result.stderr }).toEqual({ name, code: expected, stderr: expect.any(String) });
    const shown = runs.flatMap(([name, r]) => [
      { where: `${name} stdout`, text: r.stdout },
      { where: `${name} stderr`, text: r.stderr },
    ]);
    // The default state dir is under --root, so this walks it too.
    const written = [...versions.values()];
    const holders = written.filter((f) => HOLDERS.includes(f.path));
    const sent = collector.requests.map((r, i) => ({ where: `event request ${i}`, text: r.body.toString('utf8') }));
    const outputs = [...shown, ...written.filter((f) => !HOLDERS.includes(f.path)).map((f) => ({ where: f.path, text: f.text })), ...sent];
    const hits = outputs.flatMap((o) => hitsIn(o.text).map((secret) => `${secret} in ${o.where}`));

    console.log(`url-secrets: ${Object.keys(SECRETS).length} secrets planted; ${runs.length} commands, ${written.length} file versions, ${sent.length} event requests searched; ${hits.length} hits${hits.length ? `:\n  ${hits.join("\n  ")}` : ""}`);
    expect(Object.keys(SECRETS)).toHaveLength(17);
    expect(sent.length).toBeGreaterThan(20);
    expect(written.some((f) => f.path === 'var/lib/machineadm/result.json') && written.some((f) => f.path === 'run/machineadm/status.json')).toBe(true);
    expect(holders.flatMap((f) => hitsIn(f.text)).sort()).toEqual(['httpProxyPassword', 'httpsProxyPassword']);
    // The URLs are still shown, their secrets replaced.
    expect(runs.find(([n]) => n === 'plan -c ' + base)?.[1].stdout).toMatch(/from http:\/\/fetcher:<redacted>@127\.0\.0\.1:\d+\/payload\.bin\?X-Amz-Credential=<redacted>&X-Amz-Expires=<redacted>&X-Amz-Signature=<redacted>/);
    expect(runs.find(([n]) => n === 'config view -c')?.[1].stdout).toContain('httpProxy: http://proxyuser:<redacted>@proxy.internal:3128');
    expect(runs.find(([n]) => n === 'config validate -c')?.[1].stderr).toContain('spec.containerd.registries["docker.io"].mirrors[0].url: is not an http:// or https:// URL (the value is not shown: it may hold a credential)');
    expect(runs.find(([n]) => n === 'config validate -c')?.[1].stderr).toMatch(/mirrors\[1\]\.url: has a user name, password or query[^\n]*\n[\s\S]*mirrors\[2\]\.url: has a user name, password or query/);
    expect(hits).toEqual([]);
  }, 60_000);
});

describe('displayUrl, the one way a URL is shown', () => {
  it.each([
    ['a plain URL as written', 'https://mirror.internal:5000', 'https://mirror.internal:5000'],
    ['a password, keeping the user name', 'http://user:hunter22@proxy:3128', 'http://user:<redacted>@proxy:3128'],
    ['a token given as the user name', 'https://ghp_abcdef123456@github.example/x', 'https://<redacted>@github.example/x'],
    ['a password with a raw "@"', 'https://user:p@ss@proxy.example/x@y', 'https://user:<redacted>@proxy.example/x@y'],
    ['every query value, keeping the names', 'https://b.s3.example/k?X-Amz-Expires=3600&X-Amz-Signature=abc', 'https://b.s3.example/k?X-Amz-Expires=<redacted>&X-Amz-Signature=<redacted>'],
    ['a bare query token', 'https://c.example/x?s3cr3ttoken', 'https://c.example/x?<redacted>'],
    ['an empty value as written', 'https://c.example/x?a=&b=1', 'https://c.example/x?a=&b=<redacted>'],
    ['no fragment', 'https://c.example/node.yaml#sha256=00ff&ca=/etc/ca.pem', 'https://c.example/node.yaml'],
    ['not a URL', 'not a url', '(an invalid URL)'],
  ])('shows %s', (_name, url, shown) => {
    expect(displayUrl(url)).toBe(shown);
  });
});
