# machineadm boot-identity
$ErrorActionPreference = 'Stop'
$ProgressPreference = 'SilentlyContinue'
$os = Get-CimInstance -ClassName Win32_OperatingSystem
$prefetch = Get-ItemProperty -LiteralPath 'HKLM:\SYSTEM\CurrentControlSet\Control\Session Manager\Memory Management\PrefetchParameters' -Name BootId -ErrorAction SilentlyContinue
$bootId = $null
if ($null -ne $prefetch) { $bootId = [string]$prefetch.BootId }
[pscustomobject]@{ bootId = $bootId; lastBootUpTime = $os.LastBootUpTime.ToUniversalTime().ToString('o'); build = [string]$os.BuildNumber } | ConvertTo-Json -Compress
