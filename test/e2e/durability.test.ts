// What a power cut may find after a first `init`: the packaged binary is run under strace, and
// every fsync, rename and exec it makes is checked against the rules of docs/contract/files.md (files
// on the machine): a file's bytes, and its record for reset, are on disk before it is renamed into
// place (only the record written before a file's new folders is not flushed itself); the
// directories a phase wrote into are fsync'd, once each, before the run records its end or runs
// kubeadm; a record the next run cannot rebuild is on disk before the run goes on; nothing under
// /run is flushed; and the fsyncs of a run stay within the bound the contract gives.
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { dump } from 'js-yaml';
import { describe, expect, it } from 'vitest';
import { builtBinary } from '../support/binary.ts';
import { missingRequirement } from '../support/environment.ts';
import { standinEnv } from '../support/machine-run.ts';
import { scratchDir } from '../support/tmp.ts';
import { REPO } from '../kubeadm/standin.ts';
import { STATUS_DELAY_MS } from '../../src/report/outcome.ts';
import { recordName } from '../../src/host/written.ts';

const skip = missingRequirement({ commands: ['strace'] });

interface Call {
  name: string;
  /** The fsync'd file or directory, the rename's target, the program run: relative to the root. */
  path: string;
  /** rename: its source (the temporary file). */
  from?: string;
  argv?: string;
  /** Trace lines where the call began and where it returned. */
  start: number;
  end: number;
}

/** Parses `strace -f -y` output: calls in the order they returned, with where each began. */
function parseTrace(text: string, root: string): Call[] {
  const calls: Call[] = [];
  const open = new Map<string, { name: string; args: string; start: number }>();
  const rel = (p: string) => relative(root, p);
  const finish = (name: string, args: string, start: number, end: number, result: string): void => {
    if (result !== '0') return;
    if (name === 'fsync' || name === 'fdatasync') {
      const path = /<([^>]*)>/.exec(args)?.[1] ?? '';
      calls.push({ name: 'fsync', path: rel(path), start, end });
    } else if (name.startsWith('rename')) {
      const [from = '', to = ''] = [...args.matchAll(/"((?:[^"\\]|\\.)*)"/g)].map((m) => m[1]!);
      calls.push({ name: 'rename', path: rel(to), from: rel(from), start, end });
    } else if (name === 'execve') {
      calls.push({ name: 'execve', path: /"([^"]*)"/.exec(args)?.[1] ?? '', argv: args, start, end });
    }
  };
  text.split('\n').forEach((line, i) => {
    let m = /^(\d+)\s+(\w+)\((.*) <unfinished \.\.\.>$/.exec(line);
    if (m) return void open.set(m[1]!, { name: m[2]!, args: m[3]!, start: i });
    m = /^(\d+)\s+<\.\.\. (\w+) resumed>.*= (-?\d+)/.exec(line);
    if (m) {
      const began = open.get(m[1]!);
      open.delete(m[1]!);
      if (began) finish(began.name, began.args, began.start, i, m[3]!);
      return;
    }
    m = /^(\d+)\s+(\w+)\((.*)\)\s+= (-?\d+)/.exec(line);
    if (m) finish(m[2]!, m[3]!, i, i, m[4]!);
  });
  return calls;
}

function tracedInit(binary: string, config: string, root: string, env: NodeJS.ProcessEnv): { calls: Call[]; stdout: string } {
  const trace = join(dirname(root), 'trace');
  const run = spawnSync('strace', ['-f', '-y', '-qq', '-e', 'trace=fsync,fdatasync,rename,renameat,renameat2,execve', '-o', trace, binary, 'init', '-c', config, '--root', root], {
    cwd: REPO,
    env,
    encoding: 'utf8',
  });
  expect(run.status, run.stdout + run.stderr).toBe(0);
  return { calls: parseTrace(readFileSync(trace, 'utf8'), root), stdout: run.stdout };
}

const STATE_DIR = 'var/lib/machineadm';
const isMachineFile = (path: string) => !path.startsWith('run/') && !path.startsWith(`${STATE_DIR}/`);
/** Where the record for reset of a machine file (a path relative to the root) is kept. */
const recordOf = (path: string) => `${STATE_DIR}/written/${recordName(`/${path}`)}`;

/** Problems with the rules every run keeps, whatever it wrote. */
function ruleBreaks(calls: Call[]): string[] {
  const problems: string[] = [];
  const fsyncs = calls.filter((c) => c.name === 'fsync');
  const renames = calls.filter((c) => c.name === 'rename');
  const flushedBefore = (r: Call) => fsyncs.some((f) => f.path === r.from && f.end < r.start);
  for (const r of renames) {
    if (r.path.startsWith('run/')) continue;
    // The record written before a file's new folders (the intent) is written again, flushed,
    // before the file's rename: only that one is renamed without its own fsync.
    const intent = r.path.startsWith(`${STATE_DIR}/written/`) && renames.some((later) => later.path === r.path && later.start > r.end && flushedBefore(later));
    // The file's bytes first: a power cut never finds a renamed file without them.
    if (!intent && !flushedBefore(r)) problems.push(`${r.path} was renamed into place before its bytes were fsync'd`);
    // A machine file's record (for reset) is on disk before the file is renamed into place.
    if (isMachineFile(r.path) && !renames.some((w) => w.path === recordOf(r.path) && w.end < r.start && flushedBefore(w))) {
      problems.push(`${r.path} was renamed into place before its record was on disk`);
    }
  }
  for (const f of fsyncs) if (f.path.startsWith('run/')) problems.push(`${f.path} is under /run (cleared at boot) and was fsync'd`);
  // The run's end record (the result copy) says the run finished: every directory the run
  // wrote into on the machine is durable by then.
  const endRecord = renames.find((r) => r.path === `${STATE_DIR}/result.json`);
  if (!endRecord) problems.push('no result.json copy in the state directory');
  const machineDirs = new Set(renames.filter((r) => isMachineFile(r.path)).map((r) => dirname(r.path)));
  for (const dir of machineDirs) {
    const lastRename = Math.max(...renames.filter((r) => dirname(r.path) === dir).map((r) => r.end));
    const synced = fsyncs.some((f) => f.path === dir && f.start > lastRename && f.end < (endRecord?.start ?? Infinity));
    if (!synced) problems.push(`${dir} was not fsync'd between its last rename and the run's end record`);
  }
  return problems;
}

