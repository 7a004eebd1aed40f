#!/usr/bin/env bash
# Build volattach's small test guest image under DIR and print its image id
# as the last line of stdout (progress goes to stderr).
#
#     image_id=$(tools/build-test-image.sh /var/lib/volattach/images)
#
# The image is a directory DIR/<image id>/ holding ``kernel`` (Debian's stock
# linux-image-6.1 kernel, taken out of the .deb fetched with apt-get download)
# and ``initramfs`` (busybox-static, the virtio modules and an init).  The
# libvirt driver boots it by direct kernel boot ([libvirt] image_dir = DIR).
#
# The init:
#   - loads virtio_ring, virtio, virtio_pci_*, virtio_pci, virtio_blk (in that
#     order) and isofs with the cdrom module it needs;
#   - mounts the config drive (label config-2) and runs
#     openstack/latest/user_data as a shell script in the background;
#   - whenever the set of virtio disks changes prints
#         VA-DISKS <uptime> [<dev>:<serial>:<bytes>:<ro> ...]
#     to the serial console: at once on the kernel's block uevent (busybox's
#     ``uevent`` listener runs /sbin/va-hotplug), and from a loop that looks
#     every 0.5 s for anything a uevent does not announce (a size or
#     read-only change).  Before 2026-11-26 only the loop printed, every
#     0.05 s: its forks cost the TCG guest CPU while a hot-plug ran, and it
#     added up to 50 ms to every measured attach (benchmarks/README.md);
#   - the two share the last list printed (/tmp/va-disks-last), so the
#     loop does not print a list again in the middle of a later command's
#     output (generation 3);
#   - writes ``generation`` 3 beside the image (tests/guest/conftest.py
#     builds a new image when the newest has an older one);
#   - then runs a shell on the console.
#
# The image id is a uuid derived from the content, so rebuilding the same
# inputs gives the same id (the build is idempotent).  Nothing but Debian
# packages is downloaded.
set -euo pipefail

DIR=${1:?usage: build-test-image.sh DIR}
log() { echo "build-test-image: $*" >&2; }
die() { log "ERROR: $*"; exit 1; }

mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd)
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

BUSYBOX=/bin/busybox
# (the help text is read whole: `| head -1` under pipefail could fail on
# busybox's SIGPIPE and reinstall for nothing)
busybox_help=$("$BUSYBOX" --help 2>&1 || true)
if [ "${busybox_help#BusyBox}" = "$busybox_help" ] \
        || ldd "$BUSYBOX" >/dev/null 2>&1; then
    command -v apt-get >/dev/null || die "busybox-static is missing"
    log "installing busybox-static"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq busybox-static >&2
fi

PKG=$(apt-cache pkgnames linux-image-6.1 \
      | grep -E '^linux-image-6\.1\.[0-9]+-[0-9]+-amd64$' | sort -V | tail -1)
[ -n "$PKG" ] || die "no linux-image-6.1.*-amd64 package known to apt"
log "fetching $PKG"
(cd "$WORK" && apt-get download -qq "$PKG" >&2)
dpkg-deb -x "$WORK"/"$PKG"_*.deb "$WORK/deb"
KVER=${PKG#linux-image-}
KERNEL=$(ls "$WORK"/deb/boot/vmlinuz-*)
MODDIR="$WORK/deb/lib/modules/$KVER/kernel"
[ -d "$MODDIR" ] || MODDIR=$(ls -d "$WORK"/deb/lib/modules/*/kernel)

ROOT="$WORK/root"
mkdir -p "$ROOT"/{bin,sbin,proc,sys,dev,tmp,mnt/config,lib/modules}
cp "$BUSYBOX" "$ROOT/bin/busybox"
for applet in sh mount umount cat ls sleep dd insmod blockdev echo tr \
        grep sed head tail hexdump od cut seq sync mkdir findfs setsid \
        cttyhack uptime poweroff wc usleep; do
    ln -sf busybox "$ROOT/bin/$applet"
done

MODULES="drivers/virtio/virtio_ring drivers/virtio/virtio
drivers/virtio/virtio_pci_legacy_dev drivers/virtio/virtio_pci_modern_dev
drivers/virtio/virtio_pci drivers/block/virtio_blk drivers/cdrom/cdrom
fs/isofs/isofs"
: > "$ROOT/lib/modules/order"
for m in $MODULES; do
    name=$(basename "$m")
    if [ -f "$MODDIR/$m.ko" ]; then
        cp "$MODDIR/$m.ko" "$ROOT/lib/modules/$name.ko"
    elif [ -f "$MODDIR/$m.ko.xz" ]; then
        xz -dc "$MODDIR/$m.ko.xz" > "$ROOT/lib/modules/$name.ko"
    else
        log "module $m not found (built in?)"
        continue
    fi
    echo "$name" >> "$ROOT/lib/modules/order"
done

cat > "$ROOT/lib/va-disks.sh" <<'EOF'
disks() {
    out=""
    for d in /sys/block/vd*; do
        [ -e "$d" ] || continue
        n=${d##*/}; s=""; z=0; r=0
        [ -r "$d/serial" ] && read s < "$d/serial"
        read z < "$d/size"; read r < "$d/ro"
        out="$out $n:$s:$((z * 512)):$r"
    done
    echo "$out"
}
EOF

