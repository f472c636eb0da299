// Files that prepare steps own: compare what is on disk with what is wanted (for plan and for
// "already done"), then write everything only after every target has been checked, so one bad
// target leaves the others untouched.
import { isUtf8 } from 'node:buffer';
import { posix, win32 } from 'node:path';
import type { FileInfo, RootedFileSystem } from '../host/index.ts';
import type { Change } from './step.ts';
import { ConfigError, ExitCode, MachineadmError, UsageError } from '../errors.ts';
import { unifiedDiff } from './diff.ts';

export interface DesiredFile {
  /** Machine path (under --root). */
  path: string;
  content: Buffer;
  mode: number;
  owner?: string;
  /** The configuration field the file comes from, named in every error (spec.files[2].path). */
  field: string;
  /** Never show the content (a diff could leak it); only sizes and hashes. */
  sensitive?: boolean;
  /** The owner is made by an earlier step of the run (prepare/users): a plan may not find it yet. */
  ownerMadeLater?: boolean;
}

export interface FileState {
  desired: DesiredFile;
  change?: Change;
  /** Only mode/owner differ: no rewrite needed. */
  attributesOnly: boolean;
}

/** Prefixes an error with the configuration field it is about, keeping its exit code and hint. */
export function errorForField(field: string, error: unknown): MachineadmError {
  if (error instanceof MachineadmError) {
    if (error.message.startsWith(field)) return error;
    return new MachineadmError(`${field}: ${error.message}`, error.exitCode, { hint: error.hint, cause: error });
  }
  const message = error instanceof Error ? error.message : String(error);
  return new MachineadmError(`${field}: ${message}`, ExitCode.stepFailed, { cause: error });
}

export function formatMode(mode: number): string {
  return '0' + mode.toString(8).padStart(3, '0');
}

// isUtf8 checks without decoding: a decoded copy of a 16 MiB file is 16 MiB more at its peak.
function looksBinary(content: Buffer): boolean {
  return content.includes(0) || !isUtf8(content);
}

// `beforeMode` matters too: a file that is private on disk now (a proxy drop-in with a password,
// spec.files content that used to be 0600) must not show its old content in a diff.
function describeContent(before: Buffer | undefined, after: Buffer, desired: DesiredFile, beforeMode?: number): string | undefined {
  if (desired.sensitive) return undefined;
  if (beforeMode !== undefined && (beforeMode & 0o004) === 0) return undefined;
  if (looksBinary(after) || (before !== undefined && looksBinary(before))) return undefined;
  return unifiedDiff(before?.toString('utf8') ?? '', after.toString('utf8'), { label: desired.path });
}

/**
 * What is at a target path now, refusing what machineadm never writes through or over: a link
 * planted at the target, a directory or device, a path that leaves the root through a link.
 */
export async function inspectTarget(fs: RootedFileSystem, path: string): Promise<FileInfo | undefined> {
  const info = await fs.stat(path);
  if (info?.kind === 'symlink') {
    throw new MachineadmError(`${path} is a symbolic link; machineadm does not write through links`, ExitCode.stepFailed, {
      hint: 'remove the link (or point the field at the real file) and run again',
    });
  }
  if (info && info.kind !== 'file') throw new MachineadmError(`${path} exists and is not a regular file (${info.kind})`, ExitCode.stepFailed, { hint: 'remove it or choose another path' });
  if (!info) await refuseParentFile(fs, path);
  return info;
}

// A missing target whose nearest existing folder is a file (/etc/x/y where /etc/x is a file): the
// parent folders cannot be made. Found before any write, as the input's problem.
async function refuseParentFile(fs: RootedFileSystem, path: string): Promise<void> {
  const p = fs.platform === 'windows' ? win32 : posix;
  for (let parent = p.dirname(path); parent !== p.dirname(parent); parent = p.dirname(parent)) {
    const info = await fs.stat(parent);
    if (!info) continue;
    if (info.kind === 'file' || info.kind === 'other') throw new UsageError(`${path} cannot be written: ${parent} is ${info.kind === 'file' ? 'a file' : 'a device or pipe'}, not a folder`, { hint: 'remove it or choose another path' });
    return;
  }
}

