// prepare/kubernetes/install: what a standard image lacks to become a node, from the Kubernetes
// release (or a mirror): kubeadm, the kubelet and kubectl, crictl and the CNI plugins. Each piece
// is checked against its sha256 (pinned, or from URL.sha256 beside it: integrity, not
// authenticity) before anything is put in place, and all are placed or none: every download and
// every file of an archive goes into a checked temporary file beside its target first.
import { createHash } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import type { CheckResult, EarlyWork, Step, StepContext } from '../../engine/step.ts';
import { sinceProcessStart } from '../../engine/timing.ts';
import type { PendingFile } from '../../host/index.ts';
import { ConfigError, ExitCode, MachineadmError, StepDetailsError, type ConfigIssue } from '../../errors.ts';
import { fetchVerified, fetchVerifiedPending } from '../../verify/fetch.ts';
import { downloadSmall } from '../../host/download-small.ts';
import { displayUrl } from '../../redaction.ts';
import { errorForField, formatMode } from '../../engine/managed-file.ts';
import { artifacts, binaryDirectory, inFolder, parseSha256File, releaseArch, type Artifact, type InstallSpec } from '../../config/install-layout.ts';

const MODE = 0o755;
/** Where archives are unpacked while the step runs (gone after it; a killed run's leftover). */
const STAGES = { linux: '/run/machineadm/install', windows: 'C:\\ProgramData\\machineadm\\install' } as const;
const stageOf = (ctx: StepContext): string => STAGES[ctx.facts.os];
const SHA256_FILE_BYTES = 4096;

interface Planned {
  artifact: Artifact;
  /** The sha256 to check, when known (pinned, or read from URL.sha256). */
  sha256: string | undefined;
  /** 'create', 'replace', 'extract', 'chmod' (the bytes in place, not their mode or owner), or undefined when in place. */
  action: string | undefined;
  detail: string;
  /** A different file at a binary's path, to refuse unless replace is set. */
  conflict?: string;
}

interface InstallRecord {
  version: string;
  /** Installed file -> its sha256. */
  files: Record<string, string>;
  /** Archive name -> the archive's sha256 and the files it gave. */
  archives: Record<string, { sha256: string; files: string[] }>;
  /** Piece name -> the URL and the sha256 it was checked against: an --offline rerun cannot read URL.sha256. */
  sources?: Record<string, { url: string; sha256: string }>;
}

function installOf(ctx: StepContext): InstallSpec {
  return ctx.config.spec.kubernetes!.install!;
}

/** Whether /usr is mounted read-only on this machine (an immutable image), from /proc/self/mountinfo. */
export async function usrReadOnly(ctx: StepContext): Promise<boolean> {
  const text = (await ctx.host.fs.readText('/proc/self/mountinfo').catch(() => undefined)) ?? '';
  let best: { point: string; ro: boolean } | undefined;
  for (const line of text.split('\n')) {
    // ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS ...
    const fields = line.split(' ');
    const point = fields[4];
    if (point === undefined || !(point === '/' || point === '/usr' || '/usr'.startsWith(`${point}/`))) continue;
    if (!best || point.length >= best.point.length) best = { point, ro: (fields[5] ?? '').split(',').includes('ro') };
  }
  return best?.ro ?? false;
}

export async function installDirectory(ctx: StepContext): Promise<string> {
  return binaryDirectory(ctx.config, ctx.facts.os, ctx.facts.os === 'linux' && (await usrReadOnly(ctx)));
}

// The sha256 read from URL.sha256 is read once a run: the plan's check and the step's get the same.
const published = new WeakMap<object, Map<string, Promise<string>>>();

async function expectedSha256(ctx: StepContext, artifact: Artifact): Promise<string | undefined> {
  if (artifact.sha256) return artifact.sha256;
  if (ctx.host.offline && !artifact.url.startsWith('file:')) return undefined;
  const cache = published.get(ctx.host) ?? new Map<string, Promise<string>>();
  published.set(ctx.host, cache);
  let found = cache.get(artifact.url);
  if (!found) {
    // A local release (a bundle, a mounted mirror) has its .sha256 files beside it too.
    const read = artifact.url.startsWith('file:')
      ? readLocalSmall(ctx, artifact)
      : downloadSmall(ctx.host, [`${artifact.url}.sha256`], { maxBytes: SHA256_FILE_BYTES }).then((r) => r.data);
    found = read.then((data) => {
      const hex = parseSha256File(data.toString('utf8'));
      if (!hex) throw new StepDetailsError(`${displayUrl(artifact.url)}.sha256 holds no sha256`, { field: artifact.field }, { hint: 'point the URL at the release layout, or pin the sha256 in the configuration' });
      return hex;
    });
    cache.set(artifact.url, found);
    found.catch(() => cache.delete(artifact.url));
  }
  return found;
}

