# machineadm resume.query
$ErrorActionPreference = 'Stop'
$ProgressPreference = 'SilentlyContinue'
$TaskName = 'kubelet'
$TaskPath = '\machineadm\'
$task = Get-ScheduledTask -TaskName $TaskName -TaskPath $TaskPath -ErrorAction SilentlyContinue -ErrorVariable lookupErrors
$failed = @($lookupErrors | Where-Object { [string]$_.CategoryInfo.Category -ne 'ObjectNotFound' })
if ($failed.Count -gt 0) { throw $failed[0] }
if ($null -eq $task) { 'null' } else { [pscustomobject]@{ description = [string]$task.Description } | ConvertTo-Json -Compress }
