// The Windows service actions (service.query/create/configure/start/stop/restart/remove): the
// Service Control Manager's quirks (sc.exe recovery, Win32_Service.Change) kept in one place.

// Win32_Service has the command line (PathName) and start mode; Get-Service the dependencies.
// Filtering with -eq rather than -Name keeps wildcard characters in a name literal.
// [Win32_Service class; Get-Service.md]
export const SERVICE_QUERY = String.raw`
$service = Get-CimInstance -ClassName Win32_Service | Where-Object { $_.Name -eq $Name }
if ($null -eq $service) {
  'null'
} else {
  $depends = @(Get-Service | Where-Object { $_.Name -eq $Name } | ForEach-Object { $_.ServicesDependedOn } | ForEach-Object { $_.Name })
  [pscustomobject]@{ name = $service.Name; displayName = $service.DisplayName; commandLine = $service.PathName; startMode = $service.StartMode; state = $service.State; dependsOn = $depends } | ConvertTo-Json -Compress | ConvertTo-AsciiJson
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

export const SERVICE_CREATE = String.raw`
if ($DependsOn.Count -gt 0) {
  New-Service -Name $Name -DisplayName $DisplayName -BinaryPathName $CommandLine -StartupType Automatic -DependsOn $DependsOn | Out-Null
} else {
  New-Service -Name $Name -DisplayName $DisplayName -BinaryPathName $CommandLine -StartupType Automatic | Out-Null
}
${RECOVERY.trim()}
'{}'
`;

// Win32_Service.Change sets the display name, command line, start mode and dependencies in one call
// (Set-Service in Windows PowerShell 5.1 cannot set the command line or the start mode Automatic
// with the rest); ReturnValue 0 is success.
// [Change method of the Win32_Service class]
export const SERVICE_CONFIGURE = String.raw`
$service = Get-CimInstance -ClassName Win32_Service | Where-Object { $_.Name -eq $Name }
if ($null -eq $service) { throw ('no service named ' + $Name) }
$change = Invoke-CimMethod -InputObject $service -MethodName Change -Arguments @{ DisplayName = $DisplayName; PathName = $CommandLine; StartMode = 'Automatic'; ServiceDependencies = [string[]]$DependsOn }
if ($change.ReturnValue -ne 0) { throw ('Win32_Service.Change returned ' + [string]$change.ReturnValue) }
${RECOVERY.trim()}
'{}'
`;

// [Start-Service.md, Stop-Service.md, Restart-Service.md; ServiceController.WaitForStatus]
export const SERVICE_START = String.raw`
$service = Get-Service | Where-Object { $_.Name -eq $Name }
if ($null -eq $service) { throw ('no service named ' + $Name) }
if ($service.Status -ne 'Running') { $service | Start-Service }
$service.WaitForStatus('Running', [TimeSpan]::FromSeconds(60))
'{}'
`;

export const SERVICE_STOP = String.raw`
$service = Get-Service | Where-Object { $_.Name -eq $Name }
if ($null -ne $service -and $service.Status -ne 'Stopped') {
  $service | Stop-Service -Force
  $service.WaitForStatus('Stopped', [TimeSpan]::FromSeconds(60))
}
'{}'
`;

export const SERVICE_RESTART = String.raw`
$service = Get-Service | Where-Object { $_.Name -eq $Name }
if ($null -eq $service) { throw ('no service named ' + $Name) }
$service | Restart-Service -Force
$service.WaitForStatus('Running', [TimeSpan]::FromSeconds(60))
'{}'
`;

// Stopped first (Stop-Service -Force also stops the services that depend on it), then deleted
// with sc.exe: Remove-Service exists only from PowerShell 6, and machineadm's scripts run in
// Windows PowerShell 5.1. 1072 (already marked for deletion: a handle is still open; it goes when
// that closes) and 1060 (gone meanwhile) are what was asked for.
// [Stop-Service.md; sc-delete (Windows commands); System Error Codes 1000-1299]
export const SERVICE_REMOVE = String.raw`
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
