#!/bin/bash
# disk_max and inodes_max: the kernel enforces them on the file system a
# tenant's source lives on (here a btrfs subvolume with quotas, in a
# loop-mounted image, beside a neighbour on the same file system), or the
# tenant does not start, saying why (a tmpfs and an ext4 image without
# quotas, a btrfs directory that is no subvolume, inodes_max on btrfs).
# Where this kernel can enforce tmpfs, ext4 or XFS quotas, those are tested
# instead of refused.
. "$(dirname "$0")/lib.sh"
rf_setup

# $1: a directory to mount a fresh image on, made by "$2 ..." (IMG_SIZE
# big: XFS takes no less than 300 MB)
image() {
	local dir=$1 img=$1.img
	shift
	truncate -s "${IMG_SIZE:-256M}" "$img" && "$@" "$img" >/dev/null 2>&1 || rf_fail "mkfs: $*"
	mkdir -p "$dir"
}

# the images are loop-mounted (a kernel may build loop as a module not yet
# loaded, as Debian's 7.3 does)
[ -e /dev/loop-control ] || modprobe loop 2>/dev/null
[ -e /dev/loop-control ] || rf_fail "no loop devices (/dev/loop-control), and modprobe loop failed"

refused() { # TENANT PHRASE
	for _ in $(seq 50); do [ "$(rf_field "$1" state)" = failed ] && break; sleep 0.1; done
	[ "$(rf_field "$1" state)" = failed ] || rf_fail "$1 started: $(rf_status "$1")"
	rf_field "$1" reason >/dev/null
	rf_status "$1" | grep -q "reason=disk_max/inodes_max: .*$2" ||
		rf_fail "$1's reason: $(rf_status "$1" | sed 's/.*reason=//')"
	rf_log "  $1: $2"
}

rf_log "btrfs: a subvolume with quotas, beside one without a limit"
image "$T/b" mkfs.btrfs -q
mount -o loop "$T/b.img" "$T/b" || rf_fail "mount the btrfs image"
EXTRA_MOUNTS+=("$T/b")
btrfs quota enable "$T/b" && btrfs subvolume create "$T/b/a" >/dev/null &&
	btrfs subvolume create "$T/b/n" >/dev/null || rf_fail "btrfs quotas and subvolumes"
rf_policy a passthrough "$T/b/a" "disk_max = 8M"
rf_policy n passthrough "$T/b/n"
rf_start a n
[ "$(rf_field a disk)" = "qgroup(btrfs)" ] || rf_fail "a's disk limit: $(rf_field a disk)"
[ "$(rf_field n disk)" = none ] || rf_fail "n has a disk limit: $(rf_field n disk)"
# more than the whole file system: stopped at the limit, and the neighbour
# then writes what it would have found no room for
out=$(dd if=/dev/zero of="$T/a.mnt/big" bs=1M count=512 conv=fsync 2>&1) && rf_fail "512 MiB fitted under disk_max = 8M"
echo "$out" | grep -q "Disk quota exceeded" || rf_fail "dd past disk_max said: $out"
got=$(stat -c %s "$T/b/a/big")
[ "$got" -le $((9 << 20)) ] || rf_fail "the backing file grew to $got bytes"
dd if=/dev/zero of="$T/n.mnt/big" bs=1M count=64 conv=fsync status=none || rf_fail "the neighbour could not write 64 MiB"
rm "$T/n.mnt/big" || rf_fail "rm the neighbour's file"
[ "$(rf_field a state)" = running ] || rf_fail "the limited tenant's worker died"
# the space comes back once the plugin has closed the file (its RELEASE
# is asynchronous) and btrfs has committed the transaction
rm "$T/a.mnt/big" || rf_fail "rm"
for _ in $(seq 50); do
	btrfs filesystem sync "$T/b"
	echo again 2>/dev/null >"$T/a.mnt/small" && break
	sleep 0.1
done
[ "$(cat "$T/a.mnt/small" 2>/dev/null)" = again ] || rf_fail "no room again 5 s after a delete"
rf_log "  512 MiB stopped at $((got >> 20)) MiB with EDQUOT; the neighbour wrote its 64 MiB"
rf_stop

rf_log "a writable tenant without a limit beside another on one file system: refused unless disk_shared"
rf_policy_reset
rf_policy lim passthrough "$T/b/a" "disk_max = 8M" "disk_shared = no"
rf_policy unl passthrough "$T/b/n" "disk_shared = no"
rf_policy ro passthrough "$T/b/plain" "read_only = yes" "disk_shared = no"
out=$("$RINGFENCED" --check "$T/policy" 2>&1) && rf_fail "--check passed an unlimited tenant beside another"
want="$T/policy:[0-9]*: \[mount unl\]: source $T/b/n is on the file system of tenant lim's source $T/b/a, writable and without disk_max: it could fill it"
echo "$out" | grep -q "^$want" || rf_fail "--check said: $out"
[ "$(echo "$out" | grep -c "^$T/policy:")" = 1 ] || rf_fail "--check named more than unl: $out"
rf_start lim ro
refused unl "source $T/b/n is on the file system of tenant lim's source"
rf_stop
rf_policy_reset
rf_policy lim passthrough "$T/b/a" "disk_max = 8M" "disk_shared = no"
rf_policy unl passthrough "$T/b/n" "disk_shared = yes"
"$RINGFENCED" --check "$T/policy" >/dev/null 2>&1 || rf_fail "--check refused disk_shared = yes"
rf_start lim unl
rf_stop

