// The downloads of prepare/files (spec.files[].source): several at once, checked into temporary
// files beside their targets, placed all or none. Those whose target is not on the machine yet
// begin when the run starts (EarlyDownloads, the step's early work), while the steps before
// prepare/files run; the step then only waits for them and places them. See src/linux/README.md.
import { posix } from 'node:path';
import type { EarlyWork, StepContext } from '../../engine/step.ts';
import type { FileSpec } from '../../config/schema/index.ts';
import { fileModeOf } from '../../config/schema/system.ts';
import { ConfigError, VerificationError, type ConfigIssue } from '../../errors.ts';
import { fetchVerifiedPending } from '../../verify/fetch.ts';
import type { Host, PendingFile } from '../../host/index.ts';
import { sinceProcessStart } from '../../engine/timing.ts';
import { readPem } from '../../config/pem-file.ts';
import { errorForField } from '../../engine/managed-file.ts';

export interface SourceFile {
  index: number;
  spec: FileSpec & { source: { url: string; sha256: string } };
  mode: number;
}

/** Downloads at once: a node's downloads are independent, and a boot waits for the slowest, not the sum. */
export const PARALLEL_DOWNLOADS = 8;

/** The entries of spec.files that come from a source, with their index and mode. */
export function sourceFiles(ctx: StepContext): SourceFile[] {
  return (ctx.config.spec.files ?? []).flatMap((spec, index) => (spec.source ? [{ index, spec: spec as SourceFile['spec'], mode: fileModeOf(spec) }] : []));
}

// The field a failed download is about: a checksum that does not match names the checksum.
export function sourceField(file: SourceFile, error: unknown): string {
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
      await ctx.host.fs.makeFoldersFor(file.spec.path);
    } catch (error) {
      await removeEmptyMade(ctx, deepestFirst());
      throw errorForField(`spec.files[${file.index}].path`, error);
    }
  }
  return deepestFirst();
}

/** One download into a checked, unsealed temporary file beside its target. */
async function fetchSource(ctx: StepContext, host: Host, file: SourceFile): Promise<PendingFile> {
  // Checked in the preflight; an inline file of this run may have written it since.
  const issues: ConfigIssue[] = [];
  const ca = file.spec.source.caFile ? await readPem(ctx.host, file.spec.source.caFile, `spec.files[${file.index}].source.caFile`, 'certificate', issues) : undefined;
  if (issues.length) throw new ConfigError(issues);
  const { pending } = await fetchVerifiedPending(host, {
    urls: [file.spec.source.url],
    ...(ca ? { ca } : {}),
    destination: file.spec.path,
    sha256: file.spec.source.sha256,
    mode: file.mode,
    ...(file.spec.owner ? { owner: file.spec.owner } : {}),
    onProgress: ctx.downloadProgress(file.spec.path),
  });
  return pending;
}

/** Runs `work` for each index, up to PARALLEL_DOWNLOADS at once, until `stopped()`. */
async function inParallel(count: number, stopped: () => boolean, work: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (!stopped() && next < count) await work(next++);
  };
  await Promise.all(Array.from({ length: Math.min(PARALLEL_DOWNLOADS, count) }, worker));
}

/**
 * prepare/files' early work (Step.begin): the downloads whose target is not on the machine yet (a
 * first boot), begun when the run starts. What the step takes at its turn is its own from then
 * on; cancel() stops the rest and removes their temporary files and the folders made for them.
 */
export class EarlyDownloads implements EarlyWork {
  readonly startMs = sinceProcessStart();
  private readonly stop = new AbortController();
  private readonly downloads = new Map<string, { file: SourceFile; result: Promise<PendingFile | Error> }>();
  /** Settles once every download has begun (or nothing will), with the folders made for them. */
  private readonly ready: Promise<string[]>;

  private readonly ctx: StepContext;

  constructor(ctx: StepContext, candidates: readonly SourceFile[], wanted: (file: SourceFile) => Promise<boolean>) {
    this.ctx = ctx;
    this.ready = this.start(candidates, wanted);
  }

