# machineadm service.restart
$ErrorActionPreference = 'Stop'
$ProgressPreference = 'SilentlyContinue'
$Name = 'kubelet'
$service = Get-Service | Where-Object { $_.Name -eq $Name }
if ($null -eq $service) { throw ('no service named ' + $Name) }
$service | Restart-Service -Force
$service.WaitForStatus('Running', [TimeSpan]::FromSeconds(60))
'{}'