rf_log "limits that cannot be enforced: the tenant does not start, and says why"
rf_policy_reset
mkdir -p "$T/b/plain"
rf_policy ino passthrough "$T/b/n" "inodes_max = 1000"
rf_policy dir passthrough "$T/b/plain" "disk_max = 8M"
# a tmpfs: with user quotas where the kernel has them, else refused
mkdir -p "$T/t"
if mount -t tmpfs -o size=64M,usrquota rf-disk-test "$T/t" 2>/dev/null; then
	TMPFS_QUOTA=1
else
	TMPFS_QUOTA=0
	mount -t tmpfs -o size=64M rf-disk-test "$T/t" || rf_fail "mount a tmpfs"
fi
EXTRA_MOUNTS+=("$T/t")
rf_policy tq passthrough "$T/t/tq" "disk_max = 8M"
# an ext4 image: with project quotas where the kernel has them, else refused
image "$T/e" mkfs.ext4 -q -F -O quota,project
if mount -o loop,prjquota "$T/e.img" "$T/e" 2>/dev/null; then
	EXT4_QUOTA=1
else
	EXT4_QUOTA=0
	mkfs.ext4 -q -F "$T/e.img" >/dev/null 2>&1 && mount -o loop "$T/e.img" "$T/e" || rf_fail "mount an ext4 image"
fi
EXTRA_MOUNTS+=("$T/e")
rf_policy ext passthrough "$T/e/ext" "disk_max = 8M" "inodes_max = 100"
# an XFS image: with project quotas where the kernel has them, else refused
grep -qw xfs /proc/filesystems || modprobe xfs 2>/dev/null
grep -qw xfs /proc/filesystems || rf_fail "no XFS in this kernel, and modprobe xfs failed"
IMG_SIZE=320M image "$T/x" mkfs.xfs -q -f
if mount -o loop,prjquota "$T/x.img" "$T/x" 2>/dev/null; then
	XFS_QUOTA=1
else
	XFS_QUOTA=0
	mount -o loop "$T/x.img" "$T/x" || rf_fail "mount an XFS image"
fi
EXTRA_MOUNTS+=("$T/x")
rf_policy xfs passthrough "$T/x/xfs" "disk_max = 8M" "inodes_max = 100"
rf_policy mem memfs "" # keeps the broker up
rf_start mem
refused ino "source $T/b/n is on btrfs, which has no inode limit"
refused dir "source $T/b/plain is on btrfs but not a subvolume"
if [ $TMPFS_QUOTA = 0 ]; then
	refused tq "source $T/t/tq is on a tmpfs without user quotas"
fi
if [ $EXT4_QUOTA = 0 ]; then
	refused ext "source $T/e/ext is on ext4 without project quotas"
fi
if [ $XFS_QUOTA = 0 ]; then
	refused xfs "source $T/x/xfs is on xfs without project quotas"
fi
rf_stop
if [ $TMPFS_QUOTA = 1 ] || [ $EXT4_QUOTA = 1 ] || [ $XFS_QUOTA = 1 ]; then
	rf_log "limits this kernel can enforce on tmpfs ($TMPFS_QUOTA), ext4 ($EXT4_QUOTA) and XFS ($XFS_QUOTA)"
	rf_policy_reset
	names=()
	if [ $TMPFS_QUOTA = 1 ]; then
		rf_policy tq passthrough "$T/t/tq" "disk_max = 8M"
		names+=(tq)
	fi
	if [ $EXT4_QUOTA = 1 ]; then
		rf_policy ext passthrough "$T/e/ext" "disk_max = 8M" "inodes_max = 100"
		names+=(ext)
	fi
	if [ $XFS_QUOTA = 1 ]; then
		rf_policy xfs passthrough "$T/x/xfs" "disk_max = 8M" "inodes_max = 100"
		names+=(xfs)
	fi
	rf_start "${names[@]}"
	for n in "${names[@]}"; do
		out=$(dd if=/dev/zero of="$T/$n.mnt/big" bs=1M count=16 conv=fsync 2>&1) &&
			rf_fail "$n: 16 MiB fitted under disk_max = 8M"
		# XFS reports a project quota's limit as a full disk
		err="Disk quota exceeded"
		[ "$n" = xfs ] && err="No space left on device"
		echo "$out" | grep -q "$err" || rf_fail "$n: dd said $out"
		size=$(stat -c %s "$T/$n.mnt/big")
		[ "$size" -le $((8 << 20)) ] || rf_fail "$n: $size bytes written under disk_max = 8M"
		rf_log "  $n ($(rf_field "$n" disk)): 16 MiB stopped at $((size >> 20)) MiB by \"$err\""
	done
	for n in ext xfs; do
		[ "$n" = ext ] && [ $EXT4_QUOTA = 0 ] && continue
		[ "$n" = xfs ] && [ $XFS_QUOTA = 0 ] && continue
		rm -f "$T/$n.mnt/big"
		for i in $(seq 150); do { : >"$T/$n.mnt/f$i"; } 2>/dev/null || break; done
		[ "$i" -le 101 ] || rf_fail "$n: $i files under inodes_max = 100"
		rf_log "  $n: file $i refused under inodes_max = 100"
	done
	rf_stop
fi
exit 0
