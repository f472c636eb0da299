// A download of a run shows how far it has come: step.progress events (bytes, total, rate, time
// left) at most once a second and at its end, on the event stream (-o json), for whoever watches
// the run; never sent to the endpoints, spooled or kept in the result. A real server on 127.0.0.1
// sends 3 MiB in 100 ms pieces (about 2.5 s), a real collector takes the events.
import { createHash } from 'node:crypto';
import { createServer } from 'node:http';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { dump } from 'js-yaml';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.ts';
import { scratchDir } from '../support/tmp.ts';
import { startCollector } from './collector.ts';

const BODY = Buffer.alloc(3 * 1024 * 1024, 7);
const PIECE = 128 * 1024;
const server = createServer((_req, res) => {
  res.writeHead(200, { 'content-length': String(BODY.length) });
  let sent = 0;
  const next = (): void => {
    if (sent >= BODY.length) return void res.end();
    res.write(BODY.subarray(sent, sent + PIECE));
    sent += PIECE;
    setTimeout(next, 100);
  };
  next();
});
await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
const collector = await startCollector();
afterAll(async () => {
  await new Promise((r) => server.close(r));
  await collector.close();
});

describe('the progress of a download in a run', () => {
  it('is on the event stream at most once a second and at the end, with bytes, rate and time left; not at the endpoints nor in the result', async () => {
    const dir = scratchDir('machineadm-progress-');
    const config = join(dir, 'machine.yaml');
    const url = `http://127.0.0.1:${(server.address() as { port: number }).port}/big.bin`;
    writeFileSync(config, dump({ apiVersion: 'machineadm.cluster.x-k8s.io/v1alpha1', kind: 'MachineConfig', spec: {
      files: [{ path: '/opt/big.bin', source: { url, sha256: createHash('sha256').update(BODY).digest('hex') } }],
      report: { endpoints: [{ url: collector.url }] },
    } }));
    const root = join(dir, 'root');
    const run = await runCli(['init', '-c', config, '--root', root, '-o', 'json']);
    expect(run.code, run.stderr).toBe(0);
    const events = run.stdout.trim().split('\n').map((l) => JSON.parse(l) as { type: string; time: string; progress?: { target: string; receivedBytes: number; totalBytes?: number; bytesPerSecond: number; etaSeconds?: number } });
    const progress = events.filter((e) => e.type === 'step.progress');
    expect(progress.length).toBeGreaterThanOrEqual(2);
    expect(progress.length).toBeLessThanOrEqual(6);
    expect(progress.every((e) => e.progress!.target === '/opt/big.bin' && e.progress!.totalBytes === BODY.length)).toBe(true);
    const received = progress.map((e) => e.progress!.receivedBytes);
    expect(received).toEqual([...received].sort((a, b) => a - b));
    expect(received.at(-1)).toBe(BODY.length);
    // After the first second: a rate of about 1.25 MiB/s and a time left that shrinks.
    const moving = progress.slice(1, -1);
    for (const e of moving) {
      expect(e.progress!.bytesPerSecond).toBeGreaterThan(200 * 1024);
      expect(e.progress!.etaSeconds).toBeGreaterThan(0);
    }
    const times = progress.slice(0, -1).map((e) => Date.parse(e.time));
    for (let i = 1; i < times.length; i++) expect(times[i]! - times[i - 1]!).toBeGreaterThanOrEqual(900);
    // What is delivered and kept holds no progress.
    expect(collector.requests.flatMap((r) => r.events).map((e) => (e.data as { type: string }).type)).not.toContain('step.progress');
    expect(collector.requests.length).toBeGreaterThan(0);
    expect(readFileSync(join(root, 'run/machineadm/result.json'), 'utf8')).not.toContain('receivedBytes');
  }, 30_000);
});
