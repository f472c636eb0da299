import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.ts';
import type { Io } from '../../src/cli/io.ts';
import { startCollector, type Collector } from './collector.ts';
import { endpointKey } from '../../src/report/spool.ts';
import { scratchDir } from '../support/tmp.ts';

function testIo(): Io & { out: () => string; err: () => string } {
  let out = '';
  let err = '';
  return {
    stdout: (t) => void (out += t),
    stderr: (t) => void (err += t),
    readStdin: async () => Buffer.alloc(0),
    env: {},
    cwd: process.cwd(),
    interactive: false,
    out: () => out,
    err: () => err,
  };
}

const PEM = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n';

function scratch(endpoint: Record<string, unknown> | Record<string, unknown>[], files: Record<string, string | null> = {}): { root: string; config: string } {
  const root = scratchDir();
  const config = join(root, '..', `${root.split('/').pop()}.yaml`);
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(join(root, path, content === null ? '' : '..'), { recursive: true });
    if (content !== null) writeFileSync(join(root, path), content);
  }
  writeFileSync(config, JSON.stringify({ apiVersion: 'machineadm.cluster.x-k8s.io/v1alpha1', kind: 'MachineConfig', spec: { report: { endpoints: Array.isArray(endpoint) ? endpoint : [endpoint] } } }));
  return { root, config };
}

