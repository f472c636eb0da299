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
#   MACHINEADM_ATTEMPTS  tries per download (default 5), 2 s, 4 s, ... apart
#   MACHINEADM_STALL_SECONDS  a download that sends nothing for this long is given up and started
#                        again (default 60; curl notices a few seconds late, averaging its speed)
# Arguments: passed to machineadm (default: init).
#
# Behind an https:// base URL every redirect must stay on https: a redirect to plain http is
# refused (exit 1). An http:// base URL (an air-gapped mirror) may redirect to either.
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

attempts=${MACHINEADM_ATTEMPTS:-5}
stall=${MACHINEADM_STALL_SECONDS:-60}
for setting in "MACHINEADM_ATTEMPTS=$attempts" "MACHINEADM_STALL_SECONDS=$stall"; do
  case ${setting#*=} in
    *[!0-9]* | '' | 0 | 0*) fail 2 "${setting%%=*} must be a whole number of at least 1, not '${setting#*=}'" ;;
  esac
done
# A signed older release served over http by someone on the path would verify too: https stays https.
case $base in
  https://*) https_only=yes ;;
  *) https_only=no ;;
esac

work=$(mktemp -d "${TMPDIR:-/tmp}/machineadm-loader.XXXXXX")
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM

# $1 URL, to stdout: one try, no retries of its own (a retry would append to the bytes already in
# the pipe; receive tries again from the start). Ends with 1 (curl's code for a protocol it may
# not use) for a redirect from https to http, and says on its last line of stderr "returned
# error: <status>" for an HTTP error.
if command -v curl >/dev/null 2>&1; then
  get() {
    if [ "$https_only" = yes ]; then set -- --proto-redir =https "$@"; fi
    curl -fsSL --speed-limit 1 --speed-time "$stall" "$@"
  }
