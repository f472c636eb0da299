// A simulated Windows machine behind the WindowsHost seam: features, services, firewall rules,
// scheduled tasks, ACLs, boot identity and restarts, with state. Its behaviour follows Microsoft's
// documentation of the cmdlets and APIs the real seam calls (docs/contract/windows.md lists them):
// - Install-WindowsFeature (ServerManager): a feature that needs a restart reports
//   RestartNeeded = Yes and is "InstallPending" until the machine restarts; installing an installed
//   feature changes nothing (ExitCode NoChangeNeeded). Containers needs a restart.
// - New-Service / CreateService: fails when the service exists; creates it stopped. containerd's
//   --register-service (containerd service_windows.go) likewise: creates "containerd" stopped,
//   Automatic, fails when it exists.
// - Start-Service / StartService: the SCM starts the services a service depends on first, and
//   fails (ERROR_SERVICE_DEPENDENCY_DELETED) when one of them does not exist.
// - Stop-Service -Force: the running services that depend on it are stopped first, and stay
//   stopped. Restart-Service -Force starts again those it stopped (PowerShell's Service.cs:
//   DoStopService collects the running dependents, Restart-Service starts each of them).
// - Win32_Service.Change: replaces the display name, command line, start mode and dependencies.
// - New-NetFirewallRule -Name: rules are looked up by Name; Remove-NetFirewallRule removes one.
// - Register-ScheduledTask -Force replaces a task of the same path and name; Unregister removes it.
// - Set-Acl with a protected DirectorySecurity: the directory's DACL is exactly the rules given,
//   inherited by what is created in it.
// - A restart: LastBootUpTime and BootId change, pending features finish installing, Automatic
//   services start (dependencies first), scheduled tasks stay registered, a pending domain join
//   takes effect (Win32_ComputerSystem then says PartOfDomain, the domain and the new name).
// - Add-Computer (Windows PowerShell 5.1, Computer.cs; JoinDomainOrWorkgroup return codes): a
//   machine already in the target domain fails with AddComputerToSameDomain; an unknown or
//   unreachable domain is 1355, a wrong user or password 1326, an existing computer account
//   created by another user (not a Domain Admin) 2732 (KB5020276); success needs a restart.
//   Failures carry the FailToJoinDomainFromWorkgroup error id. Whether PartOfDomain changes before
//   the restart is not documented; here it changes at the restart.
// - Remove-Computer -UnjoinDomainCredential (5.1; Computer.cs): disables the computer account
//   (NETSETUP_ACCT_DELETE) and moves the machine to the workgroup at the next restart; a wrong
//   user or password is 1326. Test-ComputerSecureChannel is false when no domain controller
//   answers (`directory.reachable`), and the leave is then not tried. Which code Windows gives
//   for a computer account that no longer exists is not documented; here it is 2221
//   (NERR_UserNotFound). UnjoinDomainOrWorkgroup with no options leaves only this machine: the
//   account stays as it is. A leave again before the restart is 2692 (NERR_SetupNotJoined): assumed,
//   as whether PartOfDomain changes before the restart is not documented. Sc.exe delete: the service is stopped first (with the ones that
//   depend on it) and goes.
// - djoin /requestODJ /localos: queues the join the blob describes for the next boot; a missing
//   blob file fails with 2 (ERROR_FILE_NOT_FOUND). Blobs here are JSON { domain, machine } (real
//   ones are opaque base64 made by djoin /provision).
import { join } from 'node:path';
import { RootedFileSystem, type FileSystemOptions } from '../../src/host/index.ts';
import type { AclState, BootIdentity, ComputerSystem, DomainJoinOutcome, DomainLeaveOutcome, OnlineDomainJoin, OnlineDomainLeave, FeatureState, FirewallRule, FirewallRuleState, ServiceSpec, ServiceState, WindowsHost } from '../../src/host/windows/index.ts';
import { bootIdOf, windowsCommandLine } from '../../src/host/windows/index.ts';

