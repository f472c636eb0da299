// prepare/time-servers/file and prepare/time-servers/restart: the NTP servers for chrony or
// systemd-timesyncd, whichever the machine has, and a reload of that client only when the file
// changed (in this run, or in an earlier one whose reload did not happen). Once spec.timeServers
// is taken out of the configuration, both run until the client has what it had back.
import { createHash } from 'node:crypto';
import type { ApplyResult, CheckResult, Step, StepContext, Undo, UndoContext } from '../../engine/step.ts';
import { ConfigError, StepDetailsError } from '../../errors.ts';
import { inspectFile, writeFiles, type DesiredFile } from '../../engine/managed-file.ts';
import { liveSkipReason } from '../live.ts';
import { TIMESYNCD_DROP_IN, blockAddsNewline, detectTimeClient, reloadArgv, renderChronySources, renderTimesyncd, withChronyBlock, withoutImageSources, type TimeClient } from '../time-servers.ts';
import { giveBack, otherSourcesFiles, recordedClient } from './time-servers-give-back.ts';

const FIELD = 'spec.timeServers.servers';

const asked = (ctx: StepContext): boolean => ctx.config.spec.timeServers !== undefined;

async function clientOf(ctx: StepContext): Promise<TimeClient> {
  const found = await detectTimeClient(ctx.host.fs);
  if (found) return found;
  // A scratch root holds only what the operator put there: systemd's own client is assumed.
  if (!ctx.host.fs.isLiveRoot) return { kind: 'timesyncd', path: TIMESYNCD_DROP_IN, unit: 'systemd-timesyncd', assumed: true };
  throw new ConfigError([{ path: 'spec.timeServers', message: 'neither chrony (/etc/chrony/chrony.conf, /etc/chrony.conf) nor systemd-timesyncd is on this machine', hint: 'install chrony or systemd-timesyncd in the image, or leave spec.timeServers out' }]);
}

/** The files the client gets: its servers, and for chrony its chrony.conf without the image's sources. */
async function desiredFiles(ctx: StepContext, client: TimeClient): Promise<DesiredFile[]> {
  const servers = ctx.config.spec.timeServers!.servers;
  if (client.kind === 'timesyncd') return [{ path: client.path, content: Buffer.from(renderTimesyncd(servers)), mode: 0o644, field: FIELD }];
  const confPath = client.kind === 'chrony-block' ? client.path : client.conf!;
  const conf = (await ctx.host.fs.readText(confPath)) ?? '';
  // chrony.conf keeps the mode it has.
  const confFile = { path: confPath, mode: (await ctx.host.fs.stat(confPath))?.mode ?? 0o644, field: FIELD };
  if (client.kind === 'chrony-block') return [{ ...confFile, content: Buffer.from(withChronyBlock(withoutImageSources(conf), servers)) }];
  const sourcesDir = client.path.slice(0, client.path.lastIndexOf('/'));
  return [
    { path: client.path, content: Buffer.from(renderChronySources(servers)), mode: 0o644, field: FIELD },
    { ...confFile, content: Buffer.from(withoutImageSources(conf, sourcesDir)) },
    // The image's other .sources files there, their server, pool and peer lines turned off
    // (Ubuntu ships its pools as ubuntu-ntp-pools.sources there from 25.04 on).
    ...(await otherSourcesFiles(ctx, sourcesDir, client.path, (text) => withoutImageSources(text), FIELD)),
  ];
}

/** Whether chrony's chrony.conf beside its sources file is to change (then chrony is restarted, not reloaded). */
async function sourcesConfChanges(ctx: StepContext, client: TimeClient): Promise<boolean> {
  if (client.kind !== 'chrony-sources') return false;
  const conf = (await desiredFiles(ctx, client)).find((f) => f.path === client.conf)!;
  const now = await ctx.host.fs.readFile(conf.path);
  return now === undefined || !now.equals(conf.content);
}

/** Inspects every file of the client; a target machineadm must not write is refused, naming the field. */
async function inspectAll(ctx: StepContext, files: readonly DesiredFile[]): Promise<Awaited<ReturnType<typeof inspectFile>>[]> {
  const states = [];
  for (const file of files) {
    states.push(
      await inspectFile(ctx.host.fs, file, ctx.facts.privileged).catch((error: unknown) => {
        throw new ConfigError([{ path: FIELD, message: error instanceof Error ? error.message.replace(`${FIELD}: `, '') : String(error) }]);
      }),
    );
  }
  return states;
}

