// Machine paths (/etc/x, C:\\x) under the --root prefix: mapping, the refusal of paths that leave
// the root, and what needs no reading or writing of a file's bytes (stat, list, folders, links,
// removal). The base of the rooted file system; reading, records and writing build on it.
import * as fsp from './fs-calls.ts';
import * as nodePath from 'node:path';
import { UsageError } from '../errors.ts';
import { WrittenRecords } from './written.ts';
import { syncDirectory, temporaryName } from './durable-files.ts';
import type { FileInfo, FileSystemOptions } from './fs-types.ts';

export class RootedPaths {
  readonly root: string;
  readonly platform: 'linux' | 'windows';
  readonly backupDir: string | undefined;
  /** The records of what machineadm wrote (see FileSystemOptions.writtenDir). */
  readonly written: WrittenRecords | undefined;
  protected readonly path: typeof nodePath.posix;
  /** Directories renamed into by durable writes whose fsync waits for syncDirectories(); undefined: none waits. */
  protected pendingDirectories: Set<string> | undefined;

  constructor(root: string, options: FileSystemOptions = {}) {
    this.platform = options.platform ?? (process.platform === 'win32' ? 'windows' : 'linux');
    this.path = this.platform === 'windows' ? nodePath.win32 : nodePath.posix;
    this.root = this.path.resolve(root);
    this.backupDir = options.backupDir === undefined ? undefined : this.path.resolve(options.backupDir);
    const onRename = async (dir: string): Promise<void> => {
      if (this.pendingDirectories) this.pendingDirectories.add(dir);
      else await syncDirectory(dir);
    };
    this.written = options.writtenDir === undefined ? undefined : new WrittenRecords(options.writtenDir, this.path, onRename);
  }

  /** Where the first replaced content of a machine path is kept, or undefined without a backup directory. */
  backupPath(machinePath: string): string | undefined {
    if (this.backupDir === undefined) return undefined;
    const p = this.path;
    const parsed = p.parse(p.normalize(machinePath));
    // C:\x and D:\x stay apart; on Linux the root is just "/".
    const drive = /^[A-Za-z]:/.test(parsed.root) ? parsed.root[0]! : '';
    return p.join(this.backupDir, drive, p.normalize(machinePath).slice(parsed.root.length));
  }

  /** True when machineadm works on the live machine rather than a scratch directory. */
  get isLiveRoot(): boolean {
    return this.path.parse(this.root).root === this.root;
  }

  /**
   * Maps a machine path (/etc/x, C:\x) to the real path under the root. Refuses relative paths,
   * ".." segments, and paths that leave the root through a symbolic link.
   */
  async resolve(machinePath: string): Promise<string> {
    const real = this.mapPath(machinePath);
    await this.assertInsideRoot(real, machinePath);
    return real;
  }

  /** Path mapping without touching the disk (for messages and plans). */
  mapPath(machinePath: string): string {
    const p = this.path;
    if (!p.isAbsolute(machinePath)) {
      throw new UsageError(`path "${machinePath}" is not absolute`, { hint: 'use an absolute path such as /etc/example.conf' });
    }
    if (machinePath.split(/[\\/]+/).includes('..')) {
      throw new UsageError(`path "${machinePath}" contains ".."`, { hint: 'write the path without ".." segments' });
    }
    if (this.isLiveRoot) return p.normalize(machinePath);
    const withoutDrive = machinePath.slice(p.parse(machinePath).root.length);
    return p.join(this.root, withoutDrive);
  }

  /** The root's real path, once it exists: every path a run touches is checked against it. */
  protected rootReal: string | undefined;

  protected async assertInsideRoot(real: string, machinePath: string): Promise<void> {
    this.assertInsideRootSync(real, machinePath);
  }

  /** assertInsideRoot for a write that must not yield to the event loop (writeFileDurableSync). */
  protected assertInsideRootSync(real: string, machinePath: string): void {
    if (this.isLiveRoot) return;
    this.rootReal ??= fsp.realpathIfAnySync(this.root);
    const rootReal = this.rootReal ?? this.root;
    // The deepest ancestor that exists decides where the rest of the path lands.
    let probe = real;
    // Ancestors above the root (which may not exist yet) are the operator's choice, not checked.
    while (probe !== this.root && !this.path.relative(this.root, probe).startsWith('..')) {
      const resolved = fsp.realpathIfAnySync(probe);
      if (resolved !== undefined) {
        const rel = this.path.relative(rootReal, resolved);
        if (rel.startsWith('..') || this.path.isAbsolute(rel)) {
          throw new UsageError(`path "${machinePath}" resolves through a symbolic link to ${resolved}, outside the root ${this.root}`, {
            hint: 'remove the link or choose a path inside the root',
          });
        }
        return;
      }
      probe = this.path.dirname(probe);
    }
  }

