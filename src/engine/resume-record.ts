// The command a run resumes with after a reboot, kept out of the registration itself. A -c source
// may be a URL with credentials (https://user:token@..., a signed ?sig=...): written into the
// systemd unit or the scheduled task it would be readable by any user, and status would print it.
// So the registration runs only `machineadm resume --state-dir DIR`, and the command is kept in
// DIR/resume.json (mode 0600; on Windows the state directory is locked to SYSTEM and
// Administrators). `machineadm resume` counts the boots it was started at: a run that never gets
// far enough to end its resume (a configuration that fails to load, a source that is gone) would
// otherwise start at every boot forever, so after MAX_RESUME_BOOTS boots the registration is
// removed and the record says so.
import type { RootedFileSystem, ResumeRegistration } from '../host/index.ts';

export const RESUME_RECORD = '/resume.json';
/** Boots a registered resume may start at without the run ending it or registering it anew. */
export const MAX_RESUME_BOOTS = 3;

export interface ResumeRecord {
  /** The command's arguments after the executable (which `machineadm resume` itself is). */
  args?: string[];
  registeredAt: string;
  /** Boots `machineadm resume` has started at since the registration. */
  boots: number;
  /**
   * The boot of the registration or of the last start counted: a start in that boot (by hand
   * before the restart, or again after a kill) is not another boot, and must not use the limit up.
   */
  bootId?: string;
  /** Set when the resume removed itself, with why. */
  gaveUp?: { at: string; reason: string };
}

export async function readResumeRecord(stateFs: RootedFileSystem): Promise<ResumeRecord | undefined> {
  const text = await stateFs.readText(RESUME_RECORD).catch(() => undefined);
  if (text === undefined) return undefined;
  try {
    return JSON.parse(text) as ResumeRecord;
  } catch {
    return undefined;
  }
}

export async function writeResumeRecord(stateFs: RootedFileSystem, record: ResumeRecord): Promise<void> {
  await stateFs.writeFile(RESUME_RECORD, JSON.stringify(record, null, 2) + '\n', { mode: 0o600, backup: false });
}

/** How many boots a start of `machineadm resume` in boot `bootId` makes (an unknown boot counts as a new one). */
export function bootsAtStart(record: ResumeRecord, bootId: string | undefined): number {
  return bootId !== undefined && record.bootId === bootId ? record.boots : record.boots + 1;
}

/**
 * A registration that keeps `argv` (self + args) in the state directory and registers `launcher`
 * in its place; removing it removes the record too. `bootId` is the boot it is registered in.
 */
export function protectedResume(inner: ResumeRegistration, stateFs: RootedFileSystem, launcher: readonly string[], selfLength: number, now: () => Date, bootId?: string): ResumeRegistration {
  return {
    async register(argv) {
      await writeResumeRecord(stateFs, { args: argv.slice(selfLength), registeredAt: now().toISOString(), boots: 0, ...(bootId ? { bootId } : {}) });
      await inner.register(launcher);
    },
    remove: () => removeWithRecord(inner, stateFs),
    registered: () => inner.registered(),
  };
}

/**
 * A registration whose removal removes the record of the command it would have run too: reset's,
 * which registers nothing of its own here but takes away an undone run's (its -c may be a URL with
 * a token in it).
 */
export function removingRecord(inner: ResumeRegistration, stateFs: RootedFileSystem): ResumeRegistration {
  return { ...inner, remove: () => removeWithRecord(inner, stateFs) };
}

// A record that says the resume gave up stays, for status to tell.
async function removeWithRecord(inner: ResumeRegistration, stateFs: RootedFileSystem): Promise<void> {
  await inner.remove();
  const record = await readResumeRecord(stateFs);
  if (record && !record.gaveUp) await stateFs.remove(RESUME_RECORD);
}