describe('what a power cut may find after init', () => {
  it.skipIf(skip)('a first run flushes each file once and each directory it wrote into once, before its end record, and nothing under /run', async () => {
    const binary = await builtBinary();
    const root = join(scratchDir('machineadm-durable-'), 'root');
    const { calls } = tracedInit(binary, join(REPO, 'examples/quickstart.yaml'), root, { ...process.env, NODE_OPTIONS: '' });
    expect(ruleBreaks(calls)).toEqual([]);

    const fsyncs = calls.filter((c) => c.name === 'fsync');
    const renames = calls.filter((c) => c.name === 'rename');
    const durableFiles = renames.filter((r) => !r.path.startsWith('run/'));
    // The records of what machineadm wrote (for reset) are files kept on disk too, side by side in a folder of their own.
    const machineDirs = new Set(durableFiles.filter((r) => isMachineFile(r.path) || r.path.startsWith(`${STATE_DIR}/written/`)).map((r) => dirname(r.path)));
    // The contract's bound: one fsync per file kept on disk, one per directory written into (each
    // once: this run writes no record that must be kept at once, so the state file is written
    // once, at the end, and no directory twice).
    expect(fsyncs.length).toBeLessThanOrEqual(durableFiles.length + machineDirs.size);
    for (const dir of machineDirs) expect(fsyncs.filter((f) => f.path === dir).length, dir).toBe(1);
    // However many folders the machine files are in, their records share one: flushed once.
    expect(new Set(renames.filter((r) => r.path.startsWith(`${STATE_DIR}/written/`)).map((r) => dirname(r.path)))).toEqual(new Set([`${STATE_DIR}/written`]));
    expect(renames.filter((r) => r.path === `${STATE_DIR}/state.json`)).toHaveLength(1);
    // status.json: at the run's start, at each phase's end, at the end; more only for a slow run.
    const result = JSON.parse(readFileSync(join(root, 'run/machineadm/result.json'), 'utf8')) as { durationMs: number; phases: unknown[] };
    const statusWrites = renames.filter((r) => r.path === 'run/machineadm/status.json').length;
    expect(statusWrites).toBeLessThanOrEqual(2 + result.phases.length + Math.floor(result.durationMs / STATUS_DELAY_MS));
  });

  it.skipIf(skip)('kubeadm join runs only after the prepared files and the record that it started are on disk', async () => {
    const binary = await builtBinary();
    const dir = scratchDir('machineadm-durable-join-');
    const root = join(dir, 'root');
    mkdirSync(join(root, 'etc/machineadm'), { recursive: true });
    writeFileSync(join(root, 'etc/machineadm/token'), 'q1w2e3.r4t5y6u7i8o9p0a1\n', { mode: 0o600 });
    const spec = {
      sysctls: { 'net.ipv4.ip_forward': '1' },
      files: [{ path: '/etc/machineadm/motd', content: 'prepared by machineadm\n' }],
      containerd: { version: '1.7', registries: { 'docker.io': { mirrors: [{ url: 'https://mirror.internal.example:5000' }] } } },
      kubernetes: { controlPlaneEndpoint: '10.0.0.10:6443', token: { valueFrom: { file: '/etc/machineadm/token' } }, caCertHashes: ['sha256:' + 'ab'.repeat(32)], retries: 0, backoffSeconds: 0 },
      report: { clusterAPISentinel: true },
    };
    const config = join(dir, 'machine.yaml');
    writeFileSync(config, dump({ apiVersion: 'machineadm.cluster.x-k8s.io/v1alpha1', kind: 'MachineConfig', spec }));
    const { calls } = tracedInit(binary, config, root, standinEnv());
    expect(ruleBreaks(calls)).toEqual([]);

    const join_ = calls.find((c) => c.name === 'execve' && c.path.endsWith('/kubeadm') && c.argv?.includes('"join"'));
    expect(join_, 'kubeadm join was run').toBeDefined();
    const before = calls.filter((c) => c.end < join_!.start);
    const renames = before.filter((c) => c.name === 'rename');
    const fsyncs = before.filter((c) => c.name === 'fsync');
    // Every directory prepare wrote into is durable before the machine joins a cluster.
    for (const dir of new Set(renames.filter((r) => isMachineFile(r.path)).map((r) => dirname(r.path)))) {
      const last = Math.max(...renames.filter((r) => dirname(r.path) === dir).map((r) => r.end));
      expect(fsyncs.some((f) => f.path === dir && f.start > last), `${dir} fsync'd before kubeadm join`).toBe(true);
    }
    // The record that the join began (a later run must know the half-done work is its own) is on disk.
    const stateWrite = renames.findLast((r) => r.path === `${STATE_DIR}/state.json`);
    expect(stateWrite, 'the state file was written before kubeadm join').toBeDefined();
    expect(fsyncs.some((f) => f.path === STATE_DIR && f.start > stateWrite!.end), 'the state directory fsync\'d after it').toBe(true);
  });
});
