#!/bin/sh
# Regenerates user-data.mime (or the file named by $1) from the parts in user-data/ with cloud-init's
# own tool. make-mime writes every part as text/<given type>: the MachineConfig part comes out as
# text/x-machineadm-config (it needs --force, being a type cloud-init does not know), which the
# part handler before it claims, so cloud-init hands it over instead of warning about it.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/user-data.mime}
tmp=$(mktemp)
trap 'rm -f "$tmp" "$tmp.err"' EXIT

# Relative names: make-mime puts them in each part's Content-Disposition filename, which is
# also the name cloud-init gives the shell script when it runs it. The part handler must come
# before the part it claims: cloud-init registers handlers as it meets them.
cd "$here/user-data"
if ! cloud-init devel make-mime --force \
  -a cloud-config.yaml:cloud-config \
  -a prepare.sh:x-shellscript \
  -a machineadm-part-handler.py:part-handler \
  -a machineconfig.yaml:x-machineadm-config >"$tmp" 2>"$tmp.err"; then
  cat "$tmp.err" >&2
  exit 1
fi
cp "$tmp" "$out"
