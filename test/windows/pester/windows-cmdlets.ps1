# The Windows-only cmdlets machineadm's scripts call, declared with the parameter names, aliases,
# positions, pipeline bindings and types Microsoft documents for them in Windows PowerShell 5.1
# (the powershell.exe machineadm runs), so that a misspelled
# parameter, a value outside an enum or a missing mandatory parameter fails to bind here as it
# would on Windows. Pester mocks them (Mock copies these declarations); outside Pester each one
# records what it was given and answers from $global:StubAnswers, or fails when the test gave no
# answer (a stand-in never succeeds by accident).
#
# Types that cannot be constructed off Windows are declared [object] with the real type named in a
# comment: CimInstance (needs libmi), ServiceController ("not applicable for other operating
# systems"). The enums of NetSecurity and ServiceProcess are enums of the same names and values
# (below); those of ScheduledTasks are ValidateSets of their names.
# Sources: learn.microsoft.com/powershell/module/{servermanager,dism,cimcmdlets,
# microsoft.powershell.management,microsoft.powershell.security,netsecurity,scheduledtasks}.

# The enums of Windows PowerShell 5.1's modules, under names of their own (a script's enum cannot
# have a dotted name): a bool or a misspelled name does not convert to them, as on Windows.
# Microsoft.PowerShell.Cmdletization.GeneratedTypes.NetSecurity.{Enabled,Direction,Action,Profile}
enum NetSecurityEnabled { True = 1; False = 2 }
enum NetSecurityDirection { Inbound = 1; Outbound = 2 }
enum NetSecurityAction { NotConfigured = 0; Allow = 2; Block = 4 }
[Flags()] enum NetSecurityProfile { Any = 0; Domain = 1; Private = 2; Public = 4; NotApplicable = 65535 }
# System.ServiceProcess.ServiceStartMode of .NET Framework (5.1 has no AutomaticDelayedStart)
enum ServiceStartMode51 { Boot = 0; System = 1; Automatic = 2; Manual = 3; Disabled = 4 }

function Invoke-WindowsStub([string]$Cmdlet, [System.Collections.IDictionary]$Bound, [object[]]$Pipeline = @()) {
  if ($env:STUB_RECORD) {
    $copy = [ordered]@{}
    foreach ($key in @($Bound.Keys | Sort-Object)) {
      $value = $Bound[$key]
      if ($value -is [pscredential]) { $value = @{ user = $value.UserName; password = $value.GetNetworkCredential().Password; secure = $value.Password -is [securestring] } }
      elseif ($value -is [System.Management.Automation.SwitchParameter]) { $value = $value.IsPresent }
      elseif ($value -is [enum] -or $value -is [timespan]) { $value = [string]$value }
      elseif ($value -is [System.Collections.IDictionary]) { $value = [pscustomobject]$value }
      $copy[$key] = $value
    }
    Add-Content -LiteralPath $env:STUB_RECORD -Value ([pscustomobject]@{ cmdlet = $Cmdlet; bound = [pscustomobject]$copy } | ConvertTo-Json -Compress -Depth 6)
  }
  $answers = Get-Variable -Name StubAnswers -Scope Global -ValueOnly -ErrorAction SilentlyContinue
  if ($null -eq $answers -or -not $answers.Contains($Cmdlet)) { throw "$Cmdlet is not stubbed in this test" }
  $answer = $answers[$Cmdlet]
  # The answer gets the stub's $PSCmdlet too, to write errors as the cmdlet would.
  if ($answer -is [scriptblock]) { return & $answer $Bound (Get-Variable -Name PSCmdlet -Scope 1 -ValueOnly) }
  return $answer
}

