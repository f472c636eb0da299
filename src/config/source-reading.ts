// Reading one source's bytes, per kind: a file or a drop-in directory under --root, standard
// input, an HTTPS URL, instance metadata; each bounded, pinned when asked, its failure an issue
// that names the source.
import { dirname, join as joinPath } from 'node:path';
import type { FileInfo, RootedFileSystem } from '../host/index.ts';
import type { ConfigHost } from '../host/config-host.ts';
import { HttpError, formatBytes, httpRequest } from '../host/http.ts';
import { ConfigError, MachineadmError, type ConfigIssue } from '../errors.ts';
import { DocumentError } from './document.ts';
import { MimeError, isMultipart } from './mime.ts';
import { ImdsError, detectCloud, readInstanceMetadata } from './imds.ts';
import type { LoadOptions, RawSource, SourceSpec } from './source-specs.ts';
import { BudgetError, LoadBudget } from './budgets.ts';

/** One source's bytes (a directory's: one per drop-in), spent from the whole configuration's totals. */
export async function readSource(host: ConfigHost, spec: SourceSpec, options: LoadOptions, maxBytes: number, budget: LoadBudget = new LoadBudget()): Promise<RawSource[]> {
  // A directory spends its own, file by file, so that it stops at the total rather than after it.
  if (spec.kind === 'path') return readPath(spec.fs === 'root' ? host.fs : host.local, spec, maxBytes, budget);
  const raw = await readOne(host, spec, options, maxBytes);
  budget.spendDocuments(1);
  budget.spendBytes(raw.bytes.length);
  return [raw];
}

async function readOne(host: ConfigHost, spec: Exclude<SourceSpec, { kind: 'path' }>, options: LoadOptions, maxBytes: number): Promise<RawSource> {
  switch (spec.kind) {
    case 'stdin': {
      if (!options.readStdin) throw new SourceError('standard input is not available here');
      const bytes = await options.readStdin(maxBytes);
      if (bytes.length > maxBytes) throw new SourceError(`larger than the limit of ${formatBytes(maxBytes)}`, 'a configuration is never that large');
      return { name: 'stdin', bytes, userData: false };
    }
    case 'https': {
      let ca: Buffer | undefined;
      if (spec.caFile) {
        ca = await host.local.readFile(spec.caFile);
        if (!ca) throw new SourceError(`the CA file ${spec.caFile} does not exist`, 'give the path of a PEM file with #ca=<path>');
      }
      const response = await httpRequest({
        url: spec.url,
        offline: host.offline,
        sleep: (ms) => host.sleep(ms),
        maxBytes,
        headers: { accept: 'application/yaml, application/json;q=0.9, */*;q=0.5' },
        ...(ca ? { ca } : {}),
        ...(options.http?.retry ? { retry: options.http.retry } : {}),
        ...(options.http?.timeouts ? { timeouts: options.http.timeouts } : {}),
      });
      checkPin(response.body, spec.sha256);
      const type = String(response.headers['content-type'] ?? '');
      if (/^text\/html\b/i.test(type) && !isMultipart(response.body)) {
        throw new SourceError(`the server answered ${response.status} with an HTML page (Content-Type: ${type.split(';')[0]}), not a configuration`, 'check the URL: a login page, a proxy or an error page answered instead');
      }
      return { name: spec.name, bytes: response.body, userData: false };
    }
    case 'imds': {
      const imdsOptions = { maxBytes, ...(options.imds?.retry ? { retry: options.imds.retry } : {}), ...(options.imds?.timeouts ? { timeouts: options.imds.timeouts } : {}) };
      const cloud = spec.cloud ?? (await detectCloud(host, imdsOptions));
      const { userData, instanceId } = await readInstanceMetadata(host, cloud, imdsOptions);
      return { name: spec.cloud ? spec.name : `${spec.name} (${cloud})`, bytes: userData ?? Buffer.alloc(0), userData: true, ...(instanceId ? { instanceId } : {}) };
    }
  }
}

export async function readPath(fs: RootedFileSystem, spec: Extract<SourceSpec, { kind: 'path' }>, maxBytes: number, budget: LoadBudget = new LoadBudget()): Promise<RawSource[]> {
  const info = await fs.stat(spec.path);
  if (!info) {
    // A path named as a folder (config.d/) finds nothing when a file holds its name: said, not skipped.
    const inTheWay = spec.path.endsWith('/') ? await fs.stat(spec.path.slice(0, -1)) : undefined;
    if (inTheWay && inTheWay.kind !== 'directory') {
      throw new SourceError(`is a ${inTheWay.kind === 'symlink' ? 'symbolic link' : 'file'}, not a folder`, `make it a folder of drop-ins (${spec.path}NAME.yaml), or move what is there away`);
    }
    if (spec.optional) return [];
    throw new SourceError('no such file or directory', 'check the -c/--config path');
  }
  if (info.kind === 'directory') return readDirectory(fs, spec, maxBytes, budget);
  const bytes = await readLimited(fs, spec.path, info, maxBytes);
  // stat does not follow links: a config.d that is a link to a directory is read as that directory.
  if (bytes === 'directory') return readDirectory(fs, spec, maxBytes, budget);
  checkPin(bytes, spec.sha256);
  budget.spendDocuments(1);
  budget.spendBytes(bytes.length);
  return [{ name: spec.name, bytes, userData: false, directory: joinPath(fs.root, dirname(spec.path)) }];
}

