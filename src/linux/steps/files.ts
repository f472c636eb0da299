// prepare/files: the files listed in spec.files, from inline content or a verified download.
// Every target is checked (paths, links planted at the target, decoding) before the first write.
import { createHash } from 'node:crypto';
import { posix } from 'node:path';
import type { Change, Step, StepContext } from '../../phases/step.ts';
import type { FileSpec } from '../../config/schema/index.ts';
import { ConfigError, MachineadmError, ExitCode, VerificationError, type ConfigIssue } from '../../errors.ts';
import { fetchVerifiedPending } from '../../verify/fetch.ts';
import type { PendingFile } from '../../host/index.ts';
import { displayUrl } from '../../redaction.ts';
import { isLocalSource } from '../../config/schema/source.ts';
import { checkLocalSource } from '../../bundle/local-source.ts';
import { decodeContent } from '../file-content.ts';
import { errorForField, formatMode, inspectFile, inspectTarget, writeFiles, type DesiredFile } from '../managed-file.ts';
import { readPem } from '../../config/pem-file.ts';

interface SourceFile {
  index: number;
  spec: FileSpec & { source: { url: string; sha256: string } };
  mode: number;
}

function modeOf(spec: FileSpec): number {
  return parseInt(spec.mode, 8);
}

/** A file no one but its owner (and group) may read is treated as a secret: its content never shows in a diff. */
function isPrivate(mode: number): boolean {
  return (mode & 0o004) === 0;
}

// Two entries for one path would overwrite each other on every run, so the step never converges.
function duplicatePaths(files: readonly FileSpec[]): ConfigIssue[] {
  const first = new Map<string, number>();
  const issues: ConfigIssue[] = [];
  for (const [index, spec] of files.entries()) {
    const earlier = first.get(spec.path);
    if (earlier === undefined) first.set(spec.path, index);
    else issues.push({ path: `spec.files[${index}].path`, message: `"${spec.path}" is also spec.files[${earlier}].path`, hint: 'give each file once' });
  }
  return issues;
}

function split(ctx: StepContext): { inline: DesiredFile[]; sources: SourceFile[] } {
  const inline: DesiredFile[] = [];
  const sources: SourceFile[] = [];
  const duplicates = duplicatePaths(ctx.config.spec.files ?? []);
  if (duplicates.length) throw new ConfigError(duplicates);
  for (const [index, spec] of (ctx.config.spec.files ?? []).entries()) {
    const mode = modeOf(spec);
    if (spec.source) {
      sources.push({ index, spec: spec as SourceFile['spec'], mode });
      continue;
    }
    const decoded = decodeContent(spec.content ?? '', spec.encoding);
    if ('problem' in decoded) throw new MachineadmError(`spec.files[${index}].content ${decoded.problem}`, ExitCode.usage);
    inline.push({ path: spec.path, content: decoded.bytes, mode, ...(spec.owner ? { owner: spec.owner } : {}), field: `spec.files[${index}].path`, sensitive: isPrivate(mode) });
  }
  return { inline, sources };
}

async function inspectSource(ctx: StepContext, file: SourceFile): Promise<Change | undefined> {
  const field = `spec.files[${file.index}].path`;
  try {
    const info = await inspectTarget(ctx.host.fs, file.spec.path);
    const detail = `from ${displayUrl(file.spec.source.url)} (sha256 ${file.spec.source.sha256.slice(0, 12)}...), mode ${formatMode(file.mode)}`;
    if (!info) return { action: 'download', target: file.spec.path, detail };
    // Hashed block by block: a node's downloads are often large, and are checked at every run.
    const hash = createHash('sha256');
    for await (const block of ctx.host.fs.readBlocks(file.spec.path)) hash.update(block);
    const sha = hash.digest('hex');
    if (sha !== file.spec.source.sha256) return { action: 'download', target: file.spec.path, detail: `${detail}; the file on disk has sha256 ${sha.slice(0, 12)}...` };
    const details: string[] = [];
    if (info.mode !== file.mode) details.push(`mode ${formatMode(info.mode)} -> ${formatMode(file.mode)}`);
    if (file.spec.owner && ctx.facts.privileged) {
      const owner = await ctx.host.fs.resolveOwner(file.spec.owner);
      if (owner.uid !== info.uid || owner.gid !== info.gid) details.push(`owner ${info.uid}:${info.gid} -> ${file.spec.owner}`);
    }
    return details.length ? { action: 'chmod', target: file.spec.path, detail: details.join(', ') } : undefined;
  } catch (error) {
    throw errorForField(field, error);
  }
}

