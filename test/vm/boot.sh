#!/usr/bin/env bash
# The VM job (issue 39): proves on real boots of a Debian 12 guest under qemu that cloud-init runs
# machineadm from multipart user data (through machineadm's part handler and runcmd), machineadm
# reboots the guest and its resume unit finishes the run, every CloudEvent reaches a collector on
# the host exactly once and in order although the collector was down before the reboot, and
# `machineadm reset` in a later boot gives the guest back as it was. test/vm/check.mjs says what
# each check verifies.
#
#   test/vm/boot.sh      as root, after npm ci; Debian packages: qemu-system-x86 mmdebstrap
#                        dosfstools mtools socat e2fsprogs (.ci/run installs them)
#
# Boots: "init" (cloud-init's first boot; the collector answers 503; machineadm reboots, and qemu,
# started with -no-reboot, ends), "resume" (the resume unit finishes the run; the collector takes
# events), "reset" (vmtest.action=reset on the kernel command line). The guest's network is qemu's
# user networking with restrict=on: it reaches nothing but the collector, at 10.0.2.100:8080.
# Everything lives under .build/vm/: the rootfs, cached by the hash of rootfs.sh; machineadm,
# cached by the hash of its sources; run/, this run's disk, seed, serial logs and what was read
# back from the disk (kept after a failure to look at).
set -euo pipefail
cd "$(dirname "$0")/../.."
# The pinned Node 24 of npm ci: the build needs it, and the guest's kubeadm stand-in runs on it.
export PATH="$PWD/node_modules/.bin:$PATH"

vm=.build/vm
run=$vm/run
boot_timeout=${VM_BOOT_TIMEOUT:-480}   # seconds each boot may take before the job fails

