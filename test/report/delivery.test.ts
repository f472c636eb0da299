import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RootedFileSystem, createHost } from '../../src/host/index.ts';
import { createHttpPoster } from '../../src/host/http-post.ts';
import { EventBus } from '../../src/engine/events.ts';
import { EventReporter } from '../../src/report/delivery.ts';
import { endpointKey, MAX_SPOOLED_EVENTS, spoolName } from '../../src/report/spool.ts';
import { resolveEndpoints } from '../../src/report/endpoints.ts';
import { SecretScrubber } from '../../src/config/secrets.ts';
import { StepDetailsError } from '../../src/errors.ts';
import { startCollector, type Collector, type CollectorMode } from './collector.ts';
import { makePki, type TestPki } from './certs.ts';
import { configFrom, runWithReporting, step } from './harness.ts';
import { scratchDir } from '../support/tmp.ts';
import { missingRequirement } from '../support/environment.ts';

const spoolDir = (root: string, url: string) => join(root, 'var/lib/machineadm/spool', endpointKey(url));
// A run emits run, 3 phase and the report/sentinel start/finish events (10), and 2 per test step.
const spooled = (root: string, url: string) => readdirSync(spoolDir(root, url)).filter((n) => n.endsWith('.json') && !n.startsWith('.'));

/** Checks a parsed CloudEvent the way a strict receiver would. */
function expectCloudEvent(ce: Record<string, unknown>): void {
  for (const required of ['specversion', 'id', 'source', 'type']) expect(typeof ce[required], required).toBe('string');
  expect(ce.specversion).toBe('1.0');
  expect(String(ce.type)).toMatch(/^io\.machineadm\.(run|phase|step)\.(started|finished)$|^io\.machineadm\.log$/);
  expect(String(ce.source)).toMatch(/^urn:machineadm:/);
  expect(Number.isNaN(Date.parse(String(ce.time)))).toBe(false);
  for (const name of Object.keys(ce)) expect(name).toMatch(/^[a-z0-9]{1,20}$/);
  expect((ce.data as { id: string }).id).toBe(ce.id);
}

let collector: Collector;
beforeAll(async () => {
  collector = await startCollector();
});
afterAll(async () => collector.close());

function reset(mode: CollectorMode = { kind: 'ok' }): void {
  collector.requests.length = 0;
  collector.script = [];
  collector.mode = mode;
}