// A file: source (resolved from a relative one when the configuration was loaded) is copied from
// this machine and checked like a download, with no network.
function isLocal(file: SourceFile): boolean {
  return isLocalSource(file.spec.source.url);
}

// The field a failed download is about: a checksum that does not match names the checksum.
function sourceField(file: SourceFile, error: unknown): string {
  return `spec.files[${file.index}].source${error instanceof VerificationError ? '.sha256' : ''}`;
}

/** Removes the folders in `made` (deepest first) that are empty. */
async function removeEmptyMade(ctx: StepContext, made: readonly string[]): Promise<void> {
  for (const folder of made) if ((await ctx.host.fs.list(folder)).length === 0) await ctx.host.fs.remove(folder);
}

/** Makes the folders the files go into; returns those that did not exist, deepest first. */
async function makeFolders(ctx: StepContext, files: readonly SourceFile[]): Promise<string[]> {
  const missing = new Set<string>();
  const deepestFirst = (): string[] => [...missing].sort((a, b) => b.split('/').length - a.split('/').length);
  for (const file of files) {
    const dir = posix.dirname(file.spec.path);
    try {
      for (let d = dir; d !== posix.dirname(d) && !missing.has(d) && !(await ctx.host.fs.exists(d)); d = posix.dirname(d)) missing.add(d);
      await ctx.host.fs.mkdirp(dir);
    } catch (error) {
      await removeEmptyMade(ctx, deepestFirst());
      throw errorForField(`spec.files[${file.index}].path`, error);
    }
  }
  return deepestFirst();
}

/** Downloads at once: a node's downloads are independent, and a boot waits for the slowest, not the sum. */
export const PARALLEL_DOWNLOADS = 8;

// Every download is checked into a temporary file beside its target; only when all are checked
// (and sealed: synced, mode, owner, backup) is any renamed into place. On a failure every temporary
// goes and every target stays as it was. Up to PARALLEL_DOWNLOADS run at once, each sealed as soon
// as it is checked (its fsync overlaps the downloads still running); the first failure stops the
// others at once.
async function downloadAll(ctx: StepContext, files: readonly SourceFile[]): Promise<void> {
  // Parallel downloads into one new folder cannot tell which of them made it: the step makes the
  // folders first and, on a failure, removes those it made once they are empty again.
  const made = await makeFolders(ctx, files);
  const pending: (PendingFile | undefined)[] = files.map(() => undefined);
  const stop = new AbortController();
  const signal = ctx.host.signal ? AbortSignal.any([ctx.host.signal, stop.signal]) : stop.signal;
  const host = { ...ctx.host, signal };
  let failed: { file: SourceFile; error: unknown } | undefined;
  const one = async (i: number): Promise<void> => {
    const file = files[i]!;
    // Checked in the preflight; an inline file of this run may have written it since.
    const issues: ConfigIssue[] = [];
    const ca = file.spec.source.caFile ? await readPem(ctx.host, file.spec.source.caFile, `spec.files[${file.index}].source.caFile`, 'certificate', issues) : undefined;
    if (issues.length) throw new ConfigError(issues);
    const { pending: fetched } = await fetchVerifiedPending(host, {
      urls: [file.spec.source.url],
      ...(ca ? { ca } : {}),
      destination: file.spec.path,
      sha256: file.spec.source.sha256,
      mode: file.mode,
      ...(file.spec.owner ? { owner: file.spec.owner } : {}),
    });
    pending[i] = fetched;
    await fetched.seal();
  };
  let next = 0;
  const worker = async (): Promise<void> => {
    while (!failed && next < files.length) {
      const i = next++;
      try {
        await one(i);
      } catch (error) {
        // The first failure is the one reported; the others were stopped because of it.
        if (!failed) {
          failed = { file: files[i]!, error };
          stop.abort(error);
        }
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(PARALLEL_DOWNLOADS, files.length) }, worker));
  if (failed) {
    for (const one of pending) await one?.abort();
    await removeEmptyMade(ctx, made);
    throw errorForField(sourceField(failed.file, failed.error), failed.error);
  }
  for (const [i, one] of pending.entries()) {
    try {
      await one!.commit();
    } catch (error) {
      throw errorForField(sourceField(files[i]!, error), error);
    }
  }
}