# ServerManager
function Get-WindowsFeature {
  [CmdletBinding()]
  param(
    [Parameter(Position = 0, ValueFromPipeline = $true, ValueFromPipelineByPropertyName = $true)] [string[]]$Name,
    [string]$Vhd, [Alias('Cn')] [string]$ComputerName, [pscredential]$Credential, [string]$LogPath
  )
  Invoke-WindowsStub 'Get-WindowsFeature' $PSBoundParameters
}
# Install-WindowsFeature.md: parameter sets ComponentNamesAndRunningComputer (the default, with
# -Restart) and ComponentNamesAndVhdPath (-Vhd required, no -Restart); the third,
# ConfigurationFile (-ConfigurationFilePath), is not declared.
function Install-WindowsFeature {
  [CmdletBinding(DefaultParameterSetName = 'ComponentNamesAndRunningComputer', SupportsShouldProcess = $true)]
  param(
    [Parameter(Mandatory = $true, Position = 0, ValueFromPipeline = $true)] [string[]]$Name,
    [Parameter(ParameterSetName = 'ComponentNamesAndRunningComputer')] [switch]$Restart,
    [Parameter(ParameterSetName = 'ComponentNamesAndVhdPath', Mandatory = $true)] [string]$Vhd,
    [switch]$IncludeAllSubFeature, [switch]$IncludeManagementTools, [string[]]$Source,
    [Alias('Cn')] [string]$ComputerName, [pscredential]$Credential, [string]$LogPath
  )
  Invoke-WindowsStub 'Install-WindowsFeature' $PSBoundParameters
}

# DISM: parameter sets Online (-Online, the running Windows) and Offline (-Path, a mounted image),
# one of the two required.
function Get-WindowsOptionalFeature {
  [CmdletBinding(DefaultParameterSetName = 'Online')]
  param(
    [Parameter(ValueFromPipelineByPropertyName = $true)] [string]$FeatureName,
    [Parameter(ValueFromPipelineByPropertyName = $true)] [string]$PackageName, [Parameter(ValueFromPipelineByPropertyName = $true)] [string]$PackagePath,
    [Parameter(ParameterSetName = 'Online', Mandatory = $true)] [switch]$Online,
    [Parameter(ParameterSetName = 'Offline', Mandatory = $true, ValueFromPipelineByPropertyName = $true)] [string]$Path,
    [Parameter(ParameterSetName = 'Offline')] [string]$WindowsDirectory, [Parameter(ParameterSetName = 'Offline')] [string]$SystemDrive,
    [string]$LogPath, [string]$ScratchDirectory, [ValidateSet('Errors', 'Warnings', 'WarningsInfo')] [string]$LogLevel
  )
  Invoke-WindowsStub 'Get-WindowsOptionalFeature' $PSBoundParameters
}
function Enable-WindowsOptionalFeature {
  [CmdletBinding(DefaultParameterSetName = 'Online')]
  param(
    [Parameter(Mandatory = $true, ValueFromPipelineByPropertyName = $true)] [string[]]$FeatureName,
    [Parameter(ValueFromPipelineByPropertyName = $true)] [string]$PackageName,
    [Parameter(ParameterSetName = 'Online', Mandatory = $true)] [switch]$Online,
    [Parameter(ParameterSetName = 'Offline', Mandatory = $true, ValueFromPipelineByPropertyName = $true)] [string]$Path,
    [Parameter(ParameterSetName = 'Offline')] [string]$WindowsDirectory, [Parameter(ParameterSetName = 'Offline')] [string]$SystemDrive,
    [switch]$All, [switch]$LimitAccess, [string[]]$Source, [switch]$NoRestart,
    [string]$LogPath, [string]$ScratchDirectory, [ValidateSet('Errors', 'Warnings', 'WarningsInfo')] [string]$LogLevel
  )
  Invoke-WindowsStub 'Enable-WindowsOptionalFeature' $PSBoundParameters
}

