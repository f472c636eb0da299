# machineadm feature.install
$ErrorActionPreference = 'Stop'
$ProgressPreference = 'SilentlyContinue'
$Name = 'Containers'
if (Get-Command -Name Install-WindowsFeature -ErrorAction SilentlyContinue) {
  $result = Install-WindowsFeature -Name $Name
  if (-not $result.Success) { throw ('Install-WindowsFeature did not succeed: exit code ' + [string]$result.ExitCode) }
  $restart = [string]$result.RestartNeeded -eq 'Yes'
} else {
  $result = Enable-WindowsOptionalFeature -Online -FeatureName $Name -All -NoRestart
  $restart = [bool]$result.RestartNeeded
}
[pscustomobject]@{ restartNeeded = $restart } | ConvertTo-Json -Compress