function describe(client: TimeClient, path: string): string {
  if (client.kind === 'timesyncd') return client.assumed ? 'systemd-timesyncd (neither chrony nor timesyncd found under the root: timesyncd assumed)' : 'systemd-timesyncd';
  const off = "the image's server, pool, peer and sourcedir (under /etc) lines commented out";
  if (client.kind === 'chrony-block') return `chrony (a marked block in its chrony.conf: it has no sourcedir under /etc; ${off})`;
  if (path === client.path) return 'chrony (a sources file in its sourcedir)';
  return path === client.conf ? `chrony (${off}, so that it uses its sources file only)` : "chrony (the image's server, pool and peer lines of another sources file beside machineadm's commented out)";
}

export const timeServersFileStep: Step = {
  id: 'time-servers/file',
  summary: 'write the NTP servers for chrony or systemd-timesyncd',
  applies: (config) => config.spec.timeServers !== undefined,
  // Without spec.timeServers too, until a run gave the client back what it had (a record without
  // `left` is of a run that wrote for spec.timeServers).
  leftBehind: (earlier) => earlier?.left !== false,
  async preflight(ctx) {
    if (!asked(ctx)) {
      const back = await giveBack(ctx);
      if (back) await inspectAll(ctx, back.files);
      return;
    }
    if (ctx.facts.os === 'windows') throw new ConfigError([{ path: 'spec.timeServers', message: 'time servers are set on Linux only', hint: 'set them on Windows through a group policy or a boot command (w32tm /config /manualpeerlist:...)' }]);
    const client = await clientOf(ctx);
    // A link or a directory at a path is refused now, not halfway through the run.
    await inspectAll(ctx, await desiredFiles(ctx, client));
  },
  async check(ctx): Promise<CheckResult> {
    if (!asked(ctx)) return checkGiveBack(ctx);
    if (ctx.facts.os === 'windows') return { done: false, changes: [{ action: 'refuse', target: 'spec.timeServers', detail: 'time servers are set on Linux only' }] };
    const client = await clientOf(ctx);
    const desired = await desiredFiles(ctx, client);
    // What the preflight refuses shows in the plan as a refusal, with the plan of the other steps.
    const changes = [];
    for (const file of desired) {
      const state = await inspectAll(ctx, [file]).catch((error: unknown) => ({ refused: error instanceof ConfigError ? error.issues[0]!.message : String(error) }));
      if ('refused' in state) return { done: false, changes: [{ action: 'refuse', target: file.path, detail: state.refused }] };
      const change = state[0]!.change;
      if (change) changes.push({ ...change, detail: `${change.detail ?? ''}; for ${describe(client, file.path)}` });
    }
    return changes.length === 0 ? { done: true, changes: [] } : { done: false, changes };
  },
  async apply(ctx) {
    if (!asked(ctx)) return applyGiveBack(ctx);
    const client = await clientOf(ctx);
    const confChanged = await sourcesConfChanges(ctx, client);
    // The newline ending chrony.conf's last line for the block goes with the block.
    const newlineAdded = client.kind === 'chrony-block' && (ctx.previous?.data?.newlineAdded === true || blockAddsNewline((await ctx.host.fs.readText(client.path)) ?? '')) ? { newlineAdded: true } : {};
    await writeFiles(ctx.host.fs, await desiredFiles(ctx, client), ctx.facts.privileged);
    // chrony whose chrony.conf machineadm changed (in this run or an earlier one) is restarted for
    // each write, and reset restarts it once it gave chrony.conf back: the record keeps its path.
    const conf = client.kind === 'chrony-sources' && (confChanged || typeof ctx.previous?.data?.conf === 'string') ? { conf: client.conf } : {};
    // The restart step reloads the client for this write (see below).
    return { record: { client: client.kind, path: client.path, unit: client.unit, ...conf, ...newlineAdded, writtenAt: ctx.host.now().toISOString() } };
  },
};

const NO_LONGER = 'spec.timeServers is no longer set';