export interface SimulatedService extends ServiceState {
  displayName: string;
  restartOnFailure: boolean;
}

export const PRIVATE_ACL: AclState = {
  protected: true,
  entries: [
    { sid: 'S-1-5-18', rights: 'FullControl', type: 'Allow', inherited: false },
    { sid: 'S-1-5-32-544', rights: 'FullControl', type: 'Allow', inherited: false },
  ],
};

export class SimulatedWindows implements WindowsHost {
  features = new Map<string, FeatureState>([['Containers', 'available']]);
  services = new Map<string, SimulatedService>();
  firewall = new Map<string, FirewallRuleState>();
  tasks = new Map<string, readonly string[]>();
  acls = new Map<string, AclState>();
  restarts: string[] = [];
  /** Every call, in order ("installFeature Containers"). */
  calls: string[] = [];
  private boots = 1;
  /** Set by restart(); the machine is "down" until reboot() is called. */
  restartRequested = false;
  computer: ComputerSystem = { partOfDomain: false, domain: 'WORKGROUP', name: 'WIN-NODE1' };
  /** The Active Directory domain this machine can reach. */
  directory = { domain: 'corp.example', users: new Map([['k8s-joiner', 'S3cret pass’word']]), accounts: new Map<string, string>(), disabled: new Set<string>(), reachable: true, mayNotDisable: new Set<string>() };
  /** A join done and waiting for the restart. */
  pendingJoin: { domain: string; name: string } | undefined;
  /** A leave done and waiting for the restart: the workgroup the machine goes to. */
  pendingLeave: string | undefined;
  /** Reads a machine file (the djoin blob); set by the test. */
  readFile: (path: string) => string | undefined = () => undefined;
  /** Makes a directory on the machine's disk (createPrivateDirectory creates it, as on Windows); set by the test. */
  makeDirectory: (path: string) => void = () => undefined;
  /** The passwords joinDomain was given (the test checks where they went). */
  passwords: string[] = [];

  readonly build: string;

  constructor(build = '20348') {
    this.build = build;
  }

  private key(name: string): string {
    return name.toLowerCase();
  }

  async feature(name: string): Promise<FeatureState> {
    return this.features.get(name) ?? 'absent';
  }

  async installFeature(name: string): Promise<{ restartNeeded: boolean }> {
    this.calls.push(`installFeature ${name}`);
    const state = this.features.get(name);
    if (state === undefined) throw new Error(`Install-WindowsFeature : ArgumentNotValid: the feature name ${name} is unknown`);
    if (state === 'installed') return { restartNeeded: false };
    this.features.set(name, 'pending');
    return { restartNeeded: true };
  }

  async service(name: string): Promise<ServiceState | undefined> {
    const s = this.services.get(this.key(name));
    return s ? { name: s.name, displayName: s.displayName, commandLine: s.commandLine, startMode: s.startMode, state: s.state, dependsOn: [...s.dependsOn] } : undefined;
  }

  async createService(spec: ServiceSpec): Promise<void> {
    this.calls.push(`createService ${spec.name}`);
    if (this.services.has(this.key(spec.name))) throw new Error(`New-Service : Service '${spec.name}' cannot be created because a service with this name already exists`);
    this.services.set(this.key(spec.name), { name: spec.name, displayName: spec.displayName, commandLine: windowsCommandLine(spec.argv), startMode: 'Auto', state: 'Stopped', dependsOn: [...spec.dependsOn], restartOnFailure: true });
  }

  async configureService(spec: ServiceSpec): Promise<void> {
    this.calls.push(`configureService ${spec.name}`);
    const s = this.services.get(this.key(spec.name));
    if (!s) throw new Error(`no service named ${spec.name}`);
    Object.assign(s, { displayName: spec.displayName, commandLine: windowsCommandLine(spec.argv), dependsOn: [...spec.dependsOn], startMode: 'Auto', restartOnFailure: true });
  }

