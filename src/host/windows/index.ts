// The typed Windows seam: everything machineadm asks of Windows itself (features, services,
// firewall rules, ACLs, boot identity, the resume task, restart). Implemented once, with the
// PowerShell templates in scripts.ts; steps see only this interface, so tests put a simulated
// machine behind it (test/windows/simulated-windows.ts).
import { UsageError } from '../../errors.ts';
import type { ProcessRunner } from '../exec.ts';
import { powershellRunner, type ScriptRunner } from './powershell.ts';
import { windowsCommandLine } from './quote.ts';
import { windowsScripts } from './scripts.ts';
import type { BootIdentity } from './boot-id.ts';

export type FeatureState = 'installed' | 'pending' | 'available' | 'absent';

export interface ServiceSpec {
  name: string;
  displayName: string;
  /** The argument vector the service runs: the executable first. */
  argv: readonly string[];
  dependsOn: readonly string[];
}

export interface ServiceState {
  name: string;
  /** Shown in the Services console (Win32_Service.DisplayName). */
  displayName: string;
  /** The command line as the Service Control Manager holds it (Win32_Service.PathName). */
  commandLine: string;
  /** Auto, Manual, Disabled (Win32_Service.StartMode). */
  startMode: string;
  /** Running, Stopped, ... (Win32_Service.State). */
  state: string;
  dependsOn: string[];
}

export interface FirewallRule {
  name: string;
  displayName: string;
  protocol: 'TCP' | 'UDP';
  localPort: number;
}

export interface FirewallRuleState {
  name: string;
  enabled: string;
  direction: string;
  action: string;
  protocol: string;
  localPort: string;
}

export interface AclState {
  /** Inheritance off (the DACL is protected). */
  protected: boolean;
  entries: { sid: string; rights: string; type: string; inherited: boolean }[];
  /** The whole security descriptor (Get-Acl's .Sddl), to give the access rules back later. */
  sddl?: string;
}


export interface ComputerSystem {
  partOfDomain: boolean;
  domain: string;
  name: string;
}

/** What a join action reports: joined (a restart finishes it), or the Win32 code and text of why not. */
export interface DomainJoinOutcome {
  joined: boolean;
  /** The Win32 code (NetJoinDomain, djoin's exit code), when one is known. */
  code?: number;
  /** Add-Computer's error id, e.g. FailToJoinDomainFromWorkgroup,Microsoft.PowerShell.Commands.AddComputerCommand. */
  errorId?: string;
  /** The error text or djoin's output. */
  message?: string;
}

/** What a leave action reports: left (a restart finishes it), or why not. */
export interface DomainLeaveOutcome {
  left: boolean;
  /** False when no domain controller could be reached (Test-ComputerSecureChannel): nothing was changed. */
  reachable?: boolean;
  /** The Win32 code (UnjoinDomainOrWorkgroup), when one is known. */
  code?: number;
  /** Remove-Computer's error id, e.g. FailToUnjoinDomain,Microsoft.PowerShell.Commands.RemoveComputerCommand. */
  errorId?: string;
  message?: string;
}

export interface OnlineDomainLeave {
  /** The account whose credentials disable the computer account (the join's). */
  user: string;
  /** The workgroup the machine goes to. */
  workgroup: string;
  /** A domain controller's FQDN (Test-ComputerSecureChannel -Server). */
  server?: string;
}

export interface OnlineDomainJoin {
  domain: string;
  user: string;
  organizationalUnit?: string;
  newName?: string;
  /** A domain controller's FQDN (Add-Computer -Server). */
  server?: string;
}

