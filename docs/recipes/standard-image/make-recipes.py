#!/usr/bin/env python3
# Regenerates flatcar.ign.json and debian-cloud-config.yaml here from machineconfig.yaml and the
# stage-0 loader (docs/loaders/machineadm-loader.sh), so the copies they embed stay identical (the
# tests check it). Edit machineconfig.yaml, the base URL or the key below, then run it.
import os
os.chdir(os.path.dirname(os.path.abspath(__file__)))
import json, base64
loader = open('../../loaders/machineadm-loader.sh').read()
mc = open('machineconfig.yaml').read()
base = "https://releases.example/machineadm/v0.1.0"
key = "RWQf6LRCGA9i53mlYecO4IzT51TGPpvWucNSCh1CBM0QTaLn73Y7GFO3"
def block(text, indent):
    return ''.join((' ' * indent + l if l else '') + '\n' for l in text.split('\n')[:-1])
def data(text):
    return 'data:;base64,' + base64.b64encode(text.encode()).decode()

# Flatcar: /usr is read-only, so machineadm goes to /opt/bin (on Flatcar's PATH) and installs
# Kubernetes there too. Flatcar's containerd reads /usr/share/containerd/config.toml unless
# CONTAINERD_CONFIG names another: the drop-in points it at the file machineadm writes.
unit = """[Unit]
Description=Turn this machine into a Kubernetes node (machineadm, through the stage-0 loader)
Wants=network-online.target
After=network-online.target containerd.service

[Service]
Type=oneshot
RemainAfterExit=yes
Environment=MACHINEADM_BASE_URL=%s
Environment=MACHINEADM_PUBKEY=%s
Environment=MACHINEADM_DEST=/opt/bin/machineadm
ExecStart=/bin/sh /var/lib/machineadm/loader.sh init

[Install]
WantedBy=multi-user.target
""" % (base, key)
dropin = """[Service]
Environment=CONTAINERD_CONFIG=/etc/containerd/config.toml
"""
ign = {
    "ignition": {"version": "3.3.0"},
    "storage": {"files": [
        {"path": "/var/lib/machineadm/loader.sh", "mode": 0o700, "overwrite": True, "contents": {"source": data(loader)}},
        {"path": "/etc/machineadm/config.yaml", "mode": 0o600, "overwrite": True, "contents": {"source": data(mc)}},
    ]},
    "systemd": {"units": [
        {"name": "containerd.service", "dropins": [{"name": "10-machineadm-config.conf", "contents": dropin}]},
        {"name": "machineadm.service", "enabled": True, "contents": unit},
    ]},
}
open('flatcar.ign.json', 'w').write(json.dumps(ign, indent=2) + '\n')

cc = """#cloud-config
# A Debian or Ubuntu cloud image as it is published: cloud-init installs containerd from the
# distribution, the stage-0 loader downloads machineadm and checks its signature, and machineadm
# installs Kubernetes (spec.kubernetes.install) and joins. Replace the base URL and the key with
# your release's. Validated with: cloud-init schema --config-file debian-cloud-config.yaml
package_update: true
packages: [containerd]
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
  # The final stage, after packages and write_files.
  - [env, "MACHINEADM_BASE_URL=%s", "MACHINEADM_PUBKEY=%s", sh, /var/lib/machineadm/loader.sh, init]
""" % (base, key)
open('debian-cloud-config.yaml', 'w').write(cc)
