// The domain actions (domain.join, domain.join-offline, domain.leave, domain.leave-local): the
// only scripts that take a secret, so the password handling and the Win32 failure codes they share
// stay together.

// Win32 codes the join and leave actions name (NetJoinDomain / JoinDomainOrWorkgroup /
// UnjoinDomainOrWorkgroup and the logon errors they pass on); src/domain/windows-join.ts says what
// each means to the operator.
export const JOIN_ERROR_CODES = [5, 53, 86, 1311, 1317, 1326, 1327, 1330, 1331, 1355, 1398, 1722, 1909, 2221, 2224, 2453, 2691, 2692, 2732, 8557] as const;

// The password from standard input into a PSCredential for $User (domain.join, domain.leave).
const CREDENTIAL_FROM_STDIN = String.raw`
$hex = [string]((@($input) -join '').Trim())
if ($hex.Length -eq 0 -or $hex.Length % 2 -ne 0) { throw ($Action + ': no password on standard input') }
$bytes = New-Object byte[] ($hex.Length / 2)
for ($i = 0; $i -lt $bytes.Length; $i++) { $bytes[$i] = [Convert]::ToByte($hex.Substring(2 * $i, 2), 16) }
$chars = [System.Text.Encoding]::UTF8.GetChars($bytes)
$secure = New-Object System.Security.SecureString
foreach ($c in $chars) { $secure.AppendChar($c) }
$secure.MakeReadOnly()
[Array]::Clear($bytes, 0, $bytes.Length)
[Array]::Clear($chars, 0, $chars.Length)
$hex = $null
$credential = New-Object System.Management.Automation.PSCredential($User, $secure)
`;

// In a catch block: the failed cmdlet's error id, its message and the Win32 code (from a
// Win32Exception inside the error, or by finding Windows' text for a known code in the message),
// printed as the action's result.
const FAILURE_WITH_CODE = String.raw`
  $failure = $_
  $message = [string]$failure.Exception.Message
  $code = $null
  for ($e = $failure.Exception; $null -ne $e -and $null -eq $code; $e = $e.InnerException) {
    if ($e -is [System.ComponentModel.Win32Exception]) { $code = $e.NativeErrorCode }
  }
  foreach ($known in @(${JOIN_ERROR_CODES.join(', ')})) {
    if ($null -ne $code) { break }
    $text = (New-Object System.ComponentModel.Win32Exception($known)).Message
    if ($message.Contains($text)) { $code = $known }
  }
  [pscustomobject]@{ RESULT = $false; errorId = [string]$failure.FullyQualifiedErrorId; code = $code; message = $message } | ConvertTo-Json -Compress | ConvertTo-AsciiJson
`;

// Add-Computer exists only in Windows PowerShell 5.1. Its join failures are non-terminating, so
// -ErrorAction Stop; without -Restart (machineadm restarts through its resume). The password
// arrives on standard input as the hex of its UTF-8 bytes (console input is decoded with a code
// page, so only ASCII travels safely) and goes into a SecureString character by character: it is
// never in the script text, never a cmdlet parameter value (-Credential binds the PSCredential
// object, which module logging writes as its type name), and no base64 or Marshal call (words
// PowerShell logs as suspicious) is needed. The error record wraps an InvalidOperationException
// whose message ends with the Win32 text of the return code, in the machine's language; the code
// is found by comparing that message with the text Windows has for each code it may be.
// [Add-Computer.md (5.1); about_PowerShell_exe.md ($input with -EncodedCommand); about_Logging.md;
// PowerShell Computer.cs (FailToJoinDomainFromWorkgroup, AddComputerToSameDomain);
// JoinDomainOrWorkgroup method of Win32_ComputerSystem (return codes)]
export const DOMAIN_JOIN = String.raw`
$Action = 'domain.join'
${CREDENTIAL_FROM_STDIN.trim()}
$join = @{ DomainName = $Domain; Credential = $credential; Force = $true; ErrorAction = 'Stop'; WarningAction = 'SilentlyContinue' }
if ($OUPath -ne '') { $join.OUPath = $OUPath }
if ($NewName -ne '') { $join.NewName = $NewName }
if ($Server -ne '') { $join.Server = $Server }
try {
  Add-Computer @join
  [pscustomobject]@{ joined = $true } | ConvertTo-Json -Compress | ConvertTo-AsciiJson
} catch {
${FAILURE_WITH_CODE.replace('RESULT', 'joined').replace(/^\n|\n$/g, '')}
}
`;

