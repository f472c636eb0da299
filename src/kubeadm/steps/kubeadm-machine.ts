// What the kubeadm steps find on the machine around kubeadm: its version now, what an earlier
// kubeadm left, the certificates a control-plane join needs, the operator's patches, the
// kubelet's log for a failure, and the plan's changes built from them.
import type { StepContext, Change } from '../../engine/step.ts';
import type { KubernetesSpec } from '../../config/schema/index.ts';
import { tail } from '../../host/index.ts';
import { parseKubeadmVersion } from '../../host/facts.ts';
import { type ApiChoice } from '../version.ts';
import { type RenderedKubeadm } from '../render.ts';
import { type KubeadmPaths } from '../paths.ts';
import { NODE_NAME_TAKEN, scrubKubeadmOutput, type KubeadmFailure } from '../output.ts';
import { type Command, OUTPUT_TAIL_LINES, kubeadmArgv, kubeadmProgram, kubernetesOf, joinPath } from './kubeadm-inputs.ts';

/**
 * Steps that never install, replace or hide kubeadm (nor change where it is looked for). The
 * version the facts read at the run's start stands when, in this run, only these changed the
 * machine before kubeadm's turn, and no spec.files target is named kubeadm: asking again costs a
 * kubeadm start on the boot's critical path. Any other step that changed something (boot commands,
 * disks and mounts, the commands before kubeadm, the Windows steps) makes it ask again.
 */
export const LEAVE_KUBEADM = new Set([
  'prepare/kernel-modules/load',
  'prepare/kernel-modules/file',
  'prepare/sysctls/apply',
  'prepare/sysctls/file',
  'prepare/users',
  'prepare/files',
  'prepare/time-servers/file',
  'prepare/time-servers/restart',
  'prepare/containerd/config',
  'prepare/containerd/registries',
  'prepare/containerd/proxy',
  'prepare/containerd/restart',
  'provision/domain/join',
]);

/** Whether this run may have put another kubeadm in place since the facts asked for its version. */
export function kubeadmMayHaveChanged(ctx: StepContext): boolean {
  if (ctx.facts.kubeadmVersion === undefined || ctx.facts.os !== 'linux') return true;
  if ((ctx.config.spec.files ?? []).some((f) => /(^|\/)kubeadm$/.test(f.path))) return true;
  return ctx.run.phases.some((phase) => phase.steps.some((s) => s.result !== 'skipped' && !LEAVE_KUBEADM.has(s.id)));
}

export async function currentKubeadmVersion(ctx: StepContext, program = kubeadmProgram(ctx)): Promise<string | undefined> {
  if (!kubeadmMayHaveChanged(ctx) && program === 'kubeadm') return ctx.facts.kubeadmVersion;
  // The facts were read before the prepare phase, which may have installed or replaced kubeadm.
  const result = await ctx.host.proc.run([program, 'version', '-o', 'short'], { timeoutMs: 15_000, allowFailure: true }).catch(() => undefined);
  return result && result.exitCode === 0 ? parseKubeadmVersion(result.stdout) : ctx.facts.kubeadmVersion;
}

export async function kubeletLogTail(ctx: StepContext, known: string[]): Promise<string | undefined> {
  if (ctx.facts.os !== 'linux' || !(await ctx.host.proc.which('journalctl'))) return undefined;
  const argv: [string, ...string[]] = ['journalctl', ...(ctx.facts.liveRoot ? [] : ['--root', ctx.host.fs.root]), '-u', 'kubelet', '-n', String(OUTPUT_TAIL_LINES), '--no-pager'];
  const result = await ctx.host.proc.run(argv, { timeoutMs: 15_000, allowFailure: true }).catch(() => undefined);
  if (!result || result.exitCode !== 0) return undefined;
  const lines = result.stdout.split('\n').filter((l) => l.trim() !== '' && !/^-- No entries --$/.test(l.trim()));
  if (lines.length === 0) return undefined;
  return tail(lines.map((l) => scrubKubeadmOutput(l, known)).join('\n'), OUTPUT_TAIL_LINES);
}

