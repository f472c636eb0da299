@echo off
rem machineadm from SetupComplete.cmd: Windows Setup runs %WINDIR%\Setup\Scripts\SetupComplete.cmd
rem as SYSTEM before anyone logs on, while Setup is still going. Nothing may restart the machine
rem while it runs, nor be set to restart it from here (Microsoft, "Add a custom script to Windows
rem Setup": it leaves Windows in a bad state). So this script only registers and starts a task
rem (SYSTEM, also at startup until it has run) for machineadm-after-setup.ps1, which waits until
rem Setup has finished and then runs machineadm, which restarts the machine itself when a step needs
rem it and resumes after (contract section 4, Reboot and resume). Put machineadm-after-setup.ps1 and
rem docs\loaders\machineadm-loader.ps1 next to this file and the MachineConfig at
rem C:\ProgramData\machineadm\config.yaml. Setup ignores the exit code; the log keeps what happened.
schtasks.exe /Create /F /TN machineadm-after-setup /RU SYSTEM /RL HIGHEST /SC ONSTART /TR "powershell.exe -NoProfile -NonInteractive -ExecutionPolicy Bypass -File %WINDIR%\Setup\Scripts\machineadm-after-setup.ps1" >> "%WINDIR%\Setup\Scripts\machineadm.log" 2>&1
schtasks.exe /Run /TN machineadm-after-setup >> "%WINDIR%\Setup\Scripts\machineadm.log" 2>&1
exit /b 0
