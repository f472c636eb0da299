# machineadm domain.leave
$ErrorActionPreference = 'Stop'
$ProgressPreference = 'SilentlyContinue'
filter ConvertTo-AsciiJson { [regex]::Replace([string]$_, '[^\x00-\x7F]', { '\u{0:x4}' -f [int][char]$args[0].Value }) }
$User = 'CORP\k8s-joiner'
$Workgroup = 'WORKGROUP'
$Server = 'dc1.corp.example'
$Action = 'domain.leave'
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
  $failure = $_
  $message = [string]$failure.Exception.Message
  $code = $null
  for ($e = $failure.Exception; $null -ne $e -and $null -eq $code; $e = $e.InnerException) {
    if ($e -is [System.ComponentModel.Win32Exception]) { $code = $e.NativeErrorCode }
  }
  foreach ($known in @(5, 53, 86, 1311, 1317, 1326, 1327, 1330, 1331, 1355, 1398, 1722, 1909, 2221, 2224, 2453, 2691, 2692, 2732, 8557)) {
    if ($null -ne $code) { break }
    $text = (New-Object System.ComponentModel.Win32Exception($known)).Message
    if ($message.Contains($text)) { $code = $known }
  }
  [pscustomobject]@{ left = $false; errorId = [string]$failure.FullyQualifiedErrorId; code = $code; message = $message } | ConvertTo-Json -Compress | ConvertTo-AsciiJson
}
