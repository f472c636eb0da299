// What reset needs to give a machine file back: the record of a path machineadm is about to change
// (what was there, its bytes kept once, the folders a write makes), written before the change, and
// the notes of what a tool machineadm ran wrote.
import * as fsp from './fs-calls.ts';
import { fingerprintOf, type Fingerprint, type WrittenRecord } from './written.ts';
import { keepBackupOnce } from './durable-files.ts';
import { RootedReader } from './file-reading.ts';

export class RecordingFileSystem extends RootedReader {

  /**
   * The record of a machine path machineadm is about to change, written now when it has none: what
   * is there (its bytes kept once under the backup directory), and the folders a write would create.
   */
  protected async recordFirstTouch(machinePath: string, existing: { isFile(): boolean; mode: number; uid: number; gid: number } | undefined, ahead = false, anyWriter = false): Promise<WrittenRecord | undefined> {
    if (!this.written) return undefined;
    const found = await this.written.read(machinePath);
    // Folders made ahead of this write, nothing written since: the path itself is looked at now.
    const madeAhead = found?.foldersOnly && found.written.length === 0 ? found.dirs : undefined;
    if (found && !madeAhead) return found;
    const dirs: string[] = [];
    if (!existing) {
      for (let d = this.path.dirname(machinePath); this.path.dirname(d) !== d; d = this.path.dirname(d)) {
        if (await fsp.lstatIfAny(this.mapPath(d)).then((st) => st !== undefined, () => false)) break;
        dirs.unshift(d);
      }
    }
    const made = [...new Set([...(madeAhead ?? []), ...dirs])].sort((a, b) => a.length - b.length);
    const record: WrittenRecord = { path: machinePath, before: existing ? { mode: existing.mode & 0o7777, uid: existing.uid, gid: existing.gid } : null, dirs: made, written: [], ...(anyWriter ? { anyWriter: true } : {}) };
    const backup = this.backupPath(machinePath);
    if (existing?.isFile() && backup !== undefined) await keepBackupOnce(this.mapPath(machinePath), backup, this.path);
    // A write of machineadm's own records again, durably, before its rename: needed now only when
    // folders are to be made first. A tool about to change the file (`ahead`) needs it on disk now.
    if (ahead) await this.written.write(record);
    else if (dirs.length > 0) await this.written.write({ ...record, foldersOnly: true }, { beforeFolders: true });
    return record;
  }

  /**
   * Makes the folders a write of machineadm's own to this machine path needs, ahead of it (a
   * download makes them before it begins): recorded first, as folders only (WrittenRecord.foldersOnly),
   * so that reset removes them also when the write finds them made, or never comes.
   */
  async makeFoldersFor(machinePath: string): Promise<void> {
    const dir = this.path.dirname(await this.resolve(machinePath));
    await this.recordFirstTouch(machinePath, undefined);
    await fsp.mkdir(dir, { recursive: true, mode: 0o755 });
  }

  /**
   * A tool other than machineadm is about to change this machine file (adcli writes the keytab):
   * recorded, and its bytes kept, as for a write of machineadm's own. Then noteWritten().
   * `anyWriter`: a file the tools rewrite on their own at every change (the shadow tools' backups,
   * /etc/passwd-): reset gives it back whoever wrote it last (see WrittenRecord.anyWriter).
   */
  async keepOriginal(machinePath: string, options: { anyWriter?: boolean } = {}): Promise<void> {
    const real = await this.resolve(machinePath);
    await this.recordFirstTouch(machinePath, await fsp.lstatIfAny(real).catch(() => undefined), true, options.anyWriter ?? false);
  }

  /** What is at the path now is machineadm's doing (after a tool it ran wrote it): reset may restore over it. */
  async noteWritten(machinePath: string): Promise<void> {
    if (!this.written) return;
    const real = await this.resolve(machinePath);
    const st = await fsp.lstatIfAny(real).catch(() => undefined);
    const record = await this.recordFirstTouch(machinePath, st);
    if (!st || !record) return;
    await this.written.write({ ...record, written: [...record.written, fingerprintOf(st, await this.contentSha256(machinePath))] });
  }

  /** The fingerprint of the file at a machine path now, with its bytes' SHA-256, or undefined when there is no regular file. */
  async fingerprint(machinePath: string): Promise<(Fingerprint & { sha256: string }) | undefined> {
    const st = await fsp.lstatIfAny(await this.resolve(machinePath)).catch(() => undefined);
    if (!st?.isFile()) return undefined;
    return { ...fingerprintOf(st, undefined), sha256: await this.contentSha256(machinePath) };
  }

  /** The SHA-256 of a machine file's bytes, read block by block (a binary may be large). */
  async contentSha256(machinePath: string): Promise<string> {
    const hash = process.getBuiltinModule('node:crypto').createHash('sha256');
    for await (const block of this.readBlocks(machinePath)) hash.update(block);
    return hash.digest('hex');
  }

  /** The bytes machineadm kept of a machine path before it first replaced them, if any. */
  async readBackup(machinePath: string): Promise<Buffer | undefined> {
    const backup = this.backupPath(machinePath);
    if (backup === undefined) return undefined;
    return fsp.readFile(backup).catch(() => undefined);
  }
}
