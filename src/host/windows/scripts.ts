// The PowerShell machineadm runs on Windows, one constant template per action. User values are
// never spliced into a template: each script starts with assignments of verbatim literals
// ($Name = '...', see quote.ts) and the constant body reads only those variables. Every script
// prints one line of JSON (ConvertTo-Json -Compress) for the caller to read, and fails with a
// terminating error ($ErrorActionPreference = 'Stop'), which powershell.exe turns into exit code 1.
// Only domain.join takes a secret, and it reads it from standard input ($input): script block
// logging (event 4104) records the script text, and module logging (4103) records the values
// bound to cmdlet parameters.
// The documentation each body follows is named above it (the sources table is in docs/contract/windows.md).
import { psValue, type PsValue } from './quote.ts';

export interface WindowsScript {
  /** The action, e.g. "feature.install"; also the golden file's name. */
  readonly action: string;
  readonly text: string;
  /** The user values the script carries, by variable name (tests check where they land). */
  readonly values: Readonly<Record<string, PsValue>>;
}

const PRELUDE = String.raw`$ErrorActionPreference = 'Stop'
$ProgressPreference = 'SilentlyContinue'`;

function compose(action: string, body: string, values: Record<string, PsValue> = {}): WindowsScript {
  const assignments = Object.entries(values).map(([name, value]) => `$${name} = ${psValue(value)}`);
  return { action, text: [`# machineadm ${action}`, PRELUDE, ...assignments, body.trim(), ''].join('\n'), values };
}

// Server: ServerManager's Get-WindowsFeature (.Installed, .InstallState). Client SKUs have no
// ServerManager, so DISM's Get-WindowsOptionalFeature (.State); Microsoft's own containerd
// installer picks the client path when Get-WindowsFeature is missing.
// [Get-WindowsFeature, Get-WindowsOptionalFeature; microsoft/Windows-Containers install-containerd-runtime.ps1]
const FEATURE_QUERY = String.raw`
if (Get-Command -Name Get-WindowsFeature -ErrorAction SilentlyContinue) {
  $feature = Get-WindowsFeature -Name $Name
  if ($null -eq $feature) { $state = 'absent' }
  elseif ($feature.Installed) { $state = 'installed' }
  elseif ([string]$feature.InstallState -eq 'InstallPending') { $state = 'pending' }
  else { $state = 'available' }
} else {
  $feature = Get-WindowsOptionalFeature -Online -FeatureName $Name
  if ($null -eq $feature) { $state = 'absent' }
  elseif ([string]$feature.State -eq 'Enabled') { $state = 'installed' }
  elseif ([string]$feature.State -eq 'EnablePending') { $state = 'pending' }
  else { $state = 'available' }
}
[pscustomobject]@{ state = $state } | ConvertTo-Json -Compress
`;

// Install-WindowsFeature without -Restart (machineadm restarts through its own resume); its result
// has Success and RestartNeeded ('Yes', 'No', 'Maybe'). Enable-WindowsOptionalFeature -All enables
// parent features, -NoRestart suppresses the reboot; its ImageObject has a boolean RestartNeeded.
// [Install-WindowsFeature.md; Enable-WindowsOptionalFeature.md]
const FEATURE_INSTALL = String.raw`
if (Get-Command -Name Install-WindowsFeature -ErrorAction SilentlyContinue) {
  $result = Install-WindowsFeature -Name $Name
  if (-not $result.Success) { throw ('Install-WindowsFeature did not succeed: exit code ' + [string]$result.ExitCode) }
  $restart = [string]$result.RestartNeeded -eq 'Yes'
} else {
  $result = Enable-WindowsOptionalFeature -Online -FeatureName $Name -All -NoRestart
  $restart = [bool]$result.RestartNeeded
}
[pscustomobject]@{ restartNeeded = $restart } | ConvertTo-Json -Compress
`;

// Win32_Service has the command line (PathName) and start mode; Get-Service the dependencies.
// Filtering with -eq rather than -Name keeps wildcard characters in a name literal.
// [Win32_Service class; Get-Service.md]
const SERVICE_QUERY = String.raw`
$service = Get-CimInstance -ClassName Win32_Service | Where-Object { $_.Name -eq $Name }
if ($null -eq $service) {
  'null'
} else {
  $depends = @(Get-Service | Where-Object { $_.Name -eq $Name } | ForEach-Object { $_.ServicesDependedOn } | ForEach-Object { $_.Name })
  [pscustomobject]@{ name = $service.Name; commandLine = $service.PathName; startMode = $service.StartMode; state = $service.State; dependsOn = $depends } | ConvertTo-Json -Compress
}
`;

