// Under --offline, the images kubeadm and the kubelet will ask containerd for must be on the machine
// or behind a mirror the site runs: found before any change instead of by a kubelet that pulls for
// ever. kubeadm itself says which images its version needs (`kubeadm config images list`); a worker
// needs only kube-proxy and the pause image of them, a control plane all.
import { fileURLToPath } from 'node:url';
import type { StepContext } from '../../engine/step.ts';
import type { ConfigIssue } from '../../errors.ts';
import { artifacts, releaseArch } from '../../config/install-layout.ts';
import { CONTAINERD_SOCKET, CRI_NAMESPACE, imageRefsOf, NAMING_MEMBERS, normalizeImageRef, parseImageList, readTarMembers } from '../../containerd/image-archives.ts';
import { CONTAINERD_ADDRESS_ENV } from '../../containerd/steps/images.ts';
import { renderFor } from '../../containerd/steps/render.ts';
import { containerdConfigTable } from '../../containerd/config.ts';
import { CONTAINERD_CONFIG } from '../../containerd/paths.ts';
import { parseExtraConfig } from '../../config/containerd-toml/extra.ts';
import { V2_CRI, V3_IMAGES } from '../../config/containerd-toml/keys.ts';
import { isTable, type TomlTable } from '../../config/containerd-toml/toml.ts';
import { kubeadmProgram, kubernetesOf } from './kubeadm-inputs.ts';

const WORKER_IMAGES = /\/(kube-proxy|pause):[^/]*$/;
const PAUSE_IMAGE = /\/pause:[^/]*$/;

/** The kubeadm that can answer now: the one a bundle or local mirror will install, else the one there is. */
function kubeadmNow(ctx: StepContext): string {
  const k = kubernetesOf(ctx.config)!;
  const install = k.install;
  if (install?.binaries.includes('kubeadm') && install.baseUrl.startsWith('file:') && k.version) {
    const kubeadm = artifacts(install, k.version, ctx.facts.arch, '/unused').find((a) => a.name === 'kubeadm');
    if (kubeadm) return fileURLToPath(kubeadm.url);
  }
  return kubeadmProgram(ctx);
}

/** The images each image archive on this machine names (an archive to download cannot be here offline). */
async function imagesInArchives(ctx: StepContext): Promise<Set<string>> {
  const found = new Set<string>();
  for (const image of kubernetesOf(ctx.config)?.install?.images ?? []) {
    if (!image.url.startsWith('file:')) continue;
    const members = await readTarMembers(ctx.host.local.readBlocks(fileURLToPath(image.url)), NAMING_MEMBERS).catch(() => undefined);
    const refs = members && !('problem' in members) ? imageRefsOf(members) : undefined;
    for (const ref of refs && 'refs' in refs ? refs.refs : []) found.add(ref);
  }
  return found;
}

