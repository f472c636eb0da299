// The ACL actions (acl.private-directory/query/restore): locking a directory to SYSTEM and
// Administrators, reading it back, and giving back what it had before, for reset.

// A protected DACL (inheritance off, inherited entries dropped) granting FullControl to
// LocalSystem (S-1-5-18) and BUILTIN\Administrators (S-1-5-32-544) only, inherited by everything
// created inside; owner Administrators. What the directory already holds keeps explicit entries
// of its own (a file kubeadm wrote, a state file): icacls /reset on its contents replaces their
// ACLs with the inherited one (/T every level, /C on past errors, /Q quiet; exit code checked).
// [DirectorySecurity, ObjectSecurity.SetAccessRuleProtection, Set-Acl.md; well-known SIDs; icacls]
export const PRIVATE_DIRECTORY = String.raw`
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
`;

export const ACL_QUERY = String.raw`
if (-not (Test-Path -LiteralPath $Path)) {
  'null'
} else {
  $acl = Get-Acl -LiteralPath $Path
  $entries = @($acl.Access | ForEach-Object {
    [pscustomobject]@{ sid = $_.IdentityReference.Translate([System.Security.Principal.SecurityIdentifier]).Value; rights = [string]$_.FileSystemRights; type = [string]$_.AccessControlType; inherited = $_.IsInherited }
  })
  [pscustomobject]@{ protected = $acl.AreAccessRulesProtected; entries = $entries; sddl = [string]$acl.Sddl } | ConvertTo-Json -Compress -Depth 4 | ConvertTo-AsciiJson
}
`;

// The access rules a folder had before machineadm locked it, given back from their SDDL (Get-Acl's
// .Sddl, recorded then): only the DACL (AccessControlSections.Access); the owner machineadm set
// (Administrators) stays, as setting another owner may need a privilege Administrators lack.
// [ObjectSecurity.SetSecurityDescriptorSddlForm, AccessControlSections; Get-Acl.md, Set-Acl.md]
export const ACL_RESTORE = String.raw`
$acl = Get-Acl -LiteralPath $Path
$acl.SetSecurityDescriptorSddlForm($Sddl, [System.Security.AccessControl.AccessControlSections]::Access)
Set-Acl -LiteralPath $Path -AclObject $acl
'{}'
`;
