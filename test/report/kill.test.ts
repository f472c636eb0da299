// The spool's promise under the harshest crash: machineadm is killed with SIGKILL at random
// moments, many times over, while it spools and delivers; in the end the collector must hold every
// event any run showed, by id (duplicates only with the same id and the same content).
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCollector, type Collector } from './collector.ts';
import { scratchDir } from '../support/tmp.ts';
import { builtBinary } from '../support/binary.ts';

const repo = join(import.meta.dirname, '../..');
const KILLS = 50;
const BUDGET_MS = 85_000;

interface Child {
  process: ChildProcess;
  onFirstEvent?: () => void;
  /** Ids of the events the run printed (-o json): each was spooled before it was printed. */
  printed: string[];
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

let binary = '';

function start(args: string[]): Child {
  const child = spawn(binary, args, { cwd: repo, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, NODE_OPTIONS: '' } });
  const printed: string[] = [];
  let buffered = '';
  child.stdout!.on('data', (chunk: Buffer) => {
    buffered += chunk.toString();
    const lines = buffered.split('\n');
    buffered = lines.pop() ?? '';
    for (const line of lines) {
      try {
        const event = JSON.parse(line) as { id?: string; type?: string };
        if (event.id && event.type !== 'step.output') {
          printed.push(event.id);
          if (printed.length === 1) result.onFirstEvent?.();
        }
      } catch {
        // not an event line
      }
    }
  });
  child.stderr!.resume();
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  const result: Child = { process: child, printed, exited };
  return result;
}

describe('kill -9 during delivery', () => {
  let collector: Collector;
  beforeAll(async () => {
    // The packaged binary, as it runs on a machine.
    binary = await builtBinary();
    collector = await startCollector();
  }, 300_000);
  afterAll(async () => collector.close());

  it(`loses no event over ${KILLS} kills at random points`, async () => {
    const root = scratchDir();
    const config = join(root, '..', `${root.split('/').pop()}.yaml`);
    writeFileSync(config, JSON.stringify({ apiVersion: 'machineadm.cluster.x-k8s.io/v1alpha1', kind: 'MachineConfig', spec: { report: { deadlineSeconds: 5, endpoints: [{ url: collector.url }] } } }));
    const args = ['init', '--only', 'report', '-c', config, '--root', root, '-o', 'json'];
    const printed: string[] = [];
    let kills = 0;
    let inDelivery = 0;
    let runs = 0;
    const began = Date.now();
    // A slow collector keeps each run delivering (and the backlog of killed runs growing) long
    // enough for kills to land in every part of it: spooling, posting, between ack and removal.
    collector.mode = { kind: 'slow', delayMs: 15 };
    while (inDelivery < KILLS && Date.now() - began < BUDGET_MS) {
      runs += 1;
      const child = start(args);
      const how = Math.random();
      let delivering = false;
      if (how < 0.4) {
        // A random moment once the run emits events: while it spools, prints, posts or removes.
        child.onFirstEvent = () => {
          delivering = true;
          setTimeout(() => child.process.kill('SIGKILL'), Math.random() * 250);
        };
      } else {
        // The n-th request of this run: before the answer, or just after the collector acknowledged.
        const nth = 1 + Math.floor(Math.random() * 12);
        const afterAck = how > 0.7;
        let seen = 0;
        collector.onRequest = () => {
          seen += 1;
          if (seen !== nth) return;
          delivering = true;
          if (afterAck) setTimeout(() => child.process.kill('SIGKILL'), 16 + Math.random() * 4);
          else child.process.kill('SIGKILL');
        };
      }
      const exit = await child.exited;
      collector.onRequest = undefined;
      if (exit.signal === 'SIGKILL') {
        kills += 1;
        if (delivering) inDelivery += 1;
      } else {
        expect(exit.code).toBe(0);
      }
      printed.push(...child.printed);
    }
    collector.mode = { kind: 'ok' };
    const final = start(['report', '-c', config, '--root', root, '-o', 'json']);
    expect((await final.exited).code).toBe(0);
    printed.push(...final.printed);

    const acked = collector.ackedIds();
    const held = new Set(acked);
    const lost = printed.filter((id) => !held.has(id));
    console.log(`kill -9: ${kills} kills (${inDelivery} while events were being spooled or delivered) in ${runs} runs over ${Math.round((Date.now() - began) / 1000)} s; ${printed.length} events printed, ${held.size} distinct ids received, ${acked.length - held.size} duplicates, ${lost.length} lost`);
    expect(inDelivery).toBeGreaterThanOrEqual(KILLS);
    expect(lost).toEqual([]);
    // Duplicates carry the same id and the same content.
    const bodies = new Map<string, string>();
    for (const r of collector.requests.filter((x) => x.acked)) {
      for (const e of r.events) {
        const text = JSON.stringify(e);
        const id = String(e.id);
        if (bodies.has(id)) expect(bodies.get(id)).toBe(text);
        bodies.set(id, text);
      }
    }
    // Every run's events arrived without a gap: 1..n by sequence number.
    const byRun = new Map<string, number[]>();
    for (const id of held) {
      const [run, seq] = [id.slice(0, id.lastIndexOf('.')), Number(id.slice(id.lastIndexOf('.') + 1))];
      byRun.set(run, [...(byRun.get(run) ?? []), seq]);
    }
    for (const [run, seqs] of byRun) {
      seqs.sort((a, b) => a - b);
      expect(seqs, run).toEqual(seqs.map((_, i) => i + 1));
    }
    const spool = join(root, 'var/lib/machineadm/spool');
    const left = existsSync(spool) ? readdirSync(spool).flatMap((d) => readdirSync(join(spool, d)).filter((n) => n.endsWith('.json') && !n.startsWith('.'))) : [];
    expect(left).toEqual([]);
  }, 120_000);
});
