import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHttpPoster, type PostRequest } from '../../src/host/http-post.ts';
import { startCollector, type Collector, type CollectorMode } from '../report/collector.ts';
import { makePki, type TestPki } from '../report/certs.ts';
import { missingRequirement } from '../support/environment.ts';
import { scratchDir } from '../support/tmp.ts';

const fast = { baseMs: 5, capMs: 20 };

function request(url: string, extra: Partial<PostRequest> = {}): PostRequest {
  return { url, body: '{"specversion":"1.0"}', headers: { 'content-type': 'application/cloudevents+json' }, deadline: Date.now() + 10_000, backoff: fast, attemptTimeoutMs: 2_000, ...extra };
}

describe('posting to a collector over HTTP', () => {
  let collector: Collector;
  beforeAll(async () => {
    collector = await startCollector();
  });
  afterAll(async () => collector.close());

  it.each<[string, CollectorMode[], { ok: boolean; attempts: number; retryable?: boolean; status?: number }]>([
    ['a 2xx answer is delivered at once', [{ kind: 'ok' }], { ok: true, attempts: 1 }],
    ['two 500s and then a 2xx is delivered on the third attempt', [{ kind: 'status', status: 500 }, { kind: 'status', status: 500 }, { kind: 'ok' }], { ok: true, attempts: 3 }],
    ['a 408 is retried', [{ kind: 'status', status: 408 }, { kind: 'ok' }], { ok: true, attempts: 2 }],
    ['a reset connection is retried', [{ kind: 'reset' }, { kind: 'ok' }], { ok: true, attempts: 2 }],
    ['a garbage answer is retried', [{ kind: 'garbage' }, { kind: 'ok' }], { ok: true, attempts: 2 }],
    ['a 400 is not retried', [{ kind: 'status', status: 400 }, { kind: 'ok' }], { ok: false, attempts: 1, retryable: false, status: 400 }],
    ['a 401 is not retried', [{ kind: 'status', status: 401 }, { kind: 'ok' }], { ok: false, attempts: 1, retryable: false, status: 401 }],
    ['a redirect is not followed and not retried', [{ kind: 'redirect-loop' }, { kind: 'ok' }], { ok: false, attempts: 1, retryable: false, status: 307 }],
    ['500s until the attempts run out stay retryable', [{ kind: 'status', status: 500 }, { kind: 'status', status: 502 }, { kind: 'status', status: 503 }], { ok: false, attempts: 3, retryable: true, status: 503 }],
  ])('%s', async (_name, script, expected) => {
    collector.requests.length = 0;
    collector.script = [...script];
    collector.mode = { kind: 'status', status: 503 };
    const poster = createHttpPoster();
    const outcome = await poster.post(request(collector.url, { maxAttempts: 3 }));
    poster.close();
    expect(outcome).toMatchObject(expected);
    expect(collector.requests).toHaveLength(expected.attempts);
    collector.mode = { kind: 'ok' };
  });

  // A proxy that sends a 2xx's headers and stalls in its body (a wrong Content-Length, a stream)
  // had each event wait out the whole deadline and sent again at every run, though acknowledged.
  it.each<[string, (res: import('node:http').ServerResponse) => void]>([
    ['stalls in its body', (res) => { res.writeHead(200, { 'content-length': '100' }); res.write('x'); }],
    ['sends a body of 8 MiB', (res) => { res.writeHead(200, { 'content-length': String(8 << 20) }); res.end(Buffer.alloc(8 << 20, 120)); }],
  ])('takes a 2xx as delivered at its status when the answer %s', async (_name, answer) => {
    const { createServer } = await import('node:http');
    let requests = 0;
    const server = createServer((req, res) => {
      requests++;
      req.resume().on('end', () => answer(res));
    });
    await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
    const url = `http://127.0.0.1:${(server.address() as import('node:net').AddressInfo).port}/events`;
    const poster = createHttpPoster();
    const started = Date.now();
    try {
      const outcome = await poster.post(request(url, { deadline: Date.now() + 20_000, attemptTimeoutMs: 15_000 }));
      expect(outcome).toMatchObject({ ok: true, attempts: 1 });
      expect(Date.now() - started).toBeLessThan(5_000);
      expect(requests).toBe(1);
    } finally {
      poster.close();
      server.closeAllConnections();
      await new Promise((done) => server.close(done));
    }
  });

  it.each([429, 503])('waits as long as Retry-After says on a %i', async (status) => {
    collector.requests.length = 0;
    const arrivals: number[] = [];
    collector.onRequest = () => arrivals.push(Date.now());
    collector.script = [{ kind: 'status', status, retryAfter: '1' }, { kind: 'ok' }];
    const poster = createHttpPoster();
    const outcome = await poster.post(request(collector.url));
    poster.close();
    collector.onRequest = undefined;
    expect(outcome).toMatchObject({ ok: true, attempts: 2 });
    // Without Retry-After the backoff here is at most 20 ms.
    expect(arrivals[1]! - arrivals[0]!).toBeGreaterThanOrEqual(950);
  });

  it.each<[string, string, number, number]>([
    ['the least random draw waits exactly Retry-After', '4', 0, 4_000],
    ['the greatest waits half of it more', '4', 0.999, 5_998],
    ['a short Retry-After is spread over a second at least', '0', 0.5, 500],
  ])('spreads retries after Retry-After so a fleet does not come back at once: %s', async (_name, retryAfter, draw, expected) => {
    collector.requests.length = 0;
    collector.script = [{ kind: 'status', status: 429, retryAfter }, { kind: 'ok' }];
    const waits: number[] = [];
    const poster = createHttpPoster({ random: () => draw, sleep: async (ms) => void waits.push(ms) });
    const outcome = await poster.post(request(collector.url, { deadline: Date.now() + 20_000, backoff: { baseMs: 200, capMs: 10_000 } }));
    poster.close();
    expect(outcome).toMatchObject({ ok: true, attempts: 2 });
    expect(waits).toEqual([expected]);
  });

  it('gives up at once when Retry-After is past the deadline', async () => {
    collector.requests.length = 0;
    collector.script = [{ kind: 'status', status: 429, retryAfter: '30' }];
    const poster = createHttpPoster();
    const started = Date.now();
    const outcome = await poster.post(request(collector.url, { deadline: Date.now() + 2_000 }));
    poster.close();
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(outcome).toMatchObject({ ok: false, retryable: true, status: 429 });
  });

  it.each<[string, number, number]>([
    ['the attempts run out', 20_000, 1],
    ['the wait would pass the deadline', 2_000, 5],
  ])('says when Retry-After lets the next attempt go when it stops before then: %s', async (_name, deadlineIn, maxAttempts) => {
    collector.requests.length = 0;
    collector.script = [{ kind: 'status', status: 429, retryAfter: '4' }];
    const poster = createHttpPoster({ random: () => 0.5 });
    const before = Date.now();
    const outcome = await poster.post(request(collector.url, { deadline: Date.now() + deadlineIn, maxAttempts, backoff: { baseMs: 200, capMs: 10_000 } }));
    poster.close();
    expect(outcome).toMatchObject({ ok: false, status: 429, retryable: true, attempts: 1 });
    // 4 s, and half of the random spread of up to 2 s.
    const retryAt = outcome.ok ? 0 : (outcome.retryAt ?? 0);
    expect(retryAt).toBeGreaterThanOrEqual(before + 5_000);
    expect(retryAt).toBeLessThanOrEqual(Date.now() + 5_000);
  });

  it.each<[string, CollectorMode]>([
    ['a collector that never answers', { kind: 'hang' }],
    ['a collector slower than the deadline', { kind: 'slow', delayMs: 5_000 }],
  ])('never waits past the deadline for %s', async (_name, mode) => {
    collector.script = [];
    collector.mode = mode;
    const poster = createHttpPoster();
    const started = Date.now();
    const outcome = await poster.post(request(collector.url, { deadline: Date.now() + 1_500, attemptTimeoutMs: 600 }));
    poster.close();
    const took = Date.now() - started;
    collector.mode = { kind: 'ok' };
    expect(outcome.ok).toBe(false);
    expect(took).toBeLessThan(1_500 + 700);
    expect(took).toBeGreaterThanOrEqual(550);
  });

  it.each<[string, CollectorMode[], number, { status?: number; reason: RegExp; attempts: number }]>([
    ['keeps the failure before an attempt the deadline cut off', [{ kind: 'status', status: 500 }, { kind: 'hang' }], 5, { status: 500, reason: /^HTTP 500$/, attempts: 1 }],
    ['says the deadline ended the only attempt', [{ kind: 'hang' }], 5, { reason: /^ETIMEDOUT: Timeout awaiting 'request' for \d+ms, the delivery deadline$/, attempts: 0 }],
  ])('%s', async (_name, script, maxAttempts, expected) => {
    collector.requests.length = 0;
    collector.script = [...script];
    collector.mode = { kind: 'hang' };
    const poster = createHttpPoster({ random: () => 0 });
    const outcome = await poster.post(request(collector.url, { deadline: Date.now() + 700, maxAttempts }));
    poster.close();
    collector.mode = { kind: 'ok' };
    expect(outcome).toMatchObject({ ok: false, retryable: true, attempts: expected.attempts, ...(expected.status ? { status: expected.status } : {}) });
    expect(outcome.ok ? '' : outcome.reason).toMatch(expected.reason);
    expect(collector.requests).toHaveLength(script.length);
  });

  it('waits past the connect timeout for the answer of a collector that took the event, instead of sending it twice', async () => {
    collector.requests.length = 0;
    collector.script = [{ kind: 'slow', delayMs: 1_200 }];
    collector.mode = { kind: 'ok' };
    const poster = createHttpPoster();
    const outcome = await poster.post(request(collector.url, { deadline: Date.now() + 5_000, attemptTimeoutMs: 400, maxAttempts: 3 }));
    poster.close();
    expect(outcome).toMatchObject({ ok: true, attempts: 1 });
    expect(collector.requests).toHaveLength(1);
  });

  it('stops at once when its signal is aborted', async () => {
    collector.mode = { kind: 'hang' };
    const poster = createHttpPoster();
    const stop = new AbortController();
    setTimeout(() => stop.abort(), 200);
    const started = Date.now();
    const outcome = await poster.post(request(collector.url, { signal: stop.signal }));
    poster.close();
    collector.mode = { kind: 'ok' };
    expect(outcome.ok).toBe(false);
    expect(Date.now() - started).toBeLessThan(1_000);
  });

  it('names a redirect it does not follow without the query or user info it may carry', async () => {
    collector.script = [{ kind: 'redirect-loop' }];
    const poster = createHttpPoster();
    const outcome = await poster.post(request(`${collector.url.replace('//', '//user:pw@')}?token=s3cret`));
    poster.close();
    expect(outcome).toMatchObject({ ok: false, status: 307, retryable: false });
    const reason = outcome.ok ? '' : outcome.reason;
    expect(reason).toContain(`redirect to http://user:<redacted>@${new URL(collector.url).host}${new URL(collector.url).pathname}?token=<redacted> not followed`);
    expect(reason).not.toMatch(/s3cret|pw@/);
  });

  it('sends the body and headers as given', async () => {
    collector.requests.length = 0;
    const poster = createHttpPoster();
    await poster.post(request(collector.url, { headers: { 'content-type': 'application/cloudevents+json', authorization: 'Bearer abc', 'x-cluster': 'c1' }, body: '{"a":1}' }));
    poster.close();
    const [got] = collector.requests;
    expect(got?.method).toBe('POST');
    expect(got?.headers['content-type']).toBe('application/cloudevents+json');
    expect(got?.headers.authorization).toBe('Bearer abc');
    expect(got?.headers['x-cluster']).toBe('c1');
    expect(got?.body.toString()).toBe('{"a":1}');
  });

  // Each of a fleet's report runs posts; got given a `body` checks it against the global FormData,
  // whose first use loads Node's whole fetch implementation (undici, ~20-35 ms of CPU). A fresh
  // process, with a watch on that global, shows whether a post touches it.
  it('posts without touching the global FormData (which loads Node\'s fetch implementation)', async () => {
    const script = `
      const lazy = Object.getOwnPropertyDescriptor(globalThis, 'FormData');
      let touched = false;
      Object.defineProperty(globalThis, 'FormData', { configurable: true, get() { touched = true; return lazy.get.call(globalThis); } });
      const { createHttpPoster } = await import(${JSON.stringify(fileURLToPath(new URL('../../src/host/http-post.ts', import.meta.url)))});
      const poster = createHttpPoster();
      const outcome = await poster.post({ url: process.argv[1], body: '{"a":1}', headers: { 'content-type': 'application/json' }, deadline: Date.now() + 10000 });
      poster.close();
      process.stdout.write(JSON.stringify({ ok: outcome.ok, touched }));
    `;
    // Not spawnSync: the collector answers from this process.
    const run = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', script, collector.url], { encoding: 'utf8', cwd: fileURLToPath(new URL('../..', import.meta.url)) });
    expect(run.stderr).toBe('');
    expect(JSON.parse(run.stdout)).toEqual({ ok: true, touched: false });
  });

  it('waits a random time below the exponential bound between attempts (full jitter)', async () => {
    collector.script = [];
    collector.mode = { kind: 'status', status: 500 };
    const waits: number[] = [];
    const poster = createHttpPoster({ random: () => 0.999, sleep: async (ms) => void waits.push(ms) });
    await poster.post(request(collector.url, { maxAttempts: 6, backoff: { baseMs: 100, capMs: 1_000 } }));
    const zero = createHttpPoster({ random: () => 0, sleep: async (ms) => void waits.push(-ms - 1) });
    await zero.post(request(collector.url, { maxAttempts: 2, backoff: { baseMs: 100, capMs: 1_000 } }));
    poster.close();
    zero.close();
    collector.mode = { kind: 'ok' };
    expect(waits).toEqual([99, 199, 399, 799, 999, -1]);
  });
});