// djoin /requestODJ queues the join of the running OS (/localos) for its next boot from a blob
// made by djoin /provision; /windowspath is %SystemRoot%. Its exit code is a Win32 code (0 is
// success); its output goes back for the report. Windows PowerShell 5.1 turns a native command's
// redirected stderr lines into error records, which 'Stop' would make terminating: the exit code
// decides instead.
// [djoin (Windows commands, Offline Domain Join step-by-step guide); about_Redirection.md]
export const DOMAIN_JOIN_OFFLINE = String.raw`
$ErrorActionPreference = 'Continue'
$output = & djoin.exe /requestODJ /loadfile $BlobPath /windowspath $env:SystemRoot /localos 2>&1 | ForEach-Object { [string]$_ } | Out-String
$code = $LASTEXITCODE
$ErrorActionPreference = 'Stop'
[pscustomobject]@{ joined = ($code -eq 0); code = $code; message = [string]$output } | ConvertTo-Json -Compress | ConvertTo-AsciiJson
`;

// Remove-Computer (Windows PowerShell 5.1 only) with -UnjoinDomainCredential disables the computer
// account in the directory (UnjoinDomainOrWorkgroup with NETSETUP_ACCT_DELETE) and moves the
// machine to a workgroup; without -Restart (Windows finishes at the next boot; machineadm says a
// restart is needed). With -Force it also falls back, silently, to leaving only locally when no
// domain controller answers (1355, 53): so the domain is asked first (Test-ComputerSecureChannel,
// the machine's secure channel to a domain controller), and a machine that cannot reach one
// reports that instead of leaving, for the caller to leave locally and say the account stays.
// The password arrives as in domain.join. Failures are non-terminating: -ErrorAction Stop.
// [Remove-Computer.md (5.1); Test-ComputerSecureChannel.md (5.1); PowerShell Computer.cs
// (RemoveComputerCommand: FUnjoinOptions 4, the retry with 0 under -Force, FailToUnjoinDomain);
// UnjoinDomainOrWorkgroup method of Win32_ComputerSystem]
export const DOMAIN_LEAVE = String.raw`
$Action = 'domain.leave'
${CREDENTIAL_FROM_STDIN.trim()}
$probe = @{ ErrorAction = 'Stop' }
if ($Server -ne '') { $probe.Server = $Server }
$reachable = $false
$why = ''
try { $reachable = [bool](Test-ComputerSecureChannel @probe) } catch { $why = [string]$_.Exception.Message }
if (-not $reachable) {
  [pscustomobject]@{ left = $false; reachable = $false; message = $why } | ConvertTo-Json -Compress | ConvertTo-AsciiJson
  return
}
try {
  Remove-Computer -UnjoinDomainCredential $credential -WorkgroupName $Workgroup -Force -ErrorAction Stop -WarningAction SilentlyContinue
  [pscustomobject]@{ left = $true; reachable = $true } | ConvertTo-Json -Compress | ConvertTo-AsciiJson
} catch {
${FAILURE_WITH_CODE.replace('RESULT', 'left').replace(/^\n|\n$/g, '')}
}
`;

// (PowerShell's variable names ignore case: none of the script's own may be $workgroup.)
// Leaving only on this machine, as Remove-Computer does when no domain controller answers: the
// Win32_ComputerSystem methods with no account (UnjoinDomainOrWorkgroup with no options leaves
// the computer account in the directory as it is), then the workgroup. ReturnValue 0 is success.
// [UnjoinDomainOrWorkgroup and JoinDomainOrWorkgroup methods of Win32_ComputerSystem; PowerShell
// Computer.cs (RemoveComputerCommand)]
export const DOMAIN_LEAVE_LOCAL = String.raw`
$system = Get-CimInstance -ClassName Win32_ComputerSystem
if (-not $system.PartOfDomain) {
  [pscustomobject]@{ left = $true } | ConvertTo-Json -Compress | ConvertTo-AsciiJson
  return
}
$unjoin = Invoke-CimMethod -InputObject $system -MethodName UnjoinDomainOrWorkgroup -Arguments @{ FUnjoinOptions = [uint32]0 }
if ($unjoin.ReturnValue -ne 0) {
  [pscustomobject]@{ left = $false; code = [int]$unjoin.ReturnValue; message = 'UnjoinDomainOrWorkgroup returned ' + [string]$unjoin.ReturnValue } | ConvertTo-Json -Compress | ConvertTo-AsciiJson
  return
}
$moved = Invoke-CimMethod -InputObject $system -MethodName JoinDomainOrWorkgroup -Arguments @{ Name = $Workgroup; FJoinOptions = [uint32]0 }
if ($moved.ReturnValue -ne 0) { throw ('left the domain, but JoinDomainOrWorkgroup ' + $Workgroup + ' returned ' + [string]$moved.ReturnValue) }
[pscustomobject]@{ left = $true } | ConvertTo-Json -Compress | ConvertTo-AsciiJson
`;
