#!/usr/bin/env node
// The CloudEvents collector the guest reports to, on 127.0.0.1 (qemu forwards the guest's
// 10.0.2.100:8080 here). It records every request it gets, one JSON line per CloudEvent, to LOG:
//   node collector.mjs accept LOG   answers 204: the collector is up
//   node collector.mjs refuse LOG   answers 503 to everything: the collector is down, so the guest
//                                   spools its events and must send them again later
// It prints the port it listens on as its first line, and runs until it is killed.
import { appendFileSync } from 'node:fs';
import { createServer } from 'node:http';

const [mode, log] = process.argv.slice(2);
if (!['accept', 'refuse'].includes(mode) || !log) {
  process.stderr.write('usage: collector.mjs accept|refuse LOG\n');
  process.exit(2);
}

const server = createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const status = mode === 'accept' ? 204 : 503;
    const record = { at: new Date().toISOString(), status, method: req.method, url: req.url, contentType: req.headers['content-type'] };
    try {
      record.event = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    } catch (error) {
      record.bodyError = String(error);
    }
    // Written before the answer: an event the guest saw acknowledged is in the log.
    appendFileSync(log, JSON.stringify(record) + '\n');
    res.writeHead(status).end();
  });
});
server.listen(0, '127.0.0.1', () => process.stdout.write(`${server.address().port}\n`));