async function checkGiveBack(ctx: StepContext): Promise<CheckResult> {
  const back = await giveBack(ctx);
  const changes = back ? back.remove.map((path) => ({ action: 'delete', target: path, detail: `${NO_LONGER}; ${back.client.unit} gets back what it had` })) : [];
  for (const file of back?.files ?? []) {
    const state = await inspectAll(ctx, [file]).catch((error: unknown) => ({ refused: error instanceof ConfigError ? error.issues[0]!.message : String(error) }));
    if ('refused' in state) return { done: false, changes: [{ action: 'refuse', target: file.path, detail: state.refused }] };
    const change = state[0]!.change;
    if (change) changes.push({ ...change, detail: `${change.detail ?? ''}; ${NO_LONGER}: machineadm's lines taken out, the ones it turned off given back` });
  }
  // Nothing is left: the record says so, and later runs leave the step out.
  return changes.length ? { done: false, changes } : { done: true, changes: [], record: { ...ctx.previous?.data, left: false } };
}

async function applyGiveBack(ctx: StepContext): Promise<ApplyResult> {
  const back = (await giveBack(ctx))!;
  const states = await writeFiles(ctx.host.fs, back.files, ctx.facts.privileged);
  for (const path of back.remove) await ctx.host.fs.remove(path);
  // chrony whose chrony.conf changes now (or did in an earlier run) is restarted, not reloaded.
  const confChanged = back.conf !== undefined && states.some((s) => s.desired.path === back.conf && s.change !== undefined);
  const { client } = back;
  const conf = client.kind === 'chrony-sources' && (confChanged || client.conf !== undefined) ? { conf: back.conf ?? client.conf } : {};
  return { record: { client: client.kind, path: client.path, unit: client.unit, ...conf, writtenAt: ctx.host.now().toISOString(), left: false } };
}

/** Whether the file step wrote in this run (or plans to), or wrote in an earlier run whose reload did not happen. */
function reloadNeeded(ctx: StepContext): string | undefined {
  const file = ctx.run.phases.flatMap((p) => p.steps).find((s) => s.id.endsWith('/time-servers/file'));
  const writtenAt = ctx.recordOf('time-servers/file')?.data?.writtenAt;
  if (ctx.options.dryRun && file?.result === 'success') return 'planned';
  if (typeof writtenAt !== 'string') return undefined;
  return ctx.previous?.data?.reloadedFor === writtenAt ? undefined : writtenAt;
}

export const timeServersRestartStep: Step = {
  id: 'time-servers/restart',
  summary: 'make the time client read its servers again when they changed',
  platforms: ['linux'],
  applies: (config) => config.spec.timeServers !== undefined,
  // Without spec.timeServers too, until the client was reloaded for what the file step gave back.
  leftBehind: (earlier) => earlier?.left !== false,
  async check(ctx): Promise<CheckResult> {
    const needed = reloadNeeded(ctx);
    const gone = givenBack(ctx);
    if (!needed) return { done: true, changes: [], ...(gone ? { record: { ...ctx.previous?.data, left: false } } : {}) };
    const client = await reloadedClient(ctx);
    const conf = await restartsFor(ctx, client);
    const changes = [{ action: 'run', target: reloadArgv(client, conf !== undefined).join(' '), detail: `${conf ?? client.path} changed` }];
    const skip = liveSkipReason(ctx.host);
    return { done: false, changes, ...(skip ? { skipReason: skip } : {}) };
  },
  async apply(ctx) {
    const writtenAt = reloadNeeded(ctx)!;
    const client = await reloadedClient(ctx);
    const conf = await restartsFor(ctx, client);
    return reload(ctx, client, conf, { reloadedFor: writtenAt, ...(givenBack(ctx) ? { left: false } : {}) }, `${client.path} is written; the next run tries the reload again`);
  },
  undo: undoReload(),
};

/** Whether spec.timeServers is gone and the file step gave the client back what it had (or plans to, in a plan). */
function givenBack(ctx: StepContext): boolean {
  return !asked(ctx) && (ctx.options.dryRun || ctx.recordOf('time-servers/file')?.data?.left === false);
}

/** The client to reload: the one the configuration's servers are for, or once it has none, the one they were written for. */
async function reloadedClient(ctx: StepContext): Promise<TimeClient> {
  if (asked(ctx)) return clientOf(ctx);
  return recordedClient(ctx) ?? clientOf(ctx);
}

/**
 * The chrony.conf beside chrony's sources file that machineadm changed (by the file step's record),
 * or is to change (in a plan): chrony is then restarted, as `chronyc reload sources` reads only its
 * sourcedirs. Undefined for the other clients.
 */
