# machineadm computer-system
$ErrorActionPreference = 'Stop'
$ProgressPreference = 'SilentlyContinue'
filter ConvertTo-AsciiJson { [regex]::Replace([string]$_, '[^\x00-\x7F]', { '\u{0:x4}' -f [int][char]$args[0].Value }) }
$system = Get-CimInstance -ClassName Win32_ComputerSystem
[pscustomobject]@{ partOfDomain = [bool]$system.PartOfDomain; domain = [string]$system.Domain; name = [string]$system.Name } | ConvertTo-Json -Compress | ConvertTo-AsciiJson