export function hintFor(failure: KubeadmFailure, timedOut: boolean): string {
  if (NODE_NAME_TAKEN.test(failure.message ?? '')) {
    return 'another machine is registered under this node name: delete that Node (kubectl delete node NAME) if it is gone, or set spec.kubernetes.node.name';
  }
  if (timedOut) return 'kubeadm did not finish in spec.kubernetes.timeoutSeconds: check that the control plane is reachable and the kubelet starts (kubeletLogTail)';
  switch (failure.phase?.split('/')[0]) {
    case undefined:
      return 'kubeadm refused its configuration or flags before starting: the output names the field; check the kubeadm version against spec.kubernetes.version';
    case 'preflight':
      return 'fix what the preflight output lists (an unreachable API server, a wrong token or CA hash, or leftovers of an earlier join: run again with --force to reset first)';
    case 'kubelet-start':
    case 'kubelet-wait-bootstrap':
      return 'the kubelet did not start or did not finish its TLS bootstrap: read kubeletLogTail, and check that containerd runs and its cgroup driver matches';
    default:
      return 'read the output tail; after fixing the cause run machineadm again with --force (it resets the half-done node first)';
  }
}

/**
 * The first file a kubeadm run writes that is on the machine (a kubeadm ran here, finished or
 * not), leaving out what spec.files writes (a control plane's certificates brought as files).
 */
export async function kubeadmLeftover(ctx: StepContext, command: Command, paths: KubeadmPaths): Promise<string | undefined> {
  // A plan for another operating system (--os, --facts) cannot look at that machine's files.
  if (ctx.host.fs.platform !== ctx.facts.os) return undefined;
  const written = new Set((ctx.config.spec.files ?? []).map((f) => f.path));
  for (const file of paths.takenFiles(command, kubernetesOf(ctx.config)!.role === 'control-plane')) {
    if (!written.has(file) && (await ctx.host.fs.exists(file))) return file;
  }
  return undefined;
}

// What kubeadm join --control-plane needs from the cluster when it cannot download it with a
// certificate key (kubeadm's CheckSharedCertificates): the CAs, the service-account key pair and,
// for a local etcd, etcd's CA. Files written by spec.files count: they exist before kubeadm runs.
export const SHARED_CERTIFICATES = ['ca.crt', 'ca.key', 'sa.key', 'sa.pub', 'front-proxy-ca.crt', 'front-proxy-ca.key'];

export async function missingCertificates(ctx: StepContext, k: KubernetesSpec, paths: KubeadmPaths): Promise<string[]> {
  if (k.bootstrap !== 'join' || k.role !== 'control-plane' || k.certificateKey !== undefined) return [];
  if (ctx.host.fs.platform !== ctx.facts.os) return [];
  const written = new Set((ctx.config.spec.files ?? []).map((f) => f.path));
  const missing: string[] = [];
  for (const name of SHARED_CERTIFICATES) {
    const file = `${paths.pkiDir}/${name}`;
    if (!written.has(file) && !(await ctx.host.fs.exists(file))) missing.push(file);
  }
  return missing;
}

/**
 * The discovery file of a file-discovery join when it is not there for kubeadm, whose validation
 * refuses a path that names no file: not on the machine, not written by spec.files, and no
 * operator's command before kubeadm that may fetch it.
 */
export async function missingDiscoveryFile(ctx: StepContext, k: KubernetesSpec): Promise<string | undefined> {
  const file = k.discoveryFile;
  if (k.bootstrap !== 'join' || file === undefined || ctx.host.fs.platform !== ctx.facts.os) return undefined;
  const commands = (ctx.config.spec.commands?.boot?.length ?? 0) + (ctx.config.spec.commands?.beforeKubeadm?.length ?? 0);
  if (commands > 0 || (ctx.config.spec.files ?? []).some((f) => f.path === file)) return undefined;
  return (await ctx.host.fs.exists(file)) ? undefined : file;
}

/** Names of the patch files the user keeps in spec.kubernetes.patchesDirectory: on disk, or written by spec.files. */
export async function userPatches(ctx: StepContext, dir: string): Promise<string[]> {
  const fromFiles = (ctx.config.spec.files ?? []).filter((f) => f.path.startsWith(`${dir}/`) && !f.path.slice(dir.length + 1).includes('/')).map((f) => f.path.slice(dir.length + 1));
  const onDisk = ctx.host.fs.platform === ctx.facts.os ? await ctx.host.fs.list(dir).catch(() => [] as string[]) : [];
  return [...new Set([...onDisk, ...fromFiles])].sort();
}

