@echo off
rem machineadm from SetupComplete.cmd: Windows Setup runs %WINDIR%\Setup\Scripts\SetupComplete.cmd
rem as SYSTEM once setup has finished, before anyone logs on. Put docs\loaders\machineadm-loader.ps1
rem next to this file and the MachineConfig at C:\ProgramData\machineadm\config.yaml; replace the base
rem URL and the SHA-256 of machineadm-windows-x64.exe (from SHA256SUMS) with your release's.
rem A restart must never happen while SetupComplete.cmd runs (Microsoft, "Add a custom script to
rem Windows Setup": a restart during it leaves Windows in a bad state). So machineadm runs with
rem --no-reboot: when a step needs a restart it registers its startup task and exits 4, and this
rem script asks Windows for the restart with a delay (shutdown.exe returns at once): the script
rem ends, Setup finishes, then Windows restarts and machineadm resumes (contract section 4, Reboot
rem and resume). Setup ignores the exit code; the log keeps it.
powershell.exe -NoProfile -NonInteractive -ExecutionPolicy Bypass -File "%WINDIR%\Setup\Scripts\machineadm-loader.ps1" -BaseUrl https://bucket.example/machineadm/v0.1.0 -Sha256 0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef -Arguments "init -c C:\ProgramData\machineadm\config.yaml --no-reboot" >> "%WINDIR%\Setup\Scripts\machineadm.log" 2>&1
set MACHINEADM_EXIT=%ERRORLEVEL%
echo machineadm exit code %MACHINEADM_EXIT% >> "%WINDIR%\Setup\Scripts\machineadm.log"
if %MACHINEADM_EXIT% EQU 4 shutdown.exe /r /t 60 /d p:4:1 /c "machineadm: restart to finish preparing this node; it resumes at boot" >> "%WINDIR%\Setup\Scripts\machineadm.log" 2>&1
exit /b 0
