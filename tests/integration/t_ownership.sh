#!/bin/bash
# POSIX ownership for several users: the same script of operations (as
# root, alice and bob; tests/integration/ownership.py) on a tmpfs directory
# and on a ringfence mount must give the same results, errno for errno,
# and leave the same owners, groups and modes. The worker stays without
# any capability.
. "$(dirname "$0")/lib.sh"
rf_setup
mkdir -p "$T/ref"
mount -t tmpfs -o size=16M,mode=0755 rf-ref "$T/ref"
EXTRA_MOUNTS+=("$T/ref")

rf_log "memfs: every user's operations agree with tmpfs"
rf_policy mem memfs "" "allow_other = yes"
rf_start mem
python3 "$ROOT/tests/integration/ownership.py" "$T/ref" "$T/mem.mnt" >"$T/mem.out" ||
	{ grep '^!!' "$T/mem.out" >&2; rf_fail "memfs differs from tmpfs"; }
rf_log "  $(tail -1 "$T/mem.out")"
rf_assert_worker_fenced "$(rf_worker mem)"
rf_stop

# without FUSE_HANDLE_KILLPRIV_V2 the kernel clears them, except on an
# O_TRUNC open, which the file system truncates (FUSE_ATOMIC_O_TRUNC) and
# the kernel does not know to follow with a SETATTR (docs/policy.md)
rf_log "memfs, handle_killpriv = no (the kernel clears setuid and setgid): the same"
rm -rf "$T/ref/t"
rf_policy_reset
rf_policy mem memfs "" "allow_other = yes" "handle_killpriv = no"
rf_start mem
OWNERSHIP_SKIP=killpriv python3 "$ROOT/tests/integration/ownership.py" "$T/ref" "$T/mem.mnt" >"$T/mem.out" ||
	{ grep '^!!' "$T/mem.out" >&2; rf_fail "memfs (handle_killpriv = no) differs from tmpfs"; }
rf_log "  $(tail -1 "$T/mem.out")"
rf_stop

rf_log "passthrough, ownership = xattr: every user's operations agree with tmpfs"
rm -rf "$T/ref/t"
rf_policy_reset
rf_policy px passthrough "$T/src" "allow_other = yes" "ownership = xattr"
rf_start px
python3 "$ROOT/tests/integration/ownership.py" "$T/ref" "$T/px.mnt" >"$T/px.out" ||
	{ grep '^!!' "$T/px.out" >&2; rf_fail "passthrough (ownership = xattr) differs from tmpfs"; }
rf_log "  $(tail -1 "$T/px.out")"
rf_assert_worker_fenced "$(rf_worker px)"

rf_log "  the backing directory: everything the tenant's, a symlink a regular file"
bad=$(find "$T/src/t" ! -user "$(rf_uid px)" | head -3)
[ -z "$bad" ] || rf_fail "backing objects not owned by the tenant: $bad"
[ -f "$T/src/t/sgid/ln" ] && [ ! -L "$T/src/t/sgid/ln" ] || rf_fail "the symlink's stand-in is not a regular file"
[ "$(readlink "$T/px.mnt/t/sgid/ln")" = f ] || rf_fail "readlink through the mount"
[ -p "$T/px.mnt/t/sgid/fifo" ] || rf_fail "the fifo is not a fifo through the mount"
find "$T/src" -name '.ringfence.tmp.*' | grep -q . && rf_fail "a temporary directory was left"

rf_log "  device nodes: a regular file in the backing directory, a device on the mount, inert"
[ -f "$T/src/t/shared/null" ] || rf_fail "the device node's stand-in is not a regular file"
[ "$(stat -c '%F %t:%T %u' "$T/px.mnt/t/shared/null")" = "character special file 1:3 2001" ] ||
	rf_fail "through the mount: $(stat -c '%F %t:%T %u' "$T/px.mnt/t/shared/null")"
[ "$(stat -c '%F %t:%T' "$T/px.mnt/t/sgid/bdev2")" = "block special file 7:0" ] ||
	rf_fail "the block device's link: $(stat -c '%F %t:%T' "$T/px.mnt/t/sgid/bdev2")"
err=$(head -c1 "$T/px.mnt/t/shared/null" 2>&1) && rf_fail "a device node opened on a nodev mount"
[[ $err == *"Permission denied"* ]] || rf_fail "opening a device node: $err, not EACCES"

rf_log "  the record: version 2 written, version 1 read, an unknown one never misread"
rec() { getfattr --absolute-names -n user.ringfence.stat -e hex "$1" | sed -n 's/^user.ringfence.stat=0x//p'; }
# "RFst", version 2, 32 bytes, uid 2001 (0x7d1), gid 2001, mode 020600, 1:3, 0
[ "$(rec "$T/src/t/shared/null")" = 5246737402002000d1070000d107000080210000010000000300000000000000 ] ||
	rf_fail "the device node's record: $(rec "$T/src/t/shared/null")"