async function readLocalSmall(ctx: StepContext, artifact: Artifact): Promise<Buffer> {
  const url = `${artifact.url}.sha256`;
  const found = await ctx.host.local.readSmallFile(fileURLToPath(url), SHA256_FILE_BYTES);
  // Neither the piece nor its .sha256: a bundle (or a local mirror) made for other platforms only.
  if ('problem' in found && found.problem === 'missing' && !(await ctx.host.local.exists(fileURLToPath(artifact.url)))) {
    const platform = `${ctx.facts.os}/${releaseArch(ctx.facts.arch)}`;
    throw new ConfigError([{
      path: artifact.field,
      message: `${displayUrl(artifact.url)} does not exist: the local release has nothing for this machine's platform, ${platform}`,
      hint: `make the bundle for it (machineadm bundle --platform ${ctx.facts.os}-${ctx.facts.arch}), or point ${artifact.field} at a release that has it`,
    }]);
  }
  if ('problem' in found) throw new StepDetailsError(`${url}: ${found.problem === 'missing' ? 'does not exist' : 'is not a small file'}`, {}, { hint: 'put the release\'s .sha256 files beside its files, or pin the sha256 in the configuration' });
  return found.bytes;
}

async function sha256Of(ctx: StepContext, path: string): Promise<string | undefined> {
  const info = await ctx.host.fs.stat(path);
  if (info?.kind !== 'file') return info ? 'not a file' : undefined;
  const hash = createHash('sha256');
  for await (const block of ctx.host.fs.readBlocks(path)) hash.update(block);
  return hash.digest('hex');
}

/** How a binary's mode and owner differ from 0755 and root's, as a plan says it; undefined when they do not. */
async function attributesToFix(ctx: StepContext, path: string): Promise<string | undefined> {
  // A Windows file has no Unix mode: its ACL comes from its folder, locked before the step.
  if (ctx.facts.os === 'windows') return undefined;
  const info = await ctx.host.fs.stat(path);
  if (info?.kind !== 'file') return undefined;
  const details: string[] = [];
  if (info.mode !== MODE) details.push(`mode ${formatMode(info.mode)} -> ${formatMode(MODE)}`);
  if (ctx.facts.privileged && (info.uid !== 0 || info.gid !== 0)) details.push(`owner ${info.uid}:${info.gid} -> 0:0`);
  return details.length ? details.join(', ') : undefined;
}

function previous(ctx: StepContext): InstallRecord | undefined {
  return ctx.previous?.data as InstallRecord | undefined;
}

async function plan(ctx: StepContext): Promise<Planned[]> {
  const install = installOf(ctx);
  const version = ctx.config.spec.kubernetes!.version!;
  const directory = await installDirectory(ctx);
  const list = artifacts(install, version, ctx.facts.arch, directory, ctx.facts.os);
  return Promise.all(
    list.map(async (artifact): Promise<Planned> => {
      const known = previous(ctx)?.sources?.[artifact.name];
      const sha256 = (await expectedSha256(ctx, artifact)) ?? (known?.url === artifact.url ? known.sha256 : undefined);
      const from = `from ${displayUrl(artifact.url)} (sha256 ${sha256 ? `${sha256.slice(0, 12)}...` : 'from URL.sha256'}${artifact.sha256 ? ', pinned' : ''})`;
      if ('path' in artifact.install) {
        const on = await sha256Of(ctx, artifact.install.path);
        if (on === undefined) return { artifact, sha256, action: 'create', detail: `${artifact.name} ${version} ${from}, mode 0755` };
        if (sha256 !== undefined && on === sha256) {
          // The right bytes are not enough: systemd cannot run a kubelet left 0644 (Ignition's mode
          // for a file given none), and one others may write runs as root.
          const attributes = await attributesToFix(ctx, artifact.install.path);
          return attributes ? { artifact, sha256, action: 'chmod', detail: `${attributes} (${artifact.name} ${version} is in place)` } : { artifact, sha256, action: undefined, detail: '' };
        }
        const mine = previous(ctx)?.files[artifact.install.path] === on;
        return { artifact, sha256, action: 'replace', detail: `${artifact.name} ${version} ${from}; ${mine ? 'the one machineadm installed before' : 'another file is there'}`, ...(mine ? {} : { conflict: on }) };
      }
      const had = previous(ctx)?.archives[artifact.name];
      const intact = had !== undefined && had.sha256 === sha256 && (await Promise.all(had.files.map(async (f) => (await sha256Of(ctx, f)) === previous(ctx)?.files[f]))).every(Boolean);
      const replacing = had !== undefined && had.sha256 !== sha256 ? `; what the one extracted before gave and this one lacks is removed` : '';
      return intact ? { artifact, sha256, action: undefined, detail: '' } : { artifact, sha256, action: 'extract', detail: `${artifact.name} ${from} into ${artifact.install.directory}${replacing}` };
    }),
  );
}