describe('posting over HTTPS', () => {
  const skip = missingRequirement({ commands: ['openssl'] });
  let pki: TestPki;
  const servers: Collector[] = [];
  beforeAll(() => {
    if (!skip) pki = makePki(scratchDir());
  });
  afterAll(async () => {
    for (const s of servers) await s.close();
  });

  it.skipIf(skip)('trusts a collector whose certificate the given CA signed', async () => {
    const server = await startCollector({ tls: { cert: pki.serverCert, key: pki.serverKey } });
    servers.push(server);
    const poster = createHttpPoster();
    const outcome = await poster.post(request(server.url, { tls: { ca: pki.ca } }));
    poster.close();
    expect(outcome).toMatchObject({ ok: true });
  });

  it.skipIf(skip)('refuses a collector with a certificate from another CA, and sends it nothing', async () => {
    const server = await startCollector({ tls: { cert: pki.wrongServerCert, key: pki.wrongServerKey } });
    servers.push(server);
    const poster = createHttpPoster();
    const outcome = await poster.post(request(server.url, { tls: { ca: pki.ca }, maxAttempts: 2 }));
    poster.close();
    expect(outcome.ok).toBe(false);
    expect(outcome.ok ? '' : outcome.reason).toMatch(/certificate|self.signed|verify/i);
    expect(server.requests).toHaveLength(0);
  });

  it.skipIf(skip)('presents the client certificate to a collector that requires one (mTLS)', async () => {
    const server = await startCollector({ tls: { cert: pki.serverCert, key: pki.serverKey, ca: pki.ca, requireClientCert: true } });
    servers.push(server);
    const poster = createHttpPoster();
    const without = await poster.post(request(server.url, { tls: { ca: pki.ca }, maxAttempts: 1 }));
    const withCert = await poster.post(request(server.url, { tls: { ca: pki.ca, cert: pki.clientCert, key: pki.clientKey } }));
    poster.close();
    expect(without.ok).toBe(false);
    expect(withCert).toMatchObject({ ok: true });
    expect(server.requests.map((r) => r.peerCertificateCN)).toEqual(['machineadm client']);
  });
});