started=$(date +%s.%N)
timings=()
stage_begin() { stage=$1 stage_started=$(date +%s.%N); echo "vm: $stage ..."; }
stage_end() {
  local took
  took=$(awk -v a="$stage_started" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
  timings+=("$(printf '%-28s %7ss' "$stage" "$took")")
  echo "vm: $stage took ${took}s"
}
print_timings() {
  echo "vm: timings"
  for t in "${timings[@]}"; do echo "  $t"; done
  printf '  %-28s %7.1fs\n' total "$(awk -v a="$started" -v b="$(date +%s.%N)" 'BEGIN { print b - a }')"
}
fail() {
  echo "vm: FAILED: $*" >&2
  exit 1
}

# What this script started, ended when it exits whatever the reason.
qemu_pid='' collector_pid=''
cleanup() {
  local rc=$?
  for pid in $qemu_pid $collector_pid; do kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true; done
  print_timings
  [ "$rc" = 0 ] || echo "vm: the run's files are in $run" >&2
}
trap cleanup EXIT
trap 'exit 143' TERM INT   # so that cleanup runs when CI stops the job

for tool in qemu-system-x86_64 mmdebstrap mkfs.ext4 debugfs e2fsck mkfs.vfat mcopy socat node esbuild; do
  command -v "$tool" >/dev/null || fail "$tool is missing (.ci/run installs what this job needs)"
done
[ "$(id -u)" = 0 ] || fail "run as root: mmdebstrap builds the guest's rootfs with real owners and device files"

# --- the guest's root filesystem, built once per recipe --------------------------------------
rootfs=$vm/rootfs-$(sha256sum test/vm/rootfs.sh | cut -c1-16)
if [ -f "$rootfs/root.img" ]; then
  echo "vm: rootfs: cached in $rootfs"
else
  stage_begin "rootfs (mmdebstrap, mkfs)"
  rm -rf "$vm"/rootfs-*   # other recipes' and a killed build's
  mkdir -p "$rootfs.partial/tree"
  bash test/vm/rootfs.sh "$rootfs.partial/tree" > "$rootfs.partial/mmdebstrap.log" 2>&1 ||
    { tail -n 30 "$rootfs.partial/mmdebstrap.log" >&2; fail "mmdebstrap failed (log: $rootfs.partial/mmdebstrap.log)"; }
  cp "$rootfs.partial"/tree/boot/vmlinuz-* "$rootfs.partial/vmlinuz"
  cp "$rootfs.partial"/tree/boot/initrd.img-* "$rootfs.partial/initrd.img"
  # Room for machineadm, Node and what the boots write.
  truncate -s "$(($(du -sm "$rootfs.partial/tree" | cut -f1) + 1024))M" "$rootfs.partial/root.img"
  mkfs.ext4 -q -L vmroot -d "$rootfs.partial/tree" "$rootfs.partial/root.img"
  rm -rf "$rootfs.partial/tree"
  mv "$rootfs.partial" "$rootfs"
  stage_end
fi

# --- machineadm, built once per source state ---------------------------------------------------
sources=$({ find src scripts/build -type f; echo scripts/build.mjs package.json package-lock.json; } | LC_ALL=C sort)
dist=$vm/dist-$(echo "$sources" | xargs sha256sum | sha256sum | cut -c1-16)
if [ -x "$dist/machineadm-linux-x64" ]; then
  echo "vm: machineadm: cached in $dist"
else
  stage_begin "machineadm (build)"
  rm -rf "$vm"/dist-*
  node scripts/build.mjs --targets linux-x64 --out-dir "$dist.partial" --no-compress --quiet
  mv "$dist.partial" "$dist"
  stage_end
fi

# --- this run's disk and seed ------------------------------------------------------------------
stage_begin "disk and seed"
rm -rf "$run"
mkdir -p "$run/payload"
cp --sparse=always "$rootfs/root.img" "$run/disk.img"
# What the guest gets besides Debian: machineadm as an image would have it, the kubeadm stand-in
# (bundled with its js-yaml) with the Node it runs on, and the probe that ends each boot.
p=$run/payload
install -m 0755 "$dist/machineadm-linux-x64" "$p/machineadm"
install -m 0755 node_modules/node/bin/node "$p/node"
esbuild --bundle --platform=node --format=esm --log-level=warning --sourcefile=kubeadm.mjs < test/fixtures/bin/kubeadm > "$p/kubeadm.mjs"
install -m 0755 test/vm/guest/kubeadm test/vm/guest/probe "$p/"
install -m 0644 test/vm/guest/vmtest-probe.service "$p/"
debugfs -w -f - "$run/disk.img" > "$run/debugfs.log" 2>&1 <<EOF
write $p/machineadm /usr/local/bin/machineadm
write $p/kubeadm /usr/local/bin/kubeadm
mkdir /opt/kubeadm-standin
write $p/node /opt/kubeadm-standin/node
write $p/kubeadm.mjs /opt/kubeadm-standin/kubeadm.mjs
mkdir /opt/vmtest
write $p/probe /opt/vmtest/probe
write $p/vmtest-probe.service /etc/systemd/system/vmtest-probe.service
mkdir /etc/systemd/system/graphical.target.wants
symlink /etc/systemd/system/graphical.target.wants/vmtest-probe.service /etc/systemd/system/vmtest-probe.service
EOF
# debugfs exits 0 whatever happened: compare what is on the disk.
for f in /usr/local/bin/machineadm /usr/local/bin/kubeadm /opt/kubeadm-standin/node /opt/kubeadm-standin/kubeadm.mjs /opt/vmtest/probe; do
  [ "$(debugfs -R "cat $f" "$run/disk.img" 2>/dev/null | sha256sum)" = "$(sha256sum < "$p/$(basename "$f")")" ] ||
    fail "$f did not reach the guest's disk (debugfs: $run/debugfs.log)"
done
debugfs -R 'ls /etc/systemd/system/graphical.target.wants' "$run/disk.img" 2>/dev/null | grep -q vmtest-probe.service ||
  fail "vmtest-probe.service is not enabled on the guest's disk (debugfs: $run/debugfs.log)"
rm -rf "$p"

# NoCloud seed: a FAT disk labelled CIDATA. The user data is multipart, as make-mime writes it: the
# cloud-config, machineadm's part handler (docs/recipes), then the MachineConfig part it claims.
mime_part() { # TYPE FILE: a part whose body is FILE byte for byte (the newline before the boundary is the boundary's)
  printf -- '--vmtest-boundary\nContent-Type: %s; charset="us-ascii"\nMIME-Version: 1.0\nContent-Transfer-Encoding: 7bit\nContent-Disposition: attachment; filename="%s"\n\n' "$1" "$(basename "$2")"
  cat "$2"
  echo
}
{
  printf 'Content-Type: multipart/mixed; boundary="vmtest-boundary"\nMIME-Version: 1.0\n\n'
  mime_part text/cloud-config test/vm/seed/cloud-config.yaml
  mime_part text/part-handler docs/recipes/user-data/machineadm-part-handler.py
  mime_part text/x-machineadm-config test/vm/seed/machineconfig.yaml
  echo '--vmtest-boundary--'
} > "$run/user-data"
cp test/vm/seed/meta-data "$run/meta-data"
mkfs.vfat -n CIDATA -C "$run/seed.img" 1024 >/dev/null
mcopy -i "$run/seed.img" "$run/user-data" "$run/meta-data" ::
stage_end

# --- KVM when it runs a guest, else software emulation -----------------------------------------
# /dev/kvm can open and still never run a guest (some nested setups): a kernel that prints its
# first line within 10 s decides. -accel kvm -accel tcg falls back to tcg when KVM cannot open.
accel=(-accel tcg)
if [ -w /dev/kvm ]; then
  qemu-system-x86_64 -accel kvm -cpu max -m 256 -nodefaults -display none -no-reboot \
    -kernel "$rootfs/vmlinuz" -append 'console=ttyS0 panic=-1' -serial "file:$run/kvm-probe.log" > /dev/null 2>&1 &
  qemu_pid=$!
  for _ in $(seq 50); do grep -qa 'Linux version' "$run/kvm-probe.log" 2>/dev/null && break; sleep 0.2; done
  grep -qa 'Linux version' "$run/kvm-probe.log" && accel=(-accel kvm -accel tcg -cpu max)
  kill "$qemu_pid" 2>/dev/null || true
  wait "$qemu_pid" 2>/dev/null || true
  qemu_pid=''
fi
if [ "${accel[1]}" = kvm ]; then
  echo "vm: accelerator: KVM"
else
  echo "vm: accelerator: TCG (software emulation): $([ -e /dev/kvm ] && echo '/dev/kvm runs no guest here' || echo 'no /dev/kvm')"
fi

# --- the boots -----------------------------------------------------------------------------------
# boot NAME COLLECTOR_MODE EXPECTED_END [KERNEL_ARGS]: one qemu run, ended by the guest (a reboot
# or a power-off, -no-reboot makes both end qemu) or by the timeout.
boot() {
  local name=$1 mode=$2 expected=$3 args=${4:-} serial=$run/serial-$1.log port='' rc=0 ended
  stage_begin "boot $name"
  node test/vm/collector.mjs "$mode" "$run/collector-$name.jsonl" > "$run/collector-$name.port" &
  collector_pid=$!
  for _ in $(seq 100); do [ -s "$run/collector-$name.port" ] && port=$(head -n 1 "$run/collector-$name.port") && break; sleep 0.1; done
  [ -n "$port" ] || fail "the collector did not start"
  timeout --kill-after=10 "$boot_timeout" qemu-system-x86_64 "${accel[@]}" -machine q35 -m 1024 -smp 2 \
    -nodefaults -display none -no-reboot \
    -kernel "$rootfs/vmlinuz" -initrd "$rootfs/initrd.img" -append "console=ttyS0 root=/dev/vda rw panic=-1 $args" \
    -drive "file=$run/disk.img,format=raw,if=virtio" -drive "file=$run/seed.img,format=raw,if=virtio,readonly=on" \
    -netdev "user,id=net0,restrict=on,guestfwd=tcp:10.0.2.100:8080-cmd:socat - TCP:127.0.0.1:$port" \
    -device virtio-net-pci,netdev=net0 -serial "file:$serial" > "$run/qemu-$name.log" 2>&1 &
  qemu_pid=$!
  wait "$qemu_pid" || rc=$?
  qemu_pid=''
  kill "$collector_pid"
  wait "$collector_pid" 2>/dev/null || true
  collector_pid=''
  stage_end
  ended=$(grep -aoE 'reboot: (Restarting system|Power down)|Kernel panic[^\r]*' "$serial" | tail -n 1 || true)
  if [ "$rc" != 0 ] || [ "$ended" != "$expected" ]; then
    echo "--- the last lines of $serial:" >&2
    tail -n 40 "$serial" >&2
    [ "$rc" = 124 ] && fail "boot $name did not end within ${boot_timeout}s (VM_BOOT_TIMEOUT)"
    [ "$rc" != 0 ] && fail "qemu exited with $rc in boot $name: $(tail -n 5 "$run/qemu-$name.log")"
    fail "boot $name ended with '${ended:-nothing}', expected '$expected'"
  fi
  # The guest is off: replay the ext4 journal (debugfs does not) and check the filesystem.
  e2fsck -p "$run/disk.img" > "$run/e2fsck-$name.log" 2>&1 || [ $? = 1 ] || fail "e2fsck found the guest's disk damaged after boot $name: $run/e2fsck-$name.log"
}

# read_back DIR: what the probe wrote, and the files the checks read, from the guest's disk.
read_back() {
  mkdir -p "$1"
  debugfs -R "rdump /var/lib/vmtest $1" "$run/disk.img" 2>/dev/null
  for f in /var/lib/machineadm/result.json /var/log/cloud-init.log /var/log/cloud-init-output.log /etc/machineadm/config.d/user-data-01.yaml; do
    debugfs -R "dump $f $1/$(basename "$f")" "$run/disk.img" 2>/dev/null
  done
}

boot init refuse 'reboot: Restarting system'
boot resume accept 'reboot: Power down'
read_back "$run/after-resume"
# cloud-init has nothing to do in the reset boot: skipping it saves a minute under emulation, and
# nothing but machineadm changes the files the probe compares.
boot reset accept 'reboot: Power down' 'vmtest.action=reset cloud-init=disabled'
read_back "$run/after-reset"

stage_begin checks
node test/vm/check.mjs "$run"
stage_end
rm -f "$run/disk.img"   # 1-2 GB; kept only after a failure
echo "vm: all checks passed"
