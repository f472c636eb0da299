// Crash consistency of a whole `init`: the packaged binary (prepare writing real files under a
// scratch root, kubeadm join through the strict stand-in, events to a local collector) is killed
// with SIGKILL at random moments, hundreds of times, and then allowed to finish. After every kill
// each file machineadm owns is absent or complete and the state file parses; in the end the
// machine, the state directory included, is what one clean run makes, nothing holding the token
// is left, and every event any run printed reached the collector.
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { dump } from 'js-yaml';
import { describe, expect, it } from 'vitest';
import { binaryAndCollector, quiet, standinEnv } from '../support/machine-run.ts';
import { scratchDir } from '../support/tmp.ts';
import { REPO } from '../kubeadm/standin.ts';

const KILLS = Number(process.env.MACHINEADM_CRASH_KILLS ?? 200);
const BUDGET_MS = 300_000;
const TOKEN = 'q1w2e3.r4t5y6u7i8o9p0a1';

const machineRun = binaryAndCollector();

/** A machine with the token in a file, as an operator would provide it. */
function machine(dir: string, collectorUrl: string): { root: string; config: string } {
  const root = join(dir, 'root');
  mkdirSync(join(root, 'etc/machineadm'), { recursive: true });
  writeFileSync(join(root, 'etc/machineadm/token'), TOKEN + '\n', { mode: 0o600 });
  const config = join(dir, 'machine.yaml');
  writeFileSync(
    config,
    dump({
      apiVersion: 'machineadm.cluster.x-k8s.io/v1alpha1',
      kind: 'MachineConfig',
      spec: {
        kernelModules: ['overlay', 'br_netfilter'],
        sysctls: { 'net.ipv4.ip_forward': '1' },
        files: [
          { path: '/etc/machineadm/motd', content: 'prepared by machineadm\n' },
          { path: '/etc/example/big.conf', content: 'x'.repeat(256 * 1024) + '\n' },
          { path: '/usr/local/bin/hello', content: '#!/bin/sh\necho hello\n', mode: '0755' },
        ],
        containerd: { version: '1.7', sandboxImage: 'registry.k8s.io/pause:3.10', registries: { 'docker.io': { mirrors: [{ url: 'https://mirror.internal.example:5000' }] } } },
        kubernetes: { controlPlaneEndpoint: '10.0.0.10:6443', token: { valueFrom: { file: '/etc/machineadm/token' } }, caCertHashes: ['sha256:' + 'ab'.repeat(32)], retries: 0, backoffSeconds: 0 },
        report: { clusterAPISentinel: true, deadlineSeconds: 5, endpoints: [{ url: collectorUrl }] },
      },
    }),
  );
  return { root, config };
}

const env = standinEnv();

/** Files written by kubeadm (the stand-in) rather than machineadm: not machineadm's to keep whole. */
const KUBEADM_OWNED = /^(etc\/kubernetes|var\/lib\/kubelet|var\/lib\/kubeadm-standin)\//;
/**
 * Records that differ from run to run by design (times, run ids, delivery counts; a killed run's
 * lock, taken over by the next; the written/ record of each file, which names the inode and time
 * of what was written): each must still parse, whatever moment the kill came.
 */
const RECORDS = /^(run\/machineadm\/(status|result)\.json|var\/lib\/machineadm\/(state|result|history)\.json|var\/lib\/machineadm\/run\.lock|var\/lib\/machineadm\/written\/.+)$/;
const SPOOL = /^var\/lib\/machineadm\/spool\//;

function tree(root: string): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (dir: string): void => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      const st = statSync(path);
      if (st.isDirectory()) walk(path);
      else out.set(relative(root, path), readFileSync(path, 'latin1'));
    }
  };
  walk(root);
  return out;
}