# CimCmdlets (the ...ComputerSet parameter sets; -Filter, -Property and -KeyOnly are not in
# QueryComputerSet, -Namespace is not in Invoke-CimMethod's CimInstanceComputerSet)
function Get-CimInstance {
  [CmdletBinding(DefaultParameterSetName = 'ClassNameComputerSet')]
  param(
    [Parameter(ParameterSetName = 'ClassNameComputerSet', Mandatory = $true, Position = 0)] [string]$ClassName,
    [Parameter(ParameterSetName = 'QueryComputerSet', Mandatory = $true)] [string]$Query,
    [Parameter(ParameterSetName = 'ClassNameComputerSet')] [string]$Filter,
    [Parameter(ParameterSetName = 'ClassNameComputerSet')] [string[]]$Property,
    [Parameter(ParameterSetName = 'ClassNameComputerSet')] [switch]$KeyOnly,
    [string]$Namespace, [switch]$Shallow,
    [Alias('OT')] [uint32]$OperationTimeoutSec, [Alias('CN', 'ServerName')] [string[]]$ComputerName
  )
  Invoke-WindowsStub 'Get-CimInstance' $PSBoundParameters
}
function Invoke-CimMethod {
  [CmdletBinding(DefaultParameterSetName = 'CimInstanceComputerSet', SupportsShouldProcess = $true)]
  param(
    # [Microsoft.Management.Infrastructure.CimInstance]
    [Parameter(ParameterSetName = 'CimInstanceComputerSet', Mandatory = $true, Position = 0, ValueFromPipeline = $true)] [Alias('CimInstance')] [object]$InputObject,
    [Parameter(ParameterSetName = 'ClassNameComputerSet', Mandatory = $true, Position = 0)] [string]$ClassName,
    [Parameter(Mandatory = $true, Position = 2)] [Alias('Name')] [string]$MethodName,
    [Parameter(Position = 1)] [System.Collections.IDictionary]$Arguments,
    [Parameter(ParameterSetName = 'ClassNameComputerSet')] [string]$Namespace, [Alias('OT')] [uint32]$OperationTimeoutSec, [Alias('CN', 'ServerName')] [string[]]$ComputerName
  )
  Invoke-WindowsStub 'Invoke-CimMethod' $PSBoundParameters
}

# Microsoft.PowerShell.Management (services: Windows only)
function Get-Service {
  [CmdletBinding(DefaultParameterSetName = 'Default')]
  param(
    [Parameter(ParameterSetName = 'Default', Position = 0, ValueFromPipeline = $true, ValueFromPipelineByPropertyName = $true)] [Alias('ServiceName')] [string[]]$Name,
    [Alias('DS')] [switch]$DependentServices, [Alias('SDO', 'ServicesDependedOn')] [switch]$RequiredServices,
    [Parameter(ParameterSetName = 'DisplayName', Mandatory = $true)] [string[]]$DisplayName,
    [string[]]$Include, [string[]]$Exclude,
    # [System.ServiceProcess.ServiceController[]]
    [Parameter(ParameterSetName = 'InputObject', ValueFromPipeline = $true)] [object[]]$InputObject
  )
  Invoke-WindowsStub 'Get-Service' $PSBoundParameters
}
function New-Service {
  [CmdletBinding(SupportsShouldProcess = $true)]
  param(
    [Parameter(Mandatory = $true, Position = 0)] [Alias('ServiceName')] [string]$Name,
    # No alias Path: PowerShell 6.1 added it.
    [Parameter(Mandatory = $true, Position = 1)] [string]$BinaryPathName,
    # No -SecurityDescriptorSddl: PowerShell 6 added it.
    [string]$DisplayName, [string]$Description,
    [ServiceStartMode51]$StartupType,
    [pscredential]$Credential, [string[]]$DependsOn
  )
  Invoke-WindowsStub 'New-Service' $PSBoundParameters
}
# Start-, Stop- and Restart-Service share their parameter sets; Stop adds -Force and -NoWait,
# Restart -Force. Each is defined in this scope from one template.
$serviceCmdlet = @'
function VERB-Service {
  [CmdletBinding(DefaultParameterSetName = 'InputObject', SupportsShouldProcess = $true)]
  param(
    # [System.ServiceProcess.ServiceController[]]
    [Parameter(ParameterSetName = 'InputObject', Mandatory = $true, Position = 0, ValueFromPipeline = $true)] [object[]]$InputObject,
    [Parameter(ParameterSetName = 'Default', Mandatory = $true, Position = 0, ValueFromPipelineByPropertyName = $true)] [Alias('ServiceName')] [string[]]$Name,
    [Parameter(ParameterSetName = 'DisplayName', Mandatory = $true)] [string[]]$DisplayName,
    EXTRA[switch]$PassThru, [string[]]$Include, [string[]]$Exclude
  )
  process { Invoke-WindowsStub 'VERB-Service' $PSBoundParameters }
}
'@
foreach ($verb in @{ Start = ''; Stop = '[switch]$Force, [switch]$NoWait, '; Restart = '[switch]$Force, ' }.GetEnumerator()) {
  . ([scriptblock]::Create($serviceCmdlet.Replace('VERB', $verb.Key).Replace('EXTRA', $verb.Value)))
}

