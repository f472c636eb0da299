# machineadm restart
$ErrorActionPreference = 'Stop'
$ProgressPreference = 'SilentlyContinue'
filter ConvertTo-AsciiJson { [regex]::Replace([string]$_, '[^\x00-\x7F]', { '\u{0:x4}' -f [int][char]$args[0].Value }) }
$Comment = 'machineadm: kubelet'
& shutdown.exe /r /t 5 /d p:4:1 /c $Comment | Out-Null
if ($LASTEXITCODE -ne 0) { throw ('shutdown.exe exited with code ' + $LASTEXITCODE) }
'{}'
