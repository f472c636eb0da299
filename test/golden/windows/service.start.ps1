# machineadm service.start
$ErrorActionPreference = 'Stop'
$ProgressPreference = 'SilentlyContinue'
$Name = 'kubelet'
$service = Get-Service | Where-Object { $_.Name -eq $Name }
if ($null -eq $service) { throw ('no service named ' + $Name) }
if ($service.Status -ne 'Running') { $service | Start-Service }
$service.WaitForStatus('Running', [TimeSpan]::FromSeconds(60))
'{}'
