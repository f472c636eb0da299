// The PowerShell machineadm runs on Windows, one constant template per action. User values are
// never spliced into a template: each script starts with assignments of verbatim literals
// ($Name = '...', see quote.ts) and the constant body reads only those variables. Every script
// prints one line of JSON (ConvertTo-Json -Compress, in ASCII: see compose.ts) for the caller to
// read, and fails with a terminating error ($ErrorActionPreference = 'Stop'), which powershell.exe
// turns into exit code 1.
// Only domain.join takes a secret, and it reads it from standard input ($input): script block
// logging (event 4104) records the script text, and module logging (4103) records the values
// bound to cmdlet parameters.
// The documentation each body follows is named above it (the sources table is in docs/contract/windows.md).
// Each action's template is in scripts/, in a file named after the action (or family of actions)
// as test/windows/pester/windows-actions.Tests.ps1 names its Describe blocks; this file is the table
// of them that the Windows seam and the tests use.
import { compose } from './scripts/compose.ts';
import { ACL_QUERY, ACL_RESTORE, PRIVATE_DIRECTORY } from './scripts/acl.ts';
import { BOOT_IDENTITY } from './scripts/boot-identity.ts';
import { COMPUTER_SYSTEM } from './scripts/computer-system.ts';
import { CONTAINERD_REGISTER } from './scripts/containerd.ts';
import { DOMAIN_JOIN, DOMAIN_JOIN_OFFLINE, DOMAIN_LEAVE, DOMAIN_LEAVE_LOCAL } from './scripts/domain.ts';
import { FEATURE_INSTALL, FEATURE_QUERY } from './scripts/feature.ts';
import { FIREWALL_ADD, FIREWALL_QUERY, FIREWALL_REMOVE } from './scripts/firewall.ts';
import { RESTART } from './scripts/restart.ts';
import { RESUME_QUERY, RESUME_REGISTER, RESUME_REMOVE } from './scripts/resume.ts';
import { SERVICE_CONFIGURE, SERVICE_CREATE, SERVICE_QUERY, SERVICE_REMOVE, SERVICE_RESTART, SERVICE_START, SERVICE_STOP } from './scripts/service.ts';

export type { WindowsScript } from './scripts/compose.ts';
export { JOIN_ERROR_CODES } from './scripts/domain.ts';
export { RESUME_TASK_SDDL, TASK_NAMESPACE } from './scripts/resume.ts';

export const windowsScripts = {
  featureQuery: (name: string) => compose('feature.query', FEATURE_QUERY, { Name: name }),
  featureInstall: (name: string) => compose('feature.install', FEATURE_INSTALL, { Name: name }),
  serviceQuery: (name: string) => compose('service.query', SERVICE_QUERY, { Name: name }),
  serviceCreate: (s: { name: string; displayName: string; commandLine: string; dependsOn: readonly string[] }) =>
    compose('service.create', SERVICE_CREATE, { Name: s.name, DisplayName: s.displayName, CommandLine: s.commandLine, DependsOn: s.dependsOn }),
  serviceConfigure: (s: { name: string; displayName: string; commandLine: string; dependsOn: readonly string[] }) =>
    compose('service.configure', SERVICE_CONFIGURE, { Name: s.name, DisplayName: s.displayName, CommandLine: s.commandLine, DependsOn: s.dependsOn }),
  serviceStart: (name: string) => compose('service.start', SERVICE_START, { Name: name }),
  serviceStop: (name: string) => compose('service.stop', SERVICE_STOP, { Name: name }),
  serviceRestart: (name: string) => compose('service.restart', SERVICE_RESTART, { Name: name }),
  containerdRegister: (r: { executable: string; config: string; logFile: string }) =>
    compose('containerd.register', CONTAINERD_REGISTER, { Executable: r.executable, Config: r.config, LogFile: r.logFile }),
  firewallQuery: (name: string) => compose('firewall.query', FIREWALL_QUERY, { Name: name }),
  firewallAdd: (r: { name: string; displayName: string; protocol: string; localPort: number }) =>
    compose('firewall.add', FIREWALL_ADD, { Name: r.name, DisplayName: r.displayName, Protocol: r.protocol, LocalPort: r.localPort }),
  privateDirectory: (path: string) => compose('acl.private-directory', PRIVATE_DIRECTORY, { Path: path }),
  aclQuery: (path: string) => compose('acl.query', ACL_QUERY, { Path: path }),
  aclRestore: (a: { path: string; sddl: string }) => compose('acl.restore', ACL_RESTORE, { Path: a.path, Sddl: a.sddl }),
  computerSystem: () => compose('computer-system', COMPUTER_SYSTEM),
  bootIdentity: () => compose('boot-identity', BOOT_IDENTITY),
  resumeRegister: (t: { taskName: string; taskPath: string; execute: string; argument: string; description: string }) =>
    compose('resume.register', RESUME_REGISTER, { TaskName: t.taskName, TaskPath: t.taskPath, Execute: t.execute, Argument: t.argument, Description: t.description }),
  resumeQuery: (t: { taskName: string; taskPath: string }) => compose('resume.query', RESUME_QUERY, { TaskName: t.taskName, TaskPath: t.taskPath }),
  resumeRemove: (t: { taskName: string; taskPath: string }) => compose('resume.remove', RESUME_REMOVE, { TaskName: t.taskName, TaskPath: t.taskPath }),
  serviceRemove: (name: string) => compose('service.remove', SERVICE_REMOVE, { Name: name }),
  firewallRemove: (name: string) => compose('firewall.remove', FIREWALL_REMOVE, { Name: name }),
  restart: (comment: string) => compose('restart', RESTART, { Comment: comment }),
  domainJoin: (j: { domain: string; user: string; ouPath: string; newName: string; server: string }) =>
    compose('domain.join', DOMAIN_JOIN, { Domain: j.domain, User: j.user, OUPath: j.ouPath, NewName: j.newName, Server: j.server }),
  domainJoinOffline: (blobPath: string) => compose('domain.join-offline', DOMAIN_JOIN_OFFLINE, { BlobPath: blobPath }),
  domainLeave: (l: { user: string; workgroup: string; server: string }) => compose('domain.leave', DOMAIN_LEAVE, { User: l.user, Workgroup: l.workgroup, Server: l.server }),
  domainLeaveLocal: (workgroup: string) => compose('domain.leave-local', DOMAIN_LEAVE_LOCAL, { Workgroup: workgroup }),
} as const;