function refusals(ctx: StepContext, planned: Planned[]): ConfigIssue[] {
  if (installOf(ctx).replace) return [];
  return planned
    .filter((p) => p.conflict !== undefined && 'path' in p.artifact.install)
    .map((p) => ({
      path: 'spec.kubernetes.install',
      message: `${(p.artifact.install as { path: string }).path} is already there and is not ${p.artifact.name} ${ctx.config.spec.kubernetes!.version} (sha256 ${p.conflict!.slice(0, 12)}...)`,
      hint: 'set spec.kubernetes.install.replace: true to replace it, or install into another directory',
    }));
}

export const kubernetesInstallStep: Step = {
  id: 'kubernetes/install',
  summary: 'install kubeadm, the kubelet, kubectl, crictl and the CNI plugins of spec.kubernetes.install',
  // On Windows after the private paths are locked: kubelet.exe goes into one of them.
  platforms: ['linux', 'windows'],
  applies: (config) => config.spec.kubernetes?.install !== undefined,
  leftovers: (facts) => [STAGES[facts.os]],

  async preflight(ctx) {
    const issues = refusals(ctx, await plan(ctx));
    if (issues.length) throw new ConfigError(issues);
  },

  async check(ctx): Promise<CheckResult> {
    // A local release without this platform is the preflight's refusal: the plan shows it as one.
    let planned: Planned[];
    try {
      planned = await plan(ctx);
    } catch (error) {
      if (!(error instanceof ConfigError)) throw error;
      return { done: false, changes: error.issues.map((i) => ({ action: 'refuse', target: i.path, detail: i.hint ? `${i.message} (${i.hint})` : i.message })) };
    }
    const todo = planned.filter((p) => p.action !== undefined);
    const network = todo
      .filter((p) => p.action !== 'chmod' && !p.artifact.url.startsWith('file:'))
      .flatMap((p) => [`download ${displayUrl(p.artifact.url)} for ${p.artifact.field}`, ...(p.sha256 === undefined ? [`download ${displayUrl(p.artifact.url)}.sha256 for ${p.artifact.field}`] : [])]);
    return {
      done: todo.length === 0,
      changes: todo.map((p) => ({ action: p.action!, target: 'path' in p.artifact.install ? p.artifact.install.path : p.artifact.install.directory, detail: p.detail })),
      ...(network.length ? { network } : {}),
      ...(todo.length === 0 ? { record: recordOf(ctx, planned, previous(ctx)) } : {}),
    };
  },

  // The downloads begin with the run when nothing before this step can change what they fetch
  // (see Step.begin): on a first boot they are most of the wait.
  begin(ctx) {
    return new EarlyInstall(ctx);
  },

  async apply(ctx) {
    const planned = await plan(ctx);
    const issues = refusals(ctx, planned);
    if (issues.length) throw new ConfigError(issues);
    const todo = planned.filter((p) => p.action !== undefined && p.action !== 'chmod');
    const pending: Array<{ path: string; file: PendingFile; sha256: string }> = [];
    const archives: InstallRecord['archives'] = {};
    try {
      // Downloads at once (a boot waits for the slowest, not the sum); each is checked as it arrives.
      const early = ctx.early instanceof EarlyInstall ? ctx.early : undefined;
      const fetched = await Promise.allSettled(todo.map(async (p) => (await early?.take(p)) ?? fetchPiece(ctx, p)));
      const failed = fetched.find((f): f is PromiseRejectedResult => f.status === 'rejected');
      for (const f of fetched) if (f.status === 'fulfilled') pending.push(...f.value.files);
      if (failed) throw failed.reason;
      for (const f of fetched) if (f.status === 'fulfilled' && f.value.archive) archives[f.value.archive.name] = f.value.archive;
      for (const p of pending) await p.file.seal({ sha256: p.sha256 });
    } catch (error) {
      for (const p of pending) await p.file.abort();
      await ctx.host.fs.remove(stageOf(ctx));
      throw error;
    }
    for (const p of pending) await p.file.commit({ sha256: p.sha256 });
    const stale = await staleArchiveFiles(ctx, archives);
    for (const path of stale) await ctx.host.fs.remove(path);
    for (const p of planned.filter((q) => q.action === 'chmod' && 'path' in q.artifact.install)) {
      await ctx.host.fs.setAttributes((p.artifact.install as { path: string }).path, { mode: MODE, ...(ctx.facts.privileged ? { owner: '0:0' } : {}) });
    }
    await ctx.host.fs.remove(stageOf(ctx));
    const installed = Object.fromEntries(pending.map((p) => [p.path, p.sha256]));
    return { record: recordOf(ctx, planned, previous(ctx), installed, archives, stale) };
  },
};

