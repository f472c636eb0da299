#!/usr/bin/env bash
# The guest's root filesystem: Debian 12 from Debian's own packages, made with mmdebstrap (as root)
# into the empty directory $1. boot.sh names its cache after this file's hash: any change here
# rebuilds the rootfs; what changes per run (machineadm, the probe) is written into a copy later.
set -euo pipefail
out=$1

packages=(
  linux-image-amd64 initramfs-tools   # Debian's kernel, and an initrd that loads virtio and ext4
  systemd-sysv udev dbus              # systemd as PID 1: the resume unit, the reboot, networkd
  cloud-init                          # reads the NoCloud seed and runs the user data
  kmod procps iproute2                # modprobe, lsmod, sysctl, ip
  containerd                          # the runtime kubeadm needs: machineadm refuses a node without it, configures and restarts it
)

# The initrd holds only what mounts the root disk (virtio and ext4), not the hundreds of drivers of
# MODULES=most: under emulation each module the initrd probes costs boot time. Copied in before
# the kernel is installed, so the kernel's own initrd build uses it.
initramfs=$(mktemp -d)
trap 'rm -rf "$initramfs"' EXIT
mkdir -p "$initramfs/initramfs-tools/conf.d" "$initramfs/initramfs-tools/hooks"
echo MODULES=list > "$initramfs/initramfs-tools/conf.d/vmtest.conf"
cat > "$initramfs/initramfs-tools/hooks/vmtest" <<'HOOK'
#!/bin/sh
[ "$1" = prereqs ] && exit 0
. /usr/share/initramfs-tools/hook-functions
for m in virtio_pci virtio_blk ext4; do force_load "$m"; done
HOOK
chmod 755 "$initramfs/initramfs-tools/hooks/vmtest"

mmdebstrap --variant=apt --include="$(IFS=,; echo "${packages[*]}")" \
  --essential-hook="copy-in $initramfs/initramfs-tools /etc" \
  --customize-hook='chroot "$1" systemctl enable systemd-networkd.service' \
  bookworm "$out" \
  'deb http://deb.debian.org/debian bookworm main' \
  'deb http://deb.debian.org/debian bookworm-updates main' \
  'deb http://deb.debian.org/debian-security bookworm-security main'

echo vmtest > "$out/etc/hostname"
# The network: DHCP from qemu's user networking, by systemd-networkd.
printf '[Match]\nName=en* eth*\n[Network]\nDHCP=ipv4\n' > "$out/etc/systemd/network/20-vmtest.network"
# Modules udev or networkd would load for nothing here (nested KVM, wireless), each seconds under
# emulation.
printf 'blacklist kvm_intel\nblacklist kvm_amd\nblacklist cfg80211\n' > "$out/etc/modprobe.d/vmtest.conf"
# cloud-init: only the NoCloud seed, no network configuration of its own, and only the modules
# the job uses: the rest (users, ssh keys, locales, apt, grub) costs ~20 s a boot under emulation
# and is not what the job tests.
cat > "$out/etc/cloud/cloud.cfg.d/90-vmtest.cfg" <<'CFG'
datasource_list: [NoCloud]
network: {config: disabled}
cloud_init_modules: [bootcmd, write-files, set_hostname, update_hostname]
cloud_config_modules: [runcmd]
cloud_final_modules: [scripts-per-once, scripts-per-boot, scripts-per-instance, scripts-user, final-message]
CFG