# Microsoft.PowerShell.Security (ACLs: Windows only). -LiteralPath has the alias PSPath only (LP
# came with PowerShell 7.5); Set-Acl's -CentralAccessPolicy and -ClearCentralAccessPolicy are not
# in the parameter set ByInputObject.
function Get-Acl {
  [CmdletBinding(DefaultParameterSetName = 'ByPath')]
  param(
    [Parameter(ParameterSetName = 'ByPath', Position = 0, ValueFromPipeline = $true)] [string[]]$Path,
    [Parameter(ParameterSetName = 'ByInputObject', Mandatory = $true)] [psobject]$InputObject,
    [Parameter(ParameterSetName = 'ByLiteralPath', ValueFromPipelineByPropertyName = $true)] [Alias('PSPath')] [string[]]$LiteralPath,
    [switch]$Audit, [switch]$AllCentralAccessPolicies, [string]$Filter, [string[]]$Include, [string[]]$Exclude
  )
  Invoke-WindowsStub 'Get-Acl' $PSBoundParameters
}
function Set-Acl {
  [CmdletBinding(DefaultParameterSetName = 'ByPath', SupportsShouldProcess = $true)]
  param(
    [Parameter(ParameterSetName = 'ByPath', Mandatory = $true, Position = 0, ValueFromPipelineByPropertyName = $true)] [string[]]$Path,
    [Parameter(ParameterSetName = 'ByInputObject', Mandatory = $true, Position = 0)] [psobject]$InputObject,
    [Parameter(ParameterSetName = 'ByLiteralPath', Mandatory = $true, ValueFromPipelineByPropertyName = $true)] [Alias('PSPath')] [string[]]$LiteralPath,
    [Parameter(Mandatory = $true, Position = 1, ValueFromPipeline = $true)] [object]$AclObject,
    [Parameter(ParameterSetName = 'ByPath')] [Parameter(ParameterSetName = 'ByLiteralPath')] [string]$CentralAccessPolicy,
    [Parameter(ParameterSetName = 'ByPath')] [Parameter(ParameterSetName = 'ByLiteralPath')] [switch]$ClearCentralAccessPolicy, [switch]$Passthru, [string]$Filter, [string[]]$Include, [string[]]$Exclude
  )
  Invoke-WindowsStub 'Set-Acl' $PSBoundParameters
}