  private async start(candidates: readonly SourceFile[], wanted: (file: SourceFile) => Promise<boolean>): Promise<string[]> {
    const keep = await Promise.all(candidates.map((file) => wanted(file).catch(() => false)));
    const files = candidates.filter((_, i) => keep[i]);
    if (files.length === 0 || this.stop.signal.aborted) return [];
    // A folder that cannot be made is the step's to report, at its turn.
    const made = await makeFolders(this.ctx, files).catch(() => undefined);
    if (made === undefined) return [];
    const signal = this.ctx.host.signal ? AbortSignal.any([this.ctx.host.signal, this.stop.signal]) : this.stop.signal;
    const host = { ...this.ctx.host, signal };
    // Each outcome is kept as a value: a failure is the step's to judge at its turn (take).
    const slots = files.map(() => {
      let resolve: (value: PendingFile | Error) => void = () => undefined;
      const promise = new Promise<PendingFile | Error>((r) => (resolve = r));
      return { promise, resolve: (value: PendingFile | Error) => resolve(value) };
    });
    for (const [i, file] of files.entries()) this.downloads.set(file.spec.path, { file, result: slots[i]!.promise });
    const asError = (error: unknown): Error => (error instanceof Error ? error : new Error(String(error)));
    void inParallel(files.length, () => false, async (i) => {
      if (signal.aborted) return slots[i]!.resolve(asError(signal.reason));
      await fetchSource(this.ctx, host, files[i]!).then(slots[i]!.resolve, (error: unknown) => slots[i]!.resolve(asError(error)));
    });
    return made;
  }

  /**
   * The checked temporary file of this source, now the caller's (to seal and commit, or abort);
   * undefined when none was begun for it, or when it failed in a way a download at the step's turn
   * may not (the network, which an earlier step may have set up). A file that arrived whole and
   * does not match its sha256 fails the same at any time: that failure is thrown.
   */
  async take(file: SourceFile): Promise<PendingFile | undefined> {
    await this.ready;
    const entry = this.downloads.get(file.spec.path);
    if (!entry) return undefined;
    this.downloads.delete(file.spec.path);
    const result = await entry.result;
    if (result instanceof VerificationError) throw result;
    if (result instanceof Error) return undefined;
    // Begun when the target was not there; one there now (an earlier step wrote it) is replaced
    // only by a download of the step's own, which keeps the file it replaces.
    if (await this.ctx.host.fs.exists(file.spec.path)) {
      await result.abort();
      return undefined;
    }
    return result;
  }

  /** Stops the downloads still running (the step failed, or will not run). */
  halt(): void {
    this.stop.abort(new Error('the downloads begun with the run were stopped'));
  }

  async cancel(): Promise<void> {
    this.halt();
    const made = await this.ready;
    const left = [...this.downloads.values()];
    this.downloads.clear();
    for (const { result } of left) {
      const pending = await result;
      if (!(pending instanceof Error)) await pending.abort();
    }
    await removeEmptyMade(this.ctx, made);
  }
}

// Every download is checked into a temporary file beside its target; only when all are checked
// (and sealed: synced, mode, owner, backup) is any renamed into place. On a failure every temporary
// goes and every target stays as it was. Up to PARALLEL_DOWNLOADS run at once, each sealed as soon
// as it is checked (its fsync overlaps the downloads still running); the first failure stops the
// others at once. A download begun early is taken as it is (or as it ends), not begun again.
export async function downloadAll(ctx: StepContext, files: readonly SourceFile[], early?: EarlyDownloads): Promise<void> {
  // Parallel downloads into one new folder cannot tell which of them made it: the step makes the
  // folders first and, on a failure, removes those it made once they are empty again (the early
  // downloads' folders go when the runner cancels what the step did not take).
  const made = await makeFolders(ctx, files);
  const pending: (PendingFile | undefined)[] = files.map(() => undefined);
  const stop = new AbortController();
  const signal = ctx.host.signal ? AbortSignal.any([ctx.host.signal, stop.signal]) : stop.signal;
  const host = { ...ctx.host, signal };
  let failed: { file: SourceFile; error: unknown } | undefined;
  await inParallel(files.length, () => failed !== undefined, async (i) => {
    const file = files[i]!;
    try {
      const fetched = (await early?.take(file)) ?? (await fetchSource(ctx, host, file));
      pending[i] = fetched;
      if (failed) return;
      await fetched.seal();
    } catch (error) {
      // The first failure is the one reported; the others were stopped because of it.
      if (!failed) {
        failed = { file, error };
        stop.abort(error);
        early?.halt();
      }
    }
  });
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
