# machineadm resume.register
$ErrorActionPreference = 'Stop'
$ProgressPreference = 'SilentlyContinue'
$TaskName = 'kubelet'
$TaskPath = '\machineadm\'
$Execute = 'C:\Program Files\containerd\containerd.exe'
$Argument = 'machineadm: kubelet'
$Description = '["C:\\Program Files\\containerd\\containerd.exe","machineadm: kubelet"]'
$action = New-ScheduledTaskAction -Execute $Execute -Argument $Argument
$trigger = New-ScheduledTaskTrigger -AtStartup
$principal = New-ScheduledTaskPrincipal -UserId 'NT AUTHORITY\SYSTEM' -LogonType ServiceAccount -RunLevel Highest
$settings = New-ScheduledTaskSettingsSet -ExecutionTimeLimit ([TimeSpan]::FromHours(4)) -MultipleInstances IgnoreNew -AllowStartIfOnBatteries -DontStopIfGoingOnBatteries
Register-ScheduledTask -TaskName $TaskName -TaskPath $TaskPath -Description $Description -Action $action -Trigger $trigger -Principal $principal -Settings $settings -Force | Out-Null
'{}'
