#ps1_sysnative
# machineadm as cloudbase-init user data (the UserDataPlugin, as Windows images for Cluster API
# built with Kubernetes image-builder carry it). cloudbase-init runs this script as SYSTEM at boot
# and reads its exit code: 1003 = restart the machine and run this script again, 1001 = restart and
# do not run it again, 0 = done. With --cloudbase-init, machineadm ends with 1003 when a step needs
# a restart (the Containers feature, a domain join) instead of registering a startup task of its
# own: cloudbase-init owns every restart, and the run after it goes on as the same run.
# The image has machineadm at C:\Program Files\machineadm\machineadm.exe (install it while building
# the image with docs/loaders/machineadm-loader.ps1, which also puts its .minisig next to it).
# Replace the endpoint, token and CA hash with your cluster's.
$ErrorActionPreference = 'Stop'
$config = 'C:\ProgramData\machineadm\config.yaml'
New-Item -ItemType Directory -Force -Path (Split-Path -Parent $config) | Out-Null
# WriteAllText writes UTF-8 without a byte order mark; Set-Content -Encoding UTF8 (5.1) would add one.
[IO.File]::WriteAllText($config, @'
apiVersion: machineadm.cluster.x-k8s.io/v1alpha1
kind: MachineConfig
metadata: { name: windows-worker }
spec:
  containerd:
    sandboxImage: registry.k8s.io/pause:3.10
    registries:
      docker.io:
        mirrors:
          - url: https://mirror.internal.example:5000
  kubernetes:
    role: worker
    bootstrap: join
    version: v1.31.2
    controlPlaneEndpoint: 10.0.0.10:6443
    token: abcdef.0123456789abcdef
    caCertHashes:
      - sha256:6ad3f6c3b1b5a1e2d9c44f0e9b1f1f3e2a8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b
'@)
# cloudbase-init reads this script's output through pipes, so Windows PowerShell 5.1 turns each
# line machineadm writes to stderr into an error record, and under 'Stop' the first one would end
# the script with exit 1 instead of machineadm's 1003 (PowerShell 7.2 no longer does this:
# PowerShell/PowerShell PR #13361, issue #3996). Its exit code alone decides.
$ErrorActionPreference = 'Continue'
& (Join-Path $env:ProgramFiles 'machineadm\machineadm.exe') init -c $config --cloudbase-init
exit $LASTEXITCODE