# Run by busybox's uevent listener for every kernel uevent (its variables
# in the environment): a virtio disk that came or went prints the list.
cat > "$ROOT/sbin/va-hotplug" <<'EOF'
#!/bin/sh
[ "$SUBSYSTEM" = block ] || exit 0
case "$DEVPATH" in */block/vd*) ;; *) exit 0 ;; esac
if [ "$ACTION" = remove ]; then
    # the uevent may come before sysfs lets the disk go
    n=0
    while [ -e "/sys$DEVPATH" ] && [ $n -lt 100 ]; do
        usleep 10000; n=$((n + 1))
    done
fi
. /lib/va-disks.sh
now=$(disks)
read up _ < /proc/uptime
echo "VA-DISKS $up$now"
echo "$now" > /tmp/va-disks-last
EOF
chmod +x "$ROOT/sbin/va-hotplug"

cat > "$ROOT/init" <<'EOF'
#!/bin/sh
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
while read m; do insmod /lib/modules/$m.ko 2>/dev/null; done < /lib/modules/order
echo "VA-INIT modules loaded"

. /lib/va-disks.sh

# The config drive: an ISO9660 disk labelled config-2 (virtio_blk probes
# its disks while it loads, so they are all there now).
dev=""
[ -e /sys/block/vda ] && dev=$(findfs LABEL=config-2 2>/dev/null)
if [ -n "$dev" ] && mount -t iso9660 -o ro "$dev" /mnt/config; then
    echo "VA-CONFIG-DRIVE $dev"
    if [ -f /mnt/config/openstack/latest/user_data ]; then
        cp /mnt/config/openstack/latest/user_data /tmp/user_data
        (sh /tmp/user_data 2>&1 | sed 's/^/VA-USER /' > /dev/console) &
    fi
fi

busybox uevent /sbin/va-hotplug > /dev/console 2>&1 &
(
    last="unset"
    while :; do
        now=$(disks)
        # what the uevent script printed last is not printed again
        [ -r /tmp/va-disks-last ] && IFS= read -r last < /tmp/va-disks-last
        if [ "$now" != "$last" ]; then
            read up _ < /proc/uptime
            echo "VA-DISKS $up$now"
            echo "$now" > /tmp/va-disks-last
        fi
        sleep 0.5
    done
) > /dev/console 2>&1 &

echo "VA-READY"
while :; do setsid cttyhack sh; done
EOF
chmod +x "$ROOT/init"

(cd "$ROOT" && find . -exec touch -h -d @0 {} + && find . | LC_ALL=C sort \
    | cpio -o -H newc --quiet --reproducible | gzip -9 -n) > "$WORK/initramfs"
ID=$(cat "$KERNEL" "$WORK/initramfs" | sha256sum \
     | sed -E 's/^(.{8})(.{4})(.{4})(.{4})(.{12}).*/\1-\2-\3-\4-\5/')
mkdir -p "$DIR/$ID"
cp "$KERNEL" "$DIR/$ID/kernel"
cp "$WORK/initramfs" "$DIR/$ID/initramfs"
echo "console=ttyS0 quiet panic=-1" > "$DIR/$ID/cmdline"
echo 3 > "$DIR/$ID/generation"
log "image $ID under $DIR ($(du -sh "$DIR/$ID" | cut -f1))"
echo "$ID"