  async startService(name: string): Promise<void> {
    this.calls.push(`startService ${name}`);
    this.start(name, []);
  }

  private start(name: string, chain: string[]): void {
    const s = this.services.get(this.key(name));
    if (!s) throw new Error(`Start-Service : Cannot find any service with service name '${name}'${chain.length ? ` (a dependency of ${chain.at(-1)})` : ''}`);
    for (const dep of s.dependsOn) this.start(dep, [...chain, name]);
    s.state = 'Running';
  }

  async removeService(name: string): Promise<void> {
    this.calls.push(`removeService ${name}`);
    const s = this.services.get(this.key(name));
    if (!s) return;
    // Stop-Service -Force stops the services that depend on it first.
    for (const other of this.services.values()) if (other.dependsOn.some((d) => this.key(d) === this.key(name))) other.state = 'Stopped';
    this.services.delete(this.key(name));
  }

  async stopService(name: string): Promise<void> {
    this.calls.push(`stopService ${name}`);
    this.stop(name);
  }

  /** Stops a service and, first, every running one that depends on it; returns all it stopped. */
  private stop(name: string): SimulatedService[] {
    const s = this.services.get(this.key(name));
    if (!s || s.state === 'Stopped') return [];
    const dependents = [...this.services.values()].filter((other) => other.dependsOn.some((d) => this.key(d) === this.key(name)));
    const stopped = dependents.flatMap((d) => this.stop(d.name));
    s.state = 'Stopped';
    return [...stopped, s];
  }

  async restartService(name: string): Promise<void> {
    this.calls.push(`restartService ${name}`);
    const stopped = this.stop(name);
    this.start(name, []);
    for (const s of stopped) this.start(s.name, []);
  }

  async registerContainerdService(r: { executable: string; config: string; logFile: string }): Promise<void> {
    this.calls.push('registerContainerdService');
    if (this.services.has('containerd')) throw new Error('containerd --register-service: The specified service already exists.');
    this.services.set('containerd', {
      name: 'containerd',
      displayName: 'Containerd',
      commandLine: `${windowsCommandLine([r.executable, '--config', r.config, '--log-file', r.logFile])} --run-service`,
      startMode: 'Auto',
      state: 'Stopped',
      dependsOn: [],
      restartOnFailure: true,
    });
  }

  async firewallRule(name: string): Promise<FirewallRuleState | undefined> {
    return this.firewall.get(name);
  }

  async addFirewallRule(rule: FirewallRule): Promise<void> {
    this.calls.push(`addFirewallRule ${rule.name}`);
    this.firewall.set(rule.name, { name: rule.name, enabled: 'True', direction: 'Inbound', action: 'Allow', protocol: rule.protocol, localPort: String(rule.localPort) });
  }

  async removeFirewallRule(name: string): Promise<void> {
    this.calls.push(`removeFirewallRule ${name}`);
    this.firewall.delete(name);
  }

  async createPrivateDirectory(path: string): Promise<void> {
    this.calls.push(`createPrivateDirectory ${path}`);
    this.makeDirectory(path);
    this.acls.set(path.toLowerCase(), PRIVATE_ACL);
  }

  async acl(path: string): Promise<AclState | undefined> {
    return this.acls.get(path.toLowerCase());
  }

  /** The protected ACL a path has or inherits from the nearest directory that has one set. */
  effectiveAcl(path: string): AclState | undefined {
    let p = path.toLowerCase();
    while (p.includes('\\')) {
      const acl = this.acls.get(p);
      if (acl) return acl;
      p = p.slice(0, p.lastIndexOf('\\'));
    }
    return undefined;
  }

  async restoreAcl(path: string, sddl: string): Promise<void> {
    this.calls.push(`restoreAcl ${path}`);
    // Set-Acl with the DACL of the SDDL: the entries it describes (the test keeps them with it).
    const earlier = this.sddls.get(sddl);
    if (!earlier) throw new Error(`Set-Acl: the SDDL ${sddl} is not one this machine had`);
    this.acls.set(path.toLowerCase(), earlier);
  }

