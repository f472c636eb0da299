# machineadm service.stop
$ErrorActionPreference = 'Stop'
$ProgressPreference = 'SilentlyContinue'
filter ConvertTo-AsciiJson { [regex]::Replace([string]$_, '[^\x00-\x7F]', { '\u{0:x4}' -f [int][char]$args[0].Value }) }
$Name = 'kubelet'
$service = Get-Service | Where-Object { $_.Name -eq $Name }
if ($null -ne $service -and $service.Status -ne 'Stopped') {
  $service | Stop-Service -Force
  $service.WaitForStatus('Stopped', [TimeSpan]::FromSeconds(60))
}
'{}'
