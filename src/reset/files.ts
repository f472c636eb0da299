// reset/files: gives back every machine file machineadm wrote, from the records the file system
// keeps of each (src/host/written.ts): a file it created is removed with the folders made for it,
// a file it replaced gets its first bytes, mode and owner back. A file that someone else changed
// since machineadm wrote it is named and left alone unless --force (the plan and the preflight
// refuse it: exit 2, nothing changed).
import { holdsWritten, type RootedFileSystem, type WrittenRecord } from '../host/index.ts';
import { MachineadmError } from '../errors.ts';
import type { Change, CheckResult, Step, StepContext } from '../engine/step.ts';
import { unifiedDiff } from '../engine/diff.ts';
import { formatMode } from '../engine/managed-file.ts';

type Action =
  | { kind: 'remove'; record: WrittenRecord }
  | { kind: 'restore'; record: WrittenRecord; bytes: Buffer }
  | { kind: 'attributes'; record: WrittenRecord }
  | { kind: 'missing'; record: WrittenRecord };

interface Planned {
  actions: { action: Action; changedByOthers: boolean }[];
  /** Folders machineadm created that would be empty once the files go, deepest first. */
  folders: string[];
  /** The temporary files killed writes of machineadm's left beside the files it records. */
  temporaries: string[];
  changes: Change[];
  /** Prepare records exist but no record of files: state written by an older machineadm. */
  olderState: boolean;
  /** Paths that are a link now: refused, whatever --force says. */
  unreachable: string[];
}

const OLDER_STATE = 'this state directory has no records of the files machineadm wrote (an older machineadm made it): files cannot be told apart from the machine\'s own, so none is removed or restored; the copies it kept of replaced files stay in the archived state directory, under backup/';

function readableText(bytes: Buffer | undefined, mode: number | undefined): string | undefined {
  if (bytes === undefined) return '';
  if (mode !== undefined && (mode & 0o004) === 0) return undefined;
  if (bytes.includes(0)) return undefined;
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    return undefined;
  }
}

/** A diff from what is there to what reset leaves, only for text that others may read anyway. */
function diffOf(path: string, now: Buffer | undefined, nowMode: number | undefined, after: Buffer | undefined, afterMode: number | undefined): string | undefined {
  const a = readableText(now, nowMode);
  const b = readableText(after, afterMode);
  if (a === undefined || b === undefined) return undefined;
  return unifiedDiff(a, b, { label: path });
}

function ownerMatters(ctx: StepContext): boolean {
  return ctx.facts.privileged;
}

async function planFiles(ctx: StepContext, kept: readonly string[]): Promise<Planned> {
  const fs: RootedFileSystem = ctx.host.fs;
  const records = ((await fs.written?.all()) ?? []).filter((r) => !kept.includes(r.path));
  const planned: Planned = { actions: [], folders: [], temporaries: [], changes: [], olderState: false, unreachable: [] };
  if (records.length === 0) {
    planned.olderState = ['prepare/files', 'prepare/sysctls/file', 'prepare/kernel-modules/file', 'prepare/containerd/config'].some((id) => ctx.recordOf(id) !== undefined);
    if (planned.olderState) planned.changes.push({ action: 'keep', target: 'files', detail: OLDER_STATE });
    return planned;
  }
  const removed = new Set<string>();
  for (const record of records) {
    // A path that now leads out of the root through a link is not looked at, and not given back
    // through it: named, and left for the operator to remove (--force does not follow it either).
    const unreachable = await fs.stat(record.path).then(() => undefined, (error: unknown) => (error instanceof MachineadmError ? error : Promise.reject(error)));
    if (unreachable) {
      planned.unreachable.push(record.path);
      planned.changes.push({ action: 'refuse', target: record.path, detail: `${unreachable.message}: reset does not follow it; remove the link (or what leads through it), then run reset again` });
      continue;
    }
    // Named by the path's own name and a writer that is gone: its write's, never anyone else's.
    for (const temporary of await fs.abandonedTemporariesOf(record.path)) {
      planned.temporaries.push(temporary);
      removed.add(temporary);
      planned.changes.push({ action: 'delete', target: temporary, detail: `temporary file of a write of ${record.path} that machineadm did not finish (killed)` });
    }
    // Only folders were made: nothing at the path is machineadm's.
    if (record.foldersOnly && record.written.length === 0) continue;
    const info = await fs.stat(record.path);
    if (info?.kind === 'symlink') {
      planned.unreachable.push(record.path);
      planned.changes.push({ action: 'refuse', target: record.path, detail: 'is a symbolic link now, where machineadm wrote a file: reset does not follow it; remove the link, then run reset again' });
      continue;
    }
    const fingerprint = info?.kind === 'file' ? await fs.fingerprint(record.path) : undefined;
    const ours = fingerprint !== undefined && record.written.some((w) => holdsWritten(w, fingerprint));
    const current = info?.kind === 'file' ? await fs.readFile(record.path) : undefined;
    let action: Action | undefined;
    if (record.before === null) {
      if (info !== undefined) action = { kind: 'remove', record };
    } else {
      const backup = await fs.readBackup(record.path);
      const before = record.before;
      const sameAttributes = info !== undefined && info.mode === before.mode && (!ownerMatters(ctx) || (info.uid === before.uid && info.gid === before.gid));
      // A folder whose mode or owner only machineadm changed (a ~/.ssh that was there) has no bytes to compare.
      const present = info?.kind === 'file' || info?.kind === 'directory';
      const sameBytes = backup === undefined ? present : current !== undefined && current.equals(backup);
      if (sameBytes && sameAttributes) continue;
      if (backup !== undefined && !sameBytes) action = { kind: 'restore', record, bytes: backup };
      else if (present) action = { kind: 'attributes', record };
      else action = { kind: 'missing', record };
    }
    if (action === undefined) continue;
    // Gone or machineadm's own bytes: reset's to give back. Anything else someone else wrote, but
    // in a file tools rewrite at every change (the shadow tools' backups), which holds no one's edits.
    const changedByOthers = info !== undefined && info.kind !== 'directory' && !ours && action.kind !== 'missing' && record.anyWriter !== true;
    planned.actions.push({ action, changedByOthers });
    if (action.kind === 'remove') removed.add(record.path);
    const target = record.path;
    if (changedByOthers && !ctx.options.force) {
      planned.changes.push({ action: 'refuse', target, detail: 'changed since machineadm wrote it (by someone else): not clobbered; run reset with --force to give it back all the same, or move it away first' });
      continue;
    }
    const forced = changedByOthers ? ' (changed since machineadm wrote it; --force)' : '';
    switch (action.kind) {
      case 'remove': {
        const diff = record.secret ? undefined : diffOf(target, current, info?.mode, undefined, undefined);
        planned.changes.push({ action: 'delete', target, detail: `created by machineadm${forced}`, ...(diff ? { diff } : {}) });
        break;
      }
      case 'restore': {
        const before = record.before!;
        const diff = record.secret ? undefined : diffOf(target, current, info?.mode, action.bytes, before.mode);
        const what = info === undefined ? 'removed since' : `${current?.length ?? 0} -> ${action.bytes.length} bytes`;
        planned.changes.push({ action: 'restore', target, detail: `as before machineadm's first run: ${what}, mode ${formatMode(before.mode)}, owner ${before.uid}:${before.gid}${forced}`, ...(diff ? { diff } : {}) });
        break;
      }
      case 'attributes':
        planned.changes.push({ action: 'chmod', target, detail: `mode ${info ? formatMode(info.mode) : '?'} -> ${formatMode(record.before!.mode)}, owner ${record.before!.uid}:${record.before!.gid}${forced}` });
        break;
      case 'missing':
        planned.changes.push({ action: 'keep', target, detail: 'removed since machineadm changed its mode or owner, and no copy of its bytes was kept: cannot be given back' });
        break;
    }
  }
  // Folders machineadm made: removed deepest first, when nothing but what reset removes is in them.
  const folders = [...new Set(records.filter((r) => r.before === null).flatMap((r) => r.dirs))].sort((a, b) => b.length - a.length);
  for (const folder of folders) {
    const info = await fs.stat(folder).catch(() => undefined);
    if (info?.kind !== 'directory') continue;
    const names = await fs.list(folder);
    // The record's own separator (a Windows machine path has a drive letter).
    const sep = /^[A-Za-z]:\\/.test(folder) ? '\\' : '/';
    if (!names.every((n) => removed.has(`${folder}${sep}${n}`))) continue;
    removed.add(folder);
    planned.folders.push(folder);
    planned.changes.push({ action: 'delete', target: `${folder}${sep}`, detail: 'folder created by machineadm' });
  }
  return planned;
}

