// The computer-system action: whether and where the machine is joined, for the domain steps.

// [Win32_ComputerSystem class: PartOfDomain, Domain, Name]
export const COMPUTER_SYSTEM = String.raw`
$system = Get-CimInstance -ClassName Win32_ComputerSystem
[pscustomobject]@{ partOfDomain = [bool]$system.PartOfDomain; domain = [string]$system.Domain; name = [string]$system.Name } | ConvertTo-Json -Compress | ConvertTo-AsciiJson
`;