  async stat(machinePath: string): Promise<FileInfo | undefined> {
    const real = await this.resolve(machinePath);
    const st = await fsp.lstatIfAny(real);
    if (!st) return undefined;
    const kind = st.isSymbolicLink() ? 'symlink' : st.isFile() ? 'file' : st.isDirectory() ? 'directory' : 'other';
    return { kind, mode: st.mode & 0o7777, uid: st.uid, gid: st.gid, size: st.size, modifiedMs: st.mtimeMs };
  }

  /** Whether the path is a regular file, following symbolic links (as a tool reading it would). */
  async isFileFollowingLinks(machinePath: string): Promise<boolean> {
    return fsp.stat(await this.resolve(machinePath)).then(
      (st) => st.isFile(),
      () => false,
    );
  }

  /** Whether the path is a folder, following symbolic links (as systemd reading it would). */
  async isFolderFollowingLinks(machinePath: string): Promise<boolean> {
    return fsp.stat(await this.resolve(machinePath)).then(
      (st) => st.isDirectory(),
      () => false,
    );
  }

  /**
   * Whether this root could be written into now, asked of the deepest folder of it that exists:
   * the error a write would meet there (EROFS, EACCES), else the bytes free for this process.
   */
  async writableRoom(): Promise<{ error: NodeJS.ErrnoException } | { freeBytes: number }> {
    let probe = this.root;
    while (!(await fsp.lstatIfAny(probe).catch(() => undefined)) && this.path.dirname(probe) !== probe) probe = this.path.dirname(probe);
    try {
      await fsp.writable(probe);
      const st = await fsp.statfs(probe);
      // root may write into the blocks kept back for it.
      return { freeBytes: (process.getuid?.() === 0 ? st.bfree : st.bavail) * st.bsize };
    } catch (error) {
      return { error: error as NodeJS.ErrnoException };
    }
  }

  async exists(machinePath: string): Promise<boolean> {
    return (await this.stat(machinePath)) !== undefined;
  }

  /** Names in a directory, sorted; empty when it does not exist. */
  async list(machinePath: string): Promise<string[]> {
    const real = await this.resolve(machinePath);
    const names = await fsp.readdir(real).catch((e: NodeJS.ErrnoException) => {
      if (e.code === 'ENOENT') return [] as string[];
      throw e;
    });
    return names.sort();
  }

  async mkdirp(machinePath: string, mode = 0o755): Promise<void> {
    await fsp.mkdir(await this.resolve(machinePath), { recursive: true, mode });
  }

  /**
   * Creates (or replaces) a symbolic link at machinePath pointing to `target`, a path relative to
   * the link's directory (so that it points inside the root, whatever the root is).
   */
  async symlink(target: string, machinePath: string): Promise<void> {
    if (this.path.isAbsolute(target) || target.split(/[\\/]/).filter((p) => p === '..').length > 1) {
      throw new UsageError(`link target "${target}" must be relative to the link's directory`);
    }
    const real = await this.resolve(machinePath);
    const temp = this.path.join(this.path.dirname(real), temporaryName(this.path.basename(real)));
    await fsp.symlink(target, temp);
    await fsp.rename(temp, real);
  }

  /**
   * What the link at machinePath points to, as written, or undefined when it is no link. Only its
   * folder must be inside the root: a masked unit is a link to /dev/null, which is named, not followed.
   */
  async readLink(machinePath: string): Promise<string | undefined> {
    const real = this.mapPath(machinePath);
    await this.assertInsideRoot(this.path.dirname(real), machinePath);
    return (await fsp.lstatIfAny(real))?.isSymbolicLink() ? fsp.readlink(real) : undefined;
  }

  async remove(machinePath: string): Promise<void> {
    await fsp.rm(await this.resolve(machinePath), { force: true, recursive: true });
  }

  /** Removes a folder when it is empty; says whether it is gone. */
  async removeFolderIfEmpty(machinePath: string): Promise<boolean> {
    const real = await this.resolve(machinePath);
    return fsp.rmdir(real).then(
      () => true,
      (e: NodeJS.ErrnoException) => e.code === 'ENOENT',
    );
  }
}
