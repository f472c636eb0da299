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

  Exit codes: those of machineadm once it runs; before that 1 download failed, 2 bad settings,
  3 the SHA-256 did not match (nothing was installed or run).

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
  [int] $Attempts = 5
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
$work = Join-Path ([IO.Path]::GetTempPath()) ('machineadm-loader-' + [Guid]::NewGuid().ToString('N'))
New-Item -ItemType Directory -Path $work | Out-Null
try {
  $download = Join-Path $work $FileName
  $done = $false
  for ($i = 1; $i -le $Attempts -and -not $done; $i++) {
    try {
      Invoke-WebRequest -Uri $url -OutFile $download -UseBasicParsing
      $done = $true
    } catch {
      if ($i -eq $Attempts) { Stop-Loader 1 "download of ${url} failed: $($_.Exception.Message)" }
      Start-Sleep -Seconds (2 * $i)
    }
  }

  $actual = (Get-FileHash -Algorithm SHA256 -LiteralPath $download).Hash.ToLowerInvariant()
  if ($actual -ne $expected) {
    Stop-Loader 3 "SHA-256 of $url is $actual, expected ${expected}: not installing or running it"
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
