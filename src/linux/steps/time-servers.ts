// prepare/time-servers/file and prepare/time-servers/restart: the NTP servers for chrony or
// systemd-timesyncd, whichever the machine has, and a reload of that client only when the file
// changed (in this run, or in an earlier one whose reload did not happen).
import { createHash } from 'node:crypto';
import type { ApplyResult, CheckResult, Step, StepContext, Undo, UndoContext } from '../../engine/step.ts';
import { ConfigError, StepDetailsError } from '../../errors.ts';
import { inspectFile, writeFiles, type DesiredFile } from '../../engine/managed-file.ts';
import { liveSkipReason } from '../live.ts';
import { TIMESYNCD_DROP_IN, detectTimeClient, reloadArgv, renderChronySources, renderTimesyncd, withChronyBlock, type TimeClient } from '../time-servers.ts';

const FIELD = 'spec.timeServers.servers';

async function clientOf(ctx: StepContext): Promise<TimeClient> {
  const found = await detectTimeClient(ctx.host.fs);
  if (found) return found;
  // A scratch root holds only what the operator put there: systemd's own client is assumed.
  if (!ctx.host.fs.isLiveRoot) return { kind: 'timesyncd', path: TIMESYNCD_DROP_IN, unit: 'systemd-timesyncd', assumed: true };
  throw new ConfigError([{ path: 'spec.timeServers', message: 'neither chrony (/etc/chrony/chrony.conf, /etc/chrony.conf) nor systemd-timesyncd is on this machine', hint: 'install chrony or systemd-timesyncd in the image, or leave spec.timeServers out' }]);
}

async function desiredFile(ctx: StepContext, client: TimeClient): Promise<DesiredFile> {
  const servers = ctx.config.spec.timeServers!.servers;
  const content =
    client.kind === 'chrony-block' ? withChronyBlock((await ctx.host.fs.readText(client.path)) ?? '', servers) : client.kind === 'chrony-sources' ? renderChronySources(servers) : renderTimesyncd(servers);
  // chrony.conf keeps the mode it has.
  const mode = client.kind === 'chrony-block' ? ((await ctx.host.fs.stat(client.path))?.mode ?? 0o644) : 0o644;
  return { path: client.path, content: Buffer.from(content), mode, field: FIELD };
}

function describe(client: TimeClient): string {
  if (client.kind === 'timesyncd') return client.assumed ? 'systemd-timesyncd (neither chrony nor timesyncd found under the root: timesyncd assumed)' : 'systemd-timesyncd';
  return client.kind === 'chrony-sources' ? 'chrony (a sources file in its sourcedir)' : 'chrony (a marked block in its chrony.conf: it has no sourcedir under /etc)';
}

export const timeServersFileStep: Step = {
  id: 'time-servers/file',
  summary: 'write the NTP servers for chrony or systemd-timesyncd',
  applies: (config) => config.spec.timeServers !== undefined,
  async preflight(ctx) {
    if (ctx.facts.os === 'windows') throw new ConfigError([{ path: 'spec.timeServers', message: 'time servers are set on Linux only', hint: 'set them on Windows through a group policy or a boot command (w32tm /config /manualpeerlist:...)' }]);
    const client = await clientOf(ctx);
    // A link or a directory at the path is refused now, not halfway through the run.
    await inspectFile(ctx.host.fs, await desiredFile(ctx, client), ctx.facts.privileged).catch((error: unknown) => {
      throw new ConfigError([{ path: FIELD, message: error instanceof Error ? error.message.replace(`${FIELD}: `, '') : String(error) }]);
    });
  },
  async check(ctx): Promise<CheckResult> {
    if (ctx.facts.os === 'windows') return { done: false, changes: [{ action: 'refuse', target: 'spec.timeServers', detail: 'time servers are set on Linux only' }] };
    const client = await clientOf(ctx);
    const desired = await desiredFile(ctx, client);
    // What the preflight refuses shows in the plan as a refusal, with the plan of the other steps.
    const state = await inspectFile(ctx.host.fs, desired, ctx.facts.privileged).catch((error: unknown) => ({ refused: error instanceof Error ? error.message.replace(`${FIELD}: `, '') : String(error) }));
    if ('refused' in state) return { done: false, changes: [{ action: 'refuse', target: desired.path, detail: state.refused }] };
    if (!state.change) return { done: true, changes: [] };
    return { done: false, changes: [{ ...state.change, detail: `${state.change.detail ?? ''}; for ${describe(client)}` }] };
  },
  async apply(ctx) {
    const client = await clientOf(ctx);
    await writeFiles(ctx.host.fs, [await desiredFile(ctx, client)], ctx.facts.privileged);
    // The restart step reloads the client for this write (see below).
    return { record: { client: client.kind, path: client.path, unit: client.unit, writtenAt: ctx.host.now().toISOString() } };
  },
};

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
  async check(ctx): Promise<CheckResult> {
    const needed = reloadNeeded(ctx);
    if (!needed) return { done: true, changes: [] };
    const client = await clientOf(ctx);
    const changes = [{ action: 'run', target: reloadArgv(client).join(' '), detail: `${client.path} changed` }];
    const skip = liveSkipReason(ctx.host);
    return { done: false, changes, ...(skip ? { skipReason: skip } : {}) };
  },
  async apply(ctx) {
    const writtenAt = reloadNeeded(ctx)!;
    const client = await clientOf(ctx);
    return reload(ctx, client, { reloadedFor: writtenAt }, `${client.path} is written; the next run tries the reload again`);
  },
  undo: undoReload(),
};

