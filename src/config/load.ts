// Loading: read every source (file, directory, stdin, https, instance metadata), take the
// MachineConfig out of MIME user data, parse each document with its positions, check each on its
// own (so a problem is reported with its source, line and column), merge in order, then validate
// the merged whole. Every problem is collected and reported at once.
import { dirname, join as joinPath, resolve as resolvePath } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { FileInfo, RootedFileSystem } from '../host/index.ts';
import type { ConfigHost } from '../host/config-host.ts';
import { HttpError, displayUrl, formatBytes, httpRequest, type HttpTimeouts, type RetryPolicy } from '../host/http.ts';
import { ConfigError, ExitCode, MachineadmError, type ConfigIssue } from '../errors.ts';
import { formatPath, isPlainObject, parseWith, type SchemaIssue } from './schema/dsl.ts';
import { API_GROUP, API_VERSION, SUPPORTED_API_VERSIONS, machineConfigSchema, type MachineConfig } from './schema/index.ts';
import { mergeConfigs } from './merge.ts';
import { isRelativeSource } from './schema/source.ts';
import { DocumentError, decodeUtf8, parseDocument, type ParsedDocument } from './document.ts';
import { MACHINECONFIG_CONTENT_TYPE, MimeError, gunzipLimited, isGzip, isMultipart, machineConfigPart, mimeForCloudInit, singlePart, splitMultipart, unwrapBase64, type MimePart } from './mime.ts';
import { ImdsError, detectCloud, readInstanceMetadata, type Cloud } from './imds.ts';
import { secretLiterals } from './redact.ts';
import { REDACTED } from './secrets.ts';
import { machineFileIssues } from './machine-files.ts';

export const DEFAULT_SOURCES = ['/etc/machineadm/config.yaml', '/etc/machineadm/config.d/'];

/** No source may be larger than this (a configuration is a few KiB; payload URLs a few hundred). */
export const MAX_SOURCE_BYTES = 8 * 1024 * 1024;

export interface LoadedConfig {
  config: MachineConfig;
  /** The sources that contributed, in merge order. */
  sources: string[];
  /** The instance id, when an imds:// source was read (the metadata service names the machine). */
  instanceId?: string;
  /** What was read, but may not be what was meant (for the run's report). */
  warnings?: string[];
}

export interface LoadOptions {
  /** Reads all of standard input (for the source "-"). */
  readStdin?: (maxBytes: number) => Promise<Buffer>;
  /** Relative -c paths are resolved against this directory (default: the process's). */
  cwd?: string;
  maxBytes?: number;
  /** Retry and timeout settings for https:// sources (tests shorten them). */
  http?: { retry?: Partial<RetryPolicy>; timeouts?: Partial<HttpTimeouts> };
  /** Retry and timeout settings for imds:// sources. */
  imds?: { retry?: Partial<RetryPolicy>; timeouts?: Partial<HttpTimeouts> };
  /**
   * Without -c and with nothing at the default sources: an empty MachineConfig instead of an error
   * (reset, which works from its records and needs a configuration only for credentials).
   */
  emptyWhenNone?: boolean;
}

/**
 * The sources were read and hold no MachineConfig, because user data (instance metadata or a MIME
 * multipart document) carried none: the user has not opted in to machineadm. Exit 0.
 */
export class NoMachineConfigError extends MachineadmError {
  readonly sources: string[];
  constructor(sources: string[]) {
    super(`nothing to do: the user data holds no MachineConfig (${sources.join(', ')}); machineadm leaves this machine as it is`, ExitCode.ok, {
      hint: `to use machineadm, add a part with Content-Type: ${MACHINECONFIG_CONTENT_TYPE} to the user data`,
    });
    this.sources = sources;
  }
}

export type SourceSpec =
  | { kind: 'stdin'; name: string }
  | { kind: 'path'; name: string; path: string; fs: 'local' | 'root'; optional: boolean; sha256?: string }
  | { kind: 'https'; name: string; url: string; sha256?: string; caFile?: string }
  | { kind: 'imds'; name: string; cloud?: Cloud };

