#!/bin/sh
# Regenerates user-data.mime (or the file named by $1) from the three parts in user-data/ with
# cloud-init's own tool. make-mime writes every part as text/<given type>, so the MachineConfig part
# comes out as text/application/machineadm.cluster.x-k8s.io (and needs --force, being a type
# cloud-init does not know); machineadm reads that type as its own.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/user-data.mime}
tmp=$(mktemp)
trap 'rm -f "$tmp" "$tmp.err"' EXIT

# Relative names: make-mime puts them in each part's Content-Disposition filename, which is
# also the name cloud-init gives the shell script when it runs it.
cd "$here/user-data"
if ! cloud-init devel make-mime --force \
  -a cloud-config.yaml:cloud-config \
  -a prepare.sh:x-shellscript \
  -a machineconfig.yaml:application/machineadm.cluster.x-k8s.io >"$tmp" 2>"$tmp.err"; then
  cat "$tmp.err" >&2
  exit 1
fi
cp "$tmp" "$out"
