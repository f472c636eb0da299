// The firewall actions (firewall.query/add/remove): rules are found by their fixed -Name, so a
// rerun replaces machineadm's rule rather than adding another.
import { lookup } from './compose.ts';

// Looked up by -Name: DisplayName is localized and a rule made without -Name gets a random one.
// [New-NetFirewallRule.md, Get-NetFirewallRule.md, Get-NetFirewallPortFilter.md]
export const FIREWALL_QUERY = String.raw`
${lookup('rule', 'Get-NetFirewallRule -Name $Name')}
if ($null -eq $rule) {
  'null'
} else {
  $ports = $rule | Get-NetFirewallPortFilter
  [pscustomobject]@{ name = $rule.Name; enabled = [string]$rule.Enabled; direction = [string]$rule.Direction; action = [string]$rule.Action; protocol = [string]$ports.Protocol; localPort = [string]$ports.LocalPort } | ConvertTo-Json -Compress | ConvertTo-AsciiJson
}
`;

export const FIREWALL_ADD = String.raw`
${lookup('existing', 'Get-NetFirewallRule -Name $Name')}
if ($existing) { Remove-NetFirewallRule -Name $Name }
New-NetFirewallRule -Name $Name -DisplayName $DisplayName -Enabled True -Direction Inbound -Protocol $Protocol -Action Allow -LocalPort $LocalPort | Out-Null
'{}'
`;

// [Remove-NetFirewallRule.md]
export const FIREWALL_REMOVE = String.raw`
${lookup('rule', 'Get-NetFirewallRule -Name $Name')}
if ($rule) { Remove-NetFirewallRule -Name $Name }
'{}'
`;