describe('delivery to a collector', () => {
  it('sends every start and finish event of a run as a CloudEvent, in order, and empties the spool', async () => {
    reset();
    const root = scratchDir();
    const run = await runWithReporting({ root, config: configFrom({ report: { endpoints: [{ url: collector.url, headers: { 'X-Cluster': 'c1' } }] } }), prepare: [step('a'), step('b')], provision: [step('join')] });
    const ids = collector.ackedIds();
    const types = collector.requests.map((r) => `${String(r.events[0]?.type).replace('io.machineadm.', '')} ${String(r.events[0]?.subject)}`);
    expect(types).toEqual([
      'run.started run',
      'phase.started prepare',
      'step.started prepare/a',
      'step.finished prepare/a',
      'step.started prepare/b',
      'step.finished prepare/b',
      'phase.finished prepare',
      'phase.started provision',
      'step.started provision/join',
      'step.finished provision/join',
      'phase.finished provision',
      'phase.started report',
      'step.started report/sentinel',
      'step.finished report/sentinel',
      'phase.finished report',
      'run.finished run',
    ]);
    expect(ids).toEqual([...ids].sort());
    for (const r of collector.requests) {
      expect(r.headers['content-type']).toBe('application/cloudevents+json');
      expect(r.headers['x-cluster']).toBe('c1');
      expect(r.events).toHaveLength(1);
      expectCloudEvent(r.events[0]!);
      expect(r.events[0]).toMatchObject({ runid: run.outcome.runId, hostname: 'test-node', nodename: 'test-node' });
    }
    expect(spooled(root, collector.url)).toEqual([]);
    expect(run.reported.document?.delivery?.endpoints).toEqual([{ url: collector.url, delivered: 16, spooled: 0 }]);
  });

  it('sends batches as application/cloudevents-batch+json when the endpoint allows', async () => {
    reset({ kind: 'slow', delayMs: 30 });
    const root = scratchDir();
    await runWithReporting({ root, config: configFrom({ report: { endpoints: [{ url: collector.url, batch: true }] } }), prepare: Array.from({ length: 20 }, (_, i) => step(`s${i}`)) });
    expect(collector.requests.length).toBeLessThan(20);
    for (const r of collector.requests) {
      expect(r.headers['content-type']).toBe('application/cloudevents-batch+json');
      expect(Array.isArray(JSON.parse(r.body.toString()))).toBe(true);
      r.events.forEach(expectCloudEvent);
    }
    const ids = collector.ackedIds();
    expect(ids).toHaveLength(50);
    expect(new Set(ids).size).toBe(50);
    expect(spooled(root, collector.url)).toEqual([]);
  });

  it.each<[string, CollectorMode]>([
    ['answers 500 to everything', { kind: 'status', status: 500 }],
    ['answers 503 with a long Retry-After', { kind: 'status', status: 503, retryAfter: '3600' }],
    ['resets every connection', { kind: 'reset' }],
    ['answers garbage', { kind: 'garbage' }],
    ['redirects in a loop', { kind: 'redirect-loop' }],
    ['never answers', { kind: 'hang' }],
    ['refuses with 401', { kind: 'status', status: 401 }],
  ])('keeps every event when the collector %s, ends within the deadline, and a later report delivers them exactly once, oldest first', async (_name, mode) => {
    reset(mode);
    const root = scratchDir();
    const config = configFrom({ report: { endpoints: [{ url: collector.url }], deadlineSeconds: 2 } });
    const started = Date.now();
    const failed = await runWithReporting({ root, config, prepare: [step('a')], provision: [step('join')] });
    const took = Date.now() - started;
    expect(took).toBeLessThan(2_000 + 1_500);
    const files = spooled(root, collector.url);
    expect(files).toHaveLength(14);
    expect(failed.reported.document?.delivery?.endpoints[0]).toMatchObject({ delivered: 0, spooled: 14 });
    expect(failed.summary).toMatch(/14 kept in the spool for http:\/\/127\.0\.0\.1:\d+\/events \(.+\); "machineadm report" sends them/);
    for (const name of files) expect(statSync(join(spoolDir(root, collector.url), name)).mode & 0o777).toBe(0o600);

    reset();
    const later = await runWithReporting({ root, config, command: 'report' });
    const ids = collector.ackedIds();
    const firstRun = ids.filter((id) => id.startsWith(failed.outcome.runId));
    const secondRun = ids.filter((id) => id.startsWith(later.outcome.runId));
    expect(firstRun).toHaveLength(14);
    expect(new Set(firstRun).size).toBe(14);
    expect(secondRun.length).toBeGreaterThan(0);
    expect(ids).toEqual([...firstRun, ...secondRun]);
    expect(spooled(root, collector.url)).toEqual([]);
  });

  // A fleet told "come back in a minute" that asked again every second, then waited out its whole
  // deadline, made the storm worse and kept each machine's boot waiting for nothing.
  it('asks a collector that answered 429 nothing before its Retry-After, and ends at once, keeping the events, when that is past the deadline', async () => {
    reset({ kind: 'status', status: 429, retryAfter: '60' });
    const root = scratchDir();
    const config = configFrom({ report: { endpoints: [{ url: collector.url }], deadlineSeconds: 10 } });
    const started = Date.now();
    const run = await runWithReporting({ root, config, prepare: [step('a')], provision: [step('join')] });
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(collector.requests).toHaveLength(1);
    expect(spooled(root, collector.url)).toHaveLength(14);
    expect(run.reported.document?.delivery?.endpoints[0]).toMatchObject({ delivered: 0, spooled: 14, lastError: expect.stringContaining('HTTP 429') });
  });

  // 3,000,000 s is past what one timer can wait (2^31 - 1 ms): Node fires such a timer at once, with
  // a warning, and the hold became a loop that wrote two lines to standard error each millisecond.
  it('holds a Retry-After of weeks without a busy loop: one request, no timer warnings', async () => {
    reset({ kind: 'status', status: 429, retryAfter: '3000000' });
    const warnings: string[] = [];
    const onWarning = (w: Error) => warnings.push(w.name);
    process.on('warning', onWarning);
    try {
      const root = scratchDir();
      const config = configFrom({ report: { endpoints: [{ url: collector.url }], deadlineSeconds: 10 } });
      const slow = step('a', { apply: () => new Promise((done) => setTimeout(done, 1_000)) });
      await runWithReporting({ root, config, prepare: [slow] });
      expect(collector.requests).toHaveLength(1);
    } finally {
      process.off('warning', onWarning);
    }
    expect(warnings.filter((w) => w === 'TimeoutOverflowWarning')).toEqual([]);
  });

  it('spools without sending anything when offline', async () => {
    reset();
    const root = scratchDir();
    const run = await runWithReporting({ root, offline: true, config: configFrom({ report: { endpoints: [{ url: collector.url }] } }), prepare: [step('a')] });
    expect(collector.requests).toHaveLength(0);
    expect(spooled(root, collector.url)).toHaveLength(12);
    expect(run.reported.delivery?.offline).toBe(true);
  });

  it('keeps at most 10,000 events an endpoint at the start of a run, dropping the oldest and saying so', async () => {
    reset();
    const root = scratchDir();
    const dir = spoolDir(root, collector.url);
    mkdirSync(dir, { recursive: true });
    // What 1,668 report runs of 6 events leave when the collector never answers, and 5 more.
    const names = Array.from({ length: MAX_SPOOLED_EVENTS + 5 }, (_, i) => spoolName(1_000 + Math.floor(i / 6), `old${Math.floor(i / 6)}`, (i % 6) + 1));
    for (const name of names) writeFileSync(join(dir, name), '{}', { mode: 0o600 });
    const run = await runWithReporting({ root, offline: true, config: configFrom({ report: { endpoints: [{ url: collector.url }] } }), prepare: [step('a')] });
    const left = spooled(root, collector.url);
    expect(left).toHaveLength(MAX_SPOOLED_EVENTS + 12);
    for (const gone of names.slice(0, 5)) expect(left).not.toContain(gone);
    expect(left).toContain(names[5]);
    expect(run.reported.document?.delivery?.endpoints).toEqual([{ url: collector.url, delivered: 0, spooled: MAX_SPOOLED_EVENTS + 12, dropped: 5 }]);
    expect(run.summary).toContain(`events: the 5 oldest unsent for ${collector.url} were dropped: its spool keeps at most 10000`);
    // The next run finds the spool at the bound and drops what this one added above it.
    const next = await runWithReporting({ root, offline: true, config: configFrom({ report: { endpoints: [{ url: collector.url }] } }), prepare: [step('a')] });
    expect(next.reported.document?.delivery?.endpoints?.[0]).toMatchObject({ spooled: MAX_SPOOLED_EVENTS + 12, dropped: 12 });
  });

  it('sets aside a spooled event cut short, never sends it, and delivers every event after it', async () => {
    reset();
    const root = scratchDir();
    const config = configFrom({ report: { endpoints: [{ url: collector.url }] } });
    await runWithReporting({ root, offline: true, config, prepare: [step('a')] });
    const left = spooled(root, collector.url);
    const cut = left[2]!;
    const whole = readFileSync(join(spoolDir(root, collector.url), cut), 'utf8');
    writeFileSync(join(spoolDir(root, collector.url), cut), whole.slice(0, whole.length / 2));
    // A strict collector: a body that is not JSON is a 400.
    collector.onRequest = (r) => {
      if (r.events.length === 0) collector.script.unshift({ kind: 'status', status: 400 });
    };
    try {
      const run = await runWithReporting({ root, config, prepare: [step('a')] });
      expect(collector.requests.filter((r) => r.events.length === 0)).toEqual([]);
      const acked = collector.ackedIds();
      expect(acked).toHaveLength(left.length - 1 + 12);
      // The older run's events first, in spool order, the cut one left out.
      const earlier = left.filter((n) => n !== cut).map((n) => n.replace(/^\d{13}-(.+)-(\d{6})\.json$/, '$1.$2'));
      expect(acked.slice(0, earlier.length)).toEqual(earlier);
      expect(spooled(root, collector.url)).toEqual([]);
      expect(readFileSync(join(spoolDir(root, collector.url), `${cut}.unreadable`), 'utf8')).toBe(whole.slice(0, whole.length / 2));
      expect(run.reported.document?.delivery?.endpoints).toEqual([{ url: collector.url, delivered: left.length - 1 + 12, spooled: 0, unreadable: 1 }]);
      expect(run.summary).toContain(`events: 1 spooled for ${collector.url} could not be read (cut short, or not a CloudEvent): set aside in its spool folder as *.unreadable, never sent`);
    } finally {
      delete collector.onRequest;
    }
  });

  it('never lets a secret reach the collector, the files it writes or the console', async () => {
    reset();
    const root = scratchDir();
    const bearer = 'collector-bearer-7f3a9c';
    const bootstrap = 'abcdef.0123456789abcdef';
    const headerFile = join(root, 'etc/machineadm/token');
    mkdirSync(join(root, 'etc/machineadm'), { recursive: true });
    writeFileSync(headerFile, `${bearer}\n`);
    const config = configFrom({
      kubernetes: { controlPlaneEndpoint: '10.0.0.10:6443', token: bootstrap, caCertHashes: [`sha256:${'a'.repeat(64)}`] },
      report: { endpoints: [{ url: collector.url, bearerToken: { valueFrom: { file: '/etc/machineadm/token' } } }, { url: `${collector.url}?batch`, batch: true }] },
    });
    const leaky = step('join', {
      apply: async (ctx) => {
        ctx.log(`joining with ${bootstrap} and ${bearer}`);
        ctx.output(`kubeadm join --token ${bootstrap}`);
        throw new StepDetailsError(`kubeadm refused token ${bootstrap}`, { outputTail: `[discovery] token ${bootstrap}\nbearer ${bearer}` });
      },
    });
    const run = await runWithReporting({ root, config, provision: [leaky] });
    expect(run.outcome.error?.message).toContain(bootstrap);

    const sent = collector.requests.map((r) => Buffer.concat([r.body, Buffer.from(JSON.stringify({ ...r.headers, authorization: undefined }))]));
    expect(collector.requests.length).toBeGreaterThan(10);
    expect(collector.requests.filter((r) => r.path === '/events').every((r) => r.headers.authorization === `Bearer ${bearer}`)).toBe(true);
    expect(Buffer.concat(sent).toString()).toContain('<redacted>');
    const written: string[] = [];
    const walk = (dir: string): void => {
      for (const name of readdirSync(dir)) {
        const path = join(dir, name);
        if (statSync(path).isDirectory()) walk(path);
        else if (path !== headerFile) written.push(readFileSync(path, 'utf8'));
      }
    };
    walk(root);
    for (const secret of [bearer, bootstrap]) {
      expect(Buffer.concat(sent).includes(secret), `sent ${secret}`).toBe(false);
      expect(written.some((t) => t.includes(secret)), `wrote ${secret}`).toBe(false);
      expect(run.console.includes(secret), `printed ${secret}`).toBe(false);
      expect(run.summary.includes(secret), `summary ${secret}`).toBe(false);
    }
  });
});

