# machineadm service.stop
$ErrorActionPreference = 'Stop'
$ProgressPreference = 'SilentlyContinue'
$Name = 'kubelet'
$service = Get-Service | Where-Object { $_.Name -eq $Name }
if ($null -ne $service -and $service.Status -ne 'Stopped') {
  $service | Stop-Service -Force
  $service.WaitForStatus('Stopped', [TimeSpan]::FromSeconds(60))
}
'{}'
