// prepare/containerd/registries: certs.d/<registry>/hosts.toml for every configured registry, and the
// CA bundle from spec.containerd.caCertificates. containerd reads these on every pull: no restart.
// hosts.toml files machineadm wrote earlier for registries no longer configured are removed.
import type { Change, Step, StepContext } from '../../engine/step.ts';
import { inspectFiles, writeFiles, errorForField, type DesiredFile } from '../../engine/managed-file.ts';
import { desiredFile, renderFor, WRITTEN_BY_MACHINEADM } from './render.ts';
import { CA_BUNDLE, CERTS_DIR, hostsTomlPath } from '../paths.ts';
import { hostsTomlRegistries } from '../files.ts';

function desired(ctx: StepContext): DesiredFile[] {
  const files = renderFor(ctx);
  return [...(files.caBundle ? [files.caBundle] : []), ...files.hosts].map(desiredFile);
}

/**
 * Files this step wrote in an earlier run that the configuration no longer asks for: those its
 * record names, and every hosts.toml in certs.d and the CA bundle found on the machine (a run
 * killed before its record reached the state file leaves files the record does not name).
 */
async function stale(ctx: StepContext, wanted: readonly DesiredFile[]): Promise<string[]> {
  const previous = ctx.previous?.data?.paths;
  const found = [CA_BUNDLE, ...(await ctx.host.fs.list(CERTS_DIR)).map((registry) => hostsTomlPath(registry))];
  const candidates = new Set([...(Array.isArray(previous) ? previous : []), ...found]);
  const keep = new Set(wanted.map((f) => f.path));
  const out: string[] = [];
  for (const path of candidates) {
    if (typeof path !== 'string' || keep.has(path)) continue;
    const info = await ctx.host.fs.stat(path).catch(() => undefined);
    if (info?.kind !== 'file') continue;
    const text = (await ctx.host.fs.readText(path)) ?? '';
    // Only a file still carrying machineadm's header (or the CA bundle it wrote) is taken away.
    if (text.startsWith(WRITTEN_BY_MACHINEADM) || path.endsWith('machineadm-ca.crt')) out.push(path);
  }
  return out;
}

export const containerdRegistriesStep: Step = {
  id: 'containerd/registries',
  // containerd's own files and service: a download begun before it fetches the same bytes.
  overtakable: true,
  summary: 'write certs.d/<registry>/hosts.toml (mirrors, CAs, TLS) and the extra CA bundle',
  platforms: ['linux'],
  applies: (config) => config.spec.containerd !== undefined,
  // Without spec.containerd too, while the last run wrote files: they are taken away then.
  leftBehind: (earlier) => Array.isArray(earlier?.paths) && earlier.paths.length > 0,
  // The same hosts.toml files the step renders, _default included when only the CAs ask for it.
  writes: (config) => [...hostsTomlRegistries(config.spec.containerd).map(hostsTomlPath), ...((config.spec.containerd?.caCertificates?.length ?? 0) > 0 ? [CA_BUNDLE] : [])],
  // Stale files are found on the machine too: a lost record only names fewer of them.
  recordCanWait: true,
  async check(ctx) {
    const wanted = desired(ctx);
    const states = await inspectFiles(ctx.host.fs, wanted, ctx.facts.privileged);
    const changes: Change[] = states.flatMap((s) => (s.change ? [s.change] : []));
    for (const path of await stale(ctx, wanted)) changes.push({ action: 'delete', target: path, detail: 'written by machineadm for a registry no longer configured' });
    return { done: changes.length === 0, changes, record: { paths: wanted.map((f) => f.path) } };
  },
  async apply(ctx) {
    const wanted = desired(ctx);
    const remove = await stale(ctx, wanted);
    await writeFiles(ctx.host.fs, wanted, ctx.facts.privileged);
    for (const path of remove) {
      try {
        await ctx.host.fs.remove(path);
        // An empty certs.d/<registry>/ still wins containerd's lookup over _default/, so the
        // registry would lose the CAs and mirrors _default gives every other registry.
        const dir = path.slice(0, path.lastIndexOf('/'));
        if (dir.startsWith(`${CERTS_DIR}/`) && (await ctx.host.fs.list(dir)).length === 0) await ctx.host.fs.remove(dir);
      } catch (error) {
        throw errorForField('spec.containerd.registries', error);
      }
    }
    return { record: { paths: wanted.map((f) => f.path) } };
  },
};