  /** The ACLs the test gave folders before machineadm, by their SDDL (restoreAcl gives them back). */
  sddls = new Map<string, AclState>();

  async computerSystem(): Promise<ComputerSystem> {
    return this.computer;
  }

  async joinDomain(join: OnlineDomainJoin, password: string): Promise<DomainJoinOutcome> {
    this.calls.push(`joinDomain ${join.domain}${join.organizationalUnit ? ` ${join.organizationalUnit}` : ''}${join.newName ? ` as ${join.newName}` : ''}`);
    this.passwords.push(password);
    const fail = (code: number, text: string): DomainJoinOutcome => ({ joined: false, code, errorId: 'FailToJoinDomainFromWorkgroup,Microsoft.PowerShell.Commands.AddComputerCommand', message: `Computer '${this.computer.name}' failed to join domain '${join.domain}' from its current workgroup 'WORKGROUP' with following error message: ${text}` });
    if (this.computer.partOfDomain && this.computer.domain.toLowerCase() === join.domain.toLowerCase()) {
      return { joined: false, errorId: 'AddComputerToSameDomain,Microsoft.PowerShell.Commands.AddComputerCommand', message: `Cannot add computer '${this.computer.name}' to domain '${join.domain}' because it is already in that domain.` };
    }
    if (join.domain.toLowerCase() !== this.directory.domain) return fail(1355, 'The specified domain either does not exist or could not be contacted.');
    if (this.directory.users.get(join.user) !== password) return fail(1326, 'The user name or password is incorrect.');
    const name = join.newName ?? this.computer.name;
    const owner = this.directory.accounts.get(name.toUpperCase());
    if (owner !== undefined && owner !== join.user) return fail(2732, 'An account with the same name exists in Active Directory. Re-using the account was blocked by security policy.');
    this.directory.accounts.set(name.toUpperCase(), join.user);
    this.pendingJoin = { domain: join.domain, name };
    return { joined: true };
  }

  async joinDomainOffline(blobPath: string): Promise<DomainJoinOutcome> {
    this.calls.push(`joinDomainOffline ${blobPath}`);
    const text = this.readFile(blobPath);
    if (text === undefined) return { joined: false, code: 2, message: `Failed to read the provisioning data from ${blobPath}.\r\nThe system cannot find the file specified.\r\n` };
    const blob = JSON.parse(text) as { domain: string; machine: string };
    this.pendingJoin = { domain: blob.domain, name: blob.machine };
    // The directory administrators pre-staged the account (djoin /provision).
    if (!this.directory.accounts.has(blob.machine.toUpperCase())) this.directory.accounts.set(blob.machine.toUpperCase(), 'Domain Admins');
    return { joined: true, code: 0, message: 'Loading provisioning data from the following file: [' + blobPath + '].\r\nThe provisioning request completed successfully.\r\nA reboot is required for changes to be applied.\r\nThe operation completed successfully.\r\n' };
  }

  async leaveDomain(leave: OnlineDomainLeave, password: string): Promise<DomainLeaveOutcome> {
    this.calls.push(`leaveDomain ${leave.workgroup}`);
    this.passwords.push(password);
    if (!this.directory.reachable) return { left: false, reachable: false, message: 'The secure channel between the local computer and the domain is broken: no domain controller answered.' };
    const fail = (code: number, text: string): DomainLeaveOutcome => ({ left: false, reachable: true, code, errorId: 'FailToUnjoinDomain,Microsoft.PowerShell.Commands.RemoveComputerCommand', message: `Failed to unjoin computer '${this.computer.name}' from domain '${this.computer.domain}' with the following error message: ${text}` });
    if (this.pendingLeave) return fail(2692, 'The machine is not currently joined to a domain.');
    if (this.directory.users.get(leave.user) !== password) return fail(1326, 'The user name or password is incorrect.');
    const name = this.computer.name.toUpperCase();
    if (!this.directory.accounts.has(name)) return fail(2221, 'The user name could not be found.');
    if (this.directory.mayNotDisable.has(leave.user)) return fail(5, 'Access is denied.');
    this.directory.disabled.add(name);
    this.pendingLeave = leave.workgroup;
    return { left: true, reachable: true };
  }