export interface WindowsHost {
  feature(name: string): Promise<FeatureState>;
  /** Installs a feature without restarting; says whether Windows needs a restart to finish. */
  installFeature(name: string): Promise<{ restartNeeded: boolean }>;
  service(name: string): Promise<ServiceState | undefined>;
  /** Registers an automatic service that restarts on failure; does not start it. */
  createService(spec: ServiceSpec): Promise<void>;
  /** Sets an existing service's display name, command line, dependencies, automatic start and restart on failure. */
  configureService(spec: ServiceSpec): Promise<void>;
  startService(name: string): Promise<void>;
  /** Stops the service (when running) and deletes it (sc.exe delete); nothing when there is none. */
  removeService(name: string): Promise<void>;
  stopService(name: string): Promise<void>;
  restartService(name: string): Promise<void>;
  /** `containerd.exe --register-service --config ... --log-file ...` (creates service "containerd", not started). */
  registerContainerdService(r: { executable: string; config: string; logFile: string }): Promise<void>;
  firewallRule(name: string): Promise<FirewallRuleState | undefined>;
  /** Adds an inbound allow rule under this name, replacing one of the same name. */
  addFirewallRule(rule: FirewallRule): Promise<void>;
  /** Removes the rule of this name, when there is one. */
  removeFirewallRule(name: string): Promise<void>;
  /** Creates the directory (if missing) with a protected ACL for SYSTEM and Administrators only, inherited by what is created in it. */
  createPrivateDirectory(path: string): Promise<void>;
  acl(path: string): Promise<AclState | undefined>;
  /** Gives a folder back the access rules (DACL) of this SDDL; the owner stays as it is. */
  restoreAcl(path: string, sddl: string): Promise<void>;
  computerSystem(): Promise<ComputerSystem>;
  /** Add-Computer with a credential built from `password`, which reaches PowerShell on standard input only. */
  joinDomain(join: OnlineDomainJoin, password: string): Promise<DomainJoinOutcome>;
  /** djoin /requestODJ /loadfile <blob> /windowspath %SystemRoot% /localos: the join happens at the next boot. */
  joinDomainOffline(blobPath: string): Promise<DomainJoinOutcome>;
  /**
   * Remove-Computer with a credential built from `password` (standard input only): the computer
   * account is disabled and the machine moves to the workgroup at the next boot. Nothing changes
   * when no domain controller answers (`reachable: false`).
   */
  leaveDomain(leave: OnlineDomainLeave, password: string): Promise<DomainLeaveOutcome>;
  /** Leaves the domain on this machine only (the computer account stays in the directory as it is). */
  leaveDomainLocally(workgroup: string): Promise<DomainLeaveOutcome>;
  bootIdentity(): Promise<BootIdentity>;
  /** The startup task (as SYSTEM) that runs this argument vector at the next boot. */
  registerResume(argv: readonly string[]): Promise<void>;
  removeResume(): Promise<void>;
  resumeRegistered(): Promise<readonly string[] | undefined>;
  restart(reason: string): Promise<void>;
}

/** The resume task: \machineadm\resume. */
export const RESUME_TASK = { taskName: 'resume', taskPath: '\\machineadm\\' } as const;

// Service and rule names are looked up exactly, but Windows reserves characters in them, and a
// name machineadm cannot read back would make every run create another.
const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,79}$/;

function checkName(what: string, name: string): string {
  if (!NAME.test(name)) throw new UsageError(`${what} name "${name}" is not letters, digits, ".", "_" and "-" (up to 80)`, { hint: `choose a plain ${what} name` });
  return name;
}

function asObject<T>(value: unknown): T | undefined {
  return value === null || value === undefined ? undefined : (value as T);
}

function leaveOutcome(value: unknown): DomainLeaveOutcome {
  const o = (value ?? {}) as { left?: unknown; reachable?: unknown; code?: unknown; errorId?: unknown; message?: unknown };
  return {
    left: o.left === true,
    ...(typeof o.reachable === 'boolean' ? { reachable: o.reachable } : {}),
    ...(typeof o.code === 'number' ? { code: o.code } : {}),
    ...(typeof o.errorId === 'string' && o.errorId !== '' ? { errorId: o.errorId } : {}),
    ...(typeof o.message === 'string' && o.message !== '' ? { message: o.message } : {}),
  };
}

/** The password as the join and leave scripts read it: the hex of its UTF-8 bytes, one line. */
function passwordInput(password: string): string {
  if (password.includes('\0')) throw new UsageError('the domain password holds a NUL character', { hint: 'check the file or variable it comes from' });
  return `${Buffer.from(password, 'utf8').toString('hex')}\n`;
}

function joinOutcome(value: unknown): DomainJoinOutcome {
  const o = (value ?? {}) as { joined?: unknown; code?: unknown; errorId?: unknown; message?: unknown };
  return {
    joined: o.joined === true,
    ...(typeof o.code === 'number' ? { code: o.code } : {}),
    ...(typeof o.errorId === 'string' && o.errorId !== '' ? { errorId: o.errorId } : {}),
    ...(typeof o.message === 'string' && o.message !== '' ? { message: o.message } : {}),
  };
}

