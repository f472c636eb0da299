# machineadm firewall.query
$ErrorActionPreference = 'Stop'
$ProgressPreference = 'SilentlyContinue'
$Name = 'kubelet'
$rule = Get-NetFirewallRule -Name $Name -ErrorAction SilentlyContinue
if ($null -eq $rule) {
  'null'
} else {
  $ports = $rule | Get-NetFirewallPortFilter
  [pscustomobject]@{ name = $rule.Name; enabled = [string]$rule.Enabled; direction = [string]$rule.Direction; action = [string]$rule.Action; protocol = [string]$ports.Protocol; localPort = [string]$ports.LocalPort } | ConvertTo-Json -Compress
}
