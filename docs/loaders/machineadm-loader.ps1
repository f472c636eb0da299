<#
.SYNOPSIS
  machineadm stage-0 loader for Windows answer files (FirstLogonCommands, SetupComplete.cmd).

.DESCRIPTION
  Downloads machineadm from a base URL you choose (a bucket, a mirror, a server in the management
  cluster), checks its SHA-256 against the value pinned in the answer file BEFORE anything runs,
  installs it, then runs it with the arguments given. The hash comes with the answer file, never
  from the place the binary is downloaded from. Windows has no minisign, so the loader pins the
  hash; it installs the published .minisig next to the binary, so that the installed machineadm can
  check its own minisign signature (verify --self, security.requireSignedBinary).

  It takes the gzip copy (<FileName>.gz, a third of the bytes) when the mirror has it, inflating it
  with .NET's GZipStream as it arrives; without it (an HTTP error such as 404), the binary itself.
  Either way the SHA-256 is of the binary, hashed as it is written: the pinned value of the plain
  binary covers both.

  Exit codes: those of machineadm once it runs; before that 1 download failed, 2 bad settings,
  3 the SHA-256 did not match or the .gz did not inflate (nothing was installed or run).

.EXAMPLE
  powershell.exe -NoProfile -ExecutionPolicy Bypass -File C:\machineadm\loader.ps1 `
    -BaseUrl https://bucket.example/machineadm/v0.1.0 `
    -Sha256 0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef `
    -Arguments 'init -c C:\ProgramData\machineadm\config.yaml'
#>
[CmdletBinding()]
param(
  # Not Mandatory: PowerShell would prompt for a missing one, and an unattended first logon would
  # wait there forever instead of ending with exit 2. Both are checked below.
  [string] $BaseUrl = '',
  [string] $Sha256 = '',
  [string] $FileName = 'machineadm-windows-x64.exe',
  [string] $Destination = (Join-Path $env:ProgramFiles 'machineadm\machineadm.exe'),
  # One string, split at spaces: `powershell -File` cannot pass an array (paths without spaces).
  [string] $Arguments = 'init',
  [int] $Attempts = 5,
  # A download that sends nothing for this long is given up and tried again, like one that breaks off.
  [int] $StallSeconds = 60
)

Set-StrictMode -Version Latest
$ErrorActionPreference = 'Stop'
# The progress display makes Invoke-WebRequest many times slower on Windows PowerShell 5.1.
$ProgressPreference = 'SilentlyContinue'

function Stop-Loader([int] $Code, [string] $Message) {
  [Console]::Error.WriteLine("machineadm-loader: error: $Message")
  exit $Code
}

if ($BaseUrl -notmatch '^https?://') {
  Stop-Loader 2 "-BaseUrl must be an http:// or https:// URL (where $FileName is), not '$BaseUrl'"
}
$expected = $Sha256.Trim().ToLowerInvariant()
if ($expected -notmatch '^[0-9a-f]{64}$') {
  Stop-Loader 2 "-Sha256 must be 64 hexadecimal characters (the SHA-256 of $FileName)"
}
# Windows PowerShell 5.1 may default to TLS 1.0; object stores and mirrors require 1.2.
[Net.ServicePointManager]::SecurityProtocol = [Net.ServicePointManager]::SecurityProtocol -bor [Net.SecurityProtocolType]::Tls12

$url = $BaseUrl.TrimEnd('/') + '/' + $FileName
# HttpClient streams the response (Invoke-WebRequest writes the whole file first). Windows
# PowerShell 5.1 does not load its assembly by itself.
Add-Type -AssemblyName System.Net.Http
$client = New-Object System.Net.Http.HttpClient

# Why a download of $Uri ends at a redirect HttpClient did not follow (to plain http from https,
# or too many): another try would get the same. The target is said without its user info and
# query, which may carry credentials (a signed URL's).
function Get-RedirectRefusal([string] $Uri, $Got) {
  if (-not $Got.Location) { return "download of ${Uri} failed: HTTP status $($Got.Status) without a location to follow" }
  $to = New-Object Uri([Uri]$Uri, $Got.Location)
  $shown = "$($to.Scheme)://$($to.Authority)$($to.AbsolutePath)"
  if ($to.Scheme -eq 'http' -and $Uri -like 'https:*') {
    return "download of ${Uri} failed: it was redirected to plain http, which an https base URL does not allow (the mirror must redirect to https; it redirected to $shown)"
  }
  return "download of ${Uri} failed: the mirror redirected to $shown (HTTP status $($Got.Status)), which was not followed"
}

# Downloads $Uri into $Path, through GZipStream when $Inflate, hashing what is written on the way
# (a CryptoStream over SHA-256, which passes the bytes through): the bytes are read once. Returns
# the HTTP status and the SHA-256 (lower-case hex) of the file written, or for an answer that is not
# a success its Location (a redirect HttpClient did not follow).
function Receive-Binary([string] $Uri, [string] $Path, [bool] $Inflate) {
  $response = $client.GetAsync($Uri, [Net.Http.HttpCompletionOption]::ResponseHeadersRead).GetAwaiter().GetResult()
  try {
    if (-not $response.IsSuccessStatusCode) { return @{ Status = [int]$response.StatusCode; Sha256 = $null; Location = $response.Headers.Location } }
    $source = $response.Content.ReadAsStreamAsync().GetAwaiter().GetResult()
    if ($Inflate) { $source = New-Object IO.Compression.GZipStream($source, [IO.Compression.CompressionMode]::Decompress) }
    $sha = [Security.Cryptography.SHA256]::Create()
    $hashing = New-Object Security.Cryptography.CryptoStream([IO.File]::Create($Path), $sha, [Security.Cryptography.CryptoStreamMode]::Write)
    # Each read is cancelled after $StallSeconds without a byte: once the headers are in, neither
    # HttpClient's Timeout nor the connection ends a transfer that stalls, and the loader would wait
    # forever instead of trying again.
    $stalled = New-Object Threading.CancellationTokenSource
    $buffer = New-Object byte[] 1048576
    try {
      while ($true) {
        $stalled.CancelAfter([TimeSpan]::FromSeconds($StallSeconds))
        try {
          $count = $source.ReadAsync($buffer, 0, $buffer.Length, $stalled.Token).GetAwaiter().GetResult()
        } catch [OperationCanceledException] {
          throw "no data from $Uri for $StallSeconds s"
        }
        if ($count -eq 0) { break }
        $hashing.Write($buffer, 0, $count)
      }
      $hashing.FlushFinalBlock()
    } finally {
      $hashing.Dispose()
      $source.Dispose()
      $stalled.Dispose()
    }
    return @{ Status = [int]$response.StatusCode; Sha256 = ([BitConverter]::ToString($sha.Hash) -replace '-', '').ToLowerInvariant() }
  } finally {
    $response.Dispose()
  }
}

$work = Join-Path ([IO.Path]::GetTempPath()) ('machineadm-loader-' + [Guid]::NewGuid().ToString('N'))
New-Item -ItemType Directory -Path $work | Out-Null
try {
  $download = Join-Path $work $FileName
  $actual = $null
  foreach ($suffix in @('.gz', '')) {
    $from = "$url$suffix"
    for ($i = 1; $i -le $Attempts -and -not $actual; $i++) {
      try {
        $got = Receive-Binary $from $download ($suffix -eq '.gz')
        if ($got.Sha256) { $actual = $got.Sha256 }
        # A copy the mirror does not have (404; 403 from object stores): the binary itself.
        elseif ($suffix -and $got.Status -ge 400 -and $got.Status -lt 500 -and $got.Status -notin 408, 429) { break }
        elseif ($got.Status -ge 300 -and $got.Status -lt 400) { Stop-Loader 1 (Get-RedirectRefusal $from $got) }
        else { throw "HTTP status $($got.Status)" }
      } catch [IO.InvalidDataException] {
        Stop-Loader 3 "$from does not inflate with GZipStream (damaged, or not what its name says): not installing or running it"
      } catch {
        if ($i -eq $Attempts) { Stop-Loader 1 "download of ${from} failed: $($_.Exception.Message)" }
        Start-Sleep -Seconds (2 * $i)
      }
    }
    if ($actual) { break }
    [Console]::Error.WriteLine("machineadm-loader: no $FileName.gz at $BaseUrl (HTTP $($got.Status)); downloading $FileName")
  }

  if ($actual -ne $expected) {
    Stop-Loader 3 "SHA-256 of $from$(if ($suffix) { ' (inflated)' }) is $actual, expected ${expected}: not installing or running it"
  }
  [Console]::Error.WriteLine("machineadm-loader: verified SHA-256 $actual")

  # The signature the release publishes beside the binary: machineadm checks it itself. A mirror
  # without it still installs, and says that verify --self and requireSignedBinary cannot work.
  $signature = "$download.minisig"
  try {
    Invoke-WebRequest -Uri "$url.minisig" -OutFile $signature -UseBasicParsing
  } catch {
    $signature = $null
    [Console]::Error.WriteLine("machineadm-loader: warning: no signature at ${url}.minisig ($($_.Exception.Message)): machineadm verify --self and security.requireSignedBinary will refuse this installation")
  }

  $dir = Split-Path -Parent $Destination
  if (-not (Test-Path -LiteralPath $dir)) { New-Item -ItemType Directory -Path $dir -Force | Out-Null }
  Move-Item -LiteralPath $download -Destination $Destination -Force
  if ($signature) { Move-Item -LiteralPath $signature -Destination "$Destination.minisig" -Force }
  elseif (Test-Path -LiteralPath "$Destination.minisig") { Remove-Item -LiteralPath "$Destination.minisig" -Force }
} finally {
  Remove-Item -LiteralPath $work -Recurse -Force -ErrorAction SilentlyContinue
}

$argv = @($Arguments -split '\s+' | Where-Object { $_ -ne '' })
# machineadm's exit code is the loader's (4: a restart is needed and the resume is registered).
# Windows PowerShell 5.1 wraps every line a native command writes to stderr in an error record
# (NativeCommandError) when that stderr is redirected, as it is under SetupComplete.cmd's 2>&1 and
# under cloudbase-init's pipes, and applies $ErrorActionPreference to it: with 'Stop' the first
# line machineadm writes to stderr would end this script with exit 1 and hide machineadm's own
# code. PowerShell 7.2 stopped applying the preference to native stderr (PowerShell/PowerShell
# PR #13361, issue #3996); Windows PowerShell 5.1 still does. So machineadm runs under 'Continue':
# its stderr passes through as text and only its exit code decides.
$ErrorActionPreference = 'Continue'
& $Destination @argv
exit $LASTEXITCODE