elif command -v wget >/dev/null 2>&1; then
  # wget's --https-only holds for recursive downloads only: it follows redirects here one at a
  # time, to check each target before asking it.
  get() {
    at=$1
    hops=0
    while :; do
      wrc=0
      wget -q -S --max-redirect=0 -t 1 -T "$stall" -O - "$at" 2>"$work/wget.log" || wrc=$?
      [ "$wrc" != 0 ] || return 0
      code=$(sed -n 's/^ *HTTP\/[0-9.]* \([0-9][0-9][0-9]\).*/\1/p' "$work/wget.log" | tail -n 1)
      to=$(sed -n 's/^ *[Ll]ocation: *//p' "$work/wget.log" | tail -n 1 | tr -d '\r')
      case $code in
        30[12378]) [ -n "$to" ] && [ "$hops" -lt 10 ] || { echo "wget: ($wrc) $at: a redirect without a location, or more than 10" >&2; return "$wrc"; } ;;
        ?*) echo "wget: ($wrc) The requested URL returned error: $code" >&2; return "$wrc" ;;
        *) echo "wget: ($wrc) $(tail -n 1 "$work/wget.log")" >&2; return "$wrc" ;;
      esac
      case $to in
        *://*) ;;
        //*) to=${at%%//*}$to ;;
        /*) to=$(printf '%s' "$at" | sed 's|^\([^:]*://[^/]*\).*|\1|')$to ;;
        *) to=${at%/*}/$to ;;
      esac
      case $https_only:$to in
        yes:https://* | no:*) ;;
        *) echo "wget: refused the redirect to $to" >&2; return 1 ;;
      esac
      at=$to
      hops=$((hops + 1))
    done
  }
else
  fail 1 "neither curl nor wget is installed"
fi

hex() { od -An -v -tx1 | tr -d ' \n'; }
b64d() { openssl base64 -d -A; }
line() { sed -n "$1p" "$work/machineadm.minisig" | tr -d '\r'; }

# A pipeline's status is its last command's: each stage writes its own into $work/rc.<stage>.
status_of() {
  stage=$1
  shift
  rc=0
  "$@" || rc=$?
  echo "$rc" >"$work/rc.$stage"
}
# Standard input into $1, and its BLAKE2b-512 into $work/message on the way when openssl is to
# verify a prehashed signature (no second pass over the bytes).
keep() {
  if [ "$prehash" = yes ] && [ "$1" = "$work/machineadm" ]; then
    status_of keep tee "$1" | openssl dgst -blake2b512 -binary >"$work/message"
  else
    status_of keep cat >"$1"
  fi
}
# One try: $1 URL into the file $3, through $2, the command that inflates it (empty: none), as it
# downloads; the file and the pipe are new each time. Returns 0, 4 when the server has no such
# file (an HTTP error other than 408, 429, 5xx), 5 when what came does not inflate, 6 for a
# redirect from https to http, 1 otherwise (worth another try). What curl and the inflater say
# goes to $work/*.err, shown only when it explains a failure (an empty answer to a 404 makes the
# inflater complain too).
attempt() {
  rm -f "$work"/rc.* "$work"/*.err
  if [ -n "$2" ]; then
    status_of get get "$1" 2>"$work/get.err" | status_of inflate $2 2>"$work/inflate.err" | keep "$3"
  else
    status_of get get "$1" 2>"$work/get.err" | keep "$3"
  fi
  [ "$(cat "$work/rc.keep")" = 0 ] || return 1
  case $(cat "$work/rc.get") in
    # 23 (curl) and 141 (SIGPIPE, wget): it could not write because the inflater stopped reading.
    0 | 23 | 141) [ ! -e "$work/rc.inflate" ] || [ "$(cat "$work/rc.inflate")" = 0 ] || return 5
      return 0 ;;
    22 | 8) # curl -f, wget: an HTTP error
      case $(sed -n 's/.*returned error: \([0-9][0-9][0-9]\).*/\1/p' "$work/get.err" | tail -n 1) in
        408 | 429 | 5??) return 1 ;;
        *) return 4 ;;
      esac ;;
    1) [ "$https_only" = no ] || return 6 ;;
  esac
  return 1
}
# attempt, up to $attempts times while it returns 1 (a refused connection, a 5xx, a transfer
# that breaks off or stalls: first boot often races the network), each from the start.
receive() {
  try=1
  while :; do
    status=0
    attempt "$@" || status=$?
    why=$(tail -n 1 "$work/get.err")
    [ "$status" = 1 ] && [ "$try" -lt "$attempts" ] || return "$status"
    say "download of $1 failed${why:+ ($why)}; trying again in $((2 * try)) s"
    sleep $((2 * try))
    try=$((try + 1))
  done
}
# Exits 1 with what went wrong for a download that failed with $1 (from receive), $2 its URL.
download_failed() {
  case $1 in
    6) fail 1 "download of $2 failed: it was redirected to plain http, which an https base URL does not allow (the mirror must redirect to https${why:+; $why})" ;;
    *) fail 1 "download of $2 failed${why:+ ($why)}" ;;
  esac
}

# The signature first: with openssl, its algorithm says whether the binary can be hashed as it
# arrives (a prehashed "ED" signature signs the BLAKE2b-512 of the file).
prehash=no
status=0
receive "$base/$name.minisig" "" "$work/machineadm.minisig" || status=$?
[ "$status" = 0 ] || download_failed "$status" "$base/$name.minisig"
if ! command -v minisign >/dev/null 2>&1; then
  command -v openssl >/dev/null 2>&1 || fail 3 "neither minisign nor openssl is installed; cannot verify $name"
  [ "$(line 2 | b64d 2>/dev/null | dd bs=1 count=2 2>/dev/null | hex)" = 4544 ] && prehash=yes
fi

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
  receive "$url" "$inflate" "$work/machineadm" || status=$?
  case $status in
    0) break ;;
    4) [ -n "$inflate" ] || fail 1 "download of $url failed (${why:-HTTP error})"
      say "no $name.$form at $base (${why:-HTTP error}); trying the next form" ;;
    5) cat "$work/inflate.err" >&2
      fail 3 "$url does not inflate with ${inflate%% *} (damaged, or not what its name says): not installing or running it" ;;
    *) download_failed "$status" "$url" ;;
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
