# machineadm feature.install
$ErrorActionPreference = 'Stop'
$ProgressPreference = 'SilentlyContinue'
filter ConvertTo-AsciiJson { [regex]::Replace([string]$_, '[^\x00-\x7F]', { '\u{0:x4}' -f [int][char]$args[0].Value }) }
$Name = 'Containers'
if (Get-Command -Name Install-WindowsFeature -ErrorAction SilentlyContinue) {
  $result = Install-WindowsFeature -Name $Name
  if (-not $result.Success) { throw ('Install-WindowsFeature did not succeed: exit code ' + [string]$result.ExitCode) }
  $restart = [string]$result.RestartNeeded -eq 'Yes'
} else {
  $result = Enable-WindowsOptionalFeature -Online -FeatureName $Name -All -NoRestart
  $restart = [bool]$result.RestartNeeded
}
[pscustomobject]@{ restartNeeded = $restart } | ConvertTo-Json -Compress | ConvertTo-AsciiJson