describe('delivery over HTTPS', () => {
  const skip = missingRequirement({ commands: ['openssl'] });
  let pki: TestPki;
  const servers: Collector[] = [];
  beforeAll(() => {
    if (!skip) pki = makePki(scratchDir());
  });
  afterAll(async () => {
    for (const s of servers) await s.close();
  });

  function rootWithPki(): string {
    const root = scratchDir();
    mkdirSync(join(root, 'etc/machineadm'), { recursive: true });
    writeFileSync(join(root, 'etc/machineadm/ca.pem'), pki.ca);
    writeFileSync(join(root, 'etc/machineadm/client.pem'), pki.clientCert);
    writeFileSync(join(root, 'etc/machineadm/client.key'), pki.clientKey);
    return root;
  }

  it.skipIf(skip)('delivers to a collector that requires a client certificate, trusting only the given CA', async () => {
    const server = await startCollector({ tls: { cert: pki.serverCert, key: pki.serverKey, ca: pki.ca, requireClientCert: true } });
    servers.push(server);
    const root = rootWithPki();
    await runWithReporting({
      root,
      config: configFrom({ report: { endpoints: [{ url: server.url, caFile: '/etc/machineadm/ca.pem', clientCertFile: '/etc/machineadm/client.pem', clientKeyFile: '/etc/machineadm/client.key' }] } }),
      prepare: [step('a')],
    });
    expect(server.ackedIds()).toHaveLength(12);
    expect(new Set(server.requests.map((r) => r.peerCertificateCN))).toEqual(new Set(['machineadm client']));
  });

  it.skipIf(skip)('spools instead of sending to a collector with the wrong certificate', async () => {
    const server = await startCollector({ tls: { cert: pki.wrongServerCert, key: pki.wrongServerKey } });
    servers.push(server);
    const root = rootWithPki();
    const run = await runWithReporting({ root, config: configFrom({ report: { endpoints: [{ url: server.url, caFile: '/etc/machineadm/ca.pem' }], deadlineSeconds: 2 } }), prepare: [step('a')] });
    expect(server.requests).toHaveLength(0);
    expect(spooled(root, server.url)).toHaveLength(12);
    expect(run.reported.delivery?.endpoints[0]?.lastError).toMatch(/certificate|verify|self.signed/i);
  });
});