/** `kept`: the files other undos keep as they are in this reset (--keep-domain keeps the keytab). */
export function resetFilesStep(kept: (ctx: StepContext) => Promise<string[]> = async () => []): Step {
  return {
    id: 'files',
    summary: 'give back every file machineadm wrote: created ones removed, replaced ones restored byte for byte with mode and owner',
    async check(ctx): Promise<CheckResult> {
      const planned = await planFiles(ctx, await kept(ctx));
      const pending = planned.actions.length + planned.temporaries.length + planned.folders.length + planned.unreachable.length;
      return { done: pending === 0 && !planned.olderState, changes: planned.changes };
    },
    async apply(ctx) {
      const planned = await planFiles(ctx, await kept(ctx));
      const { fs } = ctx.host;
      for (const { action, changedByOthers } of planned.actions) {
        if (changedByOthers && !ctx.options.force) continue;
        const { record } = action;
        const before = record.before;
        const owner = before && ownerMatters(ctx) ? { owner: `${before.uid}:${before.gid}` } : {};
        switch (action.kind) {
          case 'remove':
            await fs.remove(record.path);
            break;
          case 'restore':
            // Not recorded again (backup: false): this write gives back, it is not machineadm's own.
            await fs.writeFile(record.path, action.bytes, { mode: before!.mode, backup: false, ...owner });
            break;
          case 'attributes':
            await fs.setAttributes(record.path, { mode: before!.mode, record: false, ...owner });
            break;
          case 'missing':
            ctx.log(`${record.path}: removed since machineadm changed its mode or owner; nothing to give back`, 'warning');
            break;
        }
      }
      for (const temporary of planned.temporaries) {
        await fs.remove(temporary);
        ctx.log(`${temporary}: removed, the temporary file of a write machineadm did not finish`);
      }
      for (const folder of planned.folders) {
        if (!(await fs.removeFolderIfEmpty(folder))) ctx.log(`${folder}: left in place, something else is in it now`, 'warning');
      }
      const refused = planned.actions.filter((a) => a.changedByOthers && !ctx.options.force).map((a) => a.action.record.path);
      const warnings = [
        ...(refused.length ? [`left as they are, changed since machineadm wrote them: ${refused.join(', ')} (--force gives them back)`] : []),
        ...(planned.unreachable.length ? [`left as they are, symbolic links now: ${planned.unreachable.join(', ')}`] : []),
      ];
      if (warnings.length) return { warning: warnings.join('; ') };
      if (planned.olderState) return { warning: OLDER_STATE };
      return {};
    },
  };
}
