// A CloudEvents collector on 127.0.0.1 that fails on command, for delivery tests: it records every
// request byte for byte, and can answer 500, 429/503 with Retry-After, slowly, with a reset
// connection, with garbage, with a redirect loop, or never.
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { Socket } from 'node:net';

export type CollectorMode =
  | { kind: 'ok' }
  | { kind: 'status'; status: number; retryAfter?: string }
  | { kind: 'slow'; delayMs: number }
  | { kind: 'reset' }
  | { kind: 'garbage' }
  | { kind: 'redirect-loop' }
  | { kind: 'hang' }
  /** A proxy's body limit: 413 to a larger request, 202 to the others. */
  | { kind: 'body-limit'; maxBytes: number };

export interface ReceivedRequest {
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
  body: Buffer;
  /** The CloudEvents it held (one, or a batch), parsed. */
  events: Record<string, unknown>[];
  /** True when the collector acknowledged it with 2xx. */
  acked: boolean;
  peerCertificateCN?: string;
}

export interface Collector {
  url: string;
  requests: ReceivedRequest[];
  /** Answers for the next requests, used in order; `mode` after they are used up. */
  script: CollectorMode[];
  mode: CollectorMode;
  /** Called for every request before it is answered; return false to not answer (the test kills the sender). */
  onRequest?: (request: ReceivedRequest) => void;
  ackedIds(): string[];
  close(): Promise<void>;
}

export interface CollectorOptions {
  tls?: { cert: string; key: string; ca?: string; requireClientCert?: boolean };
}

export async function startCollector(options: CollectorOptions = {}): Promise<Collector> {
  const sockets = new Set<Socket>();
  const collector: Collector = {
    url: '',
    requests: [],
    script: [],
    mode: { kind: 'ok' },
    ackedIds: () => collector.requests.filter((r) => r.acked).flatMap((r) => r.events.map((e) => String(e.id))),
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  const handler = (req: IncomingMessage, res: ServerResponse): void => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      let events: Record<string, unknown>[] = [];
      try {
        const parsed = JSON.parse(body.toString('utf8')) as unknown;
        events = (Array.isArray(parsed) ? parsed : [parsed]) as Record<string, unknown>[];
      } catch {
        events = [];
      }
      const peer = (req.socket as Socket & { getPeerCertificate?: () => { subject?: { CN?: string } } }).getPeerCertificate?.();
      const record: ReceivedRequest = { method: req.method ?? '', path: req.url ?? '', headers: req.headers, body, events, acked: false, ...(peer?.subject?.CN ? { peerCertificateCN: peer.subject.CN } : {}) };
      collector.requests.push(record);
      collector.onRequest?.(record);
      const mode = collector.script.shift() ?? collector.mode;
      switch (mode.kind) {
        case 'ok':
          record.acked = true;
          res.writeHead(202).end();
          return;
        case 'status':
          res.writeHead(mode.status, mode.retryAfter !== undefined ? { 'retry-after': mode.retryAfter } : {}).end('no');
          return;
        case 'slow':
          setTimeout(() => {
            record.acked = true;
            res.writeHead(200).end();
          }, mode.delayMs);
          return;
        case 'reset':
          req.socket.destroy();
          return;
        case 'garbage':
          req.socket.end('this is not HTTP at all\r\n\r\n');
          return;
        case 'redirect-loop':
          res.writeHead(307, { location: req.url ?? '/' }).end();
          return;
        case 'hang':
          return;
        case 'body-limit':
          if (body.length > mode.maxBytes) {
            res.writeHead(413).end('request entity too large');
            return;
          }
          record.acked = true;
          res.writeHead(202).end();
          return;
      }
    });
  };
  const server: Server = options.tls
    ? createHttpsServer({ cert: options.tls.cert, key: options.tls.key, ...(options.tls.ca ? { ca: options.tls.ca } : {}), requestCert: options.tls.requireClientCert ?? false, rejectUnauthorized: options.tls.requireClientCert ?? false }, handler)
    : createHttpServer(handler);
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  server.on('secureConnection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  collector.url = `${options.tls ? 'https' : 'http'}://127.0.0.1:${port}/events`;
  return collector;
}
