import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { HttpError, httpRequest, parseRetryAfter, retryDelayMs, isRetryableStatus, tlsOptions } from '../../src/host/http.ts';
import { makeTestCa, startHttps, type RunningServer, type TestCa } from '../config/helpers/servers.ts';
import { missingRequirement } from '../support/environment.ts';
import { streamChunks } from '../support/stream.ts';
import { scratchDir } from '../support/tmp.ts';
import { stubWallClock } from '../support/wall-clock.ts';

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const fast = { attempts: 4, baseDelayMs: 20, maxDelayMs: 2_000, deadlineMs: 10_000 };

describe('retry timing', () => {
  it.each([
    ['the first retry waits at least half the base delay', 1, 0, 250],
    ['the first retry waits at most the base delay', 1, 0.999, 500],
    ['the third retry waits up to four times the base delay', 3, 1, 2000],
    ['a late retry is capped at the maximum', 10, 1, 5000],
  ])('%s (retry %i, random %d)', (_name, retry, random, expected) => {
    expect(retryDelayMs(retry, { baseDelayMs: 500, maxDelayMs: 5000 }, undefined, () => random)).toBe(expected);
  });

  it('waits at least what Retry-After asks, but never beyond the maximum', () => {
    expect(retryDelayMs(1, { baseDelayMs: 100, maxDelayMs: 5000 }, 3000, () => 0)).toBe(3000);
    expect(retryDelayMs(1, { baseDelayMs: 100, maxDelayMs: 5000 }, 60_000, () => 0)).toBe(5000);
  });

  it.each([
    ['seconds', '7', 7000],
    ['an HTTP date', 'Sun, 29 Nov 2026 10:00:05 GMT', 5000],
    ['a date in the past', 'Sun, 29 Nov 2026 09:00:00 GMT', 0],
    ['garbage', 'soon', undefined],
    ['nothing', undefined, undefined],
  ])('reads Retry-After given as %s', (_name, value, expected) => {
    expect(parseRetryAfter(value, new Date('2026-11-29T10:00:00Z'))).toBe(expected);
  });

  it.each([
    [503, true],
    [429, true],
    [500, true],
    [404, false],
    [403, false],
    [501, false],
  ])('status %i is retryable: %s', (status, expected) => expect(isRetryableStatus(status)).toBe(expected));

  it('never turns TLS verification off, with or without an extra CA', () => {
    expect(tlsOptions().rejectUnauthorized).toBe(true);
    const withCa = tlsOptions('PEM');
    expect(withCa.rejectUnauthorized).toBe(true);
    expect(withCa.certificateAuthority!.length).toBeGreaterThan(1);
  });
});

const skip = missingRequirement({ commands: ['openssl'] });

