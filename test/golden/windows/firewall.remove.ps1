# machineadm firewall.remove
$ErrorActionPreference = 'Stop'
$ProgressPreference = 'SilentlyContinue'
filter ConvertTo-AsciiJson { [regex]::Replace([string]$_, '[^\x00-\x7F]', { '\u{0:x4}' -f [int][char]$args[0].Value }) }
$Name = 'kubelet'
$rule = Get-NetFirewallRule -Name $Name -ErrorAction SilentlyContinue -ErrorVariable lookupErrors
$failed = @($lookupErrors | Where-Object { [string]$_.CategoryInfo.Category -ne 'ObjectNotFound' })
if ($failed.Count -gt 0) { throw $failed[0] }
if ($rule) { Remove-NetFirewallRule -Name $Name }
'{}'
