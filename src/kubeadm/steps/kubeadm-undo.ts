// How reset undoes kubeadm init or join: kubeadm reset, then the folders and CNI files kubeadm
// left that were not there before (recorded before the step's first change).
import type { StepContext, Change, Undo, UndoContext } from '../../engine/step.ts';
import { StepDetailsError } from '../../errors.ts';
import { tail } from '../../host/index.ts';
import { kubeadmPaths } from '../paths.ts';
import { parseKubeadmFailure, scrubKubeadmOutput } from '../output.ts';
import { parseMinor } from '../version.ts';
import { KUBEADM_ROOTFS_ENV, OUTPUT_TAIL_LINES, joinPath, kubeadmFound, kubeadmUnderRoot, rootfsArgs } from './kubeadm-inputs.ts';
import { currentKubeadmVersion } from './kubeadm-machine.ts';

/** Folders kubeadm and the kubelet make on Linux (with their parents): those that were not there before the first join go after reset. */
export const KUBEADM_DIRS = ['/etc/kubernetes/manifests', '/etc/kubernetes/pki', '/etc/kubernetes/tmp', '/var/lib/kubelet', '/var/lib/etcd', '/etc/cni/net.d'];

/** kubeadm reset leaves the CNI configuration and says to remove it: reset removes what was not there before. */
export const CNI_DIR = '/etc/cni/net.d';

export function withParents(dirs: readonly string[]): string[] {
  const all = new Set<string>();
  for (const dir of dirs) for (let d = dir; d !== '/' && d !== ''; d = d.slice(0, d.lastIndexOf('/')) || '/') all.add(d);
  return [...all].sort((a, b) => b.length - a.length);
}

/** What reset would do after kubeadm: CNI files and folders that were not there before the first join. */
export async function kubeadmLeavings(ctx: UndoContext): Promise<{ cni: string[]; dirs: string[] }> {
  const { fs } = ctx.host;
  const dirsBefore = (ctx.undoRecord?.dirs ?? {}) as Record<string, string>;
  const cniBefore = (ctx.undoRecord?.cni ?? {}) as Record<string, string>;
  const cni = ctx.undoRecord ? (await fs.list(CNI_DIR)).filter((n) => !(n in cniBefore)).map((n) => `${CNI_DIR}/${n}`) : [];
  const dirs: string[] = [];
  for (const dir of withParents(KUBEADM_DIRS)) if (dirsBefore[dir] === 'absent' && (await fs.exists(dir))) dirs.push(dir);
  return { cni, dirs };
}

/** kubeadm v1.26 added `reset --cleanup-tmp-dir`; an older kubeadm refuses the flag as unknown. */
export const CLEANUP_TMP_DIR_SINCE = 26;

/** Whether this kubeadm empties its tmp folder itself (unknown: the newest kubeadm's way). */
function cleansTmpDir(kubeadmVersion: string | undefined): boolean {
  const parsed = kubeadmVersion === undefined ? undefined : parseMinor(kubeadmVersion);
  return parsed === undefined || parsed.minor >= CLEANUP_TMP_DIR_SINCE;
}

/** kubeadm's tmp folder, beside kubelet.conf. */
function kubeadmTmpDir(ctx: UndoContext): string {
  const conf = kubeadmPaths(ctx.facts.os).kubeletConf;
  const sep = ctx.facts.os === 'windows' ? '\\' : '/';
  return joinPath(ctx.facts.os, conf.slice(0, conf.lastIndexOf(sep)), 'tmp');
}

/**
 * kubeadm reset as machineadm reset runs it. --cleanup-tmp-dir: kubeadm leaves /etc/kubernetes/tmp
 * otherwise, where `kubeadm upgrade` keeps its backups (a copy of etcd's data, with every Secret of
 * the cluster), on a machine given back for reuse; before v1.26 machineadm removes it after kubeadm.
 */
export function kubeadmResetArgv(ctx: UndoContext, program: string, kubeadmVersion = ctx.facts.kubeadmVersion): [string, ...string[]] {
  return [program, 'reset', '-f', '--cri-socket', kubeadmPaths(ctx.facts.os).criSocket, ...(cleansTmpDir(kubeadmVersion) ? ['--cleanup-tmp-dir'] : []), ...rootfsArgs(ctx)];
}

