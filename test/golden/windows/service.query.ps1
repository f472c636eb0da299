# machineadm service.query
$ErrorActionPreference = 'Stop'
$ProgressPreference = 'SilentlyContinue'
filter ConvertTo-AsciiJson { [regex]::Replace([string]$_, '[^\x00-\x7F]', { '\u{0:x4}' -f [int][char]$args[0].Value }) }
$Name = 'kubelet'
$service = Get-CimInstance -ClassName Win32_Service | Where-Object { $_.Name -eq $Name }
if ($null -eq $service) {
  'null'
} else {
  $depends = @(Get-Service | Where-Object { $_.Name -eq $Name } | ForEach-Object { $_.ServicesDependedOn } | ForEach-Object { $_.Name })
  [pscustomobject]@{ name = $service.Name; displayName = $service.DisplayName; commandLine = $service.PathName; startMode = $service.StartMode; state = $service.State; dependsOn = $depends } | ConvertTo-Json -Compress | ConvertTo-AsciiJson
}
