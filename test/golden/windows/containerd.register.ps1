# machineadm containerd.register
$ErrorActionPreference = 'Stop'
$ProgressPreference = 'SilentlyContinue'
$Executable = 'C:\Program Files\containerd\containerd.exe'
$Config = 'C:\Program Files\containerd\containerd.exe.toml'
$LogFile = 'C:\Program Files\containerd\containerd.exe.log'
& $Executable --register-service --config $Config --log-file $LogFile | Out-Null
if ($LASTEXITCODE -ne 0) { throw ('containerd --register-service exited with code ' + $LASTEXITCODE) }
'{}'
