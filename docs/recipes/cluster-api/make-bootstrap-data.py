#!/usr/bin/env python3
# Regenerates cloud-config.yaml and ignition.json here from machineconfig.yaml and the stage-0 loader
# (docs/loaders/machineadm-loader.sh), so the copies they embed stay identical (the tests check it).
# Edit machineconfig.yaml, the base URL or the key below, then run it.
import os
os.chdir(os.path.dirname(os.path.abspath(__file__)))
import json, base64
loader = open('../../loaders/machineadm-loader.sh').read()
mc = open('machineconfig.yaml').read()
def block(text, indent):
    return ''.join((' ' * indent + l if l else '') + '\n' for l in text.split('\n')[:-1])
base = "https://releases.example/machineadm/v0.1.0"
key = "RWQf6LRCGA9i53mlYecO4IzT51TGPpvWucNSCh1CBM0QTaLn73Y7GFO3"
cc = """#cloud-config
# Bootstrap data for a Cluster API Machine, `format: cloud-config` (the secret's `value`).
# The stage-0 loader downloads machineadm, checks its minisign signature against the key below,
# installs it and runs `machineadm init`; machineadm writes /run/cluster-api/bootstrap-success.complete
# only after a clean join. Replace the base URL and the public key with your release's.
write_files:
  - path: /var/lib/machineadm/loader.sh
    permissions: '0700'
    owner: root:root
    content: |
""" + block(loader, 6) + """  - path: /etc/machineadm/config.yaml
    permissions: '0600'
    owner: root:root
    content: |
""" + block(mc, 6) + """runcmd:
  # cloud-init runs this in its final stage (cloud-final, module scripts_user), after every
  # other module; write_files wrote both files earlier, in the init stage.
  - [env, "MACHINEADM_BASE_URL=%s", "MACHINEADM_PUBKEY=%s", sh, /var/lib/machineadm/loader.sh, init]
""" % (base, key)
open('cloud-config.yaml','w').write(cc)
unit = """[Unit]
Description=Turn this machine into a Kubernetes node (machineadm, through the stage-0 loader)
Wants=network-online.target
After=network-online.target containerd.service

[Service]
Type=oneshot
RemainAfterExit=yes
Environment=MACHINEADM_BASE_URL=%s
Environment=MACHINEADM_PUBKEY=%s
ExecStart=/bin/sh /var/lib/machineadm/loader.sh init

[Install]
WantedBy=multi-user.target
""" % (base, key)
def f(path, mode, text):
    return {"path": path, "mode": mode, "overwrite": True, "contents": {"source": "data:;base64," + base64.b64encode(text.encode()).decode()}}
ign = {
  "ignition": {"version": "3.3.0"},
  "storage": {"files": [f("/var/lib/machineadm/loader.sh", 0o700, loader), f("/etc/machineadm/config.yaml", 0o600, mc)]},
  "systemd": {"units": [{"name": "machineadm.service", "enabled": True, "contents": unit}]},
}
open('ignition.json','w').write(json.dumps(ign, indent=2) + '\n')
