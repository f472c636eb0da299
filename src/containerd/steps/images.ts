// prepare/containerd/images: the image archives of spec.kubernetes.install.images imported into
// containerd's k8s.io namespace (the CRI's, so the kubelet finds them) before kubeadm runs, for
// machines that cannot pull. Every archive is checked against its sha256 before any is imported,
// so a wrong one imports nothing. An archive is skipped when every image it names is listed
// already; what an http(s) archive names is known only once it was downloaded, so the record keeps
// it by sha256. Reset removes the images this step imported, and nothing else.
import { createHash } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import type { CheckResult, Step, StepContext, UndoContext } from '../../engine/step.ts';
import type { Host, RootedFileSystem } from '../../host/index.ts';
import { ConfigError, StepDetailsError, VerificationError, type ConfigIssue } from '../../errors.ts';
import { fetchVerified } from '../../verify/fetch.ts';
import { isLocalSource, isRelativeSource } from '../../config/schema/source.ts';
import { displayUrl } from '../../redaction.ts';
import { errorForField } from '../../engine/managed-file.ts';
import { liveSkipReason } from '../../linux/live.ts';
import { releaseArch } from '../../config/install-layout.ts';
import { CONTAINERD_SOCKET, CRI_NAMESPACE, NAMING_MEMBERS, configsByTarget, imageRefsOf, isImageIdRef, parseImageList, parseImageTable, platformsByRef, readTarMembers, runsOn } from '../image-archives.ts';

/**
 * Test and operations switch: the containerd socket to import into. Without it the step uses the
 * machine's socket on the live root and skips under a scratch --root (that containerd is not the
 * root's); with it, a scratch --root run imports into the containerd it names (the tests' own).
 */
export const CONTAINERD_ADDRESS_ENV = 'MACHINEADM_CONTAINERD_ADDRESS';

/**
 * Where archives wait between their check and their import (removed after; a killed run's
 * leftover). On disk, not /run: image archives run to gigabytes, and /run is memory.
 */
const STAGE = '/var/tmp/machineadm-images';
const IMPORT_TIMEOUT_MS = 30 * 60_000;
const LIST_TIMEOUT_MS = 60_000;

interface Archive {
  field: string;
  url: string;
  sha256: string;
}

interface ImagesRecord {
  /** References this step imported (absent before): what reset removes. */
  imported: string[];
  /** Archive sha256 -> the references it names, so a rerun knows them without downloading. */
  archives: Record<string, string[]>;
}

function archivesOf(ctx: StepContext): Archive[] {
  return (ctx.config.spec.kubernetes?.install?.images ?? []).map((a, i) => ({ field: `spec.kubernetes.install.images[${i}]`, url: a.url, sha256: a.sha256 }));
}

function recordOf(data: Record<string, unknown> | undefined): ImagesRecord {
  return { imported: (data?.imported as string[] | undefined) ?? [], archives: (data?.archives as Record<string, string[]> | undefined) ?? {} };
}

/** What the step's record says it imported, and what was absent before its first import (a killed run's). */
function importedOf(ctx: UndoContext): string[] {
  const before = (ctx.undoRecord?.before ?? {}) as Record<string, string>;
  return [...new Set([...recordOf(ctx.done?.data).imported, ...Object.keys(before).filter((r) => before[r] === 'absent')])];
}