describe('a bad report configuration', () => {
  it.each<[string, Record<string, unknown> | Record<string, unknown>[], Record<string, string | null>, RegExp]>([
    // One gateway for two tenants, told apart by a header: each endpoint's spool would lose events to the other's acknowledgements.
    ['two endpoints of one URL', [{ url: 'https://gw.example/events', headers: { 'X-Tenant': 'a' } }, { url: 'https://gw.example/events', headers: { 'X-Tenant': 'b' } }], {}, /spec\.report\.endpoints\[1\]\.url: is the URL of endpoints\[0\] too: each endpoint's events are kept in the spool under its URL\n    hint: give each endpoint its own URL/],
    ['an ftp:// endpoint', { url: 'ftp://collector.example/events' }, {}, /spec\.report\.endpoints\[0\]\.url: the scheme "ftp" is not supported\n    hint: use an http:\/\/ or https:\/\/ URL/],
    ['an endpoint that is not a URL', { url: 'collector events' }, {}, /spec\.report\.endpoints\[0\]\.url: "collector events" is not a URL/],
    ['credentials in the URL', { url: 'https://user:pw@collector.example/' }, {}, /holds a user name or password/],
    ['a CA file that does not exist', { url: 'https://c.example/', caFile: '/etc/machineadm/ca.pem' }, {}, /spec\.report\.endpoints\[0\]\.caFile: \/etc\/machineadm\/ca\.pem does not exist/],
    ['a CA file that is not PEM', { url: 'https://c.example/', caFile: '/etc/machineadm/ca.pem' }, { 'etc/machineadm/ca.pem': 'hello' }, /caFile: \/etc\/machineadm\/ca\.pem is not a PEM certificate/],
    ['a client key that is not PEM', { url: 'https://c.example/', clientCertFile: '/etc/c.pem', clientKeyFile: '/etc/c.key' }, { 'etc/c.pem': PEM, 'etc/c.key': PEM }, /clientKeyFile: \/etc\/c\.key is not a PEM private key/],
    ['an encrypted client key', { url: 'https://c.example/', clientCertFile: '/etc/c.pem', clientKeyFile: '/etc/c.key' }, { 'etc/c.pem': PEM, 'etc/c.key': '-----BEGIN ENCRYPTED PRIVATE KEY-----\nMIIB\n-----END ENCRYPTED PRIVATE KEY-----\n' }, /clientKeyFile: \/etc\/c\.key is an encrypted private key/],
    ['a client certificate without its key', { url: 'https://c.example/', clientCertFile: '/etc/c.pem' }, { 'etc/c.pem': PEM }, /clientCertFile and clientKeyFile go together/],
    ['a relative CA path', { url: 'https://c.example/', caFile: 'ca.pem' }, {}, /caFile: "ca\.pem" is not valid/],
    ['a token file that cannot be read', { url: 'https://c.example/', bearerToken: { valueFrom: { file: '/etc/machineadm/token' } } }, { 'etc/machineadm/token': null }, /bearerToken: secret file \/etc\/machineadm\/token is not a regular file/],
    ['a token file that does not exist', { url: 'https://c.example/', bearerToken: { valueFrom: { file: '/etc/machineadm/token' } } }, {}, /bearerToken: secret file \/etc\/machineadm\/token does not exist/],
    ['a Content-Type header', { url: 'https://c.example/', headers: { 'Content-Type': 'text/plain' } }, {}, /Content-Type is set by machineadm/],
  ])('(%s) is a configuration error before anything changes', async (_name, endpoint, files, message) => {
    const { root, config } = scratch(endpoint, files);
    const before = readdirSync(root).sort();
    const io = testIo();
    const code = await main(['init', '-c', config, '--root', root], io);
    expect(io.err()).toMatch(message);
    expect(code).toBe(2);
    expect(readdirSync(root).sort()).toEqual(before);
    expect(existsSync(join(root, 'var/lib/machineadm'))).toBe(false);
    expect(existsSync(join(root, 'run'))).toBe(false);
  });
});

describe('machineadm init and report with a collector', () => {
  let collector: Collector;
  beforeAll(async () => {
    collector = await startCollector();
  });
  afterAll(async () => collector.close());

  it('keeps the bearer token out of every byte sent (but the Authorization header), written and printed', async () => {
    const token = 'bearer-token-5d1e8b2a77';
    const { root, config } = scratch({ url: collector.url, bearerToken: token, headers: { 'X-Cluster': 'c1' } });
    const start = collector.requests.length;
    const io = testIo();
    expect(await main(['init', '-c', config, '--root', root], io)).toBe(0);
    const json = testIo();
    expect(await main(['report', '-c', config, '--root', root, '-o', 'json'], json)).toBe(0);
    const requests = collector.requests.slice(start);
    expect(requests.length).toBeGreaterThan(10);
    expect(requests.every((r) => r.headers.authorization === `Bearer ${token}`)).toBe(true);
    const sent = requests.map((r) => r.body.toString() + JSON.stringify({ ...r.headers, authorization: undefined })).join('');
    const written: string[] = [];
    const walk = (dir: string): void => {
      for (const name of readdirSync(dir)) {
        const path = join(dir, name);
        if (statSync(path).isDirectory()) walk(path);
        else written.push(readFileSync(path, 'latin1'));
      }
    };
    walk(root);
    expect(written.length).toBeGreaterThan(3);
    expect(sent.includes(token)).toBe(false);
    expect(written.some((t) => t.includes(token))).toBe(false);
    expect(io.out() + io.err() + json.out() + json.err()).not.toContain(token);
  });

  it('says what the spool holds for an endpoint no longer configured, also when no endpoint is', async () => {
    const { root, config } = scratch({ url: collector.url });
    expect(await main(['report', '-c', config, '--root', root, '--offline'], testIo())).toBe(0);
    const none = join(root, '..', 'no-endpoints.yaml');
    writeFileSync(none, JSON.stringify({ apiVersion: 'machineadm.cluster.x-k8s.io/v1alpha1', kind: 'MachineConfig', spec: {} }));
    const io = testIo();
    expect(await main(['report', '-c', none, '--root', root], io)).toBe(0);
    expect(io.out() + io.err()).toMatch(/events: \d+ spooled for an endpoint no longer configured \(spool\/[0-9a-f]{16}\); kept, remove the directory if they are not wanted/);
    const result = JSON.parse(readFileSync(join(root, 'var/lib/machineadm/report-result.json'), 'utf8'));
    expect(result.delivery.orphaned).toEqual([expect.objectContaining({ events: expect.any(Number) })]);
  });

  it('refuses a spool whose folder is a file (exit 2), naming it', async () => {
    const { root, config } = scratch({ url: collector.url });
    mkdirSync(join(root, 'var/lib/machineadm/spool'), { recursive: true });
    writeFileSync(join(root, 'var/lib/machineadm/spool', endpointKey(collector.url)), 'not a folder');
    const io = testIo();
    expect(await main(['report', '-c', config, '--root', root], io)).toBe(2);
    expect(io.err()).toContain(`/var/lib/machineadm/spool/${endpointKey(collector.url)} cannot be the spool of an endpoint: EEXIST (something other than a folder is in its place)`);
  });

  it('delivers every event; with the collector down, init finishes within the deadline and report delivers them later, once per id', async () => {
    const { root, config } = scratch({ url: collector.url });
    const up = testIo();
    const before = collector.ackedIds().length;
    expect(await main(['init', '-c', config, '--root', root], up)).toBe(0);
    const first = collector.ackedIds().slice(before);
    expect(first.length).toBeGreaterThanOrEqual(10);
    expect(up.out()).toMatch(new RegExp(`events: ${first.length} delivered to ${collector.url}`));

    collector.mode = { kind: 'status', status: 503 };
    writeFileSync(config, JSON.stringify({ apiVersion: 'machineadm.cluster.x-k8s.io/v1alpha1', kind: 'MachineConfig', spec: { report: { deadlineSeconds: 2, endpoints: [{ url: collector.url }] } } }));
    const down = testIo();
    const started = Date.now();
    expect(await main(['init', '-c', config, '--root', root], down)).toBe(0);
    expect(Date.now() - started).toBeLessThan(2_000 + 1_500);
    expect(down.out()).toMatch(/0 delivered, \d+ kept in the spool/);
    expect(down.out()).toMatch(/waiting up to 2s for \d+ events to reach http:/);
    expect(up.out()).not.toContain('waiting up to');

    const status = testIo();
    await main(['status', '--root', root, '-o', 'json'], status);
    const shown = JSON.parse(status.out()) as { lastResult: { command: string; delivery: { endpoints: { spooled: number }[] } }; spool: { events: number }[] };
    expect(shown.lastResult.command).toBe('init');
    const waiting = shown.spool[0]!.events;
    expect(waiting).toBeGreaterThanOrEqual(10);
    expect(shown.lastResult.delivery.endpoints[0]!.spooled).toBe(waiting);

    collector.mode = { kind: 'ok' };
    const acked = collector.ackedIds().length;
    expect(await main(['report', '-c', config, '--root', root], testIo())).toBe(0);
    const all = collector.ackedIds();
    expect(all.length - acked).toBeGreaterThan(waiting);
    expect(new Set(all).size).toBe(all.length);
    const after = testIo();
    await main(['status', '--root', root, '-o', 'json'], after);
    expect((JSON.parse(after.out()) as { spool: unknown[] }).spool).toEqual([]);
  });
});