// New-Service binds the command line as one parameter (no native-argument quoting). Recovery:
// sc.exe failure restarts after 10 s three times, counter reset after a day; failureflag 1 also
// counts an exit with an error code as a failure. sc.exe, never sc (an alias of Set-Content).
// [New-Service.md; sc-create.md, sc failure / failureflag; SERVICE_FAILURE_ACTIONS]
const RECOVERY = String.raw`
& sc.exe failure $Name reset= 86400 actions= restart/10000/restart/10000/restart/10000 | Out-Null
if ($LASTEXITCODE -ne 0) { throw ('sc.exe failure exited with code ' + $LASTEXITCODE) }
& sc.exe failureflag $Name 1 | Out-Null
if ($LASTEXITCODE -ne 0) { throw ('sc.exe failureflag exited with code ' + $LASTEXITCODE) }
`;

const SERVICE_CREATE = String.raw`
if ($DependsOn.Count -gt 0) {
  New-Service -Name $Name -DisplayName $DisplayName -BinaryPathName $CommandLine -StartupType Automatic -DependsOn $DependsOn | Out-Null
} else {
  New-Service -Name $Name -DisplayName $DisplayName -BinaryPathName $CommandLine -StartupType Automatic | Out-Null
}
${RECOVERY.trim()}
'{}'
`;

// Win32_Service.Change sets the command line, start mode and dependencies in one call (Set-Service
// in Windows PowerShell 5.1 cannot set either of the first two); ReturnValue 0 is success.
// [Change method of the Win32_Service class]
const SERVICE_CONFIGURE = String.raw`
$service = Get-CimInstance -ClassName Win32_Service | Where-Object { $_.Name -eq $Name }
if ($null -eq $service) { throw ('no service named ' + $Name) }
$change = Invoke-CimMethod -InputObject $service -MethodName Change -Arguments @{ PathName = $CommandLine; StartMode = 'Automatic'; ServiceDependencies = [string[]]$DependsOn }
if ($change.ReturnValue -ne 0) { throw ('Win32_Service.Change returned ' + [string]$change.ReturnValue) }
${RECOVERY.trim()}
'{}'
`;

// [Start-Service.md, Stop-Service.md, Restart-Service.md; ServiceController.WaitForStatus]
const SERVICE_START = String.raw`
$service = Get-Service | Where-Object { $_.Name -eq $Name }
if ($null -eq $service) { throw ('no service named ' + $Name) }
if ($service.Status -ne 'Running') { $service | Start-Service }
$service.WaitForStatus('Running', [TimeSpan]::FromSeconds(60))
'{}'
`;

const SERVICE_STOP = String.raw`
$service = Get-Service | Where-Object { $_.Name -eq $Name }
if ($null -ne $service -and $service.Status -ne 'Stopped') {
  $service | Stop-Service -Force
  $service.WaitForStatus('Stopped', [TimeSpan]::FromSeconds(60))
}
'{}'
`;

const SERVICE_RESTART = String.raw`
$service = Get-Service | Where-Object { $_.Name -eq $Name }
if ($null -eq $service) { throw ('no service named ' + $Name) }
$service | Restart-Service -Force
$service.WaitForStatus('Running', [TimeSpan]::FromSeconds(60))
'{}'
`;

// containerd.exe --register-service creates service "containerd" (Automatic, restart 15 s twice)
// with the other flags baked in after --run-service; it neither starts the service nor keeps
// output without --log-file, and fails when the service exists.
// [containerd cmd/containerd/command/service_windows.go]
const CONTAINERD_REGISTER = String.raw`
& $Executable --register-service --config $Config --log-file $LogFile | Out-Null
if ($LASTEXITCODE -ne 0) { throw ('containerd --register-service exited with code ' + $LASTEXITCODE) }
'{}'
`;