  async leaveDomainLocally(workgroup: string): Promise<DomainLeaveOutcome> {
    this.calls.push(`leaveDomainLocally ${workgroup}`);
    if (this.computer.partOfDomain) this.pendingLeave = workgroup;
    return { left: true };
  }

  async bootIdentity(): Promise<BootIdentity> {
    return { bootId: String(this.boots), lastBootUpTime: new Date(Date.UTC(2026, 10, 30, 0, this.boots)).toISOString(), build: this.build };
  }

  async registerResume(argv: readonly string[]): Promise<void> {
    this.calls.push('registerResume');
    this.tasks.set('\\machineadm\\resume', [...argv]);
  }

  async removeResume(): Promise<void> {
    this.calls.push('removeResume');
    this.tasks.delete('\\machineadm\\resume');
  }

  async resumeRegistered(): Promise<readonly string[] | undefined> {
    return this.tasks.get('\\machineadm\\resume');
  }

  async restart(reason: string): Promise<void> {
    this.calls.push('restart');
    this.restarts.push(reason);
    this.restartRequested = true;
  }

  /** The machine comes back up: pending features finish, automatic services start, the boot identity changes. */
  reboot(): void {
    this.boots++;
    this.restartRequested = false;
    for (const [name, state] of this.features) if (state === 'pending') this.features.set(name, 'installed');
    if (this.pendingJoin) this.computer = { partOfDomain: true, domain: this.pendingJoin.domain, name: this.pendingJoin.name };
    this.pendingJoin = undefined;
    if (this.pendingLeave) this.computer = { partOfDomain: false, domain: this.pendingLeave, name: this.computer.name };
    this.pendingLeave = undefined;
    for (const s of this.services.values()) s.state = 'Stopped';
    for (const s of this.services.values()) if (s.startMode === 'Auto') this.start(s.name, []);
  }

  async bootId(): Promise<string> {
    return bootIdOf(await this.bootIdentity());
  }
}

/**
 * The Windows machine's files for the steps: a real RootedFileSystem under a scratch directory
 * that takes Windows paths (C:\a\b is <root>/C/a/b) and says it is a Windows one.
 * `onWrite` sees every file as it is written (to check the ACL it lands under); `options` give it
 * the state directory's backup/ and written/ records, as machineadm's own file system has them.
 */
export function windowsFiles(root: string, onWrite?: (path: string) => void, options: FileSystemOptions = {}): RootedFileSystem {
  const real = new RootedFileSystem(root, options);
  const map = (p: unknown): unknown => (typeof p === 'string' && /^[A-Za-z]:\\/.test(p) ? `/${p[0]!.toUpperCase()}/${p.slice(3).replace(/\\/g, '/')}` : p);
  return new Proxy(real, {
    get(target, prop, receiver) {
      if (prop === 'platform') return 'windows';
      const value = Reflect.get(target, prop, receiver) as unknown;
      if (typeof value !== 'function') return value;
      return (first: unknown, ...rest: unknown[]) => {
        if ((prop === 'writeFile' || prop === 'openWrite') && typeof first === 'string') onWrite?.(first);
        return (value as (...a: unknown[]) => unknown).call(target, map(first), ...rest);
      };
    },
  });
}

export function realPath(root: string, windowsPath: string): string {
  return join(root, windowsPath[0]!.toUpperCase(), windowsPath.slice(3).replace(/\\/g, '/'));
}
