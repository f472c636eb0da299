# machineadm acl.restore
$ErrorActionPreference = 'Stop'
$ProgressPreference = 'SilentlyContinue'
$Path = 'C:\Program Files\containerd\containerd.exe'
$Sddl = 'O:BAG:SYD:AI(A;OICIID;FA;;;SY)'
$acl = Get-Acl -LiteralPath $Path
$acl.SetSecurityDescriptorSddlForm($Sddl, [System.Security.AccessControl.AccessControlSections]::Access)
Set-Acl -LiteralPath $Path -AclObject $acl
'{}'
