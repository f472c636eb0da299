// The boot-identity action: how machineadm tells that the machine restarted since it last looked.

// LastBootUpTime is documented (Win32_OperatingSystem); BootId (a per-boot counter in the
// registry) is not, so both are read and either one changing means the machine restarted.
// [Win32_OperatingSystem class; PrefetchParameters\BootId: no Microsoft documentation]
export const BOOT_IDENTITY = String.raw`
$os = Get-CimInstance -ClassName Win32_OperatingSystem
$prefetch = Get-ItemProperty -LiteralPath 'HKLM:\SYSTEM\CurrentControlSet\Control\Session Manager\Memory Management\PrefetchParameters' -Name BootId -ErrorAction SilentlyContinue
$bootId = $null
if ($null -ne $prefetch) { $bootId = [string]$prefetch.BootId }
[pscustomobject]@{ bootId = $bootId; lastBootUpTime = $os.LastBootUpTime.ToUniversalTime().ToString('o'); build = [string]$os.BuildNumber } | ConvertTo-Json -Compress | ConvertTo-AsciiJson
`;