describe('the end of a run', () => {
  // Only a collector's Retry-After past the deadline ends the wait at once: a pause of machineadm's
  // own (here ~1 s after one 503, longer than the 0.5 s left) gives way to the end's retries, which
  // go on until the deadline before the events stay spooled.
  it('keeps trying until the deadline when its own pause after a failure would end past it', async () => {
    // A collector of its own: the attempt the deadline cuts off may still reach it after finish(),
    // and must not be counted by the next test.
    const collector = await startCollector();
    collector.mode = { kind: 'status', status: 503 };
    const root = scratchDir();
    const stateFs = new RootedFileSystem(join(root, 'var/lib/machineadm'));
    const [endpoint] = await resolveEndpoints(configFrom({ report: { endpoints: [{ url: collector.url }] } }), createHost({ root, env: {} }), new SecretScrubber());
    const identity = { hostname: 'h', nodeName: 'h', machineadmVersion: 't' };
    const bus = new EventBus({ identity });
    const reporter = new EventReporter({ endpoints: [endpoint!], identity, runId: bus.runId, stateFs, poster: createHttpPoster(), offline: false, deadlineMs: 500, random: () => 0.999 });
    await reporter.open();
    bus.listen(reporter.listener);
    bus.emit({ type: 'log', message: 'one', step: 'prepare/x' });
    for (const end = Date.now() + 5_000; collector.requests.length === 0 && Date.now() < end; ) await new Promise((r) => setTimeout(r, 10));
    const started = Date.now();
    const report = await reporter.finish();
    await collector.close();
    expect(Date.now() - started).toBeGreaterThanOrEqual(400);
    expect(collector.requests.length).toBeGreaterThanOrEqual(2);
    expect(report.endpoints[0]).toMatchObject({ delivered: 0, spooled: 1 });
  });
});

