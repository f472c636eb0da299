// The only layer that touches the machine: files under the --root prefix, processes, HTTP, clock,
// platform facts. Other folders get a Host and never import node:fs, node:child_process, execa or got.
import { join } from 'node:path';
import { operatorFileSystem, RootedFileSystem } from './fs.ts';
import { ProcessRunner } from './exec.ts';
import { detectFacts, type Facts, type ToolVersions } from './facts.ts';
import { systemdRestart, systemdResume, type ResumeRegistration } from './resume.ts';
import { NotAvailableError } from '../errors.ts';
import { BlockDevices } from './block-devices.ts';
import { powershellWindowsHost, windowsRestart, windowsResume, type WindowsHost } from './windows/index.ts';

export interface Host {
  /** The machine being prepared: every path is under --root. */
  readonly fs: RootedFileSystem;
  /** Paths the operator names on the command line (-c files, keys, -o outputs): not under --root. */
  readonly local: RootedFileSystem;
  readonly proc: ProcessRunner;
  /** Block devices and mounts of this machine (never under --root); `devices.allowed` says whether a run may change them. */
  readonly devices: BlockDevices;
  /** The environment machineadm was started with (secret references may read from it). */
  readonly env: Readonly<Record<string, string | undefined>>;
  /** --offline: nothing may use the network. */
  readonly offline: boolean;
  /** Aborted when the run is interrupted: running commands are stopped and sleeps end early. */
  readonly signal?: AbortSignal;
  now(): Date;
  /** Waits; rejects with the interruption's reason when the run is interrupted. */
  sleep(ms: number): Promise<void>;
  facts(): Promise<Facts>;
  /** Where a run that stops for a reboot registers its resume. */
  readonly resume: ResumeRegistration;
  /** Restarts the machine (never called under a scratch --root). */
  restart(reason: string): Promise<void>;
  /** machineadm's state directory as the machine names it (default: defaultStateDir). */
  readonly stateDir?: string;
  /** Windows itself (features, services, firewall, ACLs, resume task): present only on Windows with --root at the live root. */
  readonly windows?: WindowsHost;
}

export interface HostOptions {
  root?: string;
  offline?: boolean;
  env?: NodeJS.ProcessEnv;
  /** Facts given instead of detected (plan for another machine), or detected already (by another Host of the same machine). */
  facts?: Facts | Promise<Facts>;
  /** The tools' version probes, started already (see detectFacts). */
  versions?: ToolVersions;
  /** machineadm's state directory, a real path (--state-dir); default STATE_DIR under the root. */
  stateDir?: string;
  /** Interrupts the run (see Host.signal). */
  signal?: AbortSignal;
  /** Under a scratch root, partition, format and mount the real devices spec.storage names (--devices). */
  devices?: boolean;
  /** The facts are another machine's (a plan with --facts or --os): its devices are not this one's. */
  otherMachine?: boolean;
  /** The Windows seam to use instead of powershell.exe (a simulated machine in tests). */
  windows?: WindowsHost;
}

function interruptibleSleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** The state directory on the machine (under --root) unless --state-dir says otherwise. */
export const STATE_DIR = '/var/lib/machineadm';
/** In the state directory: the bytes of files machineadm replaced, and the records of what it wrote (written.ts). */
export const BACKUP_DIR = 'backup';
export const WRITTEN_DIR = 'written';

/**
 * The state directory's machine path on this platform. Windows: %ProgramData%\machineadm (the
 * place Windows gives machine-wide application data; a drive-less \var\lib\machineadm would land
 * on whatever drive the run started from).
 */
export function defaultStateDir(platform: 'linux' | 'windows', env: Readonly<Record<string, string | undefined>>): string {
  if (platform !== 'windows') return STATE_DIR;
  const programData = env.ProgramData ?? env.PROGRAMDATA;
  return `${programData && /^[A-Za-z]:\\/.test(programData) ? programData.replace(/\\+$/, '') : 'C:\\ProgramData'}\\machineadm`;
}

export function createHost(options: HostOptions = {}): Host {
  const env = options.env ?? process.env;
  const root = options.root ?? (process.platform === 'win32' ? 'C:\\' : '/');
  const rooted = new RootedFileSystem(root);
  const machineStateDir = options.stateDir ?? defaultStateDir(rooted.platform, env);
  const stateDir = options.stateDir ?? rooted.mapPath(machineStateDir);
  // Files machineadm replaces are kept under the state directory, at their machine paths, and what
  // it did to each is recorded there (for reset).
  const fs = new RootedFileSystem(root, { backupDir: join(stateDir, BACKUP_DIR), writtenDir: join(stateDir, WRITTEN_DIR) });
  const proc = new ProcessRunner(env, options.signal);
  let facts: Promise<Facts> | undefined = options.facts === undefined ? undefined : Promise.resolve(options.facts);
  // Windows actions change the live machine: none under a scratch --root (the steps say they skip).
  const windows = options.windows ?? (process.platform === 'win32' && fs.isLiveRoot ? powershellWindowsHost(proc) : undefined);
  return {
    fs,
    // No backups: a file the operator names (fetch -d) is theirs to keep or replace.
    local: operatorFileSystem(),
    proc,
    // Devices are the running kernel's: changed on the live root, or under a scratch root only when asked.
    devices: new BlockDevices(options.otherMachine ? 'describe' : fs.isLiveRoot || options.devices === true ? 'change' : 'skip'),
    env,
    offline: options.offline ?? false,
    stateDir: machineStateDir,
    ...(options.signal ? { signal: options.signal } : {}),
    now: () => new Date(),
    sleep: (ms) => interruptibleSleep(ms, options.signal),
    facts: () => (facts ??= detectFacts(fs, proc, windows, options.versions)),
    ...(windows ? { windows } : {}),
    ...(fs.platform === 'windows'
      ? windows
        ? { resume: windowsResume(windows), restart: windowsRestart(windows) }
        : windowsResumeNotAvailable()
      : { resume: systemdResume(fs), restart: systemdRestart(proc) }),
  };
}

// Under a scratch --root there is no Windows to register a task with or to restart.
function windowsResumeNotAvailable(): Pick<Host, 'resume' | 'restart'> {
  const no = async (): Promise<never> => {
    throw new NotAvailableError('reboot and resume on Windows needs the live machine, not a scratch --root', { hint: 'restart the machine yourself and run the same command again' });
  };
  return { resume: { register: no, remove: async () => undefined, registered: async () => undefined }, restart: no };
}

export type { Facts, OperatingSystem, ToolVersions } from './facts.ts';
export type { WindowsHost, ComputerSystem, DomainJoinOutcome, DomainLeaveOutcome } from './windows/index.ts';
export { RootedFileSystem, type WriteOptions, type FileInfo, type FileSystemOptions, type PendingFile } from './fs.ts';
export { acquireRunLock, type LockAttempt, type LockHolder } from './run-lock.ts';
export { BlockDevices, parseMountInfo, type DeviceAccess, type BlockDevice, type DeviceLookup, type MountedFilesystem } from './block-devices.ts';
export { ProcessRunner, type RunOptions, type RunResult, tail } from './exec.ts';
export type { ResumeRegistration } from './resume.ts';
export type { WrittenRecord, Fingerprint, Attributes } from './written.ts';
export { holdsWritten } from './written.ts';
export { archiveDirectory, archivedName } from './archive.ts';