: >"$T/px.mnt/t/v1" && : >"$T/px.mnt/t/v9" && : >"$T/px.mnt/t/vdir"
# a file whose record says directory (2001, 2001, 040755): not believed
setfattr -n user.ringfence.stat -v 0x5246737402002000d1070000d1070000ed410000000000000000000000000000 \
	"$T/src/t/vdir"
# version 1 (16 bytes: 1, uid 2002, gid 2003, mode 0100640), as older trees hold
setfattr -n user.ringfence.stat -v 0x01000000d2070000d3070000a0810000 "$T/src/t/v1"
# a version this code does not know
setfattr -n user.ringfence.stat -v 0x5246737409002000d2070000d3070000a0810000000000000000000000000000 \
	"$T/src/t/v9"
sleep 1.2 # past the 1 s attribute time to live: the kernel asks again
[ "$(stat -c '%u %g %a %F' "$T/px.mnt/t/v1")" = "2002 2003 640 regular empty file" ] ||
	rf_fail "a version 1 record: $(stat -c '%u %g %a %F' "$T/px.mnt/t/v1")"
[ "$(stat -c '%u %a %F' "$T/px.mnt/t/v9")" = "$(rf_uid px) 0 regular empty file" ] ||
	rf_fail "an unknown record: $(stat -c '%u %a %F' "$T/px.mnt/t/v9")"
chmod 644 "$T/px.mnt/t/v9" 2>/dev/null && rf_fail "an unknown record was replaced by chmod"
[ "$(stat -c '%u %a %F' "$T/px.mnt/t/vdir")" = "$(rf_uid px) 0 regular empty file" ] ||
	rf_fail "a file whose record says directory: $(stat -c '%u %a %F' "$T/px.mnt/t/vdir")"
[ "$(rec "$T/src/t/v9" | cut -c1-16)" = 5246737409002000 ] || rf_fail "the unknown record changed"
stat "$T/px.mnt/t/v9" >/dev/null
n=$(grep -c "worker: plugin: t/v9 in the source: its user.ringfence.stat cannot be read" "$T/broker.log")
[ "$n" = 1 ] || rf_fail "the unreadable record was logged $n times, not once"
chmod 600 "$T/px.mnt/t/v1" || rf_fail "chmod of a version 1 file"
[ "$(rec "$T/src/t/v1" | cut -c1-12)" = 524673740200 ] || rf_fail "chmod did not write version 2"
[ "$(stat -c '%u %g %a' "$T/px.mnt/t/v1")" = "2002 2003 600" ] || rf_fail "after chmod of a version 1 file"
rm -f "$T/px.mnt/t/v1" "$T/px.mnt/t/v9" "$T/px.mnt/t/vdir"
# between transfers a queue waits with a timeout (to let its data slots
# go); that wait is never a completion of its own (it was, refused by the
# ring's restrictions, while liburing 2.3 did not know the ring's features)
grep "unexpected completion" "$T/broker.log" && rf_fail "a queue's timed wait completed as an op"

rf_log "  a leftover of a worker that died making a directory neither shows nor blocks rmdir"
mkdir "$T/px.mnt/t/shared/gone"
mkdir "$T/src/t/shared/gone/.ringfence.tmp.99"
chown "$(rf_uid px):$(rf_uid px)" "$T/src/t/shared/gone/.ringfence.tmp.99"
[ -z "$(ls -A "$T/px.mnt/t/shared/gone")" ] || rf_fail "the leftover shows"
rmdir "$T/px.mnt/t/shared/gone" || rf_fail "rmdir was blocked by a leftover"

rf_log "  clients can neither see nor set the ownership xattr"
getfattr -d -m - "$T/px.mnt/t/sgid/f" 2>/dev/null | grep -q ringfence && rf_fail "the xattr is visible"
getfattr -n user.ringfence.stat "$T/px.mnt/t/sgid/f" >/dev/null 2>&1 && rf_fail "the xattr can be read"
setfattr -n user.ringfence.stat -v x "$T/px.mnt/t/sgid/f" 2>/dev/null && rf_fail "the xattr can be set"
setfattr -n user.other -v 1 "$T/px.mnt/t/sgid/f" || rf_fail "other user xattrs cannot be set"
getfattr -d "$T/px.mnt/t/sgid/f" 2>/dev/null | grep -q 'user.other="1"' || rf_fail "other user xattrs are not listed"
rf_stop

rf_log "workers killed while alice makes files and directories: none is ever the tenant's"
rf_policy_reset
rf_policy px passthrough "$T/src" "allow_other = yes" "ownership = xattr" "crash_limit = 32"
rf_start px
rf_kill_during_makes px "$T/px.mnt/c"
n=$(find "$T/px.mnt/c" -mindepth 1 | wc -l)
bad=$(find "$T/px.mnt/c" -mindepth 1 ! -user 2001 | head -3)
[ -z "$bad" ] || rf_fail "after the kills, objects not alice's: $bad"
[ "$n" -gt 0 ] || rf_fail "alice made nothing"
rf_log "  $n objects, all alice's, after $(rf_field px crashes) deaths"
rf_stop
