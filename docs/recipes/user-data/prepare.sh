#!/bin/sh
# The shell script part of user-data.mime: site preparation that is not machineadm's job.
# cloud-init runs the scripts in /var/lib/cloud/instance/scripts/ in name order in its final
# stage, so this one (prepare.sh) runs before the cloud-config part's runcmd (machineadm).
set -eu
# The kubelet does not start with swap on (unless configured for swap).
swapoff -a
sed -i.bak -E 's/^([^#].*[[:space:]]swap[[:space:]].*)$/#\1/' /etc/fstab
