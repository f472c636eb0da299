#!/bin/sh
# machineadm stage-0 loader (POSIX sh) for cloud-init runcmd, Ignition units or a shell by hand.
#
# Downloads machineadm and its minisign signature from a base URL you choose (a bucket, a mirror
# in an air-gapped site, a server in the management cluster), verifies the signature BEFORE
# anything runs, installs the binary with its .minisig next to it (so `machineadm verify --self`
# and security.requireSignedBinary work later), then runs it with the arguments given.
#
# The public key comes with the user data, never from the place the binary is downloaded from.
# Verification uses minisign when it is installed, otherwise openssl 3 (BLAKE2b-512 of the file,
# then `openssl pkeyutl -verify -rawin` with the ed25519 key): the same checks as minisign, the
# trusted comment included.
#
# Settings (environment):
#   MACHINEADM_BASE_URL  required: where machineadm-linux-<arch> and its .minisig are
#   MACHINEADM_PUBKEY    required: the minisign public key line (56 characters, RW...)
#   MACHINEADM_ARCH      x64 or arm64 (default: from uname -m)
#   MACHINEADM_DEST      where to install (default /usr/local/bin/machineadm)
# Arguments: passed to machineadm (default: init).
#
# Example (cloud-init):
#   runcmd:
#     - [ env, "MACHINEADM_BASE_URL=https://bucket.example/machineadm/v0.1.0",
#         "MACHINEADM_PUBKEY=RWQ...", sh, /var/lib/machineadm/loader.sh, init ]
#
# Exit codes: those of machineadm once it runs; before that 1 download failed, 2 bad settings,
# 3 verification failed (nothing was installed or run).
set -eu

say() { printf 'machineadm-loader: %s\n' "$*" >&2; }
fail() { code=$1; shift; say "error: $*"; exit "$code"; }

base=${MACHINEADM_BASE_URL:-}
key=${MACHINEADM_PUBKEY:-}
dest=${MACHINEADM_DEST:-/usr/local/bin/machineadm}
[ -n "$base" ] || fail 2 "MACHINEADM_BASE_URL is not set (where machineadm-linux-<arch> and its .minisig are)"
[ -n "$key" ] || fail 2 "MACHINEADM_PUBKEY is not set (the minisign public key line, RW...)"
case $key in
  RW*) ;;
  *) fail 2 "MACHINEADM_PUBKEY does not look like a minisign public key line (it starts with RW)" ;;
esac

arch=${MACHINEADM_ARCH:-}
if [ -z "$arch" ]; then
  case $(uname -m) in
    x86_64 | amd64) arch=x64 ;;
    aarch64 | arm64) arch=arm64 ;;
    *) fail 2 "unsupported machine $(uname -m); set MACHINEADM_ARCH" ;;
  esac
fi
name=machineadm-linux-$arch
base=${base%/}

work=$(mktemp -d "${TMPDIR:-/tmp}/machineadm-loader.XXXXXX")
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM

fetch() {
  # $1 URL, $2 output file. A few retries: first boot often races the network.
  if command -v curl >/dev/null 2>&1; then
    curl -fsSL --retry 5 --retry-delay 2 --retry-connrefused -o "$2" "$1"
  elif command -v wget >/dev/null 2>&1; then
    wget -q -t 5 -O "$2" "$1"
  else
    fail 1 "neither curl nor wget is installed"
  fi
}

fetch "$base/$name" "$work/machineadm" || fail 1 "download of $base/$name failed"
fetch "$base/$name.minisig" "$work/machineadm.minisig" || fail 1 "download of $base/$name.minisig failed"

hex() { od -An -v -tx1 | tr -d ' \n'; }
b64d() { openssl base64 -d -A; }
line() { sed -n "$1p" "$work/machineadm.minisig" | tr -d '\r'; }

