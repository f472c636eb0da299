// Loading: read every source (file, directory, stdin, https, instance metadata), take the
// MachineConfig out of MIME user data, parse each document with its positions, check each on its
// own (so a problem is reported with its source, line and column), merge in order, then validate
// the merged whole. Every problem is collected and reported at once. The sources as given are
// ./source-specs.ts's, reading each kind ./source-reading.ts's, bytes into documents
// ./source-documents.ts's.
import { resolve as resolvePath } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { ConfigHost } from '../host/config-host.ts';
import { ConfigError, ExitCode, MachineadmError, type ConfigIssue } from '../errors.ts';
import { formatPath, isPlainObject, parseWith, type FieldPath, type SchemaIssue } from './schema/dsl.ts';
import { API_GROUP, API_VERSION, SUPPORTED_API_VERSIONS, machineConfigSchema, type MachineConfig } from './schema/index.ts';
import { mergeConfigs, replacesWhole } from './merge.ts';
import { isRelativeSource } from './schema/source.ts';
import type { ParsedDocument } from './document.ts';
import { MACHINECONFIG_CONTENT_TYPE } from './mime.ts';
import { secretLiterals } from './redact.ts';
import { REDACTED } from './secrets.ts';
import { machineFileIssues } from './machine-files.ts';
import { isNetwork, parseSources, type LoadOptions, type RawSource, type SourceSpec } from './source-specs.ts';
import { readSource, sourceIssues } from './source-reading.ts';
import { extractDocuments } from './source-documents.ts';
import { LoadBudget } from './budgets.ts';

export { parseSources, type LoadOptions, type SourceSpec } from './source-specs.ts';

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
  // Totals of all sources together (./budgets.ts). Past one, reading or parsing on would only
  // spend more: the configuration is refused with what was found so far.
  const budget = new LoadBudget();
  // The sources as given and what each was read as (a directory's drop-ins, a cloud's user data),
  // in that order: problems are listed in it.
  const order: string[] = [];
  for (const spec of specs) {
    order.push(spec.name);
    try {
      const read = await readSource(host, spec, options, maxBytes, budget);
      order.push(...read.map((r) => r.name));
      raws.push(...read);
    } catch (error) {
      issues.push(...sourceIssues(error, spec.name));
      unreadable.push(spec.name);
      if (budget.exhausted) throw new ConfigError(issues);
    }
  }

  const documents: ParsedDocument[] = [];
  const userData = { sources: [] as string[], optedIn: false };
  for (const raw of raws) {
    if (raw.issues) {
      issues.push(...raw.issues);
      unreadable.push(raw.name);
      continue;
    }
    try {
      const found = extractDocuments(raw, maxBytes, budget);
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
      if (budget.exhausted) throw new ConfigError(scrub(inSourceOrder(issues, order), documents));
    }
  }
  // User data decides whether machineadm is wanted at all: without a MachineConfig in it, the
  // other sources (an image's defaults) do not make this machine a node on their own.
  if (userData.sources.length > 0 && !userData.optedIn) {
    if (issues.length) throw new ConfigError(scrub(inSourceOrder(issues, order), documents));
    throw new NoMachineConfigError(userData.sources);
  }
  if (documents.length === 0) {
    if (issues.length) throw new ConfigError(scrub(inSourceOrder(issues, order), documents));
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
    // A set, looked up at each of the path's own ancestors: comparing every pair took a minute
    // for a document of 20,000 wrong fields.
    const reported = new Set(issues.map((i) => i.path).filter((p) => p !== ''));
    const underReported = (path: string) => reported.has(path) || [...path.matchAll(/[.[]/g)].some((m) => reported.has(path.slice(0, m.index)));
    const left = unreadable.length ? `; checked without ${unreadable.join(', ')}, which has problems of its own` : '';
    for (const found of final.map((i) => locateMerged(i, merging))) {
      if (underReported(found.path)) continue;
      issues.push(left ? { ...found, hint: `${found.hint ?? 'see the message'}${left}` } : found);
    }
    issues.push(...(await machineFileIssues(host.fs, merged)).map((i) => locateMerged(i, merging)));
  }
  if (issues.length || !config) throw new ConfigError(scrub(inSourceOrder(issues, order), documents));
  const instanceId = raws.find((r) => r.instanceId)?.instanceId;
  return { config, sources: documents.map((d) => d.source), ...(instanceId ? { instanceId } : {}), ...(warnings.length ? { warnings } : {}) };
}

/**
 * Issues grouped by source in the order the sources were given (`order`: each source, then what it
 * was read as), a MIME part's after its user data's in part order, each source's in file order.
 */
