// An interrupted run ends the transfer it is in at once, with the interruption: a large file's
// download and a small one's (a signature, a .sha256) alike, even on a server that has gone quiet.
import { createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHost } from '../../src/host/index.ts';
import { download } from '../../src/host/download.ts';
import { downloadSmall } from '../../src/host/download-small.ts';
import { scratchDir } from '../support/tmp.ts';

let server: Server;
let url = '';
const sockets: Socket[] = [];

beforeAll(async () => {
  // Accepts the connection, reads the request, and never answers.
  server = createServer((socket) => {
    sockets.push(socket);
    socket.resume();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/file`;
});
afterAll(() => {
  for (const socket of sockets) socket.destroy();
  return new Promise<void>((resolve) => server.close(() => resolve()));
});

describe('a download on a quiet server when the run is interrupted', () => {
  it.each([
    ['a file', (host: ReturnType<typeof createHost>) => download(host, { urls: [url], fs: host.fs, destination: '/file', idleTimeoutMs: 20_000 })],
    ['a small file', (host: ReturnType<typeof createHost>) => downloadSmall(host, [url], { maxBytes: 4096, idleTimeoutMs: 20_000 })],
  ])('of %s ends at once with the interruption', async (_, fetch) => {
    const interrupt = new AbortController();
    const host = createHost({ root: scratchDir(), signal: interrupt.signal });
    const reason = new Error('interrupted by SIGTERM');
    setTimeout(() => interrupt.abort(reason), 200);
    const started = Date.now();
    const error = await fetch(host).catch((e: unknown) => e);
    expect(error).toBe(reason);
    expect(Date.now() - started).toBeLessThan(5_000);
  }, 30_000);
});
