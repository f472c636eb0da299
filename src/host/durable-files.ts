// The pieces of a durable write that stand outside any one write: temporary names beside the
// target (and the leftovers of killed writers), the backup kept once of a file replaced, the
// folders a write made removed when it fails, and a folder's own fsync.
import { constants } from 'node:fs';
import * as fsp from './fs-calls.ts';
import * as nodePath from 'node:path';
import { FileSystemError } from './fs-types.ts';

/** Temporary files are named .<name><TEMP_MARK><random>, next to the file they become. */
export const TEMP_MARK = '.machineadm-tmp-';

// The backup is copied to a temporary file beside it and then linked into place: a crash during
// the copy must not leave a partial backup that "once" would then keep for ever. link() never
// replaces an existing backup, which a rename would. Backup folders are 0700: a backup of a secret
// is as secret as the file (copyFile keeps its mode too).
export async function keepBackupOnce(real: string, backup: string, path: typeof nodePath.posix): Promise<void> {
  await copyOnce(real, backup, path).catch((error: NodeJS.ErrnoException) => {
    const why = ({ ENOSPC: 'its file system is full', EDQUOT: 'its file system quota is used up', EROFS: 'it is on a read-only file system' } as Record<string, string>)[error.code ?? ''];
    if (!why) throw error;
    throw new FileSystemError(`cannot keep the copy of ${real} that reset gives back in ${path.dirname(backup)}: ${why} (${error.code}); ${real} was not changed`, {
      cause: error,
      hint: 'free some space in the state directory (or give another with --state-dir DIR), then run again: steps already done are found done',
    });
  });
}

async function copyOnce(real: string, backup: string, path: typeof nodePath.posix): Promise<void> {
  const dir = path.dirname(backup);
  await removeStaleTemporaries(dir, path.basename(backup));
  if (await fsp.lstat(backup).then(() => true, () => false)) return;
  await fsp.mkdir(dir, { recursive: true, mode: 0o700 });
  const temp = path.join(dir, temporaryName(path.basename(backup)));
  try {
    await fsp.copyFile(real, temp, constants.COPYFILE_EXCL);
    const handle = await fsp.open(temp, 'r+');
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
    await fsp.link(temp, backup).catch(async (e: NodeJS.ErrnoException) => {
      if (e.code === 'EEXIST') return;
      // File systems without hard links: a rename, after checking again that no backup exists.
      if (!['EPERM', 'ENOTSUP', 'EOPNOTSUPP', 'ENOSYS'].includes(e.code ?? '')) throw e;
      if (!(await fsp.lstat(backup).then(() => true, () => false))) await fsp.rename(temp, backup);
    });
  } finally {
    await fsp.rm(temp, { force: true });
  }
  await syncDirectory(dir);
}

// From `dir` up to `top`, as long as each is empty (another write may be using one); never the root.
export async function removeEmptyFolders(dir: string, top: string, root: string, path: typeof nodePath.posix): Promise<void> {
  for (let d = dir; d !== root && path.dirname(d) !== d; d = path.dirname(d)) {
    if (!(await fsp.rmdir(d).then(() => true, () => false)) || d === top) return;
  }
}

/**
 * .<name><TEMP_MARK><writer's pid>-<random>: the pid tells a killed writer's leftover from a live
 * one's. node:crypto is loaded at the first write: commands that only read (config validate) start
 * without it.
 */
export function temporaryName(base: string): string {
  return `.${temporaryBase(base)}${TEMP_MARK}${process.pid}-${process.getBuiltinModule('node:crypto').randomBytes(6).toString('hex')}`;
}

/** A name's bytes at most (NAME_MAX of Linux file systems, and NTFS's 255 characters). */
const NAME_MAX_BYTES = 255;
/** What a temporary name adds to its file's: the dot, the mark, a pid of up to 7 digits, - and 12 hex digits. */
const TEMP_ADDED_BYTES = 1 + TEMP_MARK.length + 7 + 1 + 12;

/**
 * The file's name as its temporary name starts with. A name the file system takes may be too long
 * once the temporary's suffix is added: then its first bytes and a digest of the whole, so that the
 * temporaries of two long names that begin alike stay apart.
 */
function temporaryBase(base: string): string {
  const max = NAME_MAX_BYTES - TEMP_ADDED_BYTES;
  const bytes = Buffer.from(base, 'utf8');
  if (bytes.length <= max) return base;
  const digest = process.getBuiltinModule('node:crypto').createHash('sha256').update(bytes).digest('hex').slice(0, 16);
  // Cut on a character's boundary: a partial UTF-8 sequence would decode to a replacement character.
  let end = max - digest.length - 1;
  while (end > 0 && (bytes[end]! & 0xc0) === 0x80) end--;
  return `${bytes.subarray(0, end).toString('utf8')}~${digest}`;
}

/** The writer's pid in a temporary name (TEMP_MARK, then the pid). */
export const TEMP_WRITER = /\.machineadm-tmp-(\d+)-[0-9a-f]+$/;

/** What the temporary names of a file's writes begin with (see temporaryName). */
export function temporaryPrefix(base: string): string {
  return `.${temporaryBase(base)}${TEMP_MARK}`;
}

// A crash between write and rename leaves a temporary file behind; the next write cleans it up.
export async function removeStaleTemporaries(dir: string, base: string): Promise<void> {
  const prefix = temporaryPrefix(base);
  const names = await fsp.readdir(dir).catch(() => [] as string[]);
  await Promise.all(names.filter((n) => n.startsWith(prefix)).map((n) => fsp.rm(nodePath.join(dir, n), { force: true })));
}

export async function syncDirectory(dir: string): Promise<void> {
  if (process.platform === 'win32') return;
  const handle = fsp.openAtOnce(dir, 'r');
  try {
    await handle.sync();
  } finally {
    handle.closeNow();
  }
}
