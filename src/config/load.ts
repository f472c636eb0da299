// Loading: read every source, parse each (YAML or JSON), check each on its own (so a problem is
// reported with its source), merge in order, then validate the merged whole.
import { load as loadYaml } from 'js-yaml';
import type { Host, RootedFileSystem } from '../host/index.ts';
import { resolve as resolvePath } from 'node:path';
import { ConfigError, type ConfigIssue } from '../errors.ts';
import { formatPath, parseWith } from './schema/dsl.ts';
import { machineConfigSchema, type MachineConfig } from './schema/index.ts';
import { mergeConfigs } from './merge.ts';

export const DEFAULT_SOURCES = ['/etc/machineadm/config.yaml', '/etc/machineadm/config.d/'];

export interface LoadedConfig {
  config: MachineConfig;
  /** The sources that contributed, in merge order. */
  sources: string[];
}

interface RawDocument {
  source: string;
  value: unknown;
}

// Default sources are read under --root; sources named with -c are the operator's own paths.
async function readSource(fs: RootedFileSystem, source: string): Promise<RawDocument[]> {
  const path = source.startsWith('file://') ? decodeURIComponent(new URL(source).pathname) : source;
  const info = await fs.stat(path);
  if (!info) return [];
  if (info.kind === 'directory') {
    const names = (await fs.list(path)).filter((n) => /\.(ya?ml|json)$/.test(n));
    const docs = await Promise.all(names.map((n) => readSource(fs, `${path.replace(/\/$/, '')}/${n}`)));
    return docs.flat();
  }
  const text = (await fs.readText(path)) ?? '';
  try {
    return [{ source: path, value: loadYaml(text) }];
  } catch (cause) {
    throw new ConfigError([{ source: path, path: '', message: `not valid YAML: ${(cause as Error).message.split('\n')[0]}` }]);
  }
}

export async function loadConfig(host: Host, sources: readonly string[]): Promise<LoadedConfig> {
  const explicit = sources.length > 0;
  const docs: RawDocument[] = [];
  for (const source of explicit ? sources : DEFAULT_SOURCES) {
    const read = await readSource(explicit ? host.local : host.fs, explicit ? absolute(source) : source);
    if (explicit && read.length === 0 && !source.endsWith('/')) {
      throw new ConfigError([{ source, path: '', message: 'no such file', hint: 'check the -c/--config path' }]);
    }
    docs.push(...read);
  }
  if (docs.length === 0) {
    throw new ConfigError([{ path: '', message: `no configuration found (looked at ${DEFAULT_SOURCES.join(', ')} under the root)`, hint: 'give one with -c FILE' }]);
  }
  const issues: ConfigIssue[] = [];
  let merged: unknown = undefined;
  for (const doc of docs) {
    const { issues: found } = parseWith(machineConfigSchema, doc.value, { partial: true });
    issues.push(...found.map((i) => ({ source: doc.source, path: formatPath(i.path), message: i.message, ...(i.hint ? { hint: i.hint } : {}) })));
    merged = mergeConfigs(merged, doc.value);
  }
  if (issues.length) throw new ConfigError(issues);
  const { value, issues: final } = parseWith(machineConfigSchema, merged);
  if (!value) throw new ConfigError(final.map((i) => ({ source: '(merged)', path: formatPath(i.path), message: i.message, ...(i.hint ? { hint: i.hint } : {}) })));
  return { config: value, sources: docs.map((d) => d.source) };
}

function absolute(source: string): string {
  return /^[a-z]+:\/\//.test(source) ? source : resolvePath(source);
}
