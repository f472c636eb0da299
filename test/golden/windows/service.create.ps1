# machineadm service.create
$ErrorActionPreference = 'Stop'
$ProgressPreference = 'SilentlyContinue'
filter ConvertTo-AsciiJson { [regex]::Replace([string]$_, '[^\x00-\x7F]', { '\u{0:x4}' -f [int][char]$args[0].Value }) }
$Name = 'kubelet'
$DisplayName = 'machineadm: kubelet'
$CommandLine = '"C:\Program Files\containerd\containerd.exe" --windows-service'
$DependsOn = @('containerd', 'kubelet')
if ($DependsOn.Count -gt 0) {
  New-Service -Name $Name -DisplayName $DisplayName -BinaryPathName $CommandLine -StartupType Automatic -DependsOn $DependsOn | Out-Null
} else {
  New-Service -Name $Name -DisplayName $DisplayName -BinaryPathName $CommandLine -StartupType Automatic | Out-Null
}
& sc.exe failure $Name reset= 86400 actions= restart/10000/restart/10000/restart/10000 | Out-Null
if ($LASTEXITCODE -ne 0) { throw ('sc.exe failure exited with code ' + $LASTEXITCODE) }
& sc.exe failureflag $Name 1 | Out-Null
if ($LASTEXITCODE -ne 0) { throw ('sc.exe failureflag exited with code ' + $LASTEXITCODE) }
'{}'
