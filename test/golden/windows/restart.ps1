# machineadm restart
$ErrorActionPreference = 'Stop'
$ProgressPreference = 'SilentlyContinue'
$Comment = 'machineadm: kubelet'
& shutdown.exe /r /t 5 /d p:4:1 /c $Comment | Out-Null
if ($LASTEXITCODE -ne 0) { throw ('shutdown.exe exited with code ' + $LASTEXITCODE) }
'{}'