// A CIM lookup of one object by name: the cmdlet reports a missing object as a non-terminating
// error of category ObjectNotFound ("No MSFT_... objects found"); any other error (access denied,
// the service down) must fail the script rather than read as "missing". -ErrorAction
// SilentlyContinue alone would silence both, and even a terminating error inside the call.
// [about_CommonParameters.md (-ErrorVariable); CIM cmdlets' ObjectNotFound]
function lookup(variable: string, command: string): string {
  return [
    `$${variable} = ${command} -ErrorAction SilentlyContinue -ErrorVariable lookupErrors`,
    `$failed = @($lookupErrors | Where-Object { [string]$_.CategoryInfo.Category -ne 'ObjectNotFound' })`,
    'if ($failed.Count -gt 0) { throw $failed[0] }',
  ].join('\n');
}

// Looked up by -Name: DisplayName is localized and a rule made without -Name gets a random one.
// [New-NetFirewallRule.md, Get-NetFirewallRule.md, Get-NetFirewallPortFilter.md]
const FIREWALL_QUERY = String.raw`
${lookup('rule', 'Get-NetFirewallRule -Name $Name')}
if ($null -eq $rule) {
  'null'
} else {
  $ports = $rule | Get-NetFirewallPortFilter
  [pscustomobject]@{ name = $rule.Name; enabled = [string]$rule.Enabled; direction = [string]$rule.Direction; action = [string]$rule.Action; protocol = [string]$ports.Protocol; localPort = [string]$ports.LocalPort } | ConvertTo-Json -Compress
}
`;

const FIREWALL_ADD = String.raw`
${lookup('existing', 'Get-NetFirewallRule -Name $Name')}
if ($existing) { Remove-NetFirewallRule -Name $Name }
New-NetFirewallRule -Name $Name -DisplayName $DisplayName -Enabled True -Direction Inbound -Protocol $Protocol -Action Allow -LocalPort $LocalPort | Out-Null
'{}'
`;

// [Remove-NetFirewallRule.md]
const FIREWALL_REMOVE = String.raw`
${lookup('rule', 'Get-NetFirewallRule -Name $Name')}
if ($rule) { Remove-NetFirewallRule -Name $Name }
'{}'
`;

// A protected DACL (inheritance off, inherited entries dropped) granting FullControl to
// LocalSystem (S-1-5-18) and BUILTIN\Administrators (S-1-5-32-544) only, inherited by everything
// created inside; owner Administrators. What the directory already holds keeps explicit entries
// of its own (a file kubeadm wrote, a state file): icacls /reset on its contents replaces their
// ACLs with the inherited one (/T every level, /C on past errors, /Q quiet; exit code checked).
// [DirectorySecurity, ObjectSecurity.SetAccessRuleProtection, Set-Acl.md; well-known SIDs; icacls]
const PRIVATE_DIRECTORY = String.raw`
[System.IO.Directory]::CreateDirectory($Path) | Out-Null
$acl = New-Object System.Security.AccessControl.DirectorySecurity
$acl.SetAccessRuleProtection($true, $false)
foreach ($sid in @('S-1-5-18', 'S-1-5-32-544')) {
  $identity = New-Object System.Security.Principal.SecurityIdentifier($sid)
  $rule = New-Object System.Security.AccessControl.FileSystemAccessRule($identity, 'FullControl', 'ContainerInherit, ObjectInherit', 'None', 'Allow')
  $acl.AddAccessRule($rule)
}
$acl.SetOwner((New-Object System.Security.Principal.SecurityIdentifier('S-1-5-32-544')))
Set-Acl -LiteralPath $Path -AclObject $acl
if (Get-ChildItem -LiteralPath $Path -Force | Select-Object -First 1) {
  & icacls.exe (Join-Path -Path $Path -ChildPath '*') /reset /T /C /Q | Out-Null
  if ($LASTEXITCODE -ne 0) { throw ('icacls /reset exited with code ' + $LASTEXITCODE) }
}
'{}'
`;

const ACL_QUERY = String.raw`
if (-not (Test-Path -LiteralPath $Path)) {
  'null'
} else {
  $acl = Get-Acl -LiteralPath $Path
  $entries = @($acl.Access | ForEach-Object {
    [pscustomobject]@{ sid = $_.IdentityReference.Translate([System.Security.Principal.SecurityIdentifier]).Value; rights = [string]$_.FileSystemRights; type = [string]$_.AccessControlType; inherited = $_.IsInherited }
  })
  [pscustomobject]@{ protected = $acl.AreAccessRulesProtected; entries = $entries; sddl = [string]$acl.Sddl } | ConvertTo-Json -Compress -Depth 4
}
`;

