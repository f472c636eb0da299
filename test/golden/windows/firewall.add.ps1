# machineadm firewall.add
$ErrorActionPreference = 'Stop'
$ProgressPreference = 'SilentlyContinue'
$Name = 'kubelet'
$DisplayName = 'machineadm: kubelet'
$Protocol = 'TCP'
$LocalPort = 10250
if (Get-NetFirewallRule -Name $Name -ErrorAction SilentlyContinue) { Remove-NetFirewallRule -Name $Name }
New-NetFirewallRule -Name $Name -DisplayName $DisplayName -Enabled True -Direction Inbound -Protocol $Protocol -Action Allow -LocalPort $LocalPort | Out-Null
'{}'
