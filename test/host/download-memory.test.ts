// A long download's memory stays bounded: the socket's read buffers are returned as the bytes go
// by, not left for the collector to find ~100 MiB later.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHost } from '../../src/host/index.ts';
import { download } from '../../src/host/download.ts';
import { scratchDir } from '../support/tmp.ts';

const BLOCK = Buffer.alloc(1024 * 1024, 7);
const SIZE = 192 * BLOCK.length;
let server: Server;
let url = '';

beforeAll(async () => {
  // Serves one reused block again and again: the server allocates nothing per chunk itself.
  server = createServer((_req, res) => {
    res.writeHead(200, { 'content-length': SIZE });
    let sent = 0;
    const more = (): void => {
      while (sent < SIZE) {
        sent += BLOCK.length;
        if (!res.write(BLOCK)) return void res.once('drain', more);
      }
      res.end();
    };
    more();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/big`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

describe('a large download', () => {
  it('keeps the memory of received buffers under 48 MiB however large the file', async () => {
    const root = scratchDir();
    const host = createHost({ root });
    let peak = 0;
    const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().arrayBuffers)), 5);
    try {
      const result = await download(host, { urls: [url], fs: host.fs, destination: '/big', onProgress: () => (peak = Math.max(peak, process.memoryUsage().arrayBuffers)) });
      await result.pending.abort();
      expect(result.bytes).toBe(SIZE);
    } finally {
      clearInterval(sampler);
    }
    expect(peak / 1048576).toBeLessThan(48);
  }, 120_000);
});
