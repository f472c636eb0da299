# machineadm containerd.register
$ErrorActionPreference = 'Stop'
$ProgressPreference = 'SilentlyContinue'
filter ConvertTo-AsciiJson { [regex]::Replace([string]$_, '[^\x00-\x7F]', { '\u{0:x4}' -f [int][char]$args[0].Value }) }
$Executable = 'C:\Program Files\containerd\containerd.exe'
$Config = 'C:\Program Files\containerd\containerd.exe.toml'
$LogFile = 'C:\Program Files\containerd\containerd.exe.log'
& $Executable --register-service --config $Config --log-file $LogFile | Out-Null
if ($LASTEXITCODE -ne 0) { throw ('containerd --register-service exited with code ' + $LASTEXITCODE) }
'{}'