// The access rules a folder had before machineadm locked it, given back from their SDDL (Get-Acl's
// .Sddl, recorded then): only the DACL (AccessControlSections.Access); the owner machineadm set
// (Administrators) stays, as setting another owner may need a privilege Administrators lack.
// [ObjectSecurity.SetSecurityDescriptorSddlForm, AccessControlSections; Get-Acl.md, Set-Acl.md]
const ACL_RESTORE = String.raw`
$acl = Get-Acl -LiteralPath $Path
$acl.SetSecurityDescriptorSddlForm($Sddl, [System.Security.AccessControl.AccessControlSections]::Access)
Set-Acl -LiteralPath $Path -AclObject $acl
'{}'
`;

// [Win32_ComputerSystem class: PartOfDomain, Domain, Name]
const COMPUTER_SYSTEM = String.raw`
$system = Get-CimInstance -ClassName Win32_ComputerSystem
[pscustomobject]@{ partOfDomain = [bool]$system.PartOfDomain; domain = [string]$system.Domain; name = [string]$system.Name } | ConvertTo-Json -Compress
`;

// LastBootUpTime is documented (Win32_OperatingSystem); BootId (a per-boot counter in the
// registry) is not, so both are read and either one changing means the machine restarted.
// [Win32_OperatingSystem class; PrefetchParameters\BootId: no Microsoft documentation]
const BOOT_IDENTITY = String.raw`
$os = Get-CimInstance -ClassName Win32_OperatingSystem
$prefetch = Get-ItemProperty -LiteralPath 'HKLM:\SYSTEM\CurrentControlSet\Control\Session Manager\Memory Management\PrefetchParameters' -Name BootId -ErrorAction SilentlyContinue
$bootId = $null
if ($null -ne $prefetch) { $bootId = [string]$prefetch.BootId }
[pscustomobject]@{ bootId = $bootId; lastBootUpTime = $os.LastBootUpTime.ToUniversalTime().ToString('o'); build = [string]$os.BuildNumber } | ConvertTo-Json -Compress
`;

// A task at startup running as SYSTEM, registered from a task definition (Task Scheduler schema)
// rather than from New-ScheduledTask* objects: only the definition carries the task's own
// security descriptor (RegistrationInfo/SecurityDescriptor), here a protected DACL giving SYSTEM
// and Administrators full access and no one else any (by default Authenticated Users may read a
// task, its command line included). The definition is constant; the command, its arguments and
// the description (the argument vector as JSON, read back by resume.query) go in as element text,
// which the XML DOM escapes. Principal S-1-5-18 (LocalSystem) needs no password.
// [Register-ScheduledTask.md (parameter set Xml); Task Scheduler schema: RegistrationInfo,
// SecurityDescriptor (registrationInfoType), BootTrigger, Principal, RunLevel, Settings, Exec;
// IRegistrationInfo::SecurityDescriptor; SDDL for SY, BA, FA]
export const RESUME_TASK_SDDL = 'D:P(A;;FA;;;SY)(A;;FA;;;BA)';
export const TASK_NAMESPACE = 'http://schemas.microsoft.com/windows/2004/02/mit/task';
const RESUME_REGISTER = String.raw`
[xml]$task = @'
<?xml version="1.0" encoding="UTF-16"?>
<Task version="1.2" xmlns="${TASK_NAMESPACE}">
  <RegistrationInfo>
    <Description></Description>
    <SecurityDescriptor>${RESUME_TASK_SDDL}</SecurityDescriptor>
  </RegistrationInfo>
  <Triggers>
    <BootTrigger>
      <Enabled>true</Enabled>
    </BootTrigger>
  </Triggers>
  <Principals>
    <Principal id="Author">
      <UserId>S-1-5-18</UserId>
      <RunLevel>HighestAvailable</RunLevel>
    </Principal>
  </Principals>
  <Settings>
    <MultipleInstancesPolicy>IgnoreNew</MultipleInstancesPolicy>
    <DisallowStartIfOnBatteries>false</DisallowStartIfOnBatteries>
    <StopIfGoingOnBatteries>false</StopIfGoingOnBatteries>
    <ExecutionTimeLimit>PT4H</ExecutionTimeLimit>
    <Enabled>true</Enabled>
  </Settings>
  <Actions Context="Author">
    <Exec>
      <Command></Command>
      <Arguments></Arguments>
    </Exec>
  </Actions>
</Task>
'@
$names = New-Object System.Xml.XmlNamespaceManager($task.NameTable)
$names.AddNamespace('t', '${TASK_NAMESPACE}')
$task.SelectSingleNode('/t:Task/t:RegistrationInfo/t:Description', $names).InnerText = $Description
$task.SelectSingleNode('/t:Task/t:Actions/t:Exec/t:Command', $names).InnerText = $Execute
$task.SelectSingleNode('/t:Task/t:Actions/t:Exec/t:Arguments', $names).InnerText = $Argument
Register-ScheduledTask -TaskName $TaskName -TaskPath $TaskPath -Xml $task.OuterXml -Force | Out-Null
'{}'
`;

