# machineadm domain.join-offline
$ErrorActionPreference = 'Stop'
$ProgressPreference = 'SilentlyContinue'
filter ConvertTo-AsciiJson { [regex]::Replace([string]$_, '[^\x00-\x7F]', { '\u{0:x4}' -f [int][char]$args[0].Value }) }
$BlobPath = 'C:\machineadm\odj.txt'
$ErrorActionPreference = 'Continue'
$output = & djoin.exe /requestODJ /loadfile $BlobPath /windowspath $env:SystemRoot /localos 2>&1 | ForEach-Object { [string]$_ } | Out-String
$code = $LASTEXITCODE
$ErrorActionPreference = 'Stop'
[pscustomobject]@{ joined = ($code -eq 0); code = $code; message = [string]$output } | ConvertTo-Json -Compress | ConvertTo-AsciiJson
