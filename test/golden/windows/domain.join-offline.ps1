# machineadm domain.join-offline
$ErrorActionPreference = 'Stop'
$ProgressPreference = 'SilentlyContinue'
$BlobPath = 'C:\machineadm\odj.txt'
$ErrorActionPreference = 'Continue'
$output = & djoin.exe /requestODJ /loadfile $BlobPath /windowspath $env:SystemRoot /localos 2>&1 | ForEach-Object { [string]$_ } | Out-String
$code = $LASTEXITCODE
$ErrorActionPreference = 'Stop'
[pscustomobject]@{ joined = ($code -eq 0); code = $code; message = [string]$output } | ConvertTo-Json -Compress
