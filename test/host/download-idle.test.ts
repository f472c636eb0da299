// A connection that goes quiet in the middle of a body counts as broken after the idle time: the
// download says so (got's timeout, not a bare "aborted"), and resumes where it stopped.
import { createHash } from 'node:crypto';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHost } from '../../src/host/index.ts';
import { download } from '../../src/host/download.ts';
import { DownloadError } from '../../src/host/download-copy.ts';
import { scratchDir } from '../support/tmp.ts';

const BODY = Buffer.alloc(3 * 1024 * 1024, 9);
const HALF = BODY.length / 2;
let server: Server;
let base = '';
const stalled: ServerResponse[] = [];
const ranges: (string | undefined)[] = [];

beforeAll(async () => {
  // /once: the first answer stops halfway and stays open; a resume gets the rest.
  // /always: every answer stops halfway.
  server = createServer((req, res) => {
    ranges.push(req.headers.range);
    const from = Number(/^bytes=(\d+)-$/.exec(req.headers.range ?? '')?.[1] ?? 0);
    if (from > 0 && req.url === '/once') {
      res.writeHead(206, { 'content-length': BODY.length - from, 'content-range': `bytes ${from}-${BODY.length - 1}/${BODY.length}`, etag: '"v1"' });
      res.end(BODY.subarray(from));
      return;
    }
    res.writeHead(200, { 'content-length': BODY.length, 'accept-ranges': 'bytes', etag: '"v1"' });
    res.write(BODY.subarray(0, HALF));
    stalled.push(res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => {
  for (const res of stalled) res.destroy();
  return new Promise<void>((resolve) => server.close(() => resolve()));
});

describe('a download whose connection goes quiet', () => {
  it('resumes with Range once the idle time has passed, and the file is whole', async () => {
    ranges.length = 0;
    const host = createHost({ root: scratchDir() });
    const started = Date.now();
    const result = await download(host, { urls: [`${base}/once`], fs: host.fs, destination: '/file', idleTimeoutMs: 300 });
    await result.pending.abort();
    expect(result.bytes).toBe(BODY.length);
    expect(result.sha256).toBe(createHash('sha256').update(BODY).digest('hex'));
    expect(ranges).toEqual([undefined, `bytes=${HALF}-`]);
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it('names the idle timeout when it gives up', async () => {
    const host = createHost({ root: scratchDir() });
    const failed = await download(host, { urls: [`${base}/always`], fs: host.fs, destination: '/file', idleTimeoutMs: 300, attemptsWithoutProgress: 1 }).catch((e: unknown) => e);
    expect(failed).toBeInstanceOf(DownloadError);
    expect((failed as Error).message).toMatch(/Timeout awaiting 'socket' for 300ms/);
    expect((failed as Error).message).not.toMatch(/\baborted\b/);
  });
});
