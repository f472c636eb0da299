# machineadm acl.private-directory
$ErrorActionPreference = 'Stop'
$ProgressPreference = 'SilentlyContinue'
filter ConvertTo-AsciiJson { [regex]::Replace([string]$_, '[^\x00-\x7F]', { '\u{0:x4}' -f [int][char]$args[0].Value }) }
$Path = 'C:\Program Files\containerd\containerd.exe'
[System.IO.Directory]::CreateDirectory($Path) | Out-Null
$acl = New-Object System.Security.AccessControl.DirectorySecurity
$acl.SetAccessRuleProtection($true, $false)
foreach ($sid in @('S-1-5-18', 'S-1-5-32-544')) {
  $identity = New-Object System.Security.Principal.SecurityIdentifier($sid)
  $rule = New-Object System.Security.AccessControl.FileSystemAccessRule($identity, 'FullControl', 'ContainerInherit, ObjectInherit', 'None', 'Allow')
  $acl.AddAccessRule($rule)
}
$acl.SetOwner((New-Object System.Security.Principal.SecurityIdentifier('S-1-5-32-544')))
Set-Acl -LiteralPath $Path -AclObject $acl
if (Get-ChildItem -LiteralPath $Path -Force | Select-Object -First 1) {
  & icacls.exe (Join-Path -Path $Path -ChildPath '*') /reset /T /C /Q | Out-Null
  if ($LASTEXITCODE -ne 0) { throw ('icacls /reset exited with code ' + $LASTEXITCODE) }
}
'{}'
