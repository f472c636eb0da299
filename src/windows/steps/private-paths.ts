// prepare/windows/private-paths: every directory whose files a SYSTEM service reads or runs gets a
// protected ACL for SYSTEM and Administrators only, before anything is written into it. On Windows
// a directory made under C:\ inherits "Authenticated Users: Modify" for what is created in it, so
// C:\var\lib\kubelet (kubeadm-flags.env and config.yaml: the kubelet service's flags and
// configuration), C:\k (kubelet.exe), containerd's folder (containerd.exe and its shim), a host
// agent's folder or machineadm's state directory would otherwise be writable by any user, who
// could then run code as SYSTEM at the next service start.
// The seam's private directory sets the ACL on the directory and resets what is already in it to
// inherit it (icacls /reset), so files written before are covered too.
import type { Change, Step, StepContext, Undo, UndoContext } from '../../engine/step.ts';
import { CONTAINERD_LOG, KUBELET_CONFIG, KUBELET_LOG_DIR, agentLogDir, containerdNeeded, containerdPath, kubeletPath, kubernetesNeeded, parentOf } from '../paths.ts';
import { WINDOWS_CNI_BIN, WINDOWS_CNI_CONF } from '../../containerd/config.ts';
import { WINDOWS_OWNED_FOLDER } from '../../config/schema/windows.ts';
import { noSeamSkip, requireSeam, seamOf } from './seam.ts';
import type { AclState } from '../../host/windows/index.ts';
import { defaultStateDir } from '../../host/index.ts';

const SYSTEM = 'S-1-5-18';
const ADMINISTRATORS = 'S-1-5-32-544';

// Windows' own folders are never touched: a protected ACL on one of them would take away what
// Windows and other programs need there. The configuration refuses a service binary in one.
const WINDOWS_OWNED = WINDOWS_OWNED_FOLDER;

/** The state directory's Windows path (a plan made on Linux for Windows shows the Windows default). */
function stateDirOf(ctx: StepContext): string {
  const dir = ctx.host.stateDir;
  return dir !== undefined && /^[A-Za-z]:\\/.test(dir) ? dir : defaultStateDir('windows', ctx.host.env);
}

/** The directories to lock, each once (paths compare case-insensitively on Windows). */
export function privatePaths(ctx: StepContext): string[] {
  const agents = ctx.config.spec.windows?.hostAgents ?? [];
  // The kubelet's and containerd's folders only where they run: a machine that only joins the
  // domain gets its state directory (and its agents' folders) locked, nothing made for a kubelet.
  const wanted = [
    stateDirOf(ctx),
    ...(kubernetesNeeded(ctx.config) ? [parentOf(KUBELET_CONFIG), 'C:\\etc\\kubernetes', KUBELET_LOG_DIR, parentOf(kubeletPath(ctx.config))] : []),
    // containerd runs as SYSTEM from its own folder, and starts the runhcs shim beside it; it also
    // runs the CNI plugins and reads their configuration.
    ...(containerdNeeded(ctx.config) ? [parentOf(containerdPath(ctx.config)), parentOf(CONTAINERD_LOG), WINDOWS_CNI_BIN, WINDOWS_CNI_CONF] : []),
    ...agents.map((a) => parentOf(a.installPath)),
    // kube-log-runner (SYSTEM) writes there: a user who could plant a link there could make it write elsewhere.
    ...agents.filter((a) => a.log === 'kube-log-runner').map((a) => agentLogDir(a.name)),
  ];
  const seen = new Set<string>();
  return wanted.filter((p) => {
    const key = p.toLowerCase().replace(/\\+$/, '');
    if (seen.has(key) || WINDOWS_OWNED.test(key)) return false;
    seen.add(key);
    return true;
  });
}

/** Protected, and nothing but SYSTEM and Administrators with full control. */
export function isPrivate(acl: AclState | undefined): boolean {
  if (!acl?.protected) return false;
  const sids = acl.entries.map((e) => `${e.sid} ${e.type} ${e.rights}`).sort();
  return sids.join('|') === [`${SYSTEM} Allow FullControl`, `${ADMINISTRATORS} Allow FullControl`].sort().join('|');
}

async function unlocked(ctx: StepContext): Promise<string[]> {
  const windows = seamOf(ctx);
  const out: string[] = [];
  for (const path of privatePaths(ctx)) if (!windows || !isPrivate(await windows.acl(path))) out.push(path);
  return out;
}

/** Each folder to lock and the parents CreateDirectory would make with it, deepest first (never a drive root). */
function withParents(path: string): string[] {
  const out: string[] = [];
  for (let p = path.replace(/\\+$/, ''); /^[A-Za-z]:\\./.test(p); p = p.slice(0, p.lastIndexOf('\\'))) out.push(p);
  return out;
}

function isStateDir(ctx: StepContext, path: string): boolean {
  const state = stateDirOf(ctx).toLowerCase();
  return path.toLowerCase() === state || state.startsWith(`${path.toLowerCase()}\\`);
}

/**
 * Before the first lock: which folders (with the parents made for them) were not there, and the
 * security descriptor of each one that was. reset removes the ones it made once empty, and gives
 * the others their access rules back; the state directory is archived by reset itself.
 */