/** What would change for one file; throws (naming the field) for a target that must not be written. */
export async function inspectFile(fs: RootedFileSystem, desired: DesiredFile, isRoot: boolean): Promise<FileState> {
  try {
    const info = await inspectTarget(fs, desired.path);
    if (!info) {
      const diff = describeContent(undefined, desired.content, desired);
      return {
        desired,
        attributesOnly: false,
        change: { action: 'create', target: desired.path, detail: `${desired.content.length} bytes, mode ${formatMode(desired.mode)}${desired.owner ? `, owner ${desired.owner}` : ''}`, ...(diff ? { diff } : {}) },
      };
    }
    const current = (await fs.readFile(desired.path)) ?? Buffer.alloc(0);
    const details: string[] = [];
    // A Windows file has no Unix mode (its ACL comes from its directory): only content counts there.
    if (fs.platform !== 'windows' && info.mode !== desired.mode) details.push(`mode ${formatMode(info.mode)} -> ${formatMode(desired.mode)}`);
    if (desired.owner && isRoot) {
      const owner = await fs.resolveOwner(desired.owner).catch((error: unknown) => {
        if (desired.ownerMadeLater) return undefined;
        throw error;
      });
      if (!owner) details.push(`owner ${info.uid}:${info.gid} -> ${desired.owner} (made by prepare/users first)`);
      else if (owner.uid !== info.uid || owner.gid !== info.gid) details.push(`owner ${info.uid}:${info.gid} -> ${desired.owner}`);
    }
    if (current.equals(desired.content)) {
      if (details.length === 0) return { desired, attributesOnly: false };
      return { desired, attributesOnly: true, change: { action: 'chmod', target: desired.path, detail: details.join(', ') } };
    }
    const diff = describeContent(current, desired.content, desired, info.mode);
    details.unshift(`${current.length} -> ${desired.content.length} bytes`);
    return { desired, attributesOnly: false, change: { action: 'update', target: desired.path, detail: details.join(', '), ...(diff ? { diff } : {}) } };
  } catch (error) {
    throw errorForField(desired.field, error);
  }
}

/**
 * inspectFile, with a target machineadm itself refuses (a link, a folder, a path under a file)
 * refused as the machine's problem (exit 2): a step's preflight then finds it before the run's
 * first change, not at the step's turn after earlier steps changed the machine.
 */
export async function inspectFileOrRefuse(fs: RootedFileSystem, desired: DesiredFile, isRoot: boolean): Promise<FileState> {
  try {
    return await inspectFile(fs, desired, isRoot);
  } catch (error) {
    // An error reading the file (EACCES, EIO) is the step's failure, not a refusal.
    if (!(error instanceof MachineadmError) || !(error.cause instanceof MachineadmError)) throw error;
    const message = error.message.startsWith(`${desired.field}: `) ? error.message.slice(desired.field.length + 2) : error.message;
    throw new ConfigError([{ path: desired.field, message, ...(error.hint ? { hint: error.hint } : {}), refused: true }]);
  }
}

/**
 * inspectFileOrRefuse for a step's check: a refusal comes back as the plan's `refuse` changes
 * (what the preflight refuses shows in the plan with the plan of the other steps).
 */
export async function inspectFileOrRefusal(fs: RootedFileSystem, desired: DesiredFile, isRoot: boolean): Promise<FileState | { refused: Change[] }> {
  try {
    return await inspectFileOrRefuse(fs, desired, isRoot);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    return { refused: error.issues.map((i) => ({ action: 'refuse', target: i.path, detail: i.hint ? `${i.message} (${i.hint})` : i.message })) };
  }
}

export async function inspectFiles(fs: RootedFileSystem, files: readonly DesiredFile[], isRoot: boolean): Promise<FileState[]> {
  const states: FileState[] = [];
  for (const f of files) states.push(await inspectFile(fs, f, isRoot));
  return states;
}

/** Writes the files that differ. Every target is checked again first, then written atomically one by one. */
export async function writeFiles(fs: RootedFileSystem, files: readonly DesiredFile[], isRoot: boolean): Promise<FileState[]> {
  const states = await inspectFiles(fs, files, isRoot);
  for (const state of states) {
    if (!state.change) continue;
    const { desired } = state;
    try {
      if (state.attributesOnly) await fs.setAttributes(desired.path, { mode: desired.mode, ...(desired.owner ? { owner: desired.owner } : {}) });
      else await fs.writeFile(desired.path, desired.content, { mode: desired.mode, ...(desired.owner ? { owner: desired.owner } : {}), ...(desired.sensitive ? { secret: true } : {}) });
    } catch (error) {
      throw errorForField(desired.field, error);
    }
  }
  return states;
}


/** The folders from `path` up that do not exist yet, outermost first: what a step is about to make (for reset). */
export async function missingFolders(fs: RootedFileSystem, path: string): Promise<string[]> {
  const out: string[] = [];
  for (let d = path; d !== '/' && d !== ''; d = d.slice(0, d.lastIndexOf('/')) || '/') {
    if (await fs.stat(d)) break;
    out.unshift(d);
  }
  return out;
}