# NetSecurity (Enabled, Direction, Action are enums of the module)
function Get-NetFirewallRule {
  [CmdletBinding(DefaultParameterSetName = 'All')]
  param(
    [Parameter(ParameterSetName = 'All')] [switch]$All,
    [Parameter(ParameterSetName = 'ByName', Mandatory = $true, Position = 0, ValueFromPipelineByPropertyName = $true)] [Alias('ID')] [string[]]$Name,
    [Parameter(ParameterSetName = 'ByDisplayName', Mandatory = $true, ValueFromPipelineByPropertyName = $true)] [string[]]$DisplayName,
    [string]$PolicyStore, [string]$GPOSession
  )
  Invoke-WindowsStub 'Get-NetFirewallRule' $PSBoundParameters
}
function Remove-NetFirewallRule {
  [CmdletBinding(DefaultParameterSetName = 'ByName', SupportsShouldProcess = $true)]
  param(
    [Parameter(ParameterSetName = 'ByName', Mandatory = $true, Position = 0, ValueFromPipelineByPropertyName = $true)] [Alias('ID')] [string[]]$Name,
    [Parameter(ParameterSetName = 'ByDisplayName', Mandatory = $true, ValueFromPipelineByPropertyName = $true)] [string[]]$DisplayName,
    # [Microsoft.Management.Infrastructure.CimInstance[]]
    [Parameter(ParameterSetName = 'InputObject', Mandatory = $true, ValueFromPipeline = $true)] [object[]]$InputObject,
    # Remove-NetFirewallRule.md: -PolicyStore and -GPOSession are not in the parameter set InputObject (cdxml).
    [Parameter(ParameterSetName = 'ByName')] [Parameter(ParameterSetName = 'ByDisplayName')] [string]$PolicyStore,
    [Parameter(ParameterSetName = 'ByName')] [Parameter(ParameterSetName = 'ByDisplayName')] [string]$GPOSession, [switch]$AsJob
  )
  Invoke-WindowsStub 'Remove-NetFirewallRule' $PSBoundParameters
}
function New-NetFirewallRule {
  [CmdletBinding(SupportsShouldProcess = $true)]
  param(
    [string]$Name,
    [Parameter(Mandatory = $true)] [string]$DisplayName,
    [string]$Description, [string]$Group,
    [NetSecurityEnabled]$Enabled,
    [NetSecurityProfile]$Profile,
    [string[]]$Platform,
    [NetSecurityDirection]$Direction,
    [NetSecurityAction]$Action,
    [string[]]$LocalAddress, [string[]]$RemoteAddress, [string]$Protocol, [string[]]$LocalPort, [string[]]$RemotePort,
    [string[]]$IcmpType, [string]$Program, [string]$Package, [string]$Service, [string]$PolicyStore, [string]$GPOSession
  )
  Invoke-WindowsStub 'New-NetFirewallRule' $PSBoundParameters
}
function Get-NetFirewallPortFilter {
  [CmdletBinding(DefaultParameterSetName = 'All')]
  param(
    [Parameter(ParameterSetName = 'All')] [switch]$All,
    # [Microsoft.Management.Infrastructure.CimInstance] (a rule from Get-NetFirewallRule)
    [Parameter(ParameterSetName = 'ByAssociatedNetFirewallRule', Mandatory = $true, ValueFromPipeline = $true)] [object]$AssociatedNetFirewallRule,
    [string]$PolicyStore, [string]$GPOSession
  )
  process { Invoke-WindowsStub 'Get-NetFirewallPortFilter' $PSBoundParameters }
}

