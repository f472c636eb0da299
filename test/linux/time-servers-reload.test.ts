// prepare/time-servers/restart decides from the records: the client is reloaded for each write of
// the file (by writtenAt), once; a reload that failed is tried again by a later run. The reload
// runs a stand-in chronyc on PATH that records its arguments and can fail like the real one.
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createHost } from '../../src/host/index.ts';
import { parseWith } from '../../src/config/schema/dsl.ts';
import { machineConfigSchema, type MachineConfig } from '../../src/config/schema/index.ts';
import { createHash } from 'node:crypto';
import { rmSync } from 'node:fs';
import type { StepContext, UndoContext } from '../../src/engine/step.ts';
import type { StepRecord } from '../../src/engine/state.ts';
import { timeServersRestartStep } from '../../src/linux/steps/time-servers.ts';
import { StepDetailsError } from '../../src/errors.ts';
import { scratchDir } from '../support/tmp.ts';

const dir = scratchDir('machineadm-time-reload-');
const bin = join(dir, 'bin');
mkdirSync(bin);
// Like chronyc: "reload sources" prints 200 OK; told to fail, it says what chronyc says without chronyd.
writeFileSync(join(bin, 'chronyc'), `#!/bin/sh\necho "$@" >> "${dir}/chronyc.log"\nif [ -e "${dir}/fail" ]; then echo "506 Cannot talk to daemon" >&2; exit 1; fi\n[ "$1 $2" = "reload sources" ] || { echo "bad arguments: $*" >&2; exit 1; }\necho "200 OK"\n`);
chmodSync(join(bin, 'chronyc'), 0o755);

const root = join(dir, 'root');
mkdirSync(join(root, 'etc/chrony'), { recursive: true });
writeFileSync(join(root, 'etc/chrony/chrony.conf'), 'sourcedir /etc/chrony/sources.d\n');
const config = parseWith(machineConfigSchema, { apiVersion: 'machineadm.cluster.x-k8s.io/v1alpha1', kind: 'MachineConfig', spec: { timeServers: { servers: ['10.0.0.1'] } } }).value as MachineConfig;
const host = createHost({ root, env: { PATH: `${bin}:/usr/bin:/bin` } });

function context(fileWrittenAt: string | undefined, previous: StepRecord | undefined): StepContext {
  const record = (data: Record<string, unknown>): StepRecord => ({ result: 'success', at: '2026-12-01T00:00:00.000Z', runId: 'r', durationMs: 1, data });
  return {
    config,
    facts: { os: 'linux', arch: 'x64', hostname: 'node-1', privileged: true, liveRoot: false },
    host,
    options: { dryRun: false, force: false },
    previous,
    startedBefore: false,
    log: () => undefined,
    output: () => undefined,
    downloadProgress: () => () => undefined,
    emit: () => undefined,
    run: { runId: 'r', command: 'prepare', failed: false, phases: [] },
    secret: async () => '',
    recordOf: (id) => (id === 'time-servers/file' && fileWrittenAt ? record({ writtenAt: fileWrittenAt }) : undefined),
    undoRecordOf: () => undefined,
  } satisfies StepContext;
}

const done = (data: Record<string, unknown>): StepRecord => ({ result: 'success', at: '2026-12-01T00:00:00.000Z', runId: 'r', durationMs: 1, data });

describe('prepare/time-servers/restart', () => {
  it('reloads once for each write of the file, and again after a reload that failed', async () => {
    // Never written by machineadm: nothing to reload.
    expect((await timeServersRestartStep.check(context(undefined, undefined))).done).toBe(true);
    // Written, never reloaded: the reload is due (shown as skipped under this scratch root).
    const due = await timeServersRestartStep.check(context('T1', undefined));
    expect(due).toMatchObject({ done: false, changes: [{ action: 'run', target: 'chronyc reload sources' }] });
    expect(await timeServersRestartStep.apply(context('T1', undefined), due)).toEqual({ record: { reloadedFor: 'T1', digest: null } });
    expect(readFileSync(join(dir, 'chronyc.log'), 'utf8')).toBe('reload sources\n');
    expect((await timeServersRestartStep.check(context('T1', done({ reloadedFor: 'T1' })))).done).toBe(true);
    // Written again by a later run.
    expect((await timeServersRestartStep.check(context('T2', done({ reloadedFor: 'T1' })))).done).toBe(false);
    writeFileSync(join(dir, 'fail'), '');
    const failed = await timeServersRestartStep.apply(context('T2', done({ reloadedFor: 'T1' })), due).catch((e: unknown) => e);
    expect(failed).toBeInstanceOf(StepDetailsError);
    expect((failed as StepDetailsError).message).toBe('chronyc reload sources exited with code 1: 506 Cannot talk to daemon');
    expect((failed as StepDetailsError).hint).toContain('the next run tries the reload again');
    // The failure left the earlier record: the next run's check still wants the reload.
    expect((await timeServersRestartStep.check(context('T2', done({ reloadedFor: 'T1' })))).done).toBe(false);
    expect(existsSync(join(root, 'etc/chrony/sources.d'))).toBe(false);
  });
});