interface RawSource {
  name: string;
  bytes: Buffer;
  /** Instance metadata: a document that is not a MachineConfig is not an error there. */
  userData: boolean;
  instanceId?: string;
  /** The real directory of a file source: relative file sources in it are resolved against it. */
  directory?: string;
}

const SCHEMES = ['file://', 'https://', 'imds://'];

// What each scheme's fragment may carry; anything else would be silently ignored (a pin that is
// never checked), so it is refused.
const FRAGMENT_PARAMETERS: Record<string, { names: string[]; hint: string }> = {
  'file:': { names: ['sha256'], hint: 'a file:// fragment takes only sha256=<hex>' },
  'https:': { names: ['sha256', 'ca'], hint: 'an https:// fragment takes sha256=<hex> and ca=<path of a PEM CA file>' },
  'imds:': { names: [], hint: 'instance metadata takes no fragment: its content cannot be pinned' },
};

/** Reads the source strings of -c into specs, collecting every malformed one. */
export function parseSources(sources: readonly string[], cwd: string): { specs: SourceSpec[]; issues: ConfigIssue[] } {
  const specs: SourceSpec[] = [];
  const issues: ConfigIssue[] = [];
  let stdin = 0;
  for (const source of sources) {
    const bad = (message: string, hint?: string) => issues.push({ source: safeName(source), path: '', message, ...(hint ? { hint } : {}) });
    if (source === '-') {
      if (++stdin > 1) bad('standard input can be read only once', 'give "-" a single time');
      else specs.push({ kind: 'stdin', name: 'stdin' });
    } else if (/^[a-z][a-z0-9+.-]*:\/\//i.test(source)) {
      let url: URL;
      try {
        url = new URL(source);
      } catch {
        bad('not a valid URL', 'write it like https://config.example/node.yaml');
        continue;
      }
      const fragment = new URLSearchParams(url.hash.replace(/^#/, ''));
      const sha256 = fragment.get('sha256') ?? undefined;
      const allowed = FRAGMENT_PARAMETERS[url.protocol];
      const unknown = allowed ? [...fragment.keys()].filter((k) => !allowed.names.includes(k)) : [];
      if (unknown.length) bad(`unknown URL fragment parameter ${unknown.map((k) => JSON.stringify(k)).join(', ')}`, allowed!.hint);
      if (sha256 !== undefined && !/^[a-f0-9]{64}$/i.test(sha256)) bad('the sha256 pin is not 64 hex digits', 'write #sha256=<64 hex digits> (sha256sum prints them)');
      const pin = sha256?.toLowerCase();
      if (url.protocol === 'file:') {
        const path = url.host && url.host !== 'localhost' ? undefined : decodedPath(url);
        if (path === undefined) bad('not a valid file:// URL', 'name a local path, e.g. file:///etc/x.yaml (with %XX escapes only for bytes such as a space)');
        else specs.push({ kind: 'path', name: path, path, fs: 'local', optional: false, ...(pin ? { sha256: pin } : {}) });
      } else if (url.protocol === 'https:') {
        const ca = fragment.get('ca') ?? undefined;
        const clean = new URL(url);
        clean.hash = '';
        specs.push({ kind: 'https', name: displayUrl(source), url: clean.toString(), ...(pin ? { sha256: pin } : {}), ...(ca ? { caFile: resolvePath(cwd, ca) } : {}) });
      } else if (url.protocol === 'imds:') {
        const where = `${url.host}${url.pathname}`.replace(/\/+$/, '');
        const match = /^(?:(aws|azure|gce)\/)?user-data$/.exec(where);
        if (!match) bad('unknown instance metadata source', 'use imds://user-data (cloud detected) or imds://aws/user-data, imds://azure/user-data, imds://gce/user-data');
        else specs.push({ kind: 'imds', name: `imds://${where}`, ...(match[1] ? { cloud: match[1] as Cloud } : {}) });
      } else if (url.protocol === 'http:') {
        bad('plain http:// is not accepted for configuration (it can be changed on the way and may carry secrets)', 'serve it over https://, or copy it to a local file');
      } else {
        bad(`unknown kind of source ${JSON.stringify(url.protocol.replace(/:$/, ''))}`, `use a path, "-", or a URL starting with ${SCHEMES.join(', ')}`);
      }
    } else if (source === '') {
      bad('an empty source', 'give a path, "-", or a URL');
    } else {
      const path = resolvePath(cwd, source);
      specs.push({ kind: 'path', name: source.endsWith('/') && !path.endsWith('/') ? `${path}/` : path, path, fs: 'local', optional: false });
    }
  }
  return { specs, issues };
}

function decodedPath(url: URL): string | undefined {
  try {
    return decodeURIComponent(url.pathname);
  } catch {
    return undefined;
  }
}

// Sources are named in messages; a URL's query may hold a token, so it is shown as displayUrl shows it.
function safeName(source: string): string {
  return /^https?:\/\//i.test(source) ? displayUrl(source) : source;
}

function isNetwork(spec: SourceSpec): boolean {
  return spec.kind === 'https' || spec.kind === 'imds';
}

export async function loadConfig(host: ConfigHost, sources: readonly string[], options: LoadOptions = {}): Promise<LoadedConfig> {
  const maxBytes = options.maxBytes ?? MAX_SOURCE_BYTES;
  const explicit = sources.length > 0;
  const { specs, issues } = explicit
    ? parseSources(sources, options.cwd ?? process.cwd())
    : { specs: DEFAULT_SOURCES.map((path): SourceSpec => ({ kind: 'path', name: path, path, fs: 'root', optional: true })), issues: [] as ConfigIssue[] };
  // --offline refuses every network source before anything is read, and names each of them.
  if (host.offline) {
    for (const spec of specs.filter(isNetwork)) {
      issues.push({ source: spec.name, path: '', message: 'refused: this source needs the network and machineadm runs with --offline', hint: 'give the configuration from a file or stdin, or drop --offline' });
    }
  }
  if (issues.length) throw new ConfigError(issues);

  // A source that cannot be read or parsed does not stop the others from being checked: every
  // problem of every source, and of the merged whole, is reported at once.
  const unreadable: string[] = [];
  const raws: RawSource[] = [];
  const warnings: string[] = [];
  for (const spec of specs) {
    try {
      raws.push(...(await readSource(host, spec, options, maxBytes)));
    } catch (error) {
      issues.push(...sourceIssues(error, spec.name));
      unreadable.push(spec.name);
    }
  }

  const documents: ParsedDocument[] = [];
  const userData = { sources: [] as string[], optedIn: false };
  for (const raw of raws) {
    try {
      const found = extractDocuments(raw, maxBytes);
      if (found.userData) {
        userData.sources.push(raw.name);
        userData.optedIn ||= found.documents.length > 0;
      }
      for (const doc of found.documents) issues.push(...resolveRelativeSources(doc, raw.directory));
      warnings.push(...(found.warnings ?? []));
      documents.push(...found.documents);
    } catch (error) {
      issues.push(...sourceIssues(error, raw.name));
      unreadable.push(raw.name);
    }
  }
  // User data decides whether machineadm is wanted at all: without a MachineConfig in it, the
  // other sources (an image's defaults) do not make this machine a node on their own.
  if (userData.sources.length > 0 && !userData.optedIn) {
    if (issues.length) throw new ConfigError(scrub(issues, documents));
    throw new NoMachineConfigError(userData.sources);
  }
  if (documents.length === 0) {
    if (issues.length) throw new ConfigError(scrub(issues, documents));
    if (!explicit && options.emptyWhenNone) {
      const { value } = parseWith(machineConfigSchema, { apiVersion: API_VERSION, kind: 'MachineConfig', spec: {} });
      if (value) return { config: value, sources: [] };
    }
    throw new ConfigError([
      explicit
        ? { path: '', message: `no configuration found in ${specs.map((s) => s.name).join(', ')}`, hint: 'the directories hold no *.yaml, *.yml or *.json file' }
        : { path: '', message: `no configuration found (looked at ${DEFAULT_SOURCES.join(', ')} under the root)`, hint: 'give one with -c FILE' },
    ]);
  }

  let merged: unknown = undefined;
  const merging: ParsedDocument[] = [];
  for (const doc of documents) {
    const checked = checkDocument(doc);
    issues.push(...checked.issues);
    // A document of another kind or apiVersion means other things: it is not merged.
    if (checked.machineConfig) {
      merged = mergeConfigs(merged, doc.value);
      merging.push(doc);
    } else unreadable.push(doc.source);
  }
  let config: MachineConfig | undefined;
  if (merging.length) {
    const { value, issues: final } = parseWith(machineConfigSchema, merged);
    config = value;
    // A source's own problem is not repeated for the merged whole.
    const reported = issues.map((i) => i.path).filter((p) => p !== '');
    const left = unreadable.length ? `; checked without ${unreadable.join(', ')}, which has problems of its own` : '';
    for (const found of final.map((i) => locateMerged(i, merging))) {
      if (reported.some((p) => found.path === p || found.path.startsWith(`${p}.`) || found.path.startsWith(`${p}[`))) continue;
      issues.push(left ? { ...found, hint: `${found.hint ?? 'see the message'}${left}` } : found);
    }
    issues.push(...(await machineFileIssues(host.fs, merged)).map((i) => locateMerged(i, merging)));
  }
  if (issues.length || !config) throw new ConfigError(scrub(inSourceOrder(issues, documents), documents));
  const instanceId = raws.find((r) => r.instanceId)?.instanceId;
  return { config, sources: documents.map((d) => d.source), ...(instanceId ? { instanceId } : {}), ...(warnings.length ? { warnings } : {}) };
}

/** Issues grouped by source in the order the sources were given, each source's in file order. */
function inSourceOrder(issues: ConfigIssue[], documents: ParsedDocument[]): ConfigIssue[] {
  const order = new Map<string, number>();
  for (const i of issues) if (i.source !== undefined && !order.has(i.source)) order.set(i.source, order.size);
  for (const d of documents) if (!order.has(d.source)) order.set(d.source, order.size);
  const rank = (i: ConfigIssue) => (i.source === undefined ? Number.MAX_SAFE_INTEGER : (order.get(i.source) ?? Number.MAX_SAFE_INTEGER));
  return issues
    .map((issue, n) => ({ issue, n }))
    .sort((a, b) => rank(a.issue) - rank(b.issue) || (a.issue.line ?? Infinity) - (b.issue.line ?? Infinity) || (a.issue.column ?? 0) - (b.issue.column ?? 0) || a.n - b.n)
    .map((x) => x.issue);
}

async function readSource(host: ConfigHost, spec: SourceSpec, options: LoadOptions, maxBytes: number): Promise<RawSource[]> {
  switch (spec.kind) {
    case 'stdin': {
      if (!options.readStdin) throw new SourceError('standard input is not available here');
      const bytes = await options.readStdin(maxBytes);
      if (bytes.length > maxBytes) throw new SourceError(`larger than the limit of ${formatBytes(maxBytes)}`, 'a configuration is never that large');
      return [{ name: 'stdin', bytes, userData: false }];
    }
    case 'path':
      return readPath(spec.fs === 'root' ? host.fs : host.local, spec, maxBytes);
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
      return [{ name: spec.name, bytes: response.body, userData: false }];
    }
    case 'imds': {
      const imdsOptions = { maxBytes, ...(options.imds?.retry ? { retry: options.imds.retry } : {}), ...(options.imds?.timeouts ? { timeouts: options.imds.timeouts } : {}) };
      const cloud = spec.cloud ?? (await detectCloud(host, imdsOptions));
      const { userData, instanceId } = await readInstanceMetadata(host, cloud, imdsOptions);
      return [{ name: spec.cloud ? spec.name : `${spec.name} (${cloud})`, bytes: userData ?? Buffer.alloc(0), userData: true, ...(instanceId ? { instanceId } : {}) }];
    }
  }
}

async function readPath(fs: RootedFileSystem, spec: Extract<SourceSpec, { kind: 'path' }>, maxBytes: number): Promise<RawSource[]> {
  const info = await fs.stat(spec.path);
  if (!info) {
    if (spec.optional) return [];
    throw new SourceError('no such file or directory', 'check the -c/--config path');
  }
  if (info.kind === 'directory') return readDirectory(fs, spec, maxBytes);
  const bytes = await readLimited(fs, spec.path, info, maxBytes);
  // stat does not follow links: a config.d that is a link to a directory is read as that directory.
  if (bytes === 'directory') return readDirectory(fs, spec, maxBytes);
  checkPin(bytes, spec.sha256);
  return [{ name: spec.name, bytes, userData: false, directory: joinPath(fs.root, dirname(spec.path)) }];
}

async function readDirectory(fs: RootedFileSystem, spec: Extract<SourceSpec, { kind: 'path' }>, maxBytes: number): Promise<RawSource[]> {
  if (spec.sha256) throw new SourceError('a sha256 pin names one file, not a directory');
  // Lexical order, so an image's 10-defaults.yaml comes before a user's 50-site.yaml; hidden files
  // (editor backups) are left out.
  const names = (await fs.list(spec.path)).filter((n) => /\.(ya?ml|json)$/i.test(n) && !n.startsWith('.'));
  const out: RawSource[] = [];
  for (const name of names) {
    const child = `${spec.path.replace(/[\\/]+$/, '')}/${name}`;
    const childInfo = await fs.stat(child);
    if (!childInfo || childInfo.kind === 'directory') continue;
    try {
      const bytes = await readLimited(fs, child, childInfo, maxBytes);
      // A link to a subdirectory is left out like a subdirectory.
      if (bytes !== 'directory') out.push({ name: child, bytes, userData: false, directory: joinPath(fs.root, dirname(child)) });
    } catch (error) {
      // The problem is the entry's, so the message names the entry rather than the directory.
      throw new ConfigError(sourceIssues(error, child));
    }
  }
  return out;
}

/** The file's bytes, stopping at the limit (see RootedFileSystem.readUpTo). */
async function readLimited(fs: RootedFileSystem, path: string, info: FileInfo, maxBytes: number): Promise<Buffer | 'directory'> {
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
function checkPin(bytes: Buffer, pin: string | undefined): void {
  if (pin === undefined) return;
  // node:crypto only when a source is pinned: loading it is a good part of a start.
  const actual = process.getBuiltinModule('node:crypto').createHash('sha256').update(bytes).digest('hex');
  if (actual !== pin) {
    throw new SourceError(`the content's sha256 is ${actual}, not the pinned ${pin}`, 'the content changed or the pin is wrong; nothing from this source was used');
  }
}

class SourceError extends Error {
  readonly hint: string | undefined;
  constructor(message: string, hint?: string) {
    super(message);
    this.hint = hint;
  }
}

function sourceIssues(error: unknown, source: string): ConfigIssue[] {
  if (error instanceof DocumentError) return error.issues.map((i) => ({ ...i, source: i.source ?? source }));
  if (error instanceof ConfigError) return error.issues.map((i) => ({ ...i, source: i.source ?? source }));
  if (error instanceof MimeError) return [{ source, ...(error.line ? { line: error.line } : {}), path: '', message: `MIME user data: ${error.message}`, ...(error.hint ? { hint: error.hint } : {}) }];
  if (error instanceof HttpError || error instanceof MachineadmError || error instanceof SourceError || error instanceof ImdsError) {
    const hint = (error as { hint?: string }).hint;
    const unreadable = error instanceof HttpError || error instanceof ImdsError ? { unreadable: true as const } : {};
    return [{ source, path: '', message: error.message, ...(hint ? { hint } : {}), ...unreadable }];
  }
  const code = (error as NodeJS.ErrnoException).code;
  if (code === 'EACCES' || code === 'EPERM') return [{ source, path: '', message: 'permission denied', hint: 'run machineadm as a user that may read it', unreadable: true }];
  if (code === 'EISDIR') return [{ source, path: '', message: 'is a directory' }];
  return [{ source, path: '', message: `cannot be read: ${(error as Error).message}`, unreadable: true }];
}

/** The objects whose `url` may name a file beside the configuration, with their field paths. */
function sourcesOf(spec: unknown): [string, Record<string, unknown>][] {
  if (!isPlainObject(spec)) return [];
  const out: [string, Record<string, unknown>][] = [];
  const list = (value: unknown, field: string) => {
    if (Array.isArray(value)) value.forEach((item, i) => isPlainObject(item) && isPlainObject(item.source) && out.push([`${field}[${i}].source`, item.source]));
  };
  list(spec.files, 'spec.files');
  list(isPlainObject(spec.windows) ? spec.windows.hostAgents : undefined, 'spec.windows.hostAgents');
  const dj = spec.domainJoin;
  const blob = isPlainObject(dj) && isPlainObject(dj.windows) ? dj.windows.offlineBlob : undefined;
  if (isPlainObject(blob)) out.push(['spec.domainJoin.windows.offlineBlob', blob]);
  return out;
}

/**
 * A source url given as a relative path (spec.files, the Windows host agents, the djoin blob)
 * names a file beside the configuration file (an air-gapped bundle, copied anywhere): it becomes
 * the file: URL of that file here, before anything else reads it. A source that is not a file
 * (stdin, https, user data) has nothing to be relative to.
 */
function resolveRelativeSources(doc: ParsedDocument, directory: string | undefined): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  for (const [field, source] of sourcesOf(isPlainObject(doc.value) ? doc.value.spec : undefined)) {
    if (typeof source.url !== 'string' || !isRelativeSource(source.url)) continue;
    if (directory === undefined) {
      issues.push({ source: doc.source, path: `${field}.url`, message: `"${source.url}" is a relative path, and ${doc.source} is not a file it could be relative to`, hint: 'give a file:///absolute/path or an https:// URL, or put the configuration in a file beside it' });
      continue;
    }
    source.url = pathToFileURL(resolvePath(directory, source.url)).href;
  }
  return issues;
}

/** The MachineConfig documents among MIME parts: machineadm's parts parsed, a mistyped one refused. */
function documentsOfParts(raw: RawSource, all: MimePart[]): { documents: ParsedDocument[]; userData: boolean; warnings?: string[] } {
  const out: ParsedDocument[] = [];
  const issues: ConfigIssue[] = [];
  // A part that plainly means to be machineadm's but has another type would otherwise leave the
  // machine silently unconfigured ("nothing to do").
  for (const part of all.filter((p) => machineConfigPart(p.contentType) === 'mistyped')) {
    issues.push({ source: `${raw.name} (part ${part.index})`, path: '', message: `has Content-Type ${part.contentType}, which machineadm does not read`, hint: `use Content-Type: ${MACHINECONFIG_CONTENT_TYPE}` });
  }
  for (const part of all.filter((p) => machineConfigPart(p.contentType) === 'yes')) {
    const name = `${raw.name} (part ${part.index})`;
    try {
      const lineOffset = (part.firstLine ?? 1) - 1;
      const doc = parseDocument(stripBom(decodeUtf8(part.body, name, lineOffset)), name, lineOffset);
      if (!doc) throw new DocumentError([{ source: name, path: '', message: `the ${MACHINECONFIG_CONTENT_TYPE} part is empty`, hint: 'put the MachineConfig in the part, or remove the part' }]);
      out.push(doc);
    } catch (error) {
      issues.push(...sourceIssues(error, name));
    }
  }
  if (issues.length) throw new ConfigError(issues);
  const warnings = all
    .filter((p) => machineConfigPart(p.contentType) === 'yes' && p.readOtherwiseByCloudInit)
    .map((p) => `${raw.name} (part ${p.index}): no blank line after the part's headers; machineadm read the MachineConfig, but cloud-init reads its first line as a header and the part as empty (put a blank line after the headers)`);
  return { documents: out, userData: true, ...(warnings.length ? { warnings } : {}) };
}

const UTF8_BOM = Buffer.from([0xef, 0xbb, 0xbf]);

/**
 * The MachineConfig documents of MIME content (multipart, or one part with its headers); undefined
 * when the content is not MIME. Content may start with a UTF-8 byte order mark (3.2), MIME too;
 * cloud-init then reads the headers as text, which a warning says.
 */
function mimeDocuments(raw: RawSource, content: Uint8Array, maxBytes: number): { documents: ParsedDocument[]; userData: boolean; warnings?: string[] } | undefined {
  const bom = UTF8_BOM.equals(content.subarray(0, 3));
  const bytes = bom ? content.subarray(3) : content;
  let found: { documents: ParsedDocument[]; userData: boolean; warnings?: string[] };
  const notes: string[] = [];
  if (isMultipart(bytes)) {
    found = documentsOfParts(raw, splitMultipart(bytes, maxBytes));
    if (found.documents.length > 0 && !mimeForCloudInit(bytes)) {
      notes.push(`${raw.name}: multipart user data without a MIME-Version header; machineadm read the MachineConfig, but cloud-init reads such user data as plain text and does not hand its parts to machineadm's part handler (put MIME-Version: 1.0 among the top headers)`);
    }
  } else {
    // One part with no multipart around it (headers, a blank line, the body): read as that part,
    // as cloud-init reads it, never as YAML with the headers in it.
    const single = singlePart(bytes, maxBytes);
    if (!single) return undefined;
    found = documentsOfParts(raw, [single]);
    if (!mimeForCloudInit(bytes) && machineConfigPart(single.contentType) === 'yes') {
      notes.push(`${raw.name}: one MIME part without a MIME-Version header; machineadm read the MachineConfig, but cloud-init reads such user data as plain text and does not hand it to machineadm's part handler (put MIME-Version: 1.0 before Content-Type)`);
    }
  }
  if (bom && found.documents.length > 0) {
    notes.push(`${raw.name}: MIME user data that starts with a byte order mark; machineadm read the MachineConfig, but cloud-init reads such user data as plain text and does not hand its parts to machineadm's part handler (save it as UTF-8 without a byte order mark)`);
  }
  const warnings = [...(found.warnings ?? []), ...notes];
  return { ...found, ...(warnings.length ? { warnings } : {}) };
}

/** The MachineConfig documents a source holds (none for user data that does not opt in). */
function extractDocuments(raw: RawSource, maxBytes: number): { documents: ParsedDocument[]; userData: boolean; warnings?: string[] } {
  let bytes = raw.bytes;
  // cloud-init accepts gzip-compressed user data; so does machineadm, from any source.
  if (isGzip(bytes)) bytes = gunzipLimited(bytes, maxBytes);
  const unwrapped = raw.userData ? unwrapBase64(bytes) : undefined;
  if (unwrapped) bytes = isGzip(unwrapped) ? gunzipLimited(unwrapped, maxBytes) : unwrapped;
  const mime = mimeDocuments(raw, bytes, maxBytes);
  if (mime) return mime;
  if (raw.userData) {
    // Whole (non-multipart) user data: a MachineConfig is taken whole; a shell script or a
    // cloud-config is someone else's, unless it plainly means to be ours.
    if (bytes.length === 0) return { documents: [], userData: true };
    const text = stripBom(Buffer.from(bytes).toString('utf8'));
    // cloud-init's own formats start with a marker line; one that only mentions machineadm (a
    // cloud-config writing a MachineConfig file with write_files) is still cloud-init's.
    const cloudInit = /^#(!|cloud-|include|part-handler|upstart-job)/.test(text);
    const ours = !cloudInit && (text.includes(API_GROUP) || /^\s*kind:\s*["']?MachineConfig\b/m.test(text));
    if (!ours) return { documents: [], userData: true };
    const doc = parseDocument(stripBom(decodeUtf8(bytes, raw.name)), raw.name);
    return { documents: doc ? [doc] : [], userData: true };
  }
  const doc = parseDocument(stripBom(decodeUtf8(bytes, raw.name)), raw.name);
  if (!doc) throw new DocumentError([{ source: raw.name, path: '', message: 'is empty', hint: `write a MachineConfig (apiVersion: ${SUPPORTED_API_VERSIONS[0]}, kind: MachineConfig, spec: ...)` }]);
  return { documents: [doc], userData: false };
}

function stripBom(text: string): string {
  return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
}

/** A source's own problems: not a MachineConfig, an unsupported apiVersion, unknown fields, types. */
function checkDocument(doc: ParsedDocument): { issues: ConfigIssue[]; machineConfig: boolean } {
  const at = (path: (string | number)[]) => {
    const p = doc.positions.find(path);
    return p ? { line: p.line, column: p.column } : {};
  };
  const value = doc.value;
  if (!isPlainObject(value)) {
    return { machineConfig: false, issues: [{ source: doc.source, ...at([]), path: '', message: `not a MachineConfig: the document is ${Array.isArray(value) ? 'a list' : 'a single value'}, not a map`, hint: `start it with apiVersion: ${SUPPORTED_API_VERSIONS[0]} and kind: MachineConfig` }] };
  }
  if (value.apiVersion === undefined && value.kind === undefined) {
    return { machineConfig: false, issues: [{ source: doc.source, ...at([]), path: '', message: 'not a MachineConfig: apiVersion and kind are missing', hint: `start it with apiVersion: ${SUPPORTED_API_VERSIONS[0]} and kind: MachineConfig` }] };
  }
  const issues: ConfigIssue[] = [];
  const supported = SUPPORTED_API_VERSIONS as readonly unknown[];
  if (!supported.includes(value.apiVersion)) {
    const ownGroup = typeof value.apiVersion === 'string' && value.apiVersion.startsWith(`${API_GROUP}/`);
    issues.push({
      source: doc.source,
      ...at(['apiVersion']),
      path: 'apiVersion',
      message: `${value.apiVersion === undefined ? 'is missing' : `${quoted(value.apiVersion)} is not supported`}; this machineadm reads ${SUPPORTED_API_VERSIONS.join(', ')}`,
      hint: ownGroup ? 'a newer machineadm may read this version; or write the configuration for a supported version' : `set apiVersion: ${SUPPORTED_API_VERSIONS[0]}`,
    });
  }
  // With a foreign apiVersion the kind is that API's business: one message is enough.
  if (issues.length === 0 && value.kind !== 'MachineConfig') {
    issues.push({ source: doc.source, ...at(['kind']), path: 'kind', message: `${value.kind === undefined ? 'is missing' : `${quoted(value.kind)} is not supported`}; the kind is MachineConfig`, hint: 'set kind: MachineConfig' });
  }
  // Another apiVersion's fields mean other things: checking them against v1alpha1 would only add noise.
  if (issues.length) return { machineConfig: false, issues };
  const { issues: found } = parseWith(machineConfigSchema, value, { partial: true });
  return { machineConfig: true, issues: found.map((i) => toIssue(i, doc.source, doc.positions.find(i.path))) };
}

// A wrong value as written, cut short: it may be anything up to the size limit.
function quoted(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}

function toIssue(i: SchemaIssue, source: string, position: { line: number; column: number } | undefined): ConfigIssue {
  return {
    source,
    ...(position ? { line: position.line, column: position.column } : {}),
    path: formatPath(i.path),
    message: i.message,
    ...(i.hint ? { hint: i.hint } : {}),
  };
}

// A problem of the merged whole (a required field missing, a cross-field rule) is shown at the
// last source that wrote the field or its closest ancestor, since that is where a fix goes.
function locateMerged(i: SchemaIssue, documents: ParsedDocument[]): ConfigIssue {
  let best: { doc: ParsedDocument; depth: number } | undefined;
  for (const doc of documents) {
    for (let n = i.path.length; n >= 1; n--) {
      if (doc.positions.has(i.path.slice(0, n))) {
        if (!best || n >= best.depth) best = { doc, depth: n };
        break;
      }
    }
  }
  if (!best) return toIssue(i, documents.length === 1 ? documents[0]!.source : '(merged)', undefined);
  return toIssue(i, best.doc.source, best.doc.positions.find(i.path.slice(0, best.depth)));
}

// No message may carry a secret's value, whatever rule produced it.
function scrub(issues: ConfigIssue[], documents: ParsedDocument[]): ConfigIssue[] {
  const secrets = documents
    .flatMap((d) => secretLiterals(d.value))
    // Messages quote at most 77 characters of a long value, so its start is hidden too.
    .flatMap((s) => (s.length > 80 ? [s, s.slice(0, 77)] : [s]))
    // Very short values would scrub ordinary words (as SecretScrubber does); secret() never quotes them anyway.
    .filter((s) => s.length >= 4);
  if (secrets.length === 0) return issues;
  const clean = (text: string) => secrets.reduce((t, s) => (t.includes(s) ? t.split(s).join(REDACTED) : t), text);
  return issues.map((i) => ({ ...i, message: clean(i.message), ...(i.hint ? { hint: clean(i.hint) } : {}) }));
}

