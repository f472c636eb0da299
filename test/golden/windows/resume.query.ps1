# machineadm resume.query
$ErrorActionPreference = 'Stop'
$ProgressPreference = 'SilentlyContinue'
$TaskName = 'kubelet'
$TaskPath = '\machineadm\'
$task = Get-ScheduledTask -TaskName $TaskName -TaskPath $TaskPath -ErrorAction SilentlyContinue
if ($null -eq $task) { 'null' } else { [pscustomobject]@{ description = [string]$task.Description } | ConvertTo-Json -Compress }