async function foldersBefore(ctx: StepContext): Promise<Record<string, unknown> | undefined> {
  const windows = seamOf(ctx);
  if (!windows || ctx.host.fs.platform !== 'windows') return undefined;
  const dirs: Record<string, string> = {};
  const acls: Record<string, string> = {};
  for (const path of privatePaths(ctx)) {
    for (const dir of withParents(path)) if (!isStateDir(ctx, dir) && !WINDOWS_OWNED.test(dir)) dirs[dir] = (await ctx.host.fs.exists(dir)) ? 'present' : 'absent';
    if (isStateDir(ctx, path) || dirs[path] !== 'present') continue;
    // '' when there is nothing to give back (no security descriptor read, or already locked).
    const acl = await windows.acl(path);
    acls[path] = acl?.sddl && !isPrivate(acl) ? acl.sddl : '';
  }
  return { dirs, acls };
}

function recordedFolders(ctx: UndoContext): { made: string[]; there: string[]; acls: Record<string, string> } | undefined {
  const dirs = ctx.undoRecord?.dirs as Record<string, string> | undefined;
  if (!dirs) return undefined;
  const recorded = (ctx.undoRecord?.acls ?? {}) as Record<string, string>;
  const made = Object.keys(dirs).filter((d) => dirs[d] === 'absent').sort((a, b) => b.length - a.length);
  // Locked folders that were there: with the access rules to give back, or without (kept locked).
  const there = Object.keys(recorded).filter((d) => dirs[d] === 'present');
  const acls = Object.fromEntries(there.filter((d) => recorded[d] !== '').map((d) => [d, recorded[d]!]));
  return { made, there: there.filter((d) => recorded[d] === '').sort(), acls };
}

const KEPT_ACL = 'keep their ACL for SYSTEM and Administrators only (no record of the one before)';

/** Folders whose access rules reset gives back: still machineadm's lock (someone else's change stays). */
async function aclsToRestore(ctx: UndoContext, acls: Record<string, string>): Promise<string[]> {
  const windows = seamOf(ctx);
  const out: string[] = [];
  for (const dir of Object.keys(acls).sort()) {
    if (!windows) out.push(dir);
    else if (isPrivate(await windows.acl(dir))) out.push(dir);
  }
  return out;
}

// After reset/files: the folders machineadm made for the locked paths go once nothing is left in
// them; the ones that were there before get the access rules recorded before the first lock back,
// unless someone changed the lock since (then it stays, as they left it).
const removeMadeFolders: Undo = {
  summary: 'remove the folders machineadm made to lock them, once empty; give the folders that were there their access rules back',
  when: 'after-files',
  async check(ctx) {
    const folders = recordedFolders(ctx);
    if (!folders) return { done: true, changes: [] };
    const planned = ctx.options.dryRun ? new Set((await ctx.filesToGiveBack()).map((f) => f.toLowerCase())) : new Set<string>();
    const changes: Change[] = [];
    const going = new Set<string>();
    // A plan made on another machine cannot look at the Windows machine's folders: it shows the records.
    const here = ctx.host.fs.platform === 'windows';
    for (const dir of folders.made) {
      if (!here) {
        changes.push({ action: 'delete', target: `${dir}\\`, detail: 'folder machineadm made to lock it, once empty' });
        continue;
      }
      if (!(await ctx.host.fs.exists(dir))) continue;
      const names = await ctx.host.fs.list(dir);
      // A plan has not removed the files yet: what reset/files gives back counts as gone.
      if (names.every((n) => going.has(`${dir}\\${n}`.toLowerCase()) || planned.has(`${dir}\\${n}`.toLowerCase()))) {
        going.add(dir.toLowerCase());
        changes.push({ action: 'delete', target: `${dir}\\`, detail: 'folder machineadm made to lock it' });
      }
    }
    for (const dir of await aclsToRestore(ctx, folders.acls)) changes.push({ action: 'restore', target: `ACL of ${dir}`, detail: 'the access rules it had before machineadm locked it (the owner stays Administrators)' });
    const kept = folders.there.length ? `${folders.there.join(', ')} (there before machineadm) ${KEPT_ACL}` : undefined;
    if (changes.length === 0) return kept ? { done: false, changes: [], skipReason: kept } : { done: true, changes: [] };
    const skip = noSeamSkip(ctx);
    return { done: false, changes, ...(skip ? { skipReason: skip } : {}) };
  },
  async apply(ctx) {
    const folders = recordedFolders(ctx)!;
    for (const dir of folders.made) {
      if (!(await ctx.host.fs.exists(dir))) continue;
      if (!(await ctx.host.fs.removeFolderIfEmpty(dir))) ctx.log(`${dir}: left in place, something else is in it (locked to SYSTEM and Administrators)`, 'warning');
    }
    const windows = requireSeam(ctx);
    for (const dir of await aclsToRestore(ctx, folders.acls)) {
      await windows.restoreAcl(dir, folders.acls[dir]!);
      ctx.log(`${dir}: access rules given back as before machineadm locked it`);
    }
    if (folders.there.length) ctx.log(`${folders.there.join(', ')} ${KEPT_ACL}`);
  },
};

export const privatePathsStep: Step = {
  id: 'windows/private-paths',
  summary: 'lock the directories SYSTEM services read (kubelet, containerd log, host agents, state) to SYSTEM and Administrators',
  platforms: ['windows'],
  undoRecord: foldersBefore,
  undo: removeMadeFolders,
  async check(ctx) {
    const changes: Change[] = (await unlocked(ctx)).map((path) => ({ action: 'lock', target: path, detail: 'ACL for SYSTEM and Administrators only (protected), inherited by what is in it' }));
    const skip = noSeamSkip(ctx);
    return { done: changes.length === 0, changes, ...(skip && changes.length ? { skipReason: skip } : {}) };
  },
  async apply(ctx) {
    const windows = requireSeam(ctx);
    for (const path of await unlocked(ctx)) {
      await windows.createPrivateDirectory(path);
      ctx.log(`${path}: only SYSTEM and Administrators may change it`);
    }
  },
};