export const filesStep: Step = {
  id: 'files',
  summary: 'write the files listed in spec.files',
  platforms: ['linux'],
  applies: (config) => (config.spec.files?.length ?? 0) > 0,
  // A target the step would refuse (a planted link, a directory, content that does not decode) is
  // found before any step of the run writes anything.
  async preflight(ctx) {
    const { inline, sources } = split(ctx);
    // A download's CA bundle must be on the machine, unless an inline file writes it first.
    const issues: ConfigIssue[] = [];
    const writtenInline = new Set(inline.map((f) => f.path));
    for (const s of sources) {
      const caFile = s.spec.source.caFile;
      if (caFile && !writtenInline.has(caFile)) await readPem(ctx.host, caFile, `spec.files[${s.index}].source.caFile`, 'certificate', issues);
    }
    if (issues.length) throw new ConfigError(issues);
    const targets = [...inline.map((f) => ({ path: f.path, field: f.field })), ...sources.map((s) => ({ path: s.spec.path, field: `spec.files[${s.index}].path` }))];
    for (const target of targets) {
      try {
        await inspectTarget(ctx.host.fs, target.path);
      } catch (error) {
        throw errorForField(target.field, error);
      }
    }
    for (const file of sources.filter(isLocal)) await checkLocalSource(ctx.host, file.spec.source, `spec.files[${file.index}].source`);
  },
  async check(ctx) {
    const { inline, sources } = split(ctx);
    const changes: Change[] = [];
    for (const f of inline) {
      const state = await inspectFile(ctx.host.fs, f, ctx.facts.privileged);
      if (state.change) changes.push(state.change);
    }
    const network: string[] = [];
    for (const s of sources) {
      const change = await inspectSource(ctx, s);
      if (change) changes.push(change);
      if (change?.action === 'download' && !isLocal(s)) network.push(`download ${displayUrl(s.spec.source.url)} for spec.files[${s.index}]`);
    }
    return { done: changes.length === 0, changes, ...(network.length ? { network } : {}) };
  },
  async apply(ctx) {
    const { inline, sources } = split(ctx);
    // Check every target first: a refused path must not leave the earlier files written.
    const pendingSources: { file: SourceFile; change: Change }[] = [];
    for (const s of sources) {
      const change = await inspectSource(ctx, s);
      if (change) pendingSources.push({ file: s, change });
    }
    for (const f of inline) await inspectFile(ctx.host.fs, f, ctx.facts.privileged);
    const needNetwork = pendingSources.filter((p) => p.change.action === 'download' && !isLocal(p.file));
    if (needNetwork.length && ctx.host.offline) {
      const first = needNetwork[0]!;
      throw new MachineadmError(`spec.files[${first.file.index}].source: ${displayUrl(first.file.spec.source.url)} cannot be downloaded with --offline`, ExitCode.usage, {
        hint: 'put the file in place beforehand (its sha256 is checked), or run without --offline',
      });
    }
    // Downloads first: they are what fails most (network, a wrong sha256), and a failure then
    // leaves the inline files unwritten too. All of them are downloaded and checked before the
    // first is put in place, so a failing one leaves every target as it was.
    await downloadAll(ctx, pendingSources.filter((p) => p.change.action === 'download').map((p) => p.file));
    for (const { file, change } of pendingSources) {
      if (change.action !== 'chmod') continue;
      try {
        await ctx.host.fs.setAttributes(file.spec.path, { mode: file.mode, ...(file.spec.owner && ctx.facts.privileged ? { owner: file.spec.owner } : {}) });
      } catch (error) {
        throw errorForField(`spec.files[${file.index}].source`, error);
      }
    }
    await writeFiles(ctx.host.fs, inline, ctx.facts.privileged);
  },
};
