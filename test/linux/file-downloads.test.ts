// prepare/files' downloads begun when the run starts (Step.begin), against a real server on
// 127.0.0.1: they run while the steps before prepare/files do, put nothing at a target before the
// step's turn, are not downloaded twice, are done again at the step's turn when they failed on
// the network, and a wrong sha256 found early leaves the machine as it was.
import { afterAll, describe, expect, it } from 'vitest';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { scratchDir } from '../support/tmp.ts';
import { snapshotTree } from '../support/tree.ts';
import { createHost, RootedFileSystem, type Facts } from '../../src/host/index.ts';
import { filesStep } from '../../src/linux/steps/files.ts';
import { resetFilesStep } from '../../src/reset/files.ts';
import { runPhases, type RunnerInput } from '../../src/engine/runner.ts';
import { StateStore } from '../../src/engine/state.ts';
import type { Step, StepContext } from '../../src/engine/step.ts';
import { EventBus, type MachineEvent } from '../../src/engine/events.ts';
import { SecretScrubber } from '../../src/config/secrets.ts';
import { ExitCode, type MachineadmError } from '../../src/errors.ts';
import { configFrom } from '../report/harness.ts';

const facts: Facts = { os: 'linux', arch: 'x64', hostname: 'node', privileged: false, liveRoot: false };
const bodies: Record<string, Buffer> = { '/a.bin': Buffer.from('first download\n'), '/b.bin': Buffer.from('second download\n') };
const sha = (body: Buffer): string => createHash('sha256').update(body).digest('hex');

/** Requests in arrival order, with their time; `answer` decides each response (the body by default). */
const requests: { url: string; at: number }[] = [];
let answer: (req: IncomingMessage, res: ServerResponse) => void = () => undefined;
const server = createServer((req, res) => {
  requests.push({ url: req.url ?? '', at: Date.now() });
  answer(req, res);
});
const serveBodies = (req: IncomingMessage, res: ServerResponse): void => {
  const body = bodies[req.url ?? ''];
  if (body) res.end(body);
  else res.writeHead(404).end();
};
await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
const port = (server.address() as { port: number }).port;
afterAll(() => new Promise((r) => server.close(r)));

function fresh(files: { path: string; url: string; sha256: string }[]): { root: string; ctx: StepContext } {
  const root = scratchDir('machineadm-early-');
  const host = createHost({ root, facts, env: {} });
  const config = configFrom({ files: files.map((f) => ({ path: f.path, source: { url: f.url, sha256: f.sha256 } })) });
  const ctx = { config, facts, host, options: { dryRun: false, force: false }, previous: undefined, run: { runId: 'r', command: 'init', failed: false, phases: [] }, recordOf: () => undefined, log: () => undefined, downloadProgress: () => () => undefined } as unknown as StepContext;
  requests.length = 0;
  answer = serveBodies;
  return { root, ctx };
}

/** Every machine path under the root, hidden temporaries included; not machineadm's state. */
const tree = (root: string): Record<string, string> => Object.fromEntries(Object.entries(snapshotTree(root)).filter(([name]) => name !== 'var' && !name.startsWith('var/')));

const twoFiles = () => [
  { path: '/opt/dl/a.bin', url: `http://127.0.0.1:${port}/a.bin`, sha256: sha(bodies['/a.bin']!) },
  { path: '/opt/dl/b.bin', url: `http://127.0.0.1:${port}/b.bin`, sha256: sha(bodies['/b.bin']!) },
];

/** Waits until the early downloads have fetched everything they asked for. */
async function settled(count: number): Promise<void> {
  for (let waited = 0; requests.length < count; waited += 10) {
    if (waited > 10_000) throw new Error(`only ${requests.length} of ${count} requests arrived`);
    await new Promise((r) => setTimeout(r, 10));
  }
  await new Promise((r) => setTimeout(r, 100));
}

