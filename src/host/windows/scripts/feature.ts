// The Windows feature actions (feature.query, feature.install): Server and client SKUs install
// features through different cmdlets, so both paths live together.

// Server: ServerManager's Get-WindowsFeature (.Installed, .InstallState). Client SKUs have no
// ServerManager, so DISM's Get-WindowsOptionalFeature (.State); Microsoft's own containerd
// installer picks the client path when Get-WindowsFeature is missing.
// [Get-WindowsFeature, Get-WindowsOptionalFeature; microsoft/Windows-Containers install-containerd-runtime.ps1]
export const FEATURE_QUERY = String.raw`
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
[pscustomobject]@{ state = $state } | ConvertTo-Json -Compress | ConvertTo-AsciiJson
`;

// Install-WindowsFeature without -Restart (machineadm restarts through its own resume); its result
// has Success and RestartNeeded ('Yes', 'No', 'Maybe'). Enable-WindowsOptionalFeature -All enables
// parent features, -NoRestart suppresses the reboot; its ImageObject has a boolean RestartNeeded.
// [Install-WindowsFeature.md; Enable-WindowsOptionalFeature.md]
export const FEATURE_INSTALL = String.raw`
if (Get-Command -Name Install-WindowsFeature -ErrorAction SilentlyContinue) {
  $result = Install-WindowsFeature -Name $Name
  if (-not $result.Success) { throw ('Install-WindowsFeature did not succeed: exit code ' + [string]$result.ExitCode) }
  $restart = [string]$result.RestartNeeded -eq 'Yes'
} else {
  $result = Enable-WindowsOptionalFeature -Online -FeatureName $Name -All -NoRestart
  $restart = [bool]$result.RestartNeeded
}
[pscustomobject]@{ restartNeeded = $restart } | ConvertTo-Json -Compress | ConvertTo-AsciiJson
`;