export const kubeadmUndo: Undo = {
  summary: 'kubeadm reset: the node leaves the cluster, the kubelet stops, kubeadm\'s files, the CNI configuration and the folders made for them go',
  async check(ctx) {
    // Only a node machineadm joined (or began to join) is reset.
    if (ctx.done?.data?.joined !== true && ctx.undoRecord === undefined) return { done: true, changes: [] };
    if (ctx.host.fs.platform !== ctx.facts.os) return { done: false, changes: [{ action: 'run', target: 'kubeadm reset -f' }] };
    const paths = kubeadmPaths(ctx.facts.os);
    const taken: string[] = [];
    for (const file of new Set([...paths.takenFiles('init', true), ...paths.takenFiles('join', false)])) if (await ctx.host.fs.exists(file)) taken.push(file);
    const { cni, dirs } = await kubeadmLeavings(ctx);
    const changes: Change[] = [];
    if (taken.length) changes.push({ action: 'run', target: kubeadmResetArgv(ctx, 'kubeadm').join(' '), detail: `${taken.join(', ')} ${taken.length === 1 ? 'is' : 'are'} there; kubeadm stops the kubelet and empties its folders` });
    for (const file of cni) changes.push({ action: 'delete', target: file, detail: 'CNI configuration (kubeadm reset leaves it)' });
    for (const dir of dirs) changes.push({ action: 'delete', target: `${dir}/`, detail: 'folder that was not there before the first join' });
    if (changes.length === 0) return { done: true, changes };
    if (!ctx.facts.liveRoot && !kubeadmUnderRoot(ctx)) return { done: false, changes, skipReason: `kubeadm reset changes the live machine: not run under --root ${ctx.host.fs.root} (${KUBEADM_ROOTFS_ENV}=1 runs it with --rootfs)` };
    return { done: false, changes };
  },
  async apply(ctx, check) {
    const { fs, proc } = ctx.host;
    if (check.changes.some((c) => c.action === 'run')) {
      const program = await kubeadmFound(ctx);
      if (!program) throw new StepDetailsError('kubeadm is not installed (not found on PATH): the node cannot be reset', {}, { hint: 'install kubeadm again, or run "kubeadm reset -f" yourself and then machineadm reset' });
      const lines: string[] = [];
      const kubeadmVersion = await currentKubeadmVersion(ctx, program);
      const result = await proc.run(kubeadmResetArgv(ctx, program, kubeadmVersion), {
        timeoutMs: 5 * 60_000,
        allowFailure: true,
        // As the join's: what kubeadm prints in the shape of a token or key is not shown, a failure's message included.
        onLine: (line) => {
          const clean = scrubKubeadmOutput(line);
          lines.push(clean);
          ctx.output(clean);
        },
      });
      if (result.exitCode !== 0) {
        const failure = parseKubeadmFailure(lines);
        throw new StepDetailsError(`kubeadm reset -f failed${failure.phase ? ` in phase ${failure.phase}` : ''} (exit code ${result.exitCode})${failure.message ? `: ${failure.message}` : ''}`, { kubeadmCommand: 'kubeadm reset', exitCode: result.exitCode, outputTail: tail(lines.join('\n'), OUTPUT_TAIL_LINES) }, { hint: 'read the output tail, fix the cause and run machineadm reset again' });
      }
      if (!cleansTmpDir(kubeadmVersion)) await fs.remove(kubeadmTmpDir(ctx));
    }
    const { cni, dirs } = await kubeadmLeavings(ctx);
    for (const file of cni) await fs.remove(file);
    for (const dir of dirs) if (!(await fs.removeFolderIfEmpty(dir))) ctx.log(`${dir}: left in place, something else is in it`, 'warning');
  },
};

/** Which of kubeadm's folders, and which CNI files, were there before kubeadm first ran (Linux). */
export async function kubeadmUndoRecord(ctx: StepContext): Promise<Record<string, unknown> | undefined> {
  if (ctx.host.fs.platform !== ctx.facts.os || ctx.facts.os !== 'linux') return undefined;
  const dirs: Record<string, string> = {};
  for (const dir of withParents(KUBEADM_DIRS)) dirs[dir] = (await ctx.host.fs.exists(dir)) ? 'present' : 'absent';
  const cni = Object.fromEntries((await ctx.host.fs.list(CNI_DIR)).map((n) => [n, 'present']));
  // An empty map still marks that the record was taken.
  return { dirs, cni };
}