export async function readDirectory(fs: RootedFileSystem, spec: Extract<SourceSpec, { kind: 'path' }>, maxBytes: number, budget: LoadBudget = new LoadBudget()): Promise<RawSource[]> {
  if (spec.sha256) throw new SourceError('a sha256 pin names one file, not a directory');
  // Lexical (byte) order, so an image's 10-defaults.yaml comes before a user's 50-site.yaml, as
  // `LC_ALL=C ls` lists them (a string sort compares UTF-16 units, which differs beyond U+FFFF);
  // hidden files (editor backups) are left out.
  const names = (await fs.list(spec.path))
    .filter((n) => /\.(ya?ml|json)$/i.test(n) && !n.startsWith('.'))
    .sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
  // Refused before any is read: ten thousand drop-ins held at once took 360 MiB.
  budget.spendDocuments(names.length);
  const out: RawSource[] = [];
  for (const name of names) {
    const child = `${spec.path.replace(/[\\/]+$/, '')}/${name}`;
    let bytes: Buffer | 'directory';
    try {
      // stat too: under --root it refuses an entry that links out of the root.
      const childInfo = await fs.stat(child);
      if (!childInfo || childInfo.kind === 'directory') continue;
      bytes = await readLimited(fs, child, childInfo, maxBytes);
    } catch (error) {
      // The problem is the entry's, so the message names the entry rather than the directory; the
      // other drop-ins are still read and checked, as other sources are.
      out.push({ name: child, bytes: Buffer.alloc(0), userData: false, issues: sourceIssues(error, child) });
      continue;
    }
    // A link to a subdirectory is left out like a subdirectory.
    if (bytes === 'directory') continue;
    budget.spendBytes(bytes.length);
    out.push({ name: child, bytes, userData: false, directory: joinPath(fs.root, dirname(child)) });
  }
  return out;
}

/** The file's bytes, stopping at the limit (see RootedFileSystem.readUpTo). */
export async function readLimited(fs: RootedFileSystem, path: string, info: FileInfo, maxBytes: number): Promise<Buffer | 'directory'> {
  const tooLarge = (size?: number): SourceError =>
    new SourceError(`larger than the limit of ${formatBytes(maxBytes)}${size === undefined ? '' : ` (${formatBytes(size)})`}`, 'a configuration is never that large');
  if (info.kind === 'file' && info.size > maxBytes) throw tooLarge(info.size);
  try {
    const bytes = await fs.readUpTo(path, maxBytes);
    if (bytes === undefined) throw tooLarge();
    return bytes;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EISDIR') return 'directory';
    if (code === 'ENOENT') throw new SourceError('no such file or directory', 'check the -c/--config path (a link may point to nothing)');
    throw error;
  }
}

// The pin is checked on the bytes as delivered, before anything parses them.
export function checkPin(bytes: Buffer, pin: string | undefined): void {
  if (pin === undefined) return;
  // node:crypto only when a source is pinned: loading it is a good part of a start.
  const actual = process.getBuiltinModule('node:crypto').createHash('sha256').update(bytes).digest('hex');
  if (actual !== pin) {
    throw new SourceError(`the content's sha256 is ${actual}, not the pinned ${pin}`, 'the content changed or the pin is wrong; nothing from this source was used');
  }
}

export class SourceError extends Error {
  readonly hint: string | undefined;
  constructor(message: string, hint?: string) {
    super(message);
    this.hint = hint;
  }
}

export function sourceIssues(error: unknown, source: string): ConfigIssue[] {
  if (error instanceof DocumentError) return error.issues.map((i) => ({ ...i, source: i.source ?? source }));
  if (error instanceof ConfigError) return error.issues.map((i) => ({ ...i, source: i.source ?? source }));
  if (error instanceof MimeError) return [{ source, ...(error.line ? { line: error.line } : {}), path: '', message: `MIME user data: ${error.message}`, ...(error.hint ? { hint: error.hint } : {}) }];
  if (error instanceof BudgetError) return [{ source, path: '', message: error.message, hint: error.hint }];
  if (error instanceof HttpError || error instanceof MachineadmError || error instanceof SourceError || error instanceof ImdsError) {
    const hint = (error as { hint?: string }).hint;
    const unreadable = error instanceof HttpError || error instanceof ImdsError ? { unreadable: true as const } : {};
    // An HTTP error names its URL, which the issue names already as its source.
    const message = error.message.startsWith(`${source}: `) ? error.message.slice(source.length + 2) : error.message;
    return [{ source, path: '', message, ...(hint ? { hint } : {}), ...unreadable }];
  }
  const code = (error as NodeJS.ErrnoException).code;
  if (code === 'EACCES' || code === 'EPERM') return [{ source, path: '', message: 'permission denied', hint: 'run machineadm as a user that may read it', unreadable: true }];
  if (code === 'EISDIR') return [{ source, path: '', message: 'is a directory' }];
  return [{ source, path: '', message: `cannot be read: ${(error as Error).message}`, unreadable: true }];
}