describe('prepare/files: downloads begun when the run starts', () => {
  it('puts nothing at a target before the step, which then places what was fetched without fetching it again', async () => {
    const { root, ctx } = fresh(twoFiles());
    const early = filesStep.begin!(ctx)!;
    await settled(2);
    // Fetched and checked, but only as temporaries beside the targets.
    expect(existsSync(join(root, 'opt/dl/a.bin')) || existsSync(join(root, 'opt/dl/b.bin'))).toBe(false);
    expect(readdirSync(join(root, 'opt/dl')).every((name) => name.startsWith('.') && name.includes('.machineadm-tmp-'))).toBe(true);
    const step = { ...ctx, early };
    const check = await filesStep.check(step);
    await filesStep.apply(step, check);
    await early.cancel();
    expect(requests.map((r) => r.url).sort()).toEqual(['/a.bin', '/b.bin']);
    expect(Object.keys(tree(root)).sort()).toEqual(['.', 'opt', 'opt/dl', 'opt/dl/a.bin', 'opt/dl/b.bin']);
    expect(readFileSync(join(root, 'opt/dl/a.bin'), 'utf8')).toBe('first download\n');
    expect(readFileSync(join(root, 'opt/dl/b.bin'), 'utf8')).toBe('second download\n');
  });

  it('begins nothing for a target that is already there: the step hashes it at its turn', async () => {
    const { root, ctx } = fresh(twoFiles());
    mkdirSync(join(root, 'opt/dl'), { recursive: true });
    await new RootedFileSystem(root).writeFile('/opt/dl/a.bin', 'first download\n');
    const early = filesStep.begin!(ctx)!;
    await settled(1);
    expect(requests.map((r) => r.url)).toEqual(['/b.bin']);
    await early.cancel();
  });

  it('downloads again at its turn what failed early on the network (an earlier step may have been what it needed)', async () => {
    const { root, ctx } = fresh(twoFiles());
    let refused = false;
    answer = (req, res) => {
      if (req.url === '/a.bin' && !refused) return void ((refused = true), res.writeHead(404).end());
      serveBodies(req, res);
    };
    const early = filesStep.begin!(ctx)!;
    await settled(2);
    const step = { ...ctx, early };
    await filesStep.apply(step, await filesStep.check(step));
    await early.cancel();
    expect(requests.map((r) => r.url).sort()).toEqual(['/a.bin', '/a.bin', '/b.bin']);
    expect(readFileSync(join(root, 'opt/dl/a.bin'), 'utf8')).toBe('first download\n');
  });

  it('fails the step on a wrong sha256 found early, without fetching it again, and leaves the machine as it was', async () => {
    const files = twoFiles();
    files[1]!.sha256 = 'e'.repeat(64);
    const { root, ctx } = fresh(files);
    const before = tree(root);
    const early = filesStep.begin!(ctx)!;
    await settled(2);
    const step = { ...ctx, early };
    const failure = await filesStep.apply(step, await filesStep.check(step)).catch((error: unknown) => error);
    await early.cancel();
    // Exit code 3, as a wrong sha256 always was.
    expect((failure as MachineadmError).exitCode).toBe(ExitCode.verification);
    expect((failure as Error).message).toContain('spec.files[1].source.sha256');
    expect(requests).toHaveLength(2);
    expect(tree(root)).toEqual(before);
  });

  it('takes a file someone else put at a target before the step\'s turn as theirs: reset gives it back, and keeps the folder it is in', async () => {
    const { root, ctx } = fresh(twoFiles());
    const early = filesStep.begin!(ctx)!;
    await settled(2);
    writeFileSync(join(root, 'opt/dl/a.bin'), 'someone else\'s\n');
    const step = { ...ctx, early };
    await filesStep.apply(step, await filesStep.check(step));
    await early.cancel();
    expect(readFileSync(join(root, 'opt/dl/a.bin'), 'utf8')).toBe('first download\n');
    const reset = resetFilesStep();
    await reset.apply(ctx, await reset.check(ctx));
    expect(Object.keys(tree(root)).sort()).toEqual(['.', 'opt', 'opt/dl', 'opt/dl/a.bin']);
    expect(readFileSync(join(root, 'opt/dl/a.bin'), 'utf8')).toBe('someone else\'s\n');
  });

  it('leaves nothing behind when the run ends before the step (cancelled while downloading)', async () => {
    const { root, ctx } = fresh(twoFiles());
    const before = tree(root);
    let closed = 0;
    // Headers and a first byte, then nothing: only the client going away ends them.
    answer = (_req, res) => {
      res.writeHead(200, { 'content-length': '1000000' });
      res.write('x');
      res.on('close', () => closed++);
    };
    const early = filesStep.begin!(ctx)!;
    await settled(2);
    await early.cancel();
    expect(tree(root)).toEqual(before);
    for (let waited = 0; closed < 2 && waited < 5000; waited += 10) await new Promise((r) => setTimeout(r, 10));
    expect(closed).toBe(2);
  });
});

// The run as a whole: the real runner, the real step, and before it a step that takes its time
// (as loading modules or writing sysctls may): the server sees the requests while it runs.
describe('prepare/files in a run', () => {
  it('asks for its downloads while an earlier step is still running, and places them at its turn', async () => {
    const { root, ctx } = fresh(twoFiles());
    let slowEnded = 0;
    const slow: Step = {
      id: 'kernel-modules/load',
      summary: 'a step that takes its time',
      overtakable: true,
      check: async () => ({ done: false, changes: [{ action: 'load', target: 'overlay' }] }),
      async apply() {
        // Done once both requests arrived, or after 5 s (then the test fails below).
        for (let waited = 0; requests.length < 2 && waited < 5000; waited += 10) await new Promise((r) => setTimeout(r, 10));
        slowEnded = Date.now();
      },
    };
    const events: MachineEvent[] = [];
    const bus = new EventBus();
    bus.listen((e) => events.push(e));
    const input: RunnerInput = {
      command: 'prepare',
      phases: [{ name: 'prepare', summary: 'prepare', steps: [slow, filesStep] }],
      selection: {},
      config: ctx.config,
      facts,
      host: ctx.host,
      events: bus,
      state: new StateStore(new RootedFileSystem(join(root, 'var/lib/machineadm'))),
      secrets: new SecretScrubber(),
    };
    const outcome = await runPhases(input);
    expect(outcome.error).toBeUndefined();
    const filesStarted = Date.parse(events.find((e) => e.type === 'step.started' && e.step === 'prepare/files')!.time);
    expect(requests).toHaveLength(2);
    for (const r of requests) {
      expect(r.at).toBeLessThanOrEqual(slowEnded);
      expect(r.at).toBeLessThanOrEqual(filesStarted);
    }
    const finished = events.find((e) => e.type === 'step.finished' && e.step === 'prepare/files')!;
    expect(finished.earlyStartMs).toBeGreaterThan(0);
    expect(readFileSync(join(root, 'opt/dl/b.bin'), 'utf8')).toBe('second download\n');
    expect(readdirSync(join(root, 'opt/dl')).sort()).toEqual(['a.bin', 'b.bin']);
  });
});

