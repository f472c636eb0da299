# machineadm acl.restore
$ErrorActionPreference = 'Stop'
$ProgressPreference = 'SilentlyContinue'
filter ConvertTo-AsciiJson { [regex]::Replace([string]$_, '[^\x00-\x7F]', { '\u{0:x4}' -f [int][char]$args[0].Value }) }
$Path = 'C:\Program Files\containerd\containerd.exe'
$Sddl = 'O:BAG:SYD:AI(A;OICIID;FA;;;SY)'
$acl = Get-Acl -LiteralPath $Path
$acl.SetSecurityDescriptorSddlForm($Sddl, [System.Security.AccessControl.AccessControlSections]::Access)
Set-Acl -LiteralPath $Path -AclObject $acl
'{}'
