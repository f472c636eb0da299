// What prepare/time-servers/file gives back once spec.timeServers is taken out of the
// configuration: machineadm's own file removed, its block taken out of chrony.conf, and the
// image's source lines it turned off turned on again, for the client its record names.
import type { StepContext } from '../../engine/step.ts';
import type { DesiredFile } from '../../engine/managed-file.ts';
import { chronyConfOf, withChronySourcesBack, type TimeClient } from '../time-servers.ts';

/** The field named when a file given back is refused (a link planted at its path). */
const FIELD = 'spec.timeServers';

/** The client and file the file step wrote for, from its record (the configuration no longer says). */
export function recordedClient(ctx: Pick<StepContext, 'recordOf'>): TimeClient | undefined {
  const data = ctx.recordOf('time-servers/file')?.data;
  if (typeof data?.client !== 'string' || typeof data.path !== 'string' || typeof data.unit !== 'string') return undefined;
  return { kind: data.client as TimeClient['kind'], path: data.path, unit: data.unit, ...(typeof data.conf === 'string' ? { conf: data.conf } : {}) } as TimeClient;
}

/**
 * The other .sources files of the sourcedir machineadm writes its own into, each as `content`
 * makes it. One spec.files writes is the operator's word, and a link is not followed: both are left.
 */
export async function otherSourcesFiles(ctx: StepContext, dir: string, ours: string, content: (text: string) => string, field: string): Promise<DesiredFile[]> {
  const written = new Set((ctx.config.spec.files ?? []).map((f) => f.path));
  const out: DesiredFile[] = [];
  for (const name of (await ctx.host.fs.list(dir).catch(() => [] as string[])).sort()) {
    const path = `${dir}/${name}`;
    if (!name.endsWith('.sources') || path === ours || written.has(path)) continue;
    const info = await ctx.host.fs.stat(path);
    const text = info?.kind === 'file' ? await ctx.host.fs.readText(path) : undefined;
    if (text !== undefined) out.push({ path, content: Buffer.from(content(text)), mode: info!.mode, field });
  }
  return out;
}

export interface GiveBack {
  client: TimeClient;
  /** machineadm's own files still there. */
  remove: string[];
  /** The client's other files as they are once given back (those already so too). */
  files: DesiredFile[];
  /** The chrony.conf beside chrony's sources file, when it is among `files`. */
  conf?: string;
}

/** What is to be given back for the client the file step's record names; undefined when it names none. */
export async function giveBack(ctx: StepContext): Promise<GiveBack | undefined> {
  const client = recordedClient(ctx);
  if (!client) return undefined;
  const remove = client.kind === 'chrony-block' || (await ctx.host.fs.stat(client.path)) === undefined ? [] : [client.path];
  if (client.kind === 'timesyncd') return { client, remove, files: [] };
  const newlineAdded = ctx.recordOf('time-servers/file')?.data?.newlineAdded === true;
  const conf = client.kind === 'chrony-block' ? client.path : (client.conf ?? chronyConfOf(client.unit));
  const files: DesiredFile[] = [];
  const info = conf === undefined ? undefined : await ctx.host.fs.stat(conf);
  const text = info?.kind === 'file' ? await ctx.host.fs.readText(conf!) : undefined;
  if (text !== undefined) files.push({ path: conf!, content: Buffer.from(withChronySourcesBack(text, newlineAdded)), mode: info!.mode, field: FIELD });
  if (client.kind === 'chrony-block') return { client, remove, files };
  const dir = client.path.slice(0, client.path.lastIndexOf('/'));
  files.push(...(await otherSourcesFiles(ctx, dir, client.path, (t) => withChronySourcesBack(t), FIELD)));
  return { client, remove, files, ...(text !== undefined ? { conf } : {}) };
}
