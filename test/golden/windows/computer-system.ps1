# machineadm computer-system
$ErrorActionPreference = 'Stop'
$ProgressPreference = 'SilentlyContinue'
$system = Get-CimInstance -ClassName Win32_ComputerSystem
[pscustomobject]@{ partOfDomain = [bool]$system.PartOfDomain; domain = [string]$system.Domain; name = [string]$system.Name } | ConvertTo-Json -Compress
