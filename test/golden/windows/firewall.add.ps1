# machineadm firewall.add
$ErrorActionPreference = 'Stop'
$ProgressPreference = 'SilentlyContinue'
filter ConvertTo-AsciiJson { [regex]::Replace([string]$_, '[^\x00-\x7F]', { '\u{0:x4}' -f [int][char]$args[0].Value }) }
$Name = 'kubelet'
$DisplayName = 'machineadm: kubelet'
$Protocol = 'TCP'
$LocalPort = 10250
$existing = Get-NetFirewallRule -Name $Name -ErrorAction SilentlyContinue -ErrorVariable lookupErrors
$failed = @($lookupErrors | Where-Object { [string]$_.CategoryInfo.Category -ne 'ObjectNotFound' })
if ($failed.Count -gt 0) { throw $failed[0] }
if ($existing) { Remove-NetFirewallRule -Name $Name }
New-NetFirewallRule -Name $Name -DisplayName $DisplayName -Enabled True -Direction Inbound -Protocol $Protocol -Action Allow -LocalPort $LocalPort | Out-Null
'{}'
