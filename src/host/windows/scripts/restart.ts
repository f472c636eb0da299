// The restart action: a planned, logged restart with time left for machineadm to save its state.

// shutdown.exe /r with a planned reason code (p:4:1, application maintenance) and a comment,
// after 5 s so machineadm can finish writing its state. [shutdown.md]
export const RESTART = String.raw`
& shutdown.exe /r /t 5 /d p:4:1 /c $Comment | Out-Null
if ($LASTEXITCODE -ne 0) { throw ('shutdown.exe exited with code ' + $LASTEXITCODE) }
'{}'
`;