describe('reset/time-servers/restart', () => {
  const sources = '/etc/chrony/sources.d/machineadm.sources';
  const written = '# Written by machineadm from spec.timeServers.\nserver 10.0.0.1 iburst\n';
  const digest = createHash('sha256').update(written).digest('hex');
  function undoContext(options: { previous?: StepRecord; dryRun?: boolean; givesBack?: string[] }): UndoContext {
    const base = context('T1', options.previous);
    return {
      ...base,
      // Reset is given no spec.timeServers: the client comes from the file step's record.
      config: parseWith(machineConfigSchema, { apiVersion: 'machineadm.cluster.x-k8s.io/v1alpha1', kind: 'MachineConfig', spec: {} }).value as MachineConfig,
      options: { dryRun: options.dryRun ?? false, force: false },
      recordOf: (id) => (id === 'time-servers/file' ? done({ client: 'chrony-sources', path: sources, unit: 'chrony', writtenAt: 'T1' }) : undefined),
      done: done({ reloadedFor: 'T1', digest }),
      undoRecord: undefined,
      filesToGiveBack: async () => options.givesBack ?? [],
    };
  }

  it('reloads the client once reset gave its file back, only then, and a reset run again reloads nothing', async () => {
    const undo = timeServersRestartStep.undo!;
    rmSync(join(dir, 'fail'), { force: true });
    rmSync(join(dir, 'chronyc.log'), { force: true });
    mkdirSync(join(root, 'etc/chrony/sources.d'), { recursive: true });
    writeFileSync(join(root, sources.slice(1)), written);
    // The client reads machineadm's file, and reset gives nothing back: nothing to reload.
    expect((await undo.check(undoContext({}))).done).toBe(true);
    // A plan: the file is still there, and reset/files is to give it back.
    expect(await undo.check(undoContext({ dryRun: true, givesBack: [sources] }))).toMatchObject({ done: false, changes: [{ action: 'run', target: 'chronyc reload sources', detail: `${sources} given back` }] });
    // reset/files removed it: reloaded, and the record says what the client reads now.
    rmSync(join(root, sources.slice(1)));
    const due = await undo.check(undoContext({}));
    expect(due.done).toBe(false);
    const applied = await undo.apply(undoContext({}), due);
    expect(applied).toEqual({ record: { digest: null } });
    expect(readFileSync(join(dir, 'chronyc.log'), 'utf8')).toBe('reload sources\n');
    expect((await undo.check(undoContext({ previous: done({ digest: null }) }))).done).toBe(true);
  });
});