async function restartsFor(ctx: StepContext, client: TimeClient): Promise<string | undefined> {
  if (client.kind !== 'chrony-sources') return undefined;
  const recorded = ctx.recordOf('time-servers/file')?.data?.conf;
  if (typeof recorded === 'string') return recorded;
  if (!asked(ctx)) return undefined;
  return (await sourcesConfChanges(ctx, client)) ? client.conf : undefined;
}

/**
 * The content the client was last made to read, by digest (null: the file was not there). With
 * chrony.conf recorded beside chrony's sources file, of both (records without it: of the one file).
 */
async function digestOf(ctx: StepContext, path: string, conf: string | undefined): Promise<string | null> {
  const one = async (p: string) => {
    const content = await ctx.host.fs.readFile(p);
    return content === undefined ? null : createHash('sha256').update(content).digest('hex');
  };
  if (conf === undefined) return one(path);
  return createHash('sha256').update(`${await one(path)} ${await one(conf)}`).digest('hex');
}

/**
 * Makes the client read its servers again (chrony whose chrony.conf `conf` machineadm changed is
 * restarted); the record keeps the content it now reads (for reset).
 */
async function reload(ctx: StepContext, client: TimeClient, conf: string | undefined, record: Record<string, unknown>, hint: string): Promise<ApplyResult> {
  const argv = reloadArgv(client, conf !== undefined);
  const digest = await digestOf(ctx, client.path, conf);
  // In a container without systemd as init there is no service to restart: said, not failed.
  if (argv[0] === 'systemctl' && !(await ctx.host.fs.exists('/run/systemd/system'))) {
    return { record: { ...record, digest }, warning: `${client.unit} was not restarted: systemd is not running on this machine (no /run/systemd/system); restart it yourself so it reads ${client.path}` };
  }
  const result = await ctx.host.proc.run(argv, { timeoutMs: 60_000, allowFailure: true });
  if (result.exitCode !== 0) {
    throw new StepDetailsError(`${argv.join(' ')} exited with code ${result.exitCode}: ${result.stderr.trim().split('\n')[0] ?? ''}`, { command: argv.join(' '), exitCode: result.exitCode }, { hint });
  }
  ctx.log(`${argv.join(' ')}: ${client.unit} reads ${client.path} again`);
  return { record: { ...record, digest } };
}

/**
 * reset: once reset/files gave the time client's file back (or removed it), the client reads it
 * again, only when machineadm made it read its own and the content now differs from that (as
 * containerd's restart). A reset run again after that reloads nothing: its own record says so.
 */
function undoReload(): Undo {
  const pending = async (ctx: UndoContext): Promise<{ client: TimeClient; conf: string | undefined; digest: string | null } | undefined> => {
    if (typeof ctx.done?.data?.reloadedFor !== 'string') return undefined;
    const client = recordedClient(ctx);
    if (!client) return undefined;
    const conf = client.kind === 'chrony-sources' ? client.conf : undefined;
    const digest = await digestOf(ctx, client.path, conf);
    const seen = ctx.previous?.data && 'digest' in ctx.previous.data ? ctx.previous.data.digest : ctx.done.data.digest;
    // A record from before digests: reloaded once (then this step's own record has one).
    if (seen === undefined) return { client, conf, digest };
    const paths = [client.path, ...(conf ? [conf] : [])];
    if (seen !== digest || (ctx.options.dryRun && (await ctx.filesToGiveBack()).some((p) => paths.includes(p)))) return { client, conf, digest };
    return undefined;
  };
  return {
    summary: 'make the time client read its servers again once reset gave its file back',
    when: 'after-files',
    async check(ctx) {
      const found = await pending(ctx);
      if (!found) return { done: true, changes: [] };
      const { client, conf } = found;
      const changes = [{ action: 'run', target: reloadArgv(client, conf !== undefined).join(' '), detail: `${conf ? `${client.path} and ${conf}` : client.path} given back` }];
      const skip = liveSkipReason(ctx.host);
      return { done: false, changes, ...(skip ? { skipReason: skip } : {}) };
    },
    async apply(ctx) {
      const found = await pending(ctx);
      if (!found) return {};
      return reload(ctx, found.client, found.conf, {}, `${found.client.path} is given back; run reset again to reload ${found.client.unit}`);
    },
  };
}
