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
# The binary comes compressed when the mirror has it and this machine can inflate it:
# machineadm-linux-<arch>.zst with zstd (a quarter of the bytes), else .gz with gzip (a third),
# inflated as it arrives; a compressed file the mirror does not have (an HTTP error such as 404)
# makes the loader take the next form, down to the plain binary. What is verified is always the
# inflated binary, against the plain binary's signature: the compressed files need none of their own.
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
# 3 verification failed or a compressed file did not inflate (nothing was installed or run).
set -eu
# What it creates (the install folder, the binary, its .minisig) must not be writable by others
# whatever umask it was started with: someone who can write the binary between its verification
# and its run decides what runs. machineadm gets the umask the loader was given.
given_umask=$(umask)
umask 022

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
# Another name (amd64, aarch64: what other tools call them) is a file no release has: a setting to
# fix, not a download to retry.
case $arch in
  x64 | arm64) ;;
  *) fail 2 "MACHINEADM_ARCH must be x64 or arm64, not '$arch'" ;;
esac
name=machineadm-linux-$arch
base=${base%/}

work=$(mktemp -d "${TMPDIR:-/tmp}/machineadm-loader.XXXXXX")
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM

# $1 URL, to stdout. curl retries only what fails before the first byte (a refused connection,
# 408, 429, 5xx; a transfer that breaks is not retried), so a retry never appends to bytes already
# in the pipe. First boot often races the network.
if command -v curl >/dev/null 2>&1; then
  get() { curl -fsSL --retry 5 --retry-delay 2 --retry-connrefused "$1"; }
elif command -v wget >/dev/null 2>&1; then
  get() { wget -q -t 5 -O - "$1"; }
else
  fail 1 "neither curl nor wget is installed"
fi

hex() { od -An -v -tx1 | tr -d ' \n'; }
b64d() { openssl base64 -d -A; }
line() { sed -n "$1p" "$work/machineadm.minisig" | tr -d '\r'; }

# The signature first: with openssl, its algorithm says whether the binary can be hashed as it
# arrives (a prehashed "ED" signature signs the BLAKE2b-512 of the file).
get "$base/$name.minisig" >"$work/machineadm.minisig" || fail 1 "download of $base/$name.minisig failed"
prehash=no
if ! command -v minisign >/dev/null 2>&1; then
  command -v openssl >/dev/null 2>&1 || fail 3 "neither minisign nor openssl is installed; cannot verify $name"
  [ "$(line 2 | b64d 2>/dev/null | dd bs=1 count=2 2>/dev/null | hex)" = 4544 ] && prehash=yes
fi

# A pipeline's status is its last command's: each stage writes its own into $work/rc.<stage>.
status_of() {
  stage=$1
  shift
  rc=0
  "$@" || rc=$?
  echo "$rc" >"$work/rc.$stage"
}
# Standard input into $work/machineadm, and its BLAKE2b-512 into $work/message on the way when
# openssl is to verify a prehashed signature (no second pass over the bytes).
keep() {
  if [ "$prehash" = yes ]; then
    status_of keep tee "$work/machineadm" | openssl dgst -blake2b512 -binary >"$work/message"
  else
    status_of keep cat >"$work/machineadm"
  fi
}
# $1 URL, $2 the command that inflates it (empty: none), as it downloads. Returns 0, 4 when the
# server has no such file (an HTTP error), 5 when what came does not inflate, 1 otherwise. What
# curl and the inflater say goes to $work/*.err, shown only when it explains a failure (an empty
# answer to a 404 makes the inflater complain too).
receive() {
  rm -f "$work"/rc.* "$work"/*.err
  if [ -n "$2" ]; then
    status_of get get "$1" 2>"$work/get.err" | status_of inflate $2 2>"$work/inflate.err" | keep
  else
    status_of get get "$1" 2>"$work/get.err" | keep
  fi
  [ "$(cat "$work/rc.keep")" = 0 ] || return 1
  case $(cat "$work/rc.get") in
    # 23 (curl) and 141 (SIGPIPE, wget): it could not write because the inflater stopped reading.
    0 | 23 | 141) [ ! -e "$work/rc.inflate" ] || [ "$(cat "$work/rc.inflate")" = 0 ] || return 5 ;;
    22 | 8) return 4 ;; # curl -f, wget: an HTTP error
    *) return 1 ;;
  esac
}

# The best form this machine can inflate: fewest bytes first (zstd also inflates fastest).
for form in zst gz plain; do
  case $form in
    zst) inflate="zstd -dcq" ;;
    gz) inflate="gzip -dc" ;;
    plain) inflate= ;;
  esac
  [ -z "$inflate" ] || command -v "${inflate%% *}" >/dev/null 2>&1 || continue
  url=$base/$name${inflate:+.$form}
  status=0
  receive "$url" "$inflate" || status=$?
  why=$(tail -n 1 "$work/get.err")
  case $status in
    0) break ;;
    4) [ -n "$inflate" ] || fail 1 "download of $url failed (${why:-HTTP error})"
      say "no $name.$form at $base (${why:-HTTP error}); trying the next form" ;;
    5) cat "$work/inflate.err" >&2
      fail 3 "$url does not inflate with ${inflate%% *} (damaged, or not what its name says): not installing or running it" ;;
    *) fail 1 "download of $url failed${why:+ ($why)}" ;;
  esac
done

verify_openssl() {
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
    4544) [ "$prehash" = yes ] || openssl dgst -blake2b512 -binary "$work/machineadm" >"$work/message" ;;  # "ED": prehashed
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
umask "$given_umask"
exec "$dest" "$@"