describe.skipIf(skip)('requests against a real HTTPS server with a test CA', () => {
  afterEach(() => vi.unstubAllGlobals());
  let ca: TestCa;
  let server: RunningServer;
  let flaky = 0;
  let busyBig = 0;
  beforeAll(async () => {
    ca = makeTestCa(scratchDir());
    server = await startHttps(ca, (req, res) => {
      if (req.url === '/ok') return res.end('hello');
      if (req.url === '/flaky') {
        if (flaky++ < 2) {
          res.writeHead(503, { 'retry-after': '1' });
          return res.end('busy');
        }
        return res.end('finally');
      }
      if (req.url === '/busy-big') {
        if (busyBig++ === 0) {
          res.writeHead(503);
          return res.end(Buffer.alloc(64 * 1024, 0x62));
        }
        return res.end('done');
      }
      if (req.url === '/downgrade') {
        res.writeHead(302, { location: 'http://127.0.0.1:1/plain' });
        return res.end();
      }
      if (req.url === '/missing') {
        res.writeHead(404);
        return res.end();
      }
      if (req.url === '/huge') return streamChunks(res, 1600, 0x61); // 100 MB, without Content-Length
      res.writeHead(500);
      res.end();
    });
  });
  afterAll(() => server?.close());

  it('fetches over TLS when the CA is given', async () => {
    const r = await httpRequest({ url: `${server.url}/ok`, ca: ca.caPem, offline: false, sleep });
    expect(r.status).toBe(200);
    expect(r.body.toString()).toBe('hello');
  });

  it('refuses a server whose CA is not trusted, at once and without retrying', async () => {
    // The handshake fails before any request reaches the server, so count the waits instead.
    let waits = 0;
    const error = await httpRequest({ url: `${server.url}/ok`, offline: false, sleep: async () => void waits++, retry: fast }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(HttpError);
    expect((error as HttpError).reason).toBe('tls');
    expect((error as HttpError).message).toMatch(/not trusted/);
    expect((error as HttpError).attempts).toBe(1);
    expect(waits).toBe(0);
  });

  it('retries a 503 whose error page is larger than the size limit', async () => {
    const r = await httpRequest({ url: `${server.url}/busy-big`, ca: ca.caPem, offline: false, sleep, maxBytes: 1024, retry: fast });
    expect(r.body.toString()).toBe('done');
    expect(r.attempts).toBe(2);
  });

  it('retries a 503 and honours Retry-After before succeeding', async () => {
    const started = Date.now();
    const r = await httpRequest({ url: `${server.url}/flaky`, ca: ca.caPem, offline: false, sleep, retry: fast });
    expect(r.body.toString()).toBe('finally');
    expect(r.attempts).toBe(3);
    // Two waits of at least one second each, as the server asked.
    expect(Date.now() - started).toBeGreaterThanOrEqual(1900);
  });

  it('does not retry a 404 and names the status', async () => {
    const before = server.requests.length;
    const error = (await httpRequest({ url: `${server.url}/missing`, ca: ca.caPem, offline: false, sleep, retry: fast }).catch((e: unknown) => e)) as HttpError;
    expect(error.reason).toBe('status');
    expect(error.status).toBe(404);
    expect(server.requests.length).toBe(before + 1);
  });

  it('returns an accepted status instead of failing', async () => {
    const r = await httpRequest({ url: `${server.url}/missing`, ca: ca.caPem, offline: false, sleep, acceptStatus: [404] });
    expect(r.status).toBe(404);
  });

  it('stops reading a 100 MB body at the size limit, quickly', async () => {
    const started = Date.now();
    const error = (await httpRequest({ url: `${server.url}/huge`, ca: ca.caPem, offline: false, sleep, maxBytes: 1024 * 1024, retry: fast }).catch((e: unknown) => e)) as HttpError;
    expect(error.reason).toBe('too-large');
    expect(error.message).toMatch(/larger than the limit of 1 MiB/);
    expect(Date.now() - started).toBeLessThan(5000);
  });

  it('refuses a redirect from https to plain http', async () => {
    const error = (await httpRequest({ url: `${server.url}/downgrade`, ca: ca.caPem, offline: false, sleep, retry: fast }).catch((e: unknown) => e)) as HttpError;
    expect(error).toBeInstanceOf(HttpError);
    expect(error.message).toMatch(/redirected to plain http, refused/);
    expect(error.attempts).toBe(1);
  });

  it('sends nothing when offline', async () => {
    const before = server.requests.length;
    const error = (await httpRequest({ url: `${server.url}/ok`, ca: ca.caPem, offline: true, sleep }).catch((e: unknown) => e)) as HttpError;
    expect(error.reason).toBe('offline');
    expect(error.exitCode).toBe(2);
    expect(server.requests.length).toBe(before);
  });

  it('gives up on a server that keeps failing after the allowed attempts', async () => {
    const before = server.requests.length;
    const error = (await httpRequest({ url: `${server.url}/always-500`, ca: ca.caPem, offline: false, sleep, retry: { ...fast, attempts: 3 } }).catch((e: unknown) => e)) as HttpError;
    expect(error.status).toBe(500);
    expect(error.message).toMatch(/after 3 attempts/);
    expect(server.requests.length).toBe(before + 3);
  });

  it('stops retrying at its deadline though the wall clock is set back an hour before each retry', async () => {
    const clock = stubWallClock();
    const before = server.requests.length;
    const started = performance.now();
    const setBack = async (ms: number) => (clock.shift(-3_600_000), sleep(ms));
    const error = (await httpRequest({ url: `${server.url}/always-500`, ca: ca.caPem, offline: false, sleep: setBack, retry: { attempts: 100, baseDelayMs: 100, maxDelayMs: 100, deadlineMs: 600 } }).catch((e: unknown) => e)) as HttpError;
    vi.unstubAllGlobals();
    expect(error.status).toBe(500);
    // Waits of 50-100 ms within 600 ms: at most 13 attempts, not 100.
    expect(server.requests.length - before).toBeLessThanOrEqual(13);
    expect(performance.now() - started).toBeLessThan(5_000);
  });

  it('retries a refused connection and reports it', async () => {
    const error = (await httpRequest({ url: 'https://127.0.0.1:1/x', offline: false, sleep, retry: { ...fast, attempts: 2 } }).catch((e: unknown) => e)) as HttpError;
    expect(error.reason).toBe('network');
    expect(error.message).toMatch(/ECONNREFUSED/);
    expect(error.attempts).toBe(2);
  });
});
