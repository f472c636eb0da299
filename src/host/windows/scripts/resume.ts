// The resume task actions (resume.register/query/remove): the scheduled task that carries a run
// across a restart, locked so that only SYSTEM and Administrators can read its command line.
import { lookup } from './compose.ts';

// A task at startup running as SYSTEM, registered from a task definition (Task Scheduler schema)
// rather than from New-ScheduledTask* objects: only the definition carries the task's own
// security descriptor (RegistrationInfo/SecurityDescriptor), here a protected DACL giving SYSTEM
// and Administrators full access and no one else any (by default Authenticated Users may read a
// task, its command line included). The definition is constant; the command, its arguments and
// the description (the argument vector as JSON, read back by resume.query) go in as element text,
// which the XML DOM escapes. Principal S-1-5-18 (LocalSystem) needs no password.
// [Register-ScheduledTask.md (parameter set Xml); Task Scheduler schema: RegistrationInfo,
// SecurityDescriptor (registrationInfoType), BootTrigger, Principal, RunLevel, Settings, Exec;
// IRegistrationInfo::SecurityDescriptor; SDDL for SY, BA, FA]
export const RESUME_TASK_SDDL = 'D:P(A;;FA;;;SY)(A;;FA;;;BA)';
export const TASK_NAMESPACE = 'http://schemas.microsoft.com/windows/2004/02/mit/task';
export const RESUME_REGISTER = String.raw`
[xml]$task = @'
<?xml version="1.0" encoding="UTF-16"?>
<Task version="1.2" xmlns="${TASK_NAMESPACE}">
  <RegistrationInfo>
    <Description></Description>
    <SecurityDescriptor>${RESUME_TASK_SDDL}</SecurityDescriptor>
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
$names.AddNamespace('t', '${TASK_NAMESPACE}')
$task.SelectSingleNode('/t:Task/t:RegistrationInfo/t:Description', $names).InnerText = $Description
$task.SelectSingleNode('/t:Task/t:Actions/t:Exec/t:Command', $names).InnerText = $Execute
$task.SelectSingleNode('/t:Task/t:Actions/t:Exec/t:Arguments', $names).InnerText = $Argument
Register-ScheduledTask -TaskName $TaskName -TaskPath $TaskPath -Xml $task.OuterXml -Force | Out-Null
'{}'
`;

export const RESUME_QUERY = String.raw`
${lookup('task', 'Get-ScheduledTask -TaskName $TaskName -TaskPath $TaskPath')}
if ($null -eq $task) { 'null' } else { [pscustomobject]@{ description = [string]$task.Description } | ConvertTo-Json -Compress | ConvertTo-AsciiJson }
`;

// Microsoft's pattern: look the task up first, then Unregister-ScheduledTask -Confirm:$false.
export const RESUME_REMOVE = String.raw`
${lookup('task', 'Get-ScheduledTask -TaskName $TaskName -TaskPath $TaskPath')}
if ($task) {
  Unregister-ScheduledTask -TaskName $TaskName -TaskPath $TaskPath -Confirm:$false
}
'{}'
`;
