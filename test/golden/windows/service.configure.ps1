# machineadm service.configure
$ErrorActionPreference = 'Stop'
$ProgressPreference = 'SilentlyContinue'
filter ConvertTo-AsciiJson { [regex]::Replace([string]$_, '[^\x00-\x7F]', { '\u{0:x4}' -f [int][char]$args[0].Value }) }
$Name = 'kubelet'
$DisplayName = 'machineadm: kubelet'
$CommandLine = '"C:\Program Files\containerd\containerd.exe" --windows-service'
$DependsOn = @('kubelet')
$service = Get-CimInstance -ClassName Win32_Service | Where-Object { $_.Name -eq $Name }
if ($null -eq $service) { throw ('no service named ' + $Name) }
$change = Invoke-CimMethod -InputObject $service -MethodName Change -Arguments @{ DisplayName = $DisplayName; PathName = $CommandLine; StartMode = 'Automatic'; ServiceDependencies = [string[]]$DependsOn }
if ($change.ReturnValue -ne 0) { throw ('Win32_Service.Change returned ' + [string]$change.ReturnValue) }
& sc.exe failure $Name reset= 86400 actions= restart/10000/restart/10000/restart/10000 | Out-Null
if ($LASTEXITCODE -ne 0) { throw ('sc.exe failure exited with code ' + $LASTEXITCODE) }
& sc.exe failureflag $Name 1 | Out-Null
if ($LASTEXITCODE -ne 0) { throw ('sc.exe failureflag exited with code ' + $LASTEXITCODE) }
'{}'