describe('a backlog of 1,000 spooled events', () => {
  it.each([false, true])('is delivered in order, each exactly once (batch: %s)', async (batch) => {
    reset();
    const root = scratchDir();
    const stateFs = new RootedFileSystem(join(root, 'var/lib/machineadm'));
    const host = createHost({ root, env: {} });
    const config = configFrom({ report: { endpoints: [{ url: collector.url, batch }] } });
    const [endpoint] = await resolveEndpoints(config, host, new SecretScrubber());
    const identity = { hostname: 'h', nodeName: 'h', machineadmVersion: 't' };
    // Spooled by an offline run...
    const bus = new EventBus({ identity });
    const offline = new EventReporter({ endpoints: [endpoint!], identity, runId: bus.runId, stateFs, poster: createHttpPoster(), offline: true, deadlineMs: 1_000 });
    await offline.open();
    bus.listen(offline.listener);
    const spoolStart = Date.now();
    for (let i = 0; i < 1000; i++) bus.emit({ type: 'log', message: `event ${i}`, step: 'prepare/x' });
    const spoolMs = Date.now() - spoolStart;
    await offline.finish();
    expect(spooled(root, collector.url)).toHaveLength(1000);
    // ...and delivered by the next one.
    const online = new EventReporter({ endpoints: [endpoint!], identity, runId: 'next', stateFs, poster: createHttpPoster(), offline: false, deadlineMs: 60_000 });
    const started = Date.now();
    await online.open();
    const report = await online.finish();
    const deliverMs = Date.now() - started;
    console.log(`1,000 events: spooled (fsync'd) in ${spoolMs} ms, delivered ${batch ? 'in batches' : 'one per request'} in ${deliverMs} ms over ${collector.requests.length} requests`);
    expect(report.endpoints[0]).toMatchObject({ delivered: 1000, spooled: 0 });
    const ids = collector.ackedIds();
    expect(ids).toHaveLength(1000);
    expect(ids).toEqual([...ids].sort());
    expect(ids[0]).toBe(`${bus.runId}.000001`);
    expect(deliverMs).toBeLessThan(45_000);
  });
});