const RESUME_QUERY = String.raw`
${lookup('task', 'Get-ScheduledTask -TaskName $TaskName -TaskPath $TaskPath')}
if ($null -eq $task) { 'null' } else { [pscustomobject]@{ description = [string]$task.Description } | ConvertTo-Json -Compress }
`;

// Microsoft's pattern: look the task up first, then Unregister-ScheduledTask -Confirm:$false.
const RESUME_REMOVE = String.raw`
${lookup('task', 'Get-ScheduledTask -TaskName $TaskName -TaskPath $TaskPath')}
if ($task) {
  Unregister-ScheduledTask -TaskName $TaskName -TaskPath $TaskPath -Confirm:$false
}
'{}'
`;

// shutdown.exe /r with a planned reason code (p:4:1, application maintenance) and a comment,
// after 5 s so machineadm can finish writing its state. [shutdown.md]
const RESTART = String.raw`
& shutdown.exe /r /t 5 /d p:4:1 /c $Comment | Out-Null
if ($LASTEXITCODE -ne 0) { throw ('shutdown.exe exited with code ' + $LASTEXITCODE) }
'{}'
`;

// Win32 codes the join and leave actions name (NetJoinDomain / JoinDomainOrWorkgroup /
// UnjoinDomainOrWorkgroup and the logon errors they pass on); src/domain/windows-join.ts says what
// each means to the operator.
export const JOIN_ERROR_CODES = [5, 53, 86, 1311, 1317, 1326, 1327, 1330, 1331, 1355, 1398, 1722, 1909, 2221, 2224, 2453, 2691, 2692, 2732, 8557] as const;

// The password from standard input into a PSCredential for $User (domain.join, domain.leave).
const CREDENTIAL_FROM_STDIN = String.raw`
$hex = [string]((@($input) -join '').Trim())
if ($hex.Length -eq 0 -or $hex.Length % 2 -ne 0) { throw ($Action + ': no password on standard input') }
$bytes = New-Object byte[] ($hex.Length / 2)
for ($i = 0; $i -lt $bytes.Length; $i++) { $bytes[$i] = [Convert]::ToByte($hex.Substring(2 * $i, 2), 16) }
$chars = [System.Text.Encoding]::UTF8.GetChars($bytes)
$secure = New-Object System.Security.SecureString
foreach ($c in $chars) { $secure.AppendChar($c) }
$secure.MakeReadOnly()
[Array]::Clear($bytes, 0, $bytes.Length)
[Array]::Clear($chars, 0, $chars.Length)
$hex = $null
$credential = New-Object System.Management.Automation.PSCredential($User, $secure)
`;

// In a catch block: the failed cmdlet's error id, its message and the Win32 code (from a
// Win32Exception inside the error, or by finding Windows' text for a known code in the message),
// printed as the action's result.
const FAILURE_WITH_CODE = String.raw`
  $failure = $_
  $message = [string]$failure.Exception.Message
  $code = $null
  for ($e = $failure.Exception; $null -ne $e -and $null -eq $code; $e = $e.InnerException) {
    if ($e -is [System.ComponentModel.Win32Exception]) { $code = $e.NativeErrorCode }
  }
  foreach ($known in @(${JOIN_ERROR_CODES.join(', ')})) {
    if ($null -ne $code) { break }
    $text = (New-Object System.ComponentModel.Win32Exception($known)).Message
    if ($message.Contains($text)) { $code = $known }
  }
  [pscustomobject]@{ RESULT = $false; errorId = [string]$failure.FullyQualifiedErrorId; code = $code; message = $message } | ConvertTo-Json -Compress
`;