# ScheduledTasks (the objects they pass around are CimInstances)
function New-ScheduledTaskAction {
  [CmdletBinding()]
  param(
    [Parameter(Mandatory = $true, Position = 0)] [string]$Execute,
    [Parameter(Position = 1)] [string]$Argument, [Parameter(Position = 2)] [string]$WorkingDirectory, [string]$Id
  )
  Invoke-WindowsStub 'New-ScheduledTaskAction' $PSBoundParameters
}
function New-ScheduledTaskTrigger {
  [CmdletBinding()]
  param(
    [Parameter(ParameterSetName = 'AtStartup', Mandatory = $true)] [switch]$AtStartup,
    [Parameter(ParameterSetName = 'AtLogon', Mandatory = $true)] [switch]$AtLogOn,
    [Parameter(ParameterSetName = 'AtLogon')] [string]$User,
    [Parameter(ParameterSetName = 'Once', Mandatory = $true)] [switch]$Once,
    [Parameter(ParameterSetName = 'Daily', Mandatory = $true)] [switch]$Daily,
    [Parameter(ParameterSetName = 'Once', Mandatory = $true)] [Parameter(ParameterSetName = 'Daily', Mandatory = $true)] [datetime]$At,
    [timespan]$RandomDelay
  )
  Invoke-WindowsStub 'New-ScheduledTaskTrigger' $PSBoundParameters
}
function New-ScheduledTaskPrincipal {
  [CmdletBinding(DefaultParameterSetName = 'User')]
  param(
    [Parameter(ParameterSetName = 'User', Mandatory = $true, Position = 0)] [string]$UserId,
    [Parameter(ParameterSetName = 'Group', Mandatory = $true, Position = 0)] [string]$GroupId,
    [Parameter(ParameterSetName = 'User')] [ValidateSet('None', 'Password', 'S4U', 'Interactive', 'Group', 'ServiceAccount', 'InteractiveOrPassword')] [string]$LogonType,
    [ValidateSet('Limited', 'Highest')] [string]$RunLevel,
    [string]$Id, [ValidateSet('None', 'Unrestricted', 'Default')] [string]$ProcessTokenSidType, [string[]]$RequiredPrivilege
  )
  Invoke-WindowsStub 'New-ScheduledTaskPrincipal' $PSBoundParameters
}
function New-ScheduledTaskSettingsSet {
  [CmdletBinding()]
  param(
    [switch]$DisallowDemandStart, [switch]$DisallowHardTerminate, [ValidateSet('At', 'V1', 'Vista', 'Win7', 'Win8')] [string]$Compatibility,
    [timespan]$DeleteExpiredTaskAfter, [switch]$AllowStartIfOnBatteries, [switch]$Disable, [switch]$Hidden,
    [ValidateSet('Parallel', 'Queue', 'IgnoreNew')] [string]$MultipleInstances,
    [int]$Priority, [int]$RestartCount, [timespan]$RestartInterval, [switch]$RunOnlyIfIdle, [switch]$RunOnlyIfNetworkAvailable,
    [switch]$StartWhenAvailable, [switch]$DontStopIfGoingOnBatteries, [switch]$WakeToRun, [timespan]$IdleDuration,
    [timespan]$IdleWaitTimeout, [timespan]$ExecutionTimeLimit, [switch]$DontStopOnIdleEnd, [switch]$RestartOnIdle,
    [switch]$DisallowStartOnRemoteAppSession, [timespan]$MaintenanceDeadline, [timespan]$MaintenancePeriod, [switch]$MaintenanceExclusive
  )
  Invoke-WindowsStub 'New-ScheduledTaskSettingsSet' $PSBoundParameters
}
# Parameter sets User (the default), Xml, Principal and Object as Register-ScheduledTask.md lists
# them; -Description exists only in User and Principal (in Xml it is the definition's
# RegistrationInfo/Description). Positions are left out where the documented ones collide
# within a set (Password and Settings are both 4 in User): machineadm binds by name.
function Register-ScheduledTask {
  [CmdletBinding(DefaultParameterSetName = 'User')]
  param(
    [switch]$Force,
    [Parameter(ParameterSetName = 'User')] [Parameter(ParameterSetName = 'Xml')] [Parameter(ParameterSetName = 'Object')] [string]$Password,
    [Parameter(ParameterSetName = 'User')] [Parameter(ParameterSetName = 'Xml')] [Parameter(ParameterSetName = 'Object')] [string]$User,
    [Parameter(ParameterSetName = 'User', Mandatory = $true, Position = 0)] [Parameter(ParameterSetName = 'Xml', Mandatory = $true, Position = 0)]
    [Parameter(ParameterSetName = 'Principal', Mandatory = $true, Position = 0)] [Parameter(ParameterSetName = 'Object')] [string]$TaskName,
    [Parameter(Position = 1)] [string]$TaskPath,
    # Action, Trigger, Settings, Principal, InputObject: [Microsoft.Management.Infrastructure.CimInstance]
    [Parameter(ParameterSetName = 'User', Mandatory = $true, Position = 2)] [Parameter(ParameterSetName = 'Principal', Mandatory = $true, Position = 2)] [object[]]$Action,
    [Parameter(ParameterSetName = 'User')] [Parameter(ParameterSetName = 'Principal')] [string]$Description,
    [Parameter(ParameterSetName = 'User')] [Parameter(ParameterSetName = 'Principal')] [object]$Settings,
    [Parameter(ParameterSetName = 'User')] [Parameter(ParameterSetName = 'Principal')] [object[]]$Trigger,
    [Parameter(ParameterSetName = 'User')] [ValidateSet('Limited', 'Highest')] [string]$RunLevel,
    [Parameter(ParameterSetName = 'Principal')] [object]$Principal,
    [Parameter(ParameterSetName = 'Xml', Mandatory = $true, Position = 2, ValueFromPipeline = $true)] [string]$Xml,
    [Parameter(ParameterSetName = 'Object', Mandatory = $true, ValueFromPipeline = $true)] [object]$InputObject,
    [Alias('Session')] [object[]]$CimSession, [int]$ThrottleLimit, [switch]$AsJob
  )
  Invoke-WindowsStub 'Register-ScheduledTask' $PSBoundParameters
}
function Get-ScheduledTask {
  [CmdletBinding()]
  param(
    [Parameter(Position = 0, ValueFromPipelineByPropertyName = $true)] [string[]]$TaskName,
    [Parameter(Position = 1, ValueFromPipelineByPropertyName = $true)] [string[]]$TaskPath
  )
  Invoke-WindowsStub 'Get-ScheduledTask' $PSBoundParameters
}
function Unregister-ScheduledTask {
  [CmdletBinding(DefaultParameterSetName = 'TaskName', SupportsShouldProcess = $true, ConfirmImpact = 'High')]
  param(
    [Parameter(ParameterSetName = 'TaskName', Position = 0, ValueFromPipelineByPropertyName = $true)] [string[]]$TaskName,
    [Parameter(ParameterSetName = 'TaskName', Position = 1, ValueFromPipelineByPropertyName = $true)] [string[]]$TaskPath,
    [Parameter(ParameterSetName = 'InputObject', Mandatory = $true, ValueFromPipeline = $true)] [object[]]$InputObject,
    [switch]$PassThru
  )
  Invoke-WindowsStub 'Unregister-ScheduledTask' $PSBoundParameters
}