describe('time-servers/restart for chrony whose chrony.conf machineadm changed', () => {
  const sources = '/etc/chrony/sources.d/machineadm.sources';
  const conf = '/etc/chrony/chrony.conf';
  // Like systemctl: restart takes one unit; the log keeps what it was asked.
  writeFileSync(join(bin, 'systemctl'), `#!/bin/sh\necho "$@" >> "${dir}/systemctl.log"\n[ "$1" = restart ] && [ "$#" = 2 ] || { echo "bad arguments: $*" >&2; exit 1; }\n`);
  chmodSync(join(bin, 'systemctl'), 0o755);
  const fileRecord = done({ client: 'chrony-sources', path: sources, unit: 'chrony', conf, writtenAt: 'T1' });
  const withRecord = (ctx: StepContext): StepContext => ({ ...ctx, recordOf: (id) => (id === 'time-servers/file' ? fileRecord : undefined) });

  it('restarts chrony (reload sources does not read chrony.conf again) for each write, and once more when reset gave chrony.conf back', async () => {
    rmSync(join(dir, 'chronyc.log'), { force: true });
    mkdirSync(join(root, 'run/systemd/system'), { recursive: true });
    mkdirSync(join(root, 'etc/chrony/sources.d'), { recursive: true });
    writeFileSync(join(root, sources.slice(1)), '# Written by machineadm from spec.timeServers.\nserver 10.0.0.1 iburst\n');
    writeFileSync(join(root, conf.slice(1)), '#machineadm spec.timeServers: pool 2.debian.pool.ntp.org iburst\nsourcedir /etc/chrony/sources.d\n');
    const due = await timeServersRestartStep.check(withRecord(context('T1', undefined)));
    expect(due).toMatchObject({ done: false, changes: [{ action: 'run', target: 'systemctl restart chrony', detail: `${conf} changed` }] });
    const applied = await timeServersRestartStep.apply(withRecord(context('T1', undefined)), due);
    expect(readFileSync(join(dir, 'systemctl.log'), 'utf8')).toBe('restart chrony\n');
    expect(existsSync(join(dir, 'chronyc.log'))).toBe(false);
    // reset/files gave chrony.conf back (its pool again): chrony is restarted to read it.
    const undo = timeServersRestartStep.undo!;
    const undoContext = (previous?: StepRecord): UndoContext => ({
      ...withRecord(context('T1', previous)),
      config: parseWith(machineConfigSchema, { apiVersion: 'machineadm.cluster.x-k8s.io/v1alpha1', kind: 'MachineConfig', spec: {} }).value as MachineConfig,
      done: done({ reloadedFor: 'T1', ...(applied as { record: Record<string, unknown> }).record }),
      undoRecord: undefined,
      filesToGiveBack: async () => [],
    });
    expect((await undo.check(undoContext())).done).toBe(true);
    writeFileSync(join(root, conf.slice(1)), 'pool 2.debian.pool.ntp.org iburst\nsourcedir /etc/chrony/sources.d\n');
    const given = await undo.check(undoContext());
    expect(given).toMatchObject({ done: false, changes: [{ action: 'run', target: 'systemctl restart chrony', detail: `${sources} and ${conf} given back` }] });
    const after = await undo.apply(undoContext(), given);
    expect(readFileSync(join(dir, 'systemctl.log'), 'utf8')).toBe('restart chrony\nrestart chrony\n');
    expect((await undo.check(undoContext(done((after as { record: Record<string, unknown> }).record)))).done).toBe(true);
    rmSync(join(root, 'run'), { recursive: true });
    rmSync(join(root, 'etc/chrony/sources.d'), { recursive: true });
  });
});

describe('time-servers/restart once spec.timeServers leaves the configuration', () => {
  const sources = '/etc/chrony/sources.d/machineadm.sources';
  const none = parseWith(machineConfigSchema, { apiVersion: 'machineadm.cluster.x-k8s.io/v1alpha1', kind: 'MachineConfig', spec: {} }).value as MachineConfig;
  // The file step removed machineadm's sources file (writtenAt T2) and recorded that nothing is left.
  const givenBack = (previous: StepRecord | undefined): StepContext => ({
    ...context('T2', previous),
    config: none,
    recordOf: (id) => (id === 'time-servers/file' ? done({ client: 'chrony-sources', path: sources, unit: 'chrony', writtenAt: 'T2', left: false }) : undefined),
  });

  it('reloads the client once for what the file step gave back, then records that nothing is left', async () => {
    rmSync(join(dir, 'fail'), { force: true });
    rmSync(join(dir, 'chronyc.log'), { force: true });
    expect(timeServersRestartStep.leftBehind!({ reloadedFor: 'T1', digest: 'd' })).toBe(true);
    const due = await timeServersRestartStep.check(givenBack(done({ reloadedFor: 'T1' })));
    expect(due).toMatchObject({ done: false, changes: [{ action: 'run', target: 'chronyc reload sources' }] });
    const applied = await timeServersRestartStep.apply(givenBack(done({ reloadedFor: 'T1' })), due);
    expect(applied).toEqual({ record: { reloadedFor: 'T2', left: false, digest: null } });
    expect(readFileSync(join(dir, 'chronyc.log'), 'utf8')).toBe('reload sources\n');
    // Later runs leave the step out, and would find nothing to do if they ran it.
    const record = (applied as { record: Record<string, unknown> }).record;
    expect(timeServersRestartStep.leftBehind!(record)).toBe(false);
    expect((await timeServersRestartStep.check(givenBack(done(record)))).done).toBe(true);
  });
});
