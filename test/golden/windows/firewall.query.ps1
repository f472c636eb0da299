# machineadm firewall.query
$ErrorActionPreference = 'Stop'
$ProgressPreference = 'SilentlyContinue'
filter ConvertTo-AsciiJson { [regex]::Replace([string]$_, '[^\x00-\x7F]', { '\u{0:x4}' -f [int][char]$args[0].Value }) }
$Name = 'kubelet'
$rule = Get-NetFirewallRule -Name $Name -ErrorAction SilentlyContinue -ErrorVariable lookupErrors
$failed = @($lookupErrors | Where-Object { [string]$_.CategoryInfo.Category -ne 'ObjectNotFound' })
if ($failed.Count -gt 0) { throw $failed[0] }
if ($null -eq $rule) {
  'null'
} else {
  $ports = $rule | Get-NetFirewallPortFilter
  [pscustomobject]@{ name = $rule.Name; enabled = [string]$rule.Enabled; direction = [string]$rule.Direction; action = [string]$rule.Action; protocol = [string]$ports.Protocol; localPort = [string]$ports.LocalPort } | ConvertTo-Json -Compress | ConvertTo-AsciiJson
}
