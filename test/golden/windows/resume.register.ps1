# machineadm resume.register
$ErrorActionPreference = 'Stop'
$ProgressPreference = 'SilentlyContinue'
filter ConvertTo-AsciiJson { [regex]::Replace([string]$_, '[^\x00-\x7F]', { '\u{0:x4}' -f [int][char]$args[0].Value }) }
$TaskName = 'kubelet'
$TaskPath = '\machineadm\'
$Execute = 'C:\Program Files\containerd\containerd.exe'
$Argument = 'machineadm: kubelet'
$Description = '["C:\\Program Files\\containerd\\containerd.exe","machineadm: kubelet"]'
[xml]$task = @'
<?xml version="1.0" encoding="UTF-16"?>
<Task version="1.2" xmlns="http://schemas.microsoft.com/windows/2004/02/mit/task">
  <RegistrationInfo>
    <Description></Description>
    <SecurityDescriptor>D:P(A;;FA;;;SY)(A;;FA;;;BA)</SecurityDescriptor>
  </RegistrationInfo>
  <Triggers>
    <BootTrigger>
      <Enabled>true</Enabled>
    </BootTrigger>
  </Triggers>
  <Principals>
    <Principal id="Author">
      <UserId>S-1-5-18</UserId>
      <RunLevel>HighestAvailable</RunLevel>
    </Principal>
  </Principals>
  <Settings>
    <MultipleInstancesPolicy>IgnoreNew</MultipleInstancesPolicy>
    <DisallowStartIfOnBatteries>false</DisallowStartIfOnBatteries>
    <StopIfGoingOnBatteries>false</StopIfGoingOnBatteries>
    <ExecutionTimeLimit>PT4H</ExecutionTimeLimit>
    <Enabled>true</Enabled>
  </Settings>
  <Actions Context="Author">
    <Exec>
      <Command></Command>
      <Arguments></Arguments>
    </Exec>
  </Actions>
</Task>
'@
$names = New-Object System.Xml.XmlNamespaceManager($task.NameTable)
$names.AddNamespace('t', 'http://schemas.microsoft.com/windows/2004/02/mit/task')
$task.SelectSingleNode('/t:Task/t:RegistrationInfo/t:Description', $names).InnerText = $Description
$task.SelectSingleNode('/t:Task/t:Actions/t:Exec/t:Command', $names).InnerText = $Execute
$task.SelectSingleNode('/t:Task/t:Actions/t:Exec/t:Arguments', $names).InnerText = $Argument
Register-ScheduledTask -TaskName $TaskName -TaskPath $TaskPath -Xml $task.OuterXml -Force | Out-Null
'{}'
