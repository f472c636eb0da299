# machineadm once Windows Setup has finished, for SetupComplete.cmd: that script runs while Setup is
# still going, where nothing may restart the machine (Microsoft, "Add a custom script to Windows
# Setup"), so it only starts this script as a task of its own (SYSTEM). This script waits until
# Setup says it is done (HKLM\SOFTWARE\Microsoft\Windows\CurrentVersion\Setup\State, ImageState
# IMAGE_STATE_COMPLETE), then runs the loader beside it with init; a step that needs a restart
# (the Containers feature) restarts the machine through machineadm itself, which resumes from its
# own startup task (contract section 4). The task is removed once machineadm has ended, whatever
# its exit code; until then a power cut starts it again at the next boot.
# Replace the base URL and the SHA-256 of machineadm-windows-x64.exe (from SHA256SUMS) with your
# release's. Its output goes to machineadm.log beside it.
param(
  [int] $WaitMinutes = 60,
  [int] $PollSeconds = 5
)
$ErrorActionPreference = 'Stop'
$log = Join-Path $PSScriptRoot 'machineadm.log'
$task = 'machineadm-after-setup'
$state = 'HKLM:\SOFTWARE\Microsoft\Windows\CurrentVersion\Setup\State'
$deadline = (Get-Date).AddMinutes($WaitMinutes)
while ((Get-ItemProperty -LiteralPath $state -Name ImageState -ErrorAction SilentlyContinue).ImageState -ne 'IMAGE_STATE_COMPLETE') {
  if ((Get-Date) -gt $deadline) {
    Add-Content -LiteralPath $log -Value "Windows Setup did not finish within $WaitMinutes minutes: machineadm did not run (the task runs again at the next boot)"
    exit 1
  }
  Start-Sleep -Seconds $PollSeconds
}
# machineadm writes to stderr; its exit code is what counts (see the loader).
$ErrorActionPreference = 'Continue'
$loader = @{
  BaseUrl = 'https://bucket.example/machineadm/v0.1.0'
  Sha256 = '0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef'
  Arguments = 'init -c C:\ProgramData\machineadm\config.yaml'
}
# The loader writes its messages (why it ran no machineadm: a download that failed, a SHA-256 that
# did not match) to the process's standard error itself, past any redirection in this process: it
# runs as a process of its own, whose output, and machineadm's, goes to the log line by line.
$argv = @('-NoProfile', '-NonInteractive', '-ExecutionPolicy', 'Bypass', '-File', (Join-Path $PSScriptRoot 'machineadm-loader.ps1'))
foreach ($name in @('BaseUrl', 'Sha256', 'Arguments')) { $argv += @("-$name", $loader[$name]) }
& powershell.exe @argv 2>&1 | ForEach-Object { [string]$_ } | Add-Content -LiteralPath $log
$code = $LASTEXITCODE
Add-Content -LiteralPath $log -Value "machineadm exit code $code"
Unregister-ScheduledTask -TaskName $task -Confirm:$false
exit $code