/** Runs machineadm to its end without blocking this process, where the machineRun.collector answers. */
function runToEnd(args: string[]): Promise<{ status: number | null; stdout: string; stderr: string }> {
  const child = spawn(machineRun.binary, args, { cwd: REPO, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  return new Promise((resolve) => child.on('close', (status) => resolve({ status, stdout, stderr })));
}

function printedIds(stdout: string): string[] {
  return stdout
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => {
      try {
        return JSON.parse(l) as { id?: string; type?: string };
      } catch {
        return {};
      }
    })
    .filter((e) => e.id && e.type !== 'step.output')
    .map((e) => e.id!);
}

describe('crash consistency of init', () => {
  it(`converges to a clean run's machine after ${KILLS} SIGKILLs at random moments`, async () => {
    const clean = machine(scratchDir('machineadm-crash-clean-'), machineRun.collector.url);
    const began = Date.now();
    const reference = await runToEnd(['init', '-c', clean.config, '--root', clean.root]);
    const fullRunMs = Date.now() - began;
    expect(reference.status, reference.stdout + reference.stderr).toBe(0);
    if (process.env.MACHINEADM_CRASH_DEBUG) console.log(reference.stdout);
    const expected = tree(clean.root);

    const crashed = machine(scratchDir('machineadm-crash-'), machineRun.collector.url);
    const initial = tree(crashed.root);
    const printed: string[] = [];
    let kills = 0;
    let runs = 0;
    const problems: string[] = [];
    const started = Date.now();
    // Reruns find more done and end sooner than the first run: kills are drawn over how long a run
    // lasts now, so that most land inside one.
    let window = fullRunMs;
    while (kills < KILLS && Date.now() - started < BUDGET_MS) {
      runs += 1;
      const child = spawn(machineRun.binary, ['init', '-c', crashed.config, '--root', crashed.root, '-o', 'json'], { cwd: REPO, env, stdio: ['ignore', 'pipe', 'ignore'] });
      let stdout = '';
      child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
      const exited = new Promise<NodeJS.Signals | null>((resolve) => child.on('close', (_code, signal) => resolve(signal)));
      // Anywhere in a run: before the first write, among the files, during kubeadm, while reporting.
      const runStarted = Date.now();
      const timer = setTimeout(() => child.kill('SIGKILL'), Math.random() * window);
      const signal = await exited;
      clearTimeout(timer);
      if (signal !== 'SIGKILL') window = Math.max(50, (window + (Date.now() - runStarted)) / 2);
      printed.push(...printedIds(stdout));
      if (signal === 'SIGKILL') kills += 1;
      await quiet(crashed.root);
      const now = tree(crashed.root);
      for (const [path, content] of now) {
        // A temporary file, or the claim of a run killed while it took a dead run's lock over:
        // the next run removes them (checked at the end).
        if (path.includes('.machineadm-tmp-') || path.includes('run.lock.takeover-') || KUBEADM_OWNED.test(path) || SPOOL.test(path)) continue;
        if (RECORDS.test(path)) {
          try {
            JSON.parse(content);
          } catch {
            problems.push(`after kill ${kills}: ${path} does not parse`);
          }
          continue;
        }
        if (path.startsWith('run/machineadm/kubeadm-')) continue; // checked at the end: removed by the next run
        const want = expected.get(path) ?? initial.get(path);
        if (content !== want) problems.push(`after kill ${kills}: ${path} is neither the old nor the new content (${content.length} bytes)`);
      }
    }
    // Then it may finish.
    const last = await runToEnd(['init', '-c', crashed.config, '--root', crashed.root, '-o', 'json']);
    expect(last.status, last.stderr).toBe(0);
    printed.push(...printedIds(last.stdout));
    await quiet(crashed.root);

    const end = tree(crashed.root);
    const names = (m: Map<string, string>) => [...m.keys()].filter((p) => !SPOOL.test(p)).sort();
    const held = new Set(machineRun.collector.ackedIds());
    const lost = printed.filter((id) => !held.has(id));
    const tokenHits = [...end].filter(([path, content]) => path !== 'etc/machineadm/token' && !KUBEADM_OWNED.test(path) && content.includes(TOKEN)).map(([p]) => p);
    console.log(
      `crash: ${kills} SIGKILLs over ${runs} runs in ${Math.round((Date.now() - started) / 1000)} s (a full run takes ${fullRunMs} ms); ` +
        `${problems.length} torn files; ${printed.length} events printed, ${lost.length} lost; ${tokenHits.length} files holding the token` +
        (problems.length ? `\n${[...new Set(problems.map((p) => p.replace(/^after kill \d+: /, '')))].slice(0, 10).join('\n')}` : ''),
    );
    expect(kills).toBeGreaterThanOrEqual(KILLS);
    expect(problems).toEqual([]);
    expect(names(end)).toEqual(names(expected));
    for (const [path, content] of expected) {
      if (RECORDS.test(path) || SPOOL.test(path) || path.startsWith('var/lib/kubeadm-standin/')) continue;
      expect(end.get(path), path).toBe(content);
    }
    const state = JSON.parse(end.get('var/lib/machineadm/state.json')!);
    const cleanState = JSON.parse(expected.get('var/lib/machineadm/state.json')!);
    // The last run may have found every step done ("skipped"), where the clean run did them: what
    // each step recorded, and that none failed, is what must agree.
    type Records = { steps: Record<string, { result: string; data?: unknown }> };
    const runIds = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g;
    const times = /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z/g;
    const records = (s: Records) =>
      Object.fromEntries(Object.entries(s.steps).map(([id, r]) => [id, { ok: r.result === 'success' || r.result === 'skipped', data: JSON.stringify(r.data ?? null).replace(runIds, '<run>').replace(times, '<time>') }]));
    expect(records(state)).toEqual(records(cleanState));
    expect(state.started).toBeUndefined();
    const result = JSON.parse(end.get('run/machineadm/result.json')!);
    expect(result).toMatchObject({ state: 'finished', exitCode: 0 });
    // "skipped" when the last run found everything done.
    expect(['success', 'skipped']).toContain(result.result);
    expect([...end.keys()].filter((p) => p.includes('.machineadm-tmp-'))).toEqual([]);
    expect([...end.keys()].filter((p) => SPOOL.test(p) && p.endsWith('.json'))).toEqual([]);
    expect(tokenHits).toEqual([]);
    expect(lost).toEqual([]);
  }, BUDGET_MS + 120_000);
});

