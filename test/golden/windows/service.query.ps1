# machineadm service.query
$ErrorActionPreference = 'Stop'
$ProgressPreference = 'SilentlyContinue'
$Name = 'kubelet'
$service = Get-CimInstance -ClassName Win32_Service | Where-Object { $_.Name -eq $Name }
if ($null -eq $service) {
  'null'
} else {
  $depends = @(Get-Service | Where-Object { $_.Name -eq $Name } | ForEach-Object { $_.ServicesDependedOn } | ForEach-Object { $_.Name })
  [pscustomobject]@{ name = $service.Name; commandLine = $service.PathName; startMode = $service.StartMode; state = $service.State; dependsOn = $depends } | ConvertTo-Json -Compress
}