/** The images containerd has already (pulled into the image, imported before), when it answers. */
async function imagesInContainerd(ctx: StepContext): Promise<Set<string>> {
  const address = ctx.host.env[CONTAINERD_ADDRESS_ENV]?.replace(/^unix:\/\//, '') ?? (ctx.host.fs.isLiveRoot ? CONTAINERD_SOCKET : undefined);
  if (!address) return new Set();
  const listed = await ctx.host.proc.run(['ctr', '--address', address, '-n', CRI_NAMESPACE, 'images', 'ls', '-q'], { timeoutMs: 30_000, allowFailure: true }).catch(() => undefined);
  return new Set(listed?.exitCode === 0 ? parseImageList(listed.stdout) : []);
}

/** Whether spec.containerd.registries has a mirror for the image's registry (or for every registry). */
function mirrored(ctx: StepContext, ref: string): boolean {
  const registries = ctx.config.spec.containerd?.registries ?? {};
  const host = ref.split('/')[0]!;
  return [host, '_default'].some((name) => (registries[name]?.mirrors?.length ?? 0) > 0);
}

/** The sandbox image a config.toml names: version 2's CRI sandbox_image, version 3's pinned sandbox. */
function sandboxIn(table: TomlTable | undefined): string | undefined {
  const plugins = table?.plugins;
  if (!isTable(plugins)) return undefined;
  const v2 = plugins[V2_CRI];
  const v3 = plugins[V3_IMAGES];
  const named = (isTable(v2) ? v2.sandbox_image : undefined) ?? (isTable(v3) && isTable(v3.pinned_images) ? v3.pinned_images.sandbox : undefined);
  return typeof named === 'string' && named !== '' ? named : undefined;
}

function parsedToml(text: string | undefined): TomlTable | undefined {
  if (text === undefined) return undefined;
  try {
    return parseExtraConfig(text);
  } catch {
    return undefined;
  }
}

/**
 * The image pod sandboxes will run: spec.containerd.sandboxImage, else the one the config.toml
 * containerd reads names (machineadm's with its extraConfig, or the machine's own), else
 * containerd's built-in default, which is its release's and not kubeadm's (1.6 runs pause:3.6
 * where kubeadm v1.31 lists pause:3.10). Undefined when containerd cannot say.
 */
async function sandboxImage(ctx: StepContext): Promise<string | undefined> {
  const spec = ctx.config.spec.containerd;
  if (spec?.sandboxImage) return spec.sandboxImage;
  const configured = spec ? containerdConfigTable(spec, renderFor(ctx).target) : parsedToml(await ctx.host.fs.readText(CONTAINERD_CONFIG).catch(() => undefined));
  const named = sandboxIn(configured);
  if (named) return named;
  const defaults = await ctx.host.proc.run(['containerd', 'config', 'default'], { timeoutMs: 30_000, allowFailure: true }).catch(() => undefined);
  return defaults?.exitCode === 0 ? sandboxIn(parsedToml(defaults.stdout)) : undefined;
}

export async function offlineImageIssues(ctx: StepContext, command: 'init' | 'join'): Promise<ConfigIssue[]> {
  const k = kubernetesOf(ctx.config)!;
  if (!ctx.host.offline || ctx.facts.os !== 'linux' || !k.version) return [];
  const repository = command === 'init' ? k.controlPlane?.imageRepository : undefined;
  const argv: [string, ...string[]] = [kubeadmNow(ctx), 'config', 'images', 'list', '--kubernetes-version', k.version, ...(repository ? ['--image-repository', repository] : [])];
  const listed = await ctx.host.proc.run(argv, { timeoutMs: 60_000, allowFailure: true }).catch((error: unknown) => ({ exitCode: -1, stdout: '', stderr: (error as Error).message }));
  if (listed.exitCode !== 0) {
    return [{ path: 'spec.kubernetes.version', message: `--offline: cannot tell which images kubeadm ${k.version} needs (${argv.slice(0, 4).join(' ')} exited with code ${listed.exitCode}: ${listed.stderr.trim().split('\n').at(-1) ?? ''})`, hint: 'install kubeadm first, or bundle it with spec.kubernetes.install (machineadm bundle)' }];
  }
  // Pod sandboxes run containerd's sandbox image, not the pause image kubeadm lists (with
  // containerd the kubelet's choice only keeps an image from garbage collection).
  const sandbox = await sandboxImage(ctx);
  const needed = listed.stdout
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && (k.role === 'control-plane' || WORKER_IMAGES.test(line)))
    .map((line) => (sandbox !== undefined && PAUSE_IMAGE.test(line) ? sandbox : line));
  const present = new Set([...(await imagesInArchives(ctx)), ...(await imagesInContainerd(ctx))]);
  const missing = needed.filter((ref) => !present.has(normalizeImageRef(ref)) && !mirrored(ctx, normalizeImageRef(ref)));
  return missing.map((ref) => ({
    path: 'spec.kubernetes.install.images',
    message: `--offline: ${ref} (which a ${k.role} of ${k.version} needs, for ${releaseArch(ctx.facts.arch)}) is not in containerd, in no image archive of spec.kubernetes.install.images and behind no mirror of spec.containerd.registries`,
    hint: 'add an image archive holding it (skopeo copy docker://IMAGE oci-archive:FILE:IMAGE), or a mirror for its registry',
  }));
}