/**
 * The files an archive extracted before gave that its new release lacks (a plugin the CNI project
 * dropped): left there, the folder would mix two releases. One changed since is not machineadm's.
 */
async function staleArchiveFiles(ctx: StepContext, archives: InstallRecord['archives']): Promise<string[]> {
  const before = previous(ctx);
  const stale: string[] = [];
  for (const [name, now] of Object.entries(archives)) {
    for (const path of before?.archives[name]?.files ?? []) {
      if (!now.files.includes(path) && (await sha256Of(ctx, path)) === before?.files[path]) stale.push(path);
    }
  }
  return stale;
}

function recordOf(ctx: StepContext, planned: Planned[], before: InstallRecord | undefined, installed: Record<string, string> = {}, archives: InstallRecord['archives'] = {}, removed: string[] = []): Record<string, unknown> {
  const files: Record<string, string> = { ...(before?.files ?? {}) };
  for (const path of removed) delete files[path];
  const kept: InstallRecord['archives'] = {};
  const sources: NonNullable<InstallRecord['sources']> = { ...(before?.sources ?? {}) };
  for (const p of planned) {
    if (p.sha256) sources[p.artifact.name] = { url: p.artifact.url, sha256: p.sha256 };
    if ('path' in p.artifact.install && p.sha256) files[p.artifact.install.path] = p.sha256;
    const had = before?.archives[p.artifact.name];
    if (!('path' in p.artifact.install) && had) kept[p.artifact.name] = had;
  }
  const record: InstallRecord = { version: ctx.config.spec.kubernetes!.version!, files: { ...files, ...installed }, archives: { ...kept, ...archives }, sources };
  return record as unknown as Record<string, unknown>;
}