function inSourceOrder(issues: ConfigIssue[], order: readonly string[]): ConfigIssue[] {
  const first = new Map<string, number>();
  order.forEach((name, n) => first.has(name) || first.set(name, n));
  const rank = (source: string | undefined): [number, number] => {
    const at = source === undefined ? undefined : first.get(source);
    if (source === undefined || at !== undefined) return [at ?? Number.MAX_SAFE_INTEGER, 0];
    const part = / \(part (\d+)\)$/.exec(source);
    const whole = part ? first.get(source.slice(0, part.index)) : undefined;
    return whole !== undefined ? [whole, Number(part![1])] : [Number.MAX_SAFE_INTEGER, 0];
  };
  return issues
    .map((issue, n) => ({ issue, n, rank: rank(issue.source) }))
    .sort((a, b) => a.rank[0] - b.rank[0] || a.rank[1] - b.rank[1] || (a.issue.line ?? Infinity) - (b.issue.line ?? Infinity) || (a.issue.column ?? 0) - (b.issue.column ?? 0) || a.n - b.n)
    .map((x) => x.issue);
}

/** Where a URL may name a file beside the configuration: the field's path, the object and its key. */
function sourcesOf(spec: unknown): [string, Record<string, unknown>, string][] {
  if (!isPlainObject(spec)) return [];
  const out: [string, Record<string, unknown>, string][] = [];
  const list = (value: unknown, field: string) => {
    if (Array.isArray(value)) value.forEach((item, i) => isPlainObject(item) && isPlainObject(item.source) && out.push([`${field}[${i}].source.url`, item.source, 'url']));
  };
  list(spec.files, 'spec.files');
  list(isPlainObject(spec.windows) ? spec.windows.hostAgents : undefined, 'spec.windows.hostAgents');
  const dj = spec.domainJoin;
  const blob = isPlainObject(dj) && isPlainObject(dj.windows) ? dj.windows.offlineBlob : undefined;
  if (isPlainObject(blob)) out.push(['spec.domainJoin.windows.offlineBlob.url', blob, 'url']);
  const install = isPlainObject(spec.kubernetes) ? spec.kubernetes.install : undefined;
  if (isPlainObject(install)) {
    // The release's base is a folder of its layout (BASE/VERSION/bin/...), resolved like a file.
    out.push(['spec.kubernetes.install.baseUrl', install, 'baseUrl']);
    for (const piece of ['crictl', 'cniPlugins']) if (isPlainObject(install[piece])) out.push([`spec.kubernetes.install.${piece}.url`, install[piece], 'url']);
    const urls = install.urls;
    if (isPlainObject(urls)) for (const name of Object.keys(urls)) out.push([`spec.kubernetes.install.urls.${name}`, urls, name]);
    if (Array.isArray(install.images)) install.images.forEach((image, i) => isPlainObject(image) && out.push([`spec.kubernetes.install.images[${i}].url`, image, 'url']));
  }
  return out;
}

/**
 * A source url given as a relative path (spec.files, the Windows host agents, the djoin blob,
 * what spec.kubernetes.install installs) names a file beside the configuration file (an
 * air-gapped bundle, copied anywhere): it becomes the file: URL of that file here, before anything
 * else reads it. A source that is not a file (stdin, https, user data) has nothing to be relative to.
 */
function resolveRelativeSources(doc: ParsedDocument, directory: string | undefined): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  for (const [field, holder, key] of sourcesOf(isPlainObject(doc.value) ? doc.value.spec : undefined)) {
    const url = holder[key];
    if (typeof url !== 'string' || !isRelativeSource(url)) continue;
    if (directory === undefined) {
      issues.push({ source: doc.source, path: field, message: `"${url}" is a relative path, and ${doc.source} is not a file it could be relative to`, hint: 'give a file:///absolute/path or an https:// URL, or put the configuration in a file beside it' });
      continue;
    }
    holder[key] = pathToFileURL(resolvePath(directory, url)).href;
  }
  return issues;
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
// last source that wrote the field or its closest ancestor, since that is where a fix goes. A
// source whose list, null or scalar replaced an ancestor whole wrote the field too: the earlier
// sources' positions under it point at values the merge threw away.
function locateMerged(i: SchemaIssue, documents: ParsedDocument[]): ConfigIssue {
  let best: { doc: ParsedDocument; depth: number } | undefined;
  for (const doc of documents) {
    const written = writtenDepth(doc, i.path);
    if (written === undefined) continue;
    if (written.replaces || !best || written.depth >= best.depth) best = { doc, depth: written.depth };
  }
  if (!best) return toIssue(i, documents.length === 1 ? documents[0]!.source : '(merged)', undefined);
  return toIssue(i, best.doc.source, best.doc.positions.find(i.path.slice(0, best.depth)));
}

/**
 * How deep along `path` a document reaches (the deepest ancestor it has a position for), and
 * whether it replaces what earlier documents wrote there: it writes the field itself, or a value on
 * the way to it that merging does not merge into.
 */
function writtenDepth(doc: ParsedDocument, path: FieldPath): { depth: number; replaces: boolean } | undefined {
  let depth = 0;
  for (let n = path.length; n >= 1; n--) {
    if (doc.positions.has(path.slice(0, n))) {
      depth = n;
      break;
    }
  }
  if (depth === 0) return undefined;
  if (depth === path.length) return { depth, replaces: true };
  let value: unknown = doc.value;
  for (const key of path.slice(0, depth)) {
    value = isPlainObject(value) || Array.isArray(value) ? (value as Record<string | number, unknown>)[key] : undefined;
    if (replacesWhole(value)) return { depth, replaces: true };
  }
  return { depth, replaces: false };
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
