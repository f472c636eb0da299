// A resume asks for the rest of the version it began with (If-Range). A server that does not
// implement If-Range answers 206 all the same, with the new version's bytes and validator: those
// must not be appended to the old version's head.
import { createHash } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHost } from '../../src/host/index.ts';
import { download } from '../../src/host/download.ts';
import { scratchDir } from '../support/tmp.ts';

const OLD = Buffer.alloc(200_000, 1);
const NEW = Buffer.alloc(200_000, 2);
const CUT = 80_000;
let server: Server;
let base = '';
let replaced = false;
const requests: Pick<IncomingHttpHeaders, 'range' | 'if-range'>[] = [];

const sha256 = (data: Buffer): string => createHash('sha256').update(data).digest('hex');

beforeAll(async () => {
  // The first answer (the old version) breaks off; the file is then replaced, and every answer,
  // ranged or not, is of the new one. /etag names versions by ETag, /date by Last-Modified.
  server = createServer((req, res) => {
    requests.push({ range: req.headers.range, 'if-range': req.headers['if-range'] });
    const byEtag = req.url === '/etag';
    const version = (fresh: boolean): Record<string, string> => (byEtag ? { etag: fresh ? '"new"' : '"old"' } : { 'last-modified': fresh ? 'Tue, 01 Dec 2026 10:00:00 GMT' : 'Mon, 30 Nov 2026 10:00:00 GMT' });
    if (!replaced) {
      replaced = true;
      res.writeHead(200, { 'content-length': OLD.length, ...version(false) });
      res.write(OLD.subarray(0, CUT), () => setTimeout(() => res.destroy(), 20));
      return;
    }
    const from = Number(/^bytes=(\d+)-$/.exec(req.headers.range ?? '')?.[1] ?? 0);
    if (from > 0) {
      res.writeHead(206, { 'content-length': NEW.length - from, 'content-range': `bytes ${from}-${NEW.length - 1}/${NEW.length}`, ...version(true) });
      res.end(NEW.subarray(from));
      return;
    }
    res.writeHead(200, { 'content-length': NEW.length, ...version(true) });
    res.end(NEW);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

describe('a download resumed after the file was replaced on a server that ignores If-Range', () => {
  it.each([
    ['ETag', '/etag', '"old"'],
    ['Last-Modified', '/date', 'Mon, 30 Nov 2026 10:00:00 GMT'],
  ])('starts over when the 206 carries another %s, and the file is the new version whole', async (_, path, first) => {
    replaced = false;
    requests.length = 0;
    const host = createHost({ root: scratchDir() });
    const result = await download({ ...host, sleep: async () => undefined }, { urls: [`${base}${path}`], fs: host.fs, destination: '/file' });
    await result.pending.abort();
    expect(result.sha256).toBe(sha256(NEW));
    expect(requests).toEqual([
      { range: undefined, 'if-range': undefined },
      { range: `bytes=${CUT}-`, 'if-range': first },
      { range: undefined, 'if-range': undefined },
    ]);
  });
});
