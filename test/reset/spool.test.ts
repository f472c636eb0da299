// What earlier runs left in the spool, at reset: sent first (older events first) to the endpoints of
// reset's configuration, within spec.report.deadlineSeconds, before the state directory and its
// spool are archived; what stays unsent is said, with where it went. A real collector on 127.0.0.1.
import { mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.ts';
import { scratchDir } from '../support/tmp.ts';
import { startCollector, type Collector } from '../report/collector.ts';

let collector: Collector;
beforeAll(async () => {
  collector = await startCollector();
});
afterAll(async () => {
  await collector.close();
});

function machine(deadlineSeconds = 10) {
  const dir = scratchDir('machineadm-reset-spool-');
  const m = { dir, root: join(dir, 'root'), state: join(dir, 'state'), config: join(dir, 'machine.json') };
  for (const d of ['etc', 'run']) mkdirSync(join(m.root, d), { recursive: true });
  const spec = { files: [{ path: '/etc/node-role', content: 'worker\n' }], report: { deadlineSeconds, endpoints: [{ url: collector.url }] } };
  writeFileSync(m.config, JSON.stringify({ apiVersion: 'machineadm.cluster.x-k8s.io/v1alpha1', kind: 'MachineConfig', spec }));
  return m;
}

/** The events left in the archived state directory's spool. */
function archivedSpool(m: ReturnType<typeof machine>): string[] {
  const archive = readdirSync(m.dir).find((n) => n.startsWith('state.reset-'));
  expect(archive).toBeDefined();
  const spool = join(m.dir, archive!, 'spool');
  return readdirSync(spool).flatMap((key) => readdirSync(join(spool, key)).filter((n) => n.endsWith('.json')));
}

describe('reset and the spool', () => {
  it('sends the events earlier runs spooled, older first, before the spool is archived', async () => {
    const m = machine();
    collector.mode = { kind: 'ok' };
    const init = await runCli(['init', '-c', m.config, '--root', m.root, '--state-dir', m.state, '--offline']);
    expect(init.code, init.stdout + init.stderr).toBe(0);
    const before = collector.requests.length;
    const reset = await runCli(['reset', '-c', m.config, '--root', m.root, '--state-dir', m.state]);
    expect(reset.code, reset.stdout + reset.stderr).toBe(0);
    const received = collector.requests.slice(before).flatMap((r) => r.events);
    const runs = [...new Set(received.map((e) => String(e.id).split('.')[0]))];
    // init's events (spooled offline), then reset's own.
    expect(runs).toHaveLength(2);
    const initFinished = received.find((e) => String(e.type).endsWith('run.finished') && (e.data as { command?: string }).command === 'init');
    expect(initFinished).toBeDefined();
    expect(String(received[0]!.id).split('.')[0]).toBe(String(initFinished!.id).split('.')[0]);
    expect(reset.stdout).toMatch(new RegExp(`events: ${received.length} delivered to ${collector.url}`));
    expect(archivedSpool(m)).toEqual([]);
  });

  it('says what stayed unsent when the endpoint does not take it within the deadline, or when reset is not given the endpoint', async () => {
    const failing = machine(2);
    collector.mode = { kind: 'status', status: 500 };
    expect((await runCli(['init', '-c', failing.config, '--root', failing.root, '--state-dir', failing.state, '--offline'])).code).toBe(0);
    const reset = await runCli(['reset', '-c', failing.config, '--root', failing.root, '--state-dir', failing.state]);
    expect(reset.code, reset.stdout + reset.stderr).toBe(0);
    const unsent = archivedSpool(failing);
    expect(unsent.length).toBeGreaterThan(0);
    expect(reset.stdout).toContain(`events: 0 delivered, ${unsent.length} unsent for ${collector.url} (`);
    expect(reset.stdout).toContain("they stay in the archived state directory's spool, which no later run sends");

    // Without -c (no default sources here), reset knows no endpoint: every spooled event is unsent.
    const unnamed = machine();
    expect((await runCli(['init', '-c', unnamed.config, '--root', unnamed.root, '--state-dir', unnamed.state, '--offline'])).code).toBe(0);
    const bare = await runCli(['reset', '--root', unnamed.root, '--state-dir', unnamed.state]);
    expect(bare.code, bare.stdout + bare.stderr).toBe(0);
    expect(bare.stdout).toMatch(new RegExp(`events: ${archivedSpool(unnamed).length} unsent, spooled for an endpoint this reset's configuration does not name \\(spool/[0-9a-f]{16}\\); they stay in the archived state directory; give reset the configuration with that endpoint \\(-c\\) to send them first`));
  });
});