// Add-Computer exists only in Windows PowerShell 5.1. Its join failures are non-terminating, so
// -ErrorAction Stop; without -Restart (machineadm restarts through its resume). The password
// arrives on standard input as the hex of its UTF-8 bytes (console input is decoded with a code
// page, so only ASCII travels safely) and goes into a SecureString character by character: it is
// never in the script text, never a cmdlet parameter value (-Credential binds the PSCredential
// object, which module logging writes as its type name), and no base64 or Marshal call (words
// PowerShell logs as suspicious) is needed. The error record wraps an InvalidOperationException
// whose message ends with the Win32 text of the return code, in the machine's language; the code
// is found by comparing that message with the text Windows has for each code it may be.
// [Add-Computer.md (5.1); about_PowerShell_exe.md ($input with -EncodedCommand); about_Logging.md;
// PowerShell Computer.cs (FailToJoinDomainFromWorkgroup, AddComputerToSameDomain);
// JoinDomainOrWorkgroup method of Win32_ComputerSystem (return codes)]
const DOMAIN_JOIN = String.raw`
$Action = 'domain.join'
${CREDENTIAL_FROM_STDIN.trim()}
$join = @{ DomainName = $Domain; Credential = $credential; Force = $true; ErrorAction = 'Stop'; WarningAction = 'SilentlyContinue' }
if ($OUPath -ne '') { $join.OUPath = $OUPath }
if ($NewName -ne '') { $join.NewName = $NewName }
if ($Server -ne '') { $join.Server = $Server }
try {
  Add-Computer @join
  [pscustomobject]@{ joined = $true } | ConvertTo-Json -Compress
} catch {
${FAILURE_WITH_CODE.replace('RESULT', 'joined').replace(/^\n|\n$/g, '')}
}
`;

// Remove-Computer (Windows PowerShell 5.1 only) with -UnjoinDomainCredential disables the computer
// account in the directory (UnjoinDomainOrWorkgroup with NETSETUP_ACCT_DELETE) and moves the
// machine to a workgroup; without -Restart (Windows finishes at the next boot; machineadm says a
// restart is needed). With -Force it also falls back, silently, to leaving only locally when no
// domain controller answers (1355, 53): so the domain is asked first (Test-ComputerSecureChannel,
// the machine's secure channel to a domain controller), and a machine that cannot reach one
// reports that instead of leaving, for the caller to leave locally and say the account stays.
// The password arrives as in domain.join. Failures are non-terminating: -ErrorAction Stop.
// [Remove-Computer.md (5.1); Test-ComputerSecureChannel.md (5.1); PowerShell Computer.cs
// (RemoveComputerCommand: FUnjoinOptions 4, the retry with 0 under -Force, FailToUnjoinDomain);
// UnjoinDomainOrWorkgroup method of Win32_ComputerSystem]
const DOMAIN_LEAVE = String.raw`
$Action = 'domain.leave'
${CREDENTIAL_FROM_STDIN.trim()}
$probe = @{ ErrorAction = 'Stop' }
if ($Server -ne '') { $probe.Server = $Server }
$reachable = $false
$why = ''
try { $reachable = [bool](Test-ComputerSecureChannel @probe) } catch { $why = [string]$_.Exception.Message }
if (-not $reachable) {
  [pscustomobject]@{ left = $false; reachable = $false; message = $why } | ConvertTo-Json -Compress
  return
}
try {
  Remove-Computer -UnjoinDomainCredential $credential -WorkgroupName $Workgroup -Force -ErrorAction Stop -WarningAction SilentlyContinue
  [pscustomobject]@{ left = $true; reachable = $true } | ConvertTo-Json -Compress
} catch {
${FAILURE_WITH_CODE.replace('RESULT', 'left').replace(/^\n|\n$/g, '')}
}
`;

