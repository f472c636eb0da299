// The containerd.register action: containerd registers its own Windows service, with flags only
// it knows how to bake in.

// containerd.exe --register-service creates service "containerd" (Automatic, restart 15 s twice)
// with the other flags baked in after --run-service; it neither starts the service nor keeps
// output without --log-file, and fails when the service exists.
// [containerd cmd/containerd/command/service_windows.go]
export const CONTAINERD_REGISTER = String.raw`
& $Executable --register-service --config $Config --log-file $LogFile | Out-Null
if ($LASTEXITCODE -ne 0) { throw ('containerd --register-service exited with code ' + $LASTEXITCODE) }
'{}'
`;
