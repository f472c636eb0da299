# machineadm firewall.remove
$ErrorActionPreference = 'Stop'
$ProgressPreference = 'SilentlyContinue'
$Name = 'kubelet'
$rule = Get-NetFirewallRule -Name $Name -ErrorAction SilentlyContinue -ErrorVariable lookupErrors
$failed = @($lookupErrors | Where-Object { [string]$_.CategoryInfo.Category -ne 'ObjectNotFound' })
if ($failed.Count -gt 0) { throw $failed[0] }
if ($rule) { Remove-NetFirewallRule -Name $Name }
'{}'