export function createWindowsHost(run: ScriptRunner): WindowsHost {
  return {
    async feature(name) {
      return ((await run(windowsScripts.featureQuery(name))) as { state: FeatureState }).state;
    },
    async installFeature(name) {
      const result = (await run(windowsScripts.featureInstall(name))) as { restartNeeded: boolean };
      return { restartNeeded: result.restartNeeded === true };
    },
    async service(name) {
      const s = asObject<ServiceState>(await run(windowsScripts.serviceQuery(checkName('service', name))));
      // ConvertTo-Json writes a one-element array as the element itself.
      return s ? { ...s, dependsOn: [s.dependsOn ?? []].flat() } : undefined;
    },
    async createService(spec) {
      await run(windowsScripts.serviceCreate({ name: checkName('service', spec.name), displayName: spec.displayName, commandLine: windowsCommandLine(spec.argv), dependsOn: spec.dependsOn.map((d) => checkName('service', d)) }));
    },
    async configureService(spec) {
      await run(windowsScripts.serviceConfigure({ name: checkName('service', spec.name), displayName: spec.displayName, commandLine: windowsCommandLine(spec.argv), dependsOn: spec.dependsOn.map((d) => checkName('service', d)) }));
    },
    async removeService(name) {
      await run(windowsScripts.serviceRemove(checkName('service', name)));
    },
    async startService(name) {
      await run(windowsScripts.serviceStart(checkName('service', name)));
    },
    async stopService(name) {
      await run(windowsScripts.serviceStop(checkName('service', name)));
    },
    async restartService(name) {
      await run(windowsScripts.serviceRestart(checkName('service', name)));
    },
    async registerContainerdService(r) {
      await run(windowsScripts.containerdRegister(r));
    },
    async firewallRule(name) {
      return asObject<FirewallRuleState>(await run(windowsScripts.firewallQuery(checkName('firewall rule', name))));
    },
    async addFirewallRule(rule) {
      await run(windowsScripts.firewallAdd({ ...rule, name: checkName('firewall rule', rule.name) }));
    },
    async removeFirewallRule(name) {
      await run(windowsScripts.firewallRemove(checkName('firewall rule', name)));
    },
    async createPrivateDirectory(path) {
      await run(windowsScripts.privateDirectory(path));
    },
    async acl(path) {
      const a = asObject<AclState>(await run(windowsScripts.aclQuery(path)));
      return a ? { ...a, entries: [a.entries ?? []].flat() } : undefined;
    },
    async restoreAcl(path, sddl) {
      await run(windowsScripts.aclRestore({ path, sddl }));
    },
    async computerSystem() {
      return (await run(windowsScripts.computerSystem())) as ComputerSystem;
    },
    async joinDomain(join, password) {
      const script = windowsScripts.domainJoin({ domain: join.domain, user: join.user, ouPath: join.organizationalUnit ?? '', newName: join.newName ?? '', server: join.server ?? '' });
      return joinOutcome(await run(script, { input: passwordInput(password) }));
    },
    async joinDomainOffline(blobPath) {
      return joinOutcome(await run(windowsScripts.domainJoinOffline(blobPath)));
    },
    async leaveDomain(leave, password) {
      const script = windowsScripts.domainLeave({ user: leave.user, workgroup: leave.workgroup, server: leave.server ?? '' });
      return leaveOutcome(await run(script, { input: passwordInput(password) }));
    },
    async leaveDomainLocally(workgroup) {
      return leaveOutcome(await run(windowsScripts.domainLeaveLocal(workgroup)));
    },
    async bootIdentity() {
      const b = (await run(windowsScripts.bootIdentity())) as { bootId: string | null; lastBootUpTime: string; build: string };
      return { ...(b.bootId ? { bootId: b.bootId } : {}), lastBootUpTime: b.lastBootUpTime, build: b.build };
    },
    async registerResume(argv) {
      const [execute, ...rest] = argv;
      if (execute === undefined) throw new UsageError('the resume command is empty');
      await run(windowsScripts.resumeRegister({ ...RESUME_TASK, execute, argument: windowsCommandLine(rest), description: JSON.stringify(argv) }));
    },
    async removeResume() {
      await run(windowsScripts.resumeRemove(RESUME_TASK));
    },
    async resumeRegistered() {
      const task = asObject<{ description: string }>(await run(windowsScripts.resumeQuery(RESUME_TASK)));
      if (!task) return undefined;
      try {
        const argv = JSON.parse(task.description) as unknown;
        if (Array.isArray(argv) && argv.every((a) => typeof a === 'string')) return argv as string[];
      } catch {
        // A task of that name that machineadm did not write: reported as registered, with no command.
      }
      return [];
    },
    async restart(reason) {
      // shutdown.exe /c takes at most 512 characters; Windows PowerShell 5.1 passes a native
      // argument's inner double quotes unescaped, so they are left out.
      await run(windowsScripts.restart(`machineadm: ${reason}`.replace(/["\r\n]+/g, ' ').slice(0, 500)));
    },
  };
}

/** The Windows seam on this machine, through powershell.exe. */
export function powershellWindowsHost(proc: ProcessRunner): WindowsHost {
  return createWindowsHost(powershellRunner(proc));
}

/** The lead's ResumeRegistration (src/host/resume.ts), on Windows: the startup task. */
export interface WindowsResumeRegistration {
  register(argv: readonly string[]): Promise<void>;
  remove(): Promise<void>;
  registered(): Promise<readonly string[] | undefined>;
}

export function windowsResume(windows: WindowsHost): WindowsResumeRegistration {
  return {
    register: (argv) => windows.registerResume(argv),
    remove: () => windows.removeResume(),
    registered: () => windows.resumeRegistered(),
  };
}

export function windowsRestart(windows: WindowsHost): (reason: string) => Promise<void> {
  return (reason) => windows.restart(reason);
}

export { bootIdOf, type BootIdentity } from './boot-id.ts';
export type { ScriptRunner } from './powershell.ts';
export { windowsScripts, type WindowsScript } from './scripts.ts';
export { psLiteral, windowsCommandLine } from './quote.ts';
export { decodeClixml, powershellArgv, encodeCommand } from './powershell.ts';