/** One piece, checked into temporary files beside its targets (not yet in place). */
async function fetchPiece(ctx: StepContext, p: Planned): Promise<{ files: Array<{ path: string; file: PendingFile; sha256: string }>; archive?: { name: string; sha256: string; files: string[] } }> {
  const { artifact } = p;
  const sha256 = p.sha256 ?? (await expectedSha256(ctx, artifact));
  try {
    if ('path' in artifact.install) {
      const { pending } = await fetchVerifiedPending(ctx.host, { urls: [artifact.url], destination: artifact.install.path, ...(sha256 ? { sha256 } : {}), mode: MODE, onProgress: ctx.downloadProgress(artifact.install.path) });
      return { files: [{ path: artifact.install.path, file: pending, sha256: sha256! }] };
    }
    const os = ctx.facts.os;
    const archive = inFolder(stageOf(ctx), `${artifact.name}.tar.gz`, os);
    const stage = inFolder(stageOf(ctx), artifact.name, os);
    await ctx.host.fs.mkdirp(stage);
    await fetchVerified(ctx.host, { urls: [artifact.url], destination: archive, ...(sha256 ? { sha256 } : {}), mode: 0o600, backup: false, onProgress: ctx.downloadProgress(archive) });
    const unpacked = await ctx.host.proc.run(['tar', '-xzf', await ctx.host.fs.resolve(archive), '-C', await ctx.host.fs.resolve(stage), '--no-same-owner', '--no-same-permissions'], { timeoutMs: 10 * 60_000, allowFailure: true });
    if (unpacked.exitCode !== 0) throw new StepDetailsError(`${artifact.name}: the archive from ${displayUrl(artifact.url)} does not unpack: ${unpacked.stderr.trim().split('\n').at(-1) ?? ''}`, { field: artifact.field });
    const { directory, members } = artifact.install;
    const names = (await ctx.host.fs.list(stage)).filter((n) => members === undefined || members.includes(n));
    const files: Array<{ path: string; file: PendingFile; sha256: string }> = [];
    for (const name of names) {
      if ((await ctx.host.fs.stat(inFolder(stage, name, os)))?.kind !== 'file') continue;
      // The write makes the folders it needs, and records them for reset.
      const path = inFolder(directory, name, os);
      const file = await ctx.host.fs.openWrite(path, { mode: MODE });
      const hash = createHash('sha256');
      for await (const block of ctx.host.fs.readBlocks(inFolder(stage, name, os))) {
        hash.update(block);
        file.appendSync(block);
      }
      files.push({ path, file, sha256: hash.digest('hex') });
    }
    if (members && files.length !== members.length) {
      for (const f of files) await f.file.abort();
      throw new StepDetailsError(`${artifact.name}: the archive from ${displayUrl(artifact.url)} holds no ${members.join(', ')}`, { field: artifact.field });
    }
    return { files, archive: { name: artifact.name, sha256: sha256!, files: files.map((f) => f.path) } };
  } catch (error) {
    throw errorForField(artifact.field, error);
  }
}

type Fetched = Awaited<ReturnType<typeof fetchPiece>>;

/**
 * The pieces whose targets are not on the machine yet (a first boot), fetched into checked
 * temporary files from when the run starts; apply() takes them. A piece that failed on the
 * network is fetched again at the step's turn (an earlier step may have been needed for it); one
 * that arrived whole with another sha256 fails the same at any time.
 */
class EarlyInstall implements EarlyWork {
  readonly startMs = sinceProcessStart();
  private readonly stop = new AbortController();
  private readonly pieces: Promise<Map<string, Promise<Fetched | Error>>>;
  private readonly ctx: StepContext;

  constructor(ctx: StepContext) {
    this.ctx = ctx;
    this.pieces = this.start(ctx).catch(() => new Map());
  }

  private async start(ctx: StepContext): Promise<Map<string, Promise<Fetched | Error>>> {
    const signal = ctx.host.signal ? AbortSignal.any([ctx.host.signal, this.stop.signal]) : this.stop.signal;
    const early: StepContext = { ...ctx, host: { ...ctx.host, signal } };
    const fresh = (await plan(early)).filter((p) => p.action === 'create' || (p.action === 'extract' && previous(ctx) === undefined));
    const asError = (error: unknown): Error => (error instanceof Error ? error : new Error(String(error)));
    return new Map(fresh.map((p) => [p.artifact.name, fetchPiece(early, p).catch(asError)]));
  }

  async take(p: Planned): Promise<Fetched | undefined> {
    const pieces = await this.pieces;
    const result = pieces.get(p.artifact.name);
    pieces.delete(p.artifact.name);
    const fetched = await result;
    if (fetched === undefined) return undefined;
    if (fetched instanceof Error) {
      if (fetched instanceof MachineadmError && fetched.exitCode === ExitCode.verification) throw fetched;
      return undefined;
    }
    // Begun when the binary was not there; one there now (an earlier step wrote it) is the step's to judge.
    if ('path' in p.artifact.install && (await this.ctx.host.fs.exists(p.artifact.install.path))) {
      for (const f of fetched.files) await f.file.abort();
      return undefined;
    }
    return fetched;
  }

  async cancel(): Promise<void> {
    this.stop.abort(new Error('the downloads begun with the run were stopped'));
    const pieces = await this.pieces;
    for (const result of pieces.values()) {
      const fetched = await result;
      if (!(fetched instanceof Error)) for (const f of fetched.files) await f.file.abort();
    }
    pieces.clear();
    await this.ctx.host.fs.remove(stageOf(this.ctx));
  }
}
