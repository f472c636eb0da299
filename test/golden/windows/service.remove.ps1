# machineadm service.remove
$ErrorActionPreference = 'Stop'
$ProgressPreference = 'SilentlyContinue'
$Name = 'kubelet'
$service = Get-Service | Where-Object { $_.Name -eq $Name }
if ($null -ne $service) {
  if ($service.Status -ne 'Stopped') {
    $service | Stop-Service -Force
    $service.WaitForStatus('Stopped', [TimeSpan]::FromSeconds(60))
  }
  & sc.exe delete $Name | Out-Null
  if ($LASTEXITCODE -ne 0 -and $LASTEXITCODE -ne 1072 -and $LASTEXITCODE -ne 1060) { throw ('sc.exe delete exited with code ' + $LASTEXITCODE) }
}
'{}'