verify_openssl() {
  command -v openssl >/dev/null 2>&1 || fail 3 "neither minisign nor openssl is installed; cannot verify $name"
  printf '%s' "$key" | b64d >"$work/key.bin" 2>/dev/null || fail 3 "MACHINEADM_PUBKEY is not valid base64"
  line 2 | b64d >"$work/sig.bin" 2>/dev/null || fail 3 "the signature file is damaged (line 2)"
  [ "$(wc -c <"$work/key.bin" | tr -d ' ')" = 42 ] || fail 3 "MACHINEADM_PUBKEY is not a 42-byte minisign ed25519 key"
  [ "$(wc -c <"$work/sig.bin" | tr -d ' ')" = 74 ] || fail 3 "the signature file is damaged (line 2 is not a 74-byte signature)"
  alg=$(dd if="$work/sig.bin" bs=1 count=2 2>/dev/null | hex)
  sigid=$(dd if="$work/sig.bin" bs=1 skip=2 count=8 2>/dev/null | hex)
  keyid=$(dd if="$work/key.bin" bs=1 skip=2 count=8 2>/dev/null | hex)
  [ "$sigid" = "$keyid" ] || fail 3 "the signature was made with key id $sigid, not with the key given (id $keyid)"
  # DER SubjectPublicKeyInfo of an ed25519 key: a fixed 12-byte prefix, then the raw 32 bytes.
  { printf '\060\052\060\005\006\003\053\145\160\003\041\000'; dd if="$work/key.bin" bs=1 skip=10 count=32 2>/dev/null; } >"$work/key.der"
  dd if="$work/sig.bin" bs=1 skip=10 count=64 2>/dev/null >"$work/sig64.bin"
  case $alg in
    4544) openssl dgst -blake2b512 -binary "$work/machineadm" >"$work/message" ;;  # "ED": prehashed
    4564) cp "$work/machineadm" "$work/message" ;;                                   # "Ed": legacy
    *) fail 3 "the signature uses an unknown algorithm" ;;
  esac
  openssl pkeyutl -verify -pubin -inkey "$work/key.der" -keyform DER -rawin -in "$work/message" -sigfile "$work/sig64.bin" >/dev/null 2>&1 ||
    fail 3 "signature verification FAILED for $base/$name: not installing or running it"
  # The trusted comment is signed too (signature bytes followed by the comment bytes).
  tc=$(line 3)
  case $tc in
    "trusted comment: "*) ;;
    *) fail 3 "the signature file has no trusted comment (line 3)" ;;
  esac
  { cat "$work/sig64.bin"; printf '%s' "${tc#trusted comment: }"; } >"$work/global"
  line 4 | b64d >"$work/global.sig" 2>/dev/null || fail 3 "the signature file is damaged (line 4)"
  openssl pkeyutl -verify -pubin -inkey "$work/key.der" -keyform DER -rawin -in "$work/global" -sigfile "$work/global.sig" >/dev/null 2>&1 ||
    fail 3 "the trusted comment of the signature was changed: not installing or running $name"
  say "verified with openssl: ${tc#trusted comment: }"
}

if command -v minisign >/dev/null 2>&1; then
  out=$(minisign -V -P "$key" -m "$work/machineadm" -x "$work/machineadm.minisig" 2>&1) ||
    fail 3 "signature verification FAILED for $base/$name: not installing or running it (minisign: $(printf '%s' "$out" | tail -n 1))"
  say "verified with minisign: $(line 3 | sed 's/^trusted comment: //')"
else
  verify_openssl
fi

# Installed only now, with its signature next to it: both are written beside their final names,
# synced, then renamed (atomic within the directory), so a crash never leaves a partial file. A
# rerun of the loader downloads and installs both again.
mkdir -p "$(dirname "$dest")"
cp "$work/machineadm" "$dest.loader-tmp"
chmod 0755 "$dest.loader-tmp"
cp "$work/machineadm.minisig" "$dest.minisig.loader-tmp"
sync
mv -f "$dest.minisig.loader-tmp" "$dest.minisig"
mv -f "$dest.loader-tmp" "$dest"

[ "$#" -gt 0 ] || set -- init
rm -rf "$work"
trap - EXIT
exec "$dest" "$@"