describe('a batch endpoint', () => {
  /** Spools `messages` as log events of an offline run, then delivers them in a run of their own. */
  async function spoolThenDeliver(messages: string[]) {
    const root = scratchDir();
    const stateFs = new RootedFileSystem(join(root, 'var/lib/machineadm'));
    const config = configFrom({ report: { endpoints: [{ url: collector.url, batch: true }] } });
    const [endpoint] = await resolveEndpoints(config, createHost({ root, env: {} }), new SecretScrubber());
    const identity = { hostname: 'h', nodeName: 'h', machineadmVersion: 't' };
    const bus = new EventBus({ identity });
    const offline = new EventReporter({ endpoints: [endpoint!], identity, runId: bus.runId, stateFs, poster: createHttpPoster(), offline: true, deadlineMs: 1_000 });
    await offline.open();
    bus.listen(offline.listener);
    for (const message of messages) bus.emit({ type: 'log', message, step: 'prepare/x' });
    await offline.finish();
    const online = new EventReporter({ endpoints: [endpoint!], identity, runId: 'next', stateFs, poster: createHttpPoster(), offline: false, deadlineMs: 30_000 });
    await online.open();
    return online.finish();
  }

  function expectAllInOrder(count: number): void {
    const ids = collector.ackedIds();
    expect(ids).toHaveLength(count);
    expect(ids).toEqual([...ids].sort());
  }

  // A collector behind a proxy with a 1 MiB body limit (nginx's default) answers 413 to more, and
  // a refused endpoint is sent nothing more: every later run would stop at the same batch.
  it('gets requests of at most 1 MiB, counted in bytes, when the events hold text beyond ASCII', async () => {
    reset();
    // Each event ~50 KB of UTF-8 in 25,000 characters: 40 of them are ~2 MB.
    const report = await spoolThenDeliver(Array.from({ length: 40 }, (_, i) => `${i} ${'ü'.repeat(25_000)}`));
    expect(report.endpoints[0]).toMatchObject({ delivered: 40, spooled: 0 });
    expect(Math.max(...collector.requests.map((r) => r.body.length))).toBeLessThanOrEqual(1024 * 1024);
    expect(collector.requests.length).toBeGreaterThan(1);
    expectAllInOrder(40);
  });

  // A proxy with a smaller limit than machineadm's 1 MiB (client_max_body_size 200k) answers 413 to
  // a batch; one event fits, so the batch is made smaller instead of the endpoint refused.
  it('sends smaller batches after a 413, down to one event, and delivers everything in order', async () => {
    reset({ kind: 'body-limit', maxBytes: 200_000 });
    // 40 events of ~30 KB: a batch of 100 is ~1.2 MB, under machineadm's cap and over the proxy's.
    const report = await spoolThenDeliver(Array.from({ length: 40 }, (_, i) => `${i} ${'x'.repeat(30_000)}`));
    expect(report.endpoints[0]).toMatchObject({ delivered: 40, spooled: 0 });
    expect(report.endpoints[0]!.refused).toBeUndefined();
    expect(collector.requests.some((r) => !r.acked)).toBe(true);
    expectAllInOrder(40);
  });
});