/** The socket ctr talks to, or undefined under a scratch --root without the switch. */
function addressOf(ctx: StepContext): string | undefined {
  const given = ctx.host.env[CONTAINERD_ADDRESS_ENV];
  // ctr 1.6 takes a path: "unix:///x" fails to dial.
  if (given) return given.replace(/^unix:\/\//, '');
  return ctx.host.fs.isLiveRoot ? CONTAINERD_SOCKET : undefined;
}

function skipReasonOf(ctx: StepContext): string {
  return `${liveSkipReason(ctx.host) ?? 'no containerd'}; set ${CONTAINERD_ADDRESS_ENV} to a containerd socket to import into it`;
}

async function ctr(ctx: StepContext, address: string, args: string[], timeoutMs = LIST_TIMEOUT_MS): Promise<string> {
  const argv: [string, ...string[]] = ['ctr', '--address', address, '-n', CRI_NAMESPACE, ...args];
  const result = await ctx.host.proc.run(argv, { timeoutMs, allowFailure: true });
  if (result.exitCode !== 0) {
    const last = result.stderr.trim().split('\n').at(-1) ?? '';
    const unreachable = /dial|connect|no such file/i.test(result.stderr);
    throw new StepDetailsError(`${argv.join(' ')} exited with code ${result.exitCode}: ${last}`, { command: argv.join(' ') }, unreachable ? { hint: `start containerd (systemctl start containerd): it does not answer on ${address}` } : {});
  }
  return result.stdout;
}

async function listed(ctx: StepContext, address: string): Promise<Set<string>> {
  return new Set(parseImageList(await ctr(ctx, address, ['images', 'ls', '-q'])));
}

/**
 * Removes the images of these names, and the CRI's image id (sha256:<config>) of each once no
 * other name points at it, as a CRI RemoveImage does. Returns what it removed.
 */
async function removeImages(ctx: StepContext, address: string, names: ReadonlySet<string>): Promise<string[]> {
  const table = parseImageTable(await ctr(ctx, address, ['images', 'ls']));
  const ours = table.filter((row) => names.has(row.ref));
  if (ours.length === 0) return [];
  const configsOf = configsByTarget(await ctr(ctx, address, ['content', 'ls']));
  const ourConfigs = new Set(ours.flatMap((row) => configsOf(row.digest)));
  await ctr(ctx, address, ['images', 'rm', ...ours.map((row) => row.ref)]);
  const left = parseImageTable(await ctr(ctx, address, ['images', 'ls']));
  const stillNamed = new Set(left.filter((row) => !isImageIdRef(row.ref)).flatMap((row) => configsOf(row.digest)));
  const ids = left.filter((row) => isImageIdRef(row.ref) && ourConfigs.has(row.ref) && !stillNamed.has(row.ref)).map((row) => row.ref);
  if (ids.length) await ctr(ctx, address, ['images', 'rm', ...ids]);
  return [...ours.map((row) => row.ref), ...ids];
}

/**
 * Names read from bytes whose sha256 was computed in the same pass, by that sha256: they hold for
 * any copy with it. An archive is read whole to find its index (skopeo writes it last), so one
 * pass both checks a file on this machine and names its images, once a run.
 */
const namesBySha = new WeakMap<Host, Map<string, string[]>>();

function namesKnown(host: Host): Map<string, string[]> {
  let known = namesBySha.get(host);
  if (!known) namesBySha.set(host, (known = new Map()));
  return known;
}

/** The sha256 of the file at `path` on `fs`, and the references the archive names (or why it names none). */
async function hashAndName(fs: RootedFileSystem, path: string): Promise<{ sha256: string; refs: string[] | { problem: string } }> {
  const hash = createHash('sha256');
  const source = fs.readBlocks(path)[Symbol.asyncIterator]();
  try {
    // Without return(): the reader stops at the end of the archive, and the hash goes on to the end of the file.
    const hashing: AsyncIterable<Uint8Array> = {
      [Symbol.asyncIterator]: () => ({
        next: async () => {
          const next = await source.next();
          if (!next.done) hash.update(next.value);
          return next;
        },
      }),
    };
    const members = await readTarMembers(hashing, NAMING_MEMBERS);
    for (let next = await source.next(); !next.done; next = await source.next()) hash.update(next.value);
    const named = 'problem' in members ? members : imageRefsOf(members);
    return { sha256: hash.digest('hex'), refs: 'problem' in named ? named : named.refs };
  } finally {
    await source.return?.();
  }
}

/** The references of an archive checked against its sha256 (a mismatch is exit 3); remembered for the run. */
async function namesOfChecked(host: Host, fs: RootedFileSystem, path: string, archive: Archive, shown: string): Promise<string[]> {
  const known = namesKnown(host).get(archive.sha256);
  if (known) return known;
  const { sha256, refs } = await hashAndName(fs, path);
  if (sha256 !== archive.sha256) {
    throw new VerificationError(`${archive.field}.sha256: ${shown}: SHA-256 is ${sha256}, expected ${archive.sha256}`, { hint: 'the file is not the one the configuration names: copy it again, or fix the sha256' });
  }
  if (!Array.isArray(refs)) {
    throw new StepDetailsError(`${archive.field}.url: ${displayUrl(archive.url)} is not an image archive containerd can name: ${refs.problem}`, { field: archive.field }, {
      hint: 'write it with skopeo copy SOURCE oci-archive:FILE:REGISTRY/NAME:TAG (or docker-archive:FILE:REGISTRY/NAME:TAG), which names the image in full',
    });
  }
  namesKnown(host).set(archive.sha256, refs);
  return refs;
}

/** The path of an archive on this machine (a file: URL; a relative path the loader has not resolved is refused). */
async function localArchive(ctx: StepContext, archive: Archive): Promise<string> {
  if (isRelativeSource(archive.url)) {
    throw new ConfigError([{ path: `${archive.field}.url`, message: `"${archive.url}" is a relative path, and no configuration file it is relative to was read`, hint: 'give a file:///absolute/path or an http(s):// URL, or put the configuration in a file beside the archive' }]);
  }
  const path = fileURLToPath(archive.url);
  const info = await ctx.host.local.stat(path);
  if (info?.kind !== 'file') throw new ConfigError([{ path: `${archive.field}.url`, message: `${path} ${info ? 'is not a file' : 'does not exist'}`, hint: 'copy the archive to the machine, or fix the path' }]);
  return path;
}

/** What an archive names, when that can be known without a download: the record, or a file on this machine. */
async function knownRefs(ctx: StepContext, archive: Archive, record: ImagesRecord): Promise<string[] | undefined> {
  const known = record.archives[archive.sha256] ?? namesKnown(ctx.host).get(archive.sha256);
  if (known) return known;
  if (!isLocalSource(archive.url)) return undefined;
  const path = await localArchive(ctx, archive);
  return namesOfChecked(ctx.host, ctx.host.local, path, archive, path);
}

interface Planned {
  archive: Archive;
  refs: string[] | undefined;
  /** Some image it names is not listed (or it is not known what it names). */
  needed: boolean;
}

async function plan(ctx: StepContext, present: Set<string> | undefined): Promise<Planned[]> {
  const record = recordOf(ctx.previous?.data);
  return Promise.all(
    archivesOf(ctx).map(async (archive) => {
      const refs = await knownRefs(ctx, archive, record);
      return { archive, refs, needed: present === undefined || refs === undefined || refs.some((r) => !present.has(r)) };
    }),
  );
}

/** What check() found, for apply() (reading an archive to learn its names means reading all of it). */
const checked = new WeakMap<CheckResult, Planned[]>();

function changeOf(p: Planned): { action: string; target: string; detail: string } {
  return { action: 'import', target: displayUrl(p.archive.url), detail: `into containerd (${CRI_NAMESPACE}): ${p.refs ? p.refs.join(', ') : 'the images it names, known once it is downloaded'}` };
}

function withArchives(record: ImagesRecord, planned: Array<{ archive: Archive; refs: string[] | undefined }>): ImagesRecord {
  const archives = { ...record.archives };
  for (const p of planned) if (p.refs) archives[p.archive.sha256] = p.refs;
  return { imported: record.imported, archives };
}

export const containerdImagesStep: Step = {
  id: 'containerd/images',
  summary: 'import the image archives of spec.kubernetes.install.images into containerd (k8s.io)',
  platforms: ['linux'],
  applies: (config) => Boolean(config.spec.kubernetes?.install?.images?.length),
  leftovers: () => [STAGE],

  // A file on this machine is checked (and named) before anything changes: a wrong one fails the run with exit 3.
  async preflight(ctx) {
    const issues: ConfigIssue[] = [];
    const local: Array<{ archive: Archive; path: string }> = [];
    for (const archive of archivesOf(ctx).filter((a) => isLocalSource(a.url))) {
      try {
        local.push({ archive, path: await localArchive(ctx, archive) });
      } catch (error) {
        if (!(error instanceof ConfigError)) throw error;
        issues.push(...error.issues);
      }
    }
    // Every missing file at once, before the long reads.
    if (issues.length) throw new ConfigError(issues);
    for (const { archive, path } of local) await namesOfChecked(ctx.host, ctx.host.local, path, archive, path);
  },

  async check(ctx): Promise<CheckResult> {
    const address = addressOf(ctx);
    if (address === undefined) {
      const planned = await plan(ctx, undefined);
      return { done: false, changes: planned.map(changeOf), skipReason: skipReasonOf(ctx) };
    }
    // A plan on a machine whose containerd is not up yet shows every archive as to be imported.
    const present = await listed(ctx, address).catch((error: unknown) => {
      if (ctx.options.dryRun) return undefined;
      throw error;
    });
    const planned = await plan(ctx, present);
    const todo = planned.filter((p) => p.needed);
    const network = todo.filter((p) => !isLocalSource(p.archive.url)).map((p) => `download ${displayUrl(p.archive.url)} for ${p.archive.field}`);
    const result: CheckResult = {
      done: todo.length === 0,
      changes: todo.map(changeOf),
      ...(network.length ? { network } : {}),
      ...(todo.length === 0 ? { record: { ...withArchives(recordOf(ctx.previous?.data), planned) } } : {}),
    };
    checked.set(result, planned);
    return result;
  },

  async apply(ctx, check) {
    const address = addressOf(ctx);
    if (address === undefined) throw new StepDetailsError(skipReasonOf(ctx), {});
    const present = await listed(ctx, address);
    const planned = checked.get(check) ?? (await plan(ctx, present));
    const todo = planned.filter((p) => p.needed);
    const record = recordOf(ctx.previous?.data);
    const imported = new Set(record.imported);
    const staged: Array<{ archive: Archive; path: string; refs: string[] }> = [];
    const importedNow: Array<{ archive: Archive; refs: string[]; added: string[] }> = [];
    await ctx.host.fs.mkdirp(STAGE, 0o700);
    try {
      // Every archive is copied and checked before the first import: a wrong one imports nothing.
      for (const [i, p] of todo.entries()) {
        const path = `${STAGE}/${i}.tar`;
        try {
          await fetchVerified(ctx.host, { urls: [p.archive.url], destination: path, sha256: p.archive.sha256, mode: 0o600, backup: false, onProgress: ctx.downloadProgress(path) });
        } catch (error) {
          throw errorForField(p.archive.field, error);
        }
        staged.push({ archive: p.archive, path, refs: await namesOfChecked(ctx.host, ctx.host.fs, path, p.archive, displayUrl(p.archive.url)) });
      }
      for (const s of staged) {
        const absent = s.refs.filter((r) => !present.has(r));
        // Known only now that it is here: an http(s) archive whose images are all listed.
        if (absent.length === 0) continue;
        try {
          await ctr(ctx, address, ['images', 'import', await ctx.host.fs.resolve(s.path)], IMPORT_TIMEOUT_MS);
        } catch (error) {
          // A failed step keeps no record, so reset would never know what this run imported before
          // (nor what ctr named before failing): it goes again, and the original failure is the one told.
          await removeImages(ctx, address, new Set([...importedNow.flatMap((i) => i.added), ...absent])).catch(() => undefined);
          throw error;
        }
        importedNow.push({ archive: s.archive, refs: s.refs, added: absent });
        for (const r of absent) imported.add(r);
        ctx.log(`imported ${absent.join(', ')} from ${displayUrl(s.archive.url)}`);
      }
    } finally {
      await ctx.host.fs.remove(STAGE);
    }
    // ctr exits 0 for an archive it finds nothing to name in: the list is the proof.
    const after = await listed(ctx, address);
    const missing = staged.flatMap((s) => s.refs.filter((r) => !after.has(r)).map((r) => `${r} (from ${displayUrl(s.archive.url)})`));
    if (missing.length) throw new StepDetailsError(`containerd does not list ${missing.join(', ')} after the import`, { missing }, { hint: 'an archive for another platform imports nothing on this one: write it for this machine\'s architecture' });
    // ctr also imports, without a word, a single image of another architecture, which the kubelet
    // would find and fail to run ("exec format error"). What this run added goes again, so a
    // rerun does not take it for imported and reset has nothing it does not know of.
    const machine = `linux/${releaseArch(ctx.facts.arch)}`;
    const platforms = platformsByRef(await ctr(ctx, address, ['images', 'ls']));
    const foreign = importedNow.flatMap(({ archive, refs }) => refs.filter((r) => !runsOn(platforms.get(r) ?? [], machine)).map((r) => `${archive.field}.url: ${displayUrl(archive.url)} holds ${r} for ${platforms.get(r)!.join(', ')}, not for this machine (${machine})`));
    if (foreign.length) {
      await removeImages(ctx, address, new Set(importedNow.flatMap((i) => i.added)));
      throw new StepDetailsError(foreign.join('; '), { foreign }, { hint: `write the archive for this machine: skopeo copy --override-arch ${releaseArch(ctx.facts.arch)} SOURCE oci-archive:FILE:REGISTRY/NAME:TAG (or --all for every architecture)` });
    }
    return { record: { ...withArchives({ imported: [...imported], archives: record.archives }, [...planned, ...staged]) } };
  },

  // Before the first import: a run killed after ctr imported and before the step's record leaves
  // a next run that finds the images listed and the step done; this says they were not there.
  async undoRecord(ctx, check) {
    const address = addressOf(ctx);
    const refs = (checked.get(check) ?? []).flatMap((p) => p.refs ?? []);
    if (address === undefined || refs.length === 0) return undefined;
    const present = await listed(ctx, address);
    return { before: Object.fromEntries(refs.map((r) => [r, present.has(r) ? 'present' : 'absent'])) };
  },

  undo: {
    summary: 'remove from containerd (k8s.io) the images prepare/containerd/images imported',
    async check(ctx: UndoContext): Promise<CheckResult> {
      const imported = importedOf(ctx);
      if (imported.length === 0) return { done: true, changes: [] };
      const address = addressOf(ctx);
      const changes = (refs: string[]) => refs.map((ref) => ({ action: 'remove', target: ref, detail: `image imported into containerd (${CRI_NAMESPACE}) by machineadm` }));
      if (address === undefined) return { done: false, changes: changes(imported), skipReason: skipReasonOf(ctx) };
      const present = await listed(ctx, address);
      const ours = imported.filter((r) => present.has(r));
      return { done: ours.length === 0, changes: changes(ours) };
    },
    async apply(ctx: UndoContext) {
      const removed = await removeImages(ctx, addressOf(ctx)!, new Set(importedOf(ctx)));
      if (removed.length) ctx.log(`removed ${removed.join(', ')} from containerd (${CRI_NAMESPACE})`);
    },
  },
};
