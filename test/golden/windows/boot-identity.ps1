# machineadm boot-identity
$ErrorActionPreference = 'Stop'
$ProgressPreference = 'SilentlyContinue'
filter ConvertTo-AsciiJson { [regex]::Replace([string]$_, '[^\x00-\x7F]', { '\u{0:x4}' -f [int][char]$args[0].Value }) }
$os = Get-CimInstance -ClassName Win32_OperatingSystem
$prefetch = Get-ItemProperty -LiteralPath 'HKLM:\SYSTEM\CurrentControlSet\Control\Session Manager\Memory Management\PrefetchParameters' -Name BootId -ErrorAction SilentlyContinue
$bootId = $null
if ($null -ne $prefetch) { $bootId = [string]$prefetch.BootId }
[pscustomobject]@{ bootId = $bootId; lastBootUpTime = $os.LastBootUpTime.ToUniversalTime().ToString('o'); build = [string]$os.BuildNumber } | ConvertTo-Json -Compress | ConvertTo-AsciiJson
