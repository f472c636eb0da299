// Files the configuration names that must already be on the machine: a registry CA file that
// containerd cannot read fails every pull through that registry (a hosts.toml `ca` is read on each
// pull, long after machineadm finished). They are looked up through the Host, under --root, while
// the configuration is loaded, so a missing one is a configuration error before anything changes.
import type { RootedFileSystem } from '../host/index.ts';
import { isPlainObject, type FieldPath, type SchemaIssue } from './schema/dsl.ts';
import { certificateProblem } from './schema/containerd.ts';

/** A CA bundle is a few KiB; anything far larger is not one (and is not read whole). */
const MAX_CA_BYTES = 4 * 1024 * 1024;

/** Every CA file path spec.containerd names, with its field path; read from the merged value as given. */
function containerdFiles(spec: Record<string, unknown>): { path: FieldPath; file: string }[] {
  const out: { path: FieldPath; file: string }[] = [];
  const containerd = spec.containerd;
  if (!isPlainObject(containerd) || !isPlainObject(containerd.registries)) return out;
  for (const [name, registry] of Object.entries(containerd.registries)) {
    if (!isPlainObject(registry)) continue;
    const at: FieldPath = ['spec', 'containerd', 'registries', name];
    if (typeof registry.caFile === 'string') out.push({ path: [...at, 'caFile'], file: registry.caFile });
    if (!Array.isArray(registry.mirrors)) continue;
    registry.mirrors.forEach((mirror, i) => {
      if (isPlainObject(mirror) && typeof mirror.caFile === 'string') out.push({ path: [...at, 'mirrors', i, 'caFile'], file: mirror.caFile });
    });
  }
  return out.filter((f) => f.file.startsWith('/') && !f.file.split('/').includes('..'));
}

/** The problems with the files the configuration expects to find, for the merged configuration value. */
export async function machineFileIssues(fs: RootedFileSystem, config: unknown): Promise<SchemaIssue[]> {
  const spec = isPlainObject(config) && isPlainObject(config.spec) ? config.spec : undefined;
  if (!spec) return [];
  // spec.files are written by prepare/files, before the containerd steps.
  const written = new Set(Array.isArray(spec.files) ? spec.files.flatMap((f) => (isPlainObject(f) && typeof f.path === 'string' ? [f.path] : [])) : []);
  const issues: SchemaIssue[] = [];
  for (const { path, file } of containerdFiles(spec)) {
    if (written.has(file)) continue;
    const problem = await caFileProblem(fs, file);
    if (problem) {
      const [message = problem, hint] = problem.split('|');
      issues.push({ path, message, ...(hint ? { hint } : {}) });
    }
  }
  return issues;
}

async function caFileProblem(fs: RootedFileSystem, file: string): Promise<string | undefined> {
  const where = fs.root === '/' ? '' : ` under ${fs.root}`;
  try {
    const info = await fs.stat(file);
    if (!info) return `${file} does not exist${where}|write the CA file before machineadm runs, or list it in spec.files (written before containerd is configured)`;
    if (info.kind === 'directory') return `${file} is a directory, not a CA file|name the PEM file itself`;
    if (info.kind === 'other') return `${file} is not a regular file|name a PEM file`;
    if (info.kind === 'file' && info.size > MAX_CA_BYTES) return `${file} is too large for a CA bundle|name a PEM file with the registry's CA certificates`;
    const bytes = await fs.readFile(file);
    if (!bytes) return `${file} does not exist${where} (a link to nothing)|write the CA file before machineadm runs`;
    const problem = certificateProblem(bytes.subarray(0, MAX_CA_BYTES).toString('utf8'));
    if (problem) return `${file} ${problem.split('|')[0]}|give a file of whole PEM certificates (openssl x509 -in FILE -noout checks the first)`;
  } catch (error) {
    return `${file} cannot be read: ${(error as Error).message}|make it readable by machineadm`;
  }
  return undefined;
}
