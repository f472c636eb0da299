#!/usr/bin/env bash
# Unpacks Debian unstable's containerd 2.x into DIR (default .build/containerd2) without touching
# the system's package sources, and prints the path of its containerd binary. Used to check
# machineadm's config version 3 against a real containerd 2.x; fails quietly (exit 1) when the
# package cannot be had. The archive is the one this machine's own apt sources name for its
# release (a mirror or proxy of the site), asked for unstable instead.
set -euo pipefail
dir=$(realpath -m "${1:-.build/containerd2}")
if [ -x "$dir/root/usr/bin/containerd" ]; then echo "$dir/root/usr/bin/containerd"; exit 0; fi
mkdir -p "$dir/lists/partial" "$dir/cache/archives/partial"
# The main archive of the machine's release: not its -security, -updates or -backports suites.
archive=$(apt-get indextargets --format '$(REPO_URI) $(RELEASE) $(COMPONENT)' 'Created-By: Packages' |
  awk '$3 == "main" && $2 !~ /-(security|updates|backports|proposed-updates)$/ { print $1; exit }')
[ -n "$archive" ] || { echo "no Debian archive with a main component in this machine's apt sources" >&2; exit 1; }
cat > "$dir/sid.sources" <<SRC
Types: deb
URIs: $archive
Suites: sid
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
apt_opts=(-o "Dir::Etc::SourceList=$dir/sid.sources" -o Dir::Etc::SourceParts=/dev/null
  -o "Dir::State::Lists=$dir/lists" -o "Dir::Cache=$dir/cache" -o Debug::NoLocking=1 -qq)
apt-get "${apt_opts[@]}" update >&2
(cd "$dir" && apt-get "${apt_opts[@]}" download containerd >&2 2>/dev/null) || true
debs=("$dir"/containerd_2.*.deb)
deb=${debs[0]}
[ -e "$deb" ] || { echo "no containerd 2.x package in Debian unstable" >&2; exit 1; }
dpkg-deb -x "$deb" "$dir/root"
rm -rf "$dir/lists" "$dir/cache" "$deb"
echo "$dir/root/usr/bin/containerd"
