# machineadm acl.query
$ErrorActionPreference = 'Stop'
$ProgressPreference = 'SilentlyContinue'
filter ConvertTo-AsciiJson { [regex]::Replace([string]$_, '[^\x00-\x7F]', { '\u{0:x4}' -f [int][char]$args[0].Value }) }
$Path = 'C:\Program Files\containerd\containerd.exe'
if (-not (Test-Path -LiteralPath $Path)) {
  'null'
} else {
  $acl = Get-Acl -LiteralPath $Path
  $entries = @($acl.Access | ForEach-Object {
    [pscustomobject]@{ sid = $_.IdentityReference.Translate([System.Security.Principal.SecurityIdentifier]).Value; rights = [string]$_.FileSystemRights; type = [string]$_.AccessControlType; inherited = $_.IsInherited }
  })
  [pscustomobject]@{ protected = $acl.AreAccessRulesProtected; entries = $entries; sddl = [string]$acl.Sddl } | ConvertTo-Json -Compress -Depth 4 | ConvertTo-AsciiJson
}
