#!/usr/bin/env bash
# Trust benchmarks, measured in one run on this machine, next to the standard tools:
#   1. time of `machineadm verify` of a 100 MB file next to `minisign -V` (same file, signature, key)
#   2. peak memory (max RSS) of `machineadm fetch` of a 1 GB file from 127.0.0.1 next to `curl -o`
# Prints the numbers; it is not a test. Needs minisign, curl, GNU time (/usr/bin/time).
#
#   scripts/bench-trust.sh [--binary dist/machineadm-linux-x64] [--verify-mb 100] [--fetch-mb 1024]
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

binary=$root/dist/machineadm-linux-x64
verify_mb=100
fetch_mb=1024
while [ $# -gt 0 ]; do
  case $1 in
    --binary) binary=$(realpath "$2"); shift 2 ;;
    --verify-mb) verify_mb=$2; shift 2 ;;
    --fetch-mb) fetch_mb=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
for tool in minisign curl /usr/bin/time; do
  command -v "$tool" >/dev/null || { echo "bench-trust: needs $tool" >&2; exit 2; }
done
node=$root/node_modules/.bin/node
if [ -x "$binary" ]; then
  machineadm=("$binary")
  what="packaged binary $(basename "$binary")"
else
  machineadm=("$node" "$root/bin/machineadm.js")
  what="from source (node bin/machineadm.js; no packaged binary at $binary)"
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/bench-trust.XXXXXX")
server_pid=
cleanup() {
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

measure() { # label, command...: prints elapsed seconds and max RSS
  local label=$1; shift
  if ! /usr/bin/time -f '%e %M' -o "$work/time" "$@" >/dev/null 2>"$work/stderr"; then
    echo "bench-trust: $label failed:" >&2
    cat "$work/stderr" >&2
    exit 1
  fi
  read -r secs kib <"$work/time"
  awk -v l="$label" -v s="$secs" -v k="$kib" 'BEGIN { printf "  %-44s %7.2f s   max RSS %7.1f MiB\n", l, s, k / 1024 }'
}

echo "machineadm: $what"
echo "machine: $(nproc) CPUs, $(uname -m), $(minisign -v 2>&1 | head -n1), $(curl --version | head -n1 | cut -d' ' -f1-2)"

echo
echo "1. verify a ${verify_mb} MB file (prehashed signature, made by minisign)"
head -c "$((verify_mb * 1000 * 1000))" /dev/urandom >"$work/file"
minisign -G -W -p "$work/k.pub" -s "$work/k.key" >/dev/null
minisign -S -s "$work/k.key" -m "$work/file" >/dev/null
# One untimed pass of each, so both read the file from the page cache.
minisign -V -q -p "$work/k.pub" -m "$work/file"
"${machineadm[@]}" verify "$work/file" -p "$work/k.pub" -q
for _ in 1 2 3; do
  measure "minisign -V" minisign -V -q -p "$work/k.pub" -m "$work/file"
  measure "machineadm verify" "${machineadm[@]}" verify "$work/file" -p "$work/k.pub" -q
done
rm -f "$work/file" "$work/file.minisig"

echo
echo "2. fetch a ${fetch_mb} MiB file from 127.0.0.1 (sha256 checked by machineadm)"
mkdir "$work/srv"
head -c "$((fetch_mb * 1024 * 1024))" /dev/urandom >"$work/srv/big"
sha=$(sha256sum "$work/srv/big" | cut -d' ' -f1)
"$node" -e '
  const http = require("node:http"), fs = require("node:fs");
  const file = process.argv[1], size = fs.statSync(file).size;
  const server = http.createServer((req, res) => {
    res.writeHead(200, { "content-length": size });
    fs.createReadStream(file).pipe(res);
  });
  server.listen(0, "127.0.0.1", () => console.log(server.address().port));
' "$work/srv/big" >"$work/port" &
server_pid=$!
for _ in $(seq 50); do [ -s "$work/port" ] && break; sleep 0.1; done
url="http://127.0.0.1:$(cat "$work/port")/big"
measure "curl -o" curl -fsS -o "$work/curl.out" "$url"
rm -f "$work/curl.out"
measure "machineadm fetch --sha256" "${machineadm[@]}" fetch "$url" -d "$work/fetched" --sha256 "$sha"
cmp -s "$work/fetched" "$work/srv/big" || { echo "bench-trust: fetched file differs" >&2; exit 1; }