/** Why kubeadm must not run: its files are here and machineadm did not start them (no --force). */
export function leftoverRefusal(ctx: StepContext, leftover: string | undefined): string | undefined {
  if (leftover === undefined || ctx.options.force || ctx.startedBefore) return undefined;
  return `${leftover} exists but machineadm has no record of joining this machine`;
}

export const LEFTOVER_HINT = 'the machine was joined another way or an earlier kubeadm stopped halfway; run again with --force to reset it (kubeadm reset -f) and join';

export function planChanges(ctx: StepContext, command: Command, k: KubernetesSpec, paths: KubeadmPaths, choice: ApiChoice, rendered: RenderedKubeadm, leftover: string | undefined): Change[] {
  const changes: Change[] = [
    ...paths.privateDirs.map((dir) => ({ action: 'create', target: dir, detail: 'directory with an ACL for SYSTEM and Administrators only (protected), before any secret is written' })),
    { action: 'write', target: paths.configFile(command), detail: `${rendered.apiVersion} for ${choice.basedOn}; mode 0600, removed after kubeadm ran`, diff: rendered.config },
    ...rendered.patches.map((p) => ({ action: 'write', target: joinPath(ctx.facts.os, rendered.patchesDir, p.name), detail: 'kubelet settings for this node (kubeadm patch)', diff: p.content })),
  ];
  if (k.patchesDirectory !== undefined) changes.push({ action: 'copy', target: rendered.patchesDir, detail: `kubeadm patch files from ${k.patchesDirectory}` });
  if (leftover !== undefined) {
    changes.push(
      ctx.options.force || ctx.startedBefore
        ? { action: 'run', target: `kubeadm reset -f --cri-socket ${paths.criSocket}`, detail: `${ctx.options.force ? '--force' : 'an earlier run stopped during this step'}: ${leftover} exists, the node is reset first` }
        : { action: 'refuse', target: leftover, detail: 'exists without a record of machineadm joining: run with --force to reset and join again' },
    );
  }
  const retries = command === 'join' && k.retries > 0 ? `, up to ${k.retries} retries after transient failures` : '';
  changes.push({ action: 'run', target: kubeadmArgv(command, k, paths, ctx).join(' '), detail: `timeout ${k.timeoutSeconds}s${retries}` });
  return changes;
}

export interface KeptFile {
  path: string;
  bytes: Buffer;
  mode: number;
  owner: string;
}

/**
 * The files spec.files wrote where `kubeadm reset` deletes everything (the cluster's certificates
 * a control plane brings as files, a static pod such as kube-vip's): read before a reset that
 * precedes a join, so the join that follows finds them as the files step left them.
 */
export async function filesResetDeletes(ctx: StepContext, paths: KubeadmPaths): Promise<KeptFile[]> {
  const sep = ctx.facts.os === 'windows' ? '\\' : '/';
  const kept: KeptFile[] = [];
  for (const file of ctx.config.spec.files ?? []) {
    if (!paths.resetEmpties.some((dir) => file.path.startsWith(dir + sep))) continue;
    const info = await ctx.host.fs.stat(file.path);
    if (info?.kind !== 'file') continue;
    const bytes = await ctx.host.fs.readFile(file.path);
    if (bytes !== undefined) kept.push({ path: file.path, bytes, mode: info.mode, owner: `${info.uid}:${info.gid}` });
  }
  return kept;
}

/** Writes back what the reset deleted or changed of them, with the mode and owner they had. */
export async function putBack(ctx: StepContext, kept: readonly KeptFile[]): Promise<void> {
  for (const file of kept) {
    const now = await ctx.host.fs.readFile(file.path);
    if (now !== undefined && now.equals(file.bytes)) continue;
    // Not a change of its own: the files step's record of these bytes stays the record.
    await ctx.host.fs.writeFile(file.path, file.bytes, { mode: file.mode, owner: file.owner, backup: false });
  }
}