// (PowerShell's variable names ignore case: none of the script's own may be $workgroup.)
// Leaving only on this machine, as Remove-Computer does when no domain controller answers: the
// Win32_ComputerSystem methods with no account (UnjoinDomainOrWorkgroup with no options leaves
// the computer account in the directory as it is), then the workgroup. ReturnValue 0 is success.
// [UnjoinDomainOrWorkgroup and JoinDomainOrWorkgroup methods of Win32_ComputerSystem; PowerShell
// Computer.cs (RemoveComputerCommand)]
const DOMAIN_LEAVE_LOCAL = String.raw`
$system = Get-CimInstance -ClassName Win32_ComputerSystem
if (-not $system.PartOfDomain) {
  [pscustomobject]@{ left = $true } | ConvertTo-Json -Compress
  return
}
$unjoin = Invoke-CimMethod -InputObject $system -MethodName UnjoinDomainOrWorkgroup -Arguments @{ FUnjoinOptions = [uint32]0 }
if ($unjoin.ReturnValue -ne 0) {
  [pscustomobject]@{ left = $false; code = [int]$unjoin.ReturnValue; message = 'UnjoinDomainOrWorkgroup returned ' + [string]$unjoin.ReturnValue } | ConvertTo-Json -Compress
  return
}
$moved = Invoke-CimMethod -InputObject $system -MethodName JoinDomainOrWorkgroup -Arguments @{ Name = $Workgroup; FJoinOptions = [uint32]0 }
if ($moved.ReturnValue -ne 0) { throw ('left the domain, but JoinDomainOrWorkgroup ' + $Workgroup + ' returned ' + [string]$moved.ReturnValue) }
[pscustomobject]@{ left = $true } | ConvertTo-Json -Compress
`;

// Stopped first (Stop-Service -Force also stops the services that depend on it), then deleted
// with sc.exe: Remove-Service exists only from PowerShell 6, and machineadm's scripts run in
// Windows PowerShell 5.1. 1072 (already marked for deletion: a handle is still open; it goes when
// that closes) and 1060 (gone meanwhile) are what was asked for.
// [Stop-Service.md; sc-delete (Windows commands); System Error Codes 1000-1299]
const SERVICE_REMOVE = String.raw`
$service = Get-Service | Where-Object { $_.Name -eq $Name }
if ($null -ne $service) {
  if ($service.Status -ne 'Stopped') {
    $service | Stop-Service -Force
    $service.WaitForStatus('Stopped', [TimeSpan]::FromSeconds(60))
  }
  & sc.exe delete $Name | Out-Null
  if ($LASTEXITCODE -ne 0 -and $LASTEXITCODE -ne 1072 -and $LASTEXITCODE -ne 1060) { throw ('sc.exe delete exited with code ' + $LASTEXITCODE) }
}
'{}'
`;

// djoin /requestODJ queues the join of the running OS (/localos) for its next boot from a blob
// made by djoin /provision; /windowspath is %SystemRoot%. Its exit code is a Win32 code (0 is
// success); its output goes back for the report. Windows PowerShell 5.1 turns a native command's
// redirected stderr lines into error records, which 'Stop' would make terminating: the exit code
// decides instead.
// [djoin (Windows commands, Offline Domain Join step-by-step guide); about_Redirection.md]
const DOMAIN_JOIN_OFFLINE = String.raw`
$ErrorActionPreference = 'Continue'
$output = & djoin.exe /requestODJ /loadfile $BlobPath /windowspath $env:SystemRoot /localos 2>&1 | ForEach-Object { [string]$_ } | Out-String
$code = $LASTEXITCODE
$ErrorActionPreference = 'Stop'
[pscustomobject]@{ joined = ($code -eq 0); code = $code; message = [string]$output } | ConvertTo-Json -Compress
`;

export const windowsScripts = {
  featureQuery: (name: string) => compose('feature.query', FEATURE_QUERY, { Name: name }),
  featureInstall: (name: string) => compose('feature.install', FEATURE_INSTALL, { Name: name }),
  serviceQuery: (name: string) => compose('service.query', SERVICE_QUERY, { Name: name }),
  serviceCreate: (s: { name: string; displayName: string; commandLine: string; dependsOn: readonly string[] }) =>
    compose('service.create', SERVICE_CREATE, { Name: s.name, DisplayName: s.displayName, CommandLine: s.commandLine, DependsOn: s.dependsOn }),
  serviceConfigure: (s: { name: string; commandLine: string; dependsOn: readonly string[] }) =>
    compose('service.configure', SERVICE_CONFIGURE, { Name: s.name, CommandLine: s.commandLine, DependsOn: s.dependsOn }),
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