# Microsoft.PowerShell.Management in Windows PowerShell 5.1 (parameter set Domain)
function Add-Computer {
  [CmdletBinding(DefaultParameterSetName = 'Domain', SupportsShouldProcess = $true)]
  param(
    [Parameter(ValueFromPipeline = $true)] [string[]]$ComputerName,
    [pscredential]$LocalCredential,
    [Parameter(ParameterSetName = 'Domain')] [pscredential]$UnjoinDomainCredential,
    [Parameter(ParameterSetName = 'Domain', Mandatory = $true)] [pscredential]$Credential,
    [Parameter(ParameterSetName = 'Domain', Mandatory = $true, Position = 0)] [Alias('DN', 'Domain')] [string]$DomainName,
    [Parameter(ParameterSetName = 'Domain')] [string]$OUPath,
    [Parameter(ParameterSetName = 'Domain')] [Alias('DC')] [string]$Server,
    [Parameter(ParameterSetName = 'Domain')] [switch]$Unsecure,
    [Parameter(ParameterSetName = 'Domain')] [ValidateSet('AccountCreate', 'Win9XUpgrade', 'UnsecuredJoin', 'PasswordPass', 'DeferSPNSet', 'JoinWithNewName', 'JoinReadOnly', 'InstallInvoke')] [string[]]$Options,
    [Parameter(ParameterSetName = 'Workgroup', Mandatory = $true, Position = 0)] [string]$WorkgroupName,
    [switch]$Restart, [switch]$PassThru, [string]$NewName, [switch]$Force
  )
  Invoke-WindowsStub 'Add-Computer' $PSBoundParameters
}

# Microsoft.PowerShell.Management in Windows PowerShell 5.1 (Remove-Computer.md: parameter sets
# Local, the default, and Remote; -UnjoinDomainCredential has the alias Credential)
function Remove-Computer {
  [CmdletBinding(DefaultParameterSetName = 'Local', SupportsShouldProcess = $true)]
  param(
    [Parameter(ParameterSetName = 'Local', Position = 0)] [Parameter(ParameterSetName = 'Remote', Mandatory = $true, Position = 0)] [Alias('Credential')] [pscredential]$UnjoinDomainCredential,
    [Parameter(ParameterSetName = 'Remote')] [pscredential]$LocalCredential,
    [Parameter(ParameterSetName = 'Remote', ValueFromPipeline = $true, ValueFromPipelineByPropertyName = $true)] [string[]]$ComputerName,
    [switch]$Restart, [switch]$Force, [switch]$PassThru, [string]$WorkgroupName
  )
  Invoke-WindowsStub 'Remove-Computer' $PSBoundParameters
}
# Test-ComputerSecureChannel.md (5.1): returns a Boolean
function Test-ComputerSecureChannel {
  [CmdletBinding(SupportsShouldProcess = $true)]
  param([switch]$Repair, [string]$Server, [pscredential]$Credential)
  Invoke-WindowsStub 'Test-ComputerSecureChannel' $PSBoundParameters
}