/** The content the client was last made to read, by digest (null: the file was not there). */
async function digestOf(ctx: StepContext, path: string): Promise<string | null> {
  const content = await ctx.host.fs.readFile(path);
  return content === undefined ? null : createHash('sha256').update(content).digest('hex');
}

/** Makes the client read its servers again; the record keeps the content it now reads (for reset). */
async function reload(ctx: StepContext, client: TimeClient, record: Record<string, unknown>, hint: string): Promise<ApplyResult> {
  const argv = reloadArgv(client);
  const digest = await digestOf(ctx, client.path);
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

/** The client and file the file step wrote for, from its record (reset has no spec.timeServers). */
function recordedClient(ctx: UndoContext): TimeClient | undefined {
  const data = ctx.recordOf('time-servers/file')?.data;
  if (typeof data?.client !== 'string' || typeof data.path !== 'string' || typeof data.unit !== 'string') return undefined;
  return { kind: data.client as TimeClient['kind'], path: data.path, unit: data.unit } as TimeClient;
}

/**
 * reset: once reset/files gave the time client's file back (or removed it), the client reads it
 * again, only when machineadm made it read its own and the content now differs from that (as
 * containerd's restart). A reset run again after that reloads nothing: its own record says so.
 */
function undoReload(): Undo {
  const pending = async (ctx: UndoContext): Promise<{ client: TimeClient; digest: string | null } | undefined> => {
    if (typeof ctx.done?.data?.reloadedFor !== 'string') return undefined;
    const client = recordedClient(ctx);
    if (!client) return undefined;
    const digest = await digestOf(ctx, client.path);
    const seen = ctx.previous?.data && 'digest' in ctx.previous.data ? ctx.previous.data.digest : ctx.done.data.digest;
    // A record from before digests: reloaded once (then this step's own record has one).
    if (seen === undefined) return { client, digest };
    if (seen !== digest || (ctx.options.dryRun && (await ctx.filesToGiveBack()).includes(client.path))) return { client, digest };
    return undefined;
  };
  return {
    summary: 'make the time client read its servers again once reset gave its file back',
    when: 'after-files',
    async check(ctx) {
      const found = await pending(ctx);
      if (!found) return { done: true, changes: [] };
      const changes = [{ action: 'run', target: reloadArgv(found.client).join(' '), detail: `${found.client.path} given back` }];
      const skip = liveSkipReason(ctx.host);
      return { done: false, changes, ...(skip ? { skipReason: skip } : {}) };
    },
    async apply(ctx) {
      const found = await pending(ctx);
      if (!found) return {};
      return reload(ctx, found.client, {}, `${found.client.path} is given back; run reset again to reload ${found.client.unit}`);
    },
  };
}
