# machineadm domain.leave-local
$ErrorActionPreference = 'Stop'
$ProgressPreference = 'SilentlyContinue'
filter ConvertTo-AsciiJson { [regex]::Replace([string]$_, '[^\x00-\x7F]', { '\u{0:x4}' -f [int][char]$args[0].Value }) }
$Workgroup = 'WORKGROUP'
$system = Get-CimInstance -ClassName Win32_ComputerSystem
if (-not $system.PartOfDomain) {
  [pscustomobject]@{ left = $true } | ConvertTo-Json -Compress | ConvertTo-AsciiJson
  return
}
$unjoin = Invoke-CimMethod -InputObject $system -MethodName UnjoinDomainOrWorkgroup -Arguments @{ FUnjoinOptions = [uint32]0 }
if ($unjoin.ReturnValue -ne 0) {
  [pscustomobject]@{ left = $false; code = [int]$unjoin.ReturnValue; message = 'UnjoinDomainOrWorkgroup returned ' + [string]$unjoin.ReturnValue } | ConvertTo-Json -Compress | ConvertTo-AsciiJson
  return
}
$moved = Invoke-CimMethod -InputObject $system -MethodName JoinDomainOrWorkgroup -Arguments @{ Name = $Workgroup; FJoinOptions = [uint32]0 }
if ($moved.ReturnValue -ne 0) { throw ('left the domain, but JoinDomainOrWorkgroup ' + $Workgroup + ' returned ' + [string]$moved.ReturnValue) }
[pscustomobject]@{ left = $true } | ConvertTo-Json -Compress | ConvertTo-AsciiJson
