# machineadm feature.query
$ErrorActionPreference = 'Stop'
$ProgressPreference = 'SilentlyContinue'
filter ConvertTo-AsciiJson { [regex]::Replace([string]$_, '[^\x00-\x7F]', { '\u{0:x4}' -f [int][char]$args[0].Value }) }
$Name = 'Containers'
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
