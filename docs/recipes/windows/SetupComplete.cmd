@echo off
rem machineadm from SetupComplete.cmd: Windows Setup runs %WINDIR%\Setup\Scripts\SetupComplete.cmd
rem as SYSTEM once setup has finished, before anyone logs on. Put docs\loaders\machineadm-loader.ps1
rem next to this file and the MachineConfig at C:\ProgramData\machineadm\config.yaml; replace the base
rem URL and the SHA-256 of machineadm-windows-x64.exe (from SHA256SUMS) with your release's.
rem When a step needs a restart, machineadm registers its own startup task, restarts the machine and
rem resumes (contract section 4, Reboot and resume). Setup ignores the exit code; the log keeps it.
powershell.exe -NoProfile -NonInteractive -ExecutionPolicy Bypass -File "%WINDIR%\Setup\Scripts\machineadm-loader.ps1" -BaseUrl https://bucket.example/machineadm/v0.1.0 -Sha256 0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef -Arguments "init -c C:\ProgramData\machineadm\config.yaml" >> "%WINDIR%\Setup\Scripts\machineadm.log" 2>&1
echo machineadm exit code %ERRORLEVEL% >> "%WINDIR%\Setup\Scripts\machineadm.log"
exit /b 0
