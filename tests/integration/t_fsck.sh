#!/bin/bash
# ringfence-fsck on a tmpfs and on a loop-mounted ext4 image: it refuses a
# source a tenant serves; -n reports every case and changes nothing; -y
# repairs what can be repaired, and a client of the mount then sees what
# the repair says; --adopt-owners moves real owners into records.
# docs/backing-store.md is the format.
. "$(dirname "$0")/lib.sh"
FSCK=$BUILD/ringfence-fsck
rf_setup
[ -e /dev/loop-control ] || modprobe loop 2>/dev/null
[ -e /dev/loop-control ] || rf_fail "no loop devices (/dev/loop-control), and modprobe loop failed"

# a version 2 record: uid gid mode [major minor], as hex for setfattr
enc() {
	python3 -c 'import struct, sys
a = [int(x, 0) for x in sys.argv[1:]] + [0, 0]
print("0x" + struct.pack("<IHHIIIIII", 0x74734652, 2, 32, *a[:5], 0).hex())' "$@"
}
rec() { getfattr --absolute-names -n user.ringfence.stat -e hex "$1" 2>/dev/null | sed -n 's/^user.ringfence.stat=0x//p'; }
# everything a client or another tool could tell about a tree
snapshot() { (cd "$1" && find . -printf '%p %y %U:%G %m %n\n' | sort && getfattr -R -d -m - -e hex . 2>/dev/null); }
# fsck's exit status in $fsck_rc, its output in $T/fsck.out
run_fsck() {
	fsck_rc=0
	"$FSCK" "$@" >"$T/fsck.out" 2>&1 || fsck_rc=$?
}
expect() { grep -qF -- "$1" "$T/fsck.out" || { cat "$T/fsck.out" >&2; rf_fail "$2: no '$1'"; }; }

# every case fsck knows, in $1, the tenant's uid $2
make_tree() {
	local d=$1 u=$2
	mkdir "$d/sub" "$d/sub/.ringfence.tmp.7" "$d/sub/.ringfence.tmp.8"
	touch "$d/good" "$d/norec" "$d/badtype" "$d/dmg" "$d/newer" "$d/v1" "$d/sub/.ringfence.tmp.8/x"
	chmod 644 "$d/norec"
	ln -s ../good "$d/sub/sl" && ln "$d/sub/sl" "$d/sl2"
	mkfifo "$d/ff" && mknod "$d/cd" c 1 3 && mknod "$d/bd" b 7 0
	chown -hR "$u:$u" "$d"
	touch "$d/rootowned"
	setfattr -n user.ringfence.stat -v "$(enc 2002 2003 0o100640)" "$d/good"
	setfattr -n user.ringfence.stat -v "$(enc "$u" "$u" 0o40750)" "$d/sub"
	setfattr -n user.ringfence.stat -v "$(enc 2002 2003 0o40750)" "$d/badtype"
	setfattr -n user.ringfence.stat -v 0x0102 "$d/dmg"
	# version 3, 36 bytes: not ours to read or replace
	setfattr -n user.ringfence.stat \
		-v 0x5246737403002400d2070000d3070000a081000000000000000000000000000000000000 "$d/newer"
	setfattr -n user.ringfence.stat -v 0x01000000d2070000d3070000a0810000 "$d/v1"
}

printf '[mount other]\nmountpoint = /nonexistent\nplugin = hello\n' >"$T/other.policy"
for fs in tmpfs ext4; do
	mkdir -p "$T/$fs"
	if [ $fs = tmpfs ]; then
		mount -t tmpfs -o size=64M rf-fsck "$T/$fs" || rf_fail "mount a tmpfs"
	else
		truncate -s 64M "$T/ext4.img" && mkfs.ext4 -q -F "$T/ext4.img" >/dev/null 2>&1 &&
			mount -o loop "$T/ext4.img" "$T/$fs" || rf_fail "mount an ext4 image"
	fi
	EXTRA_MOUNTS+=("$T/$fs")
	src=$T/$fs/src adopt=$T/$fs/adopt
	rf_policy_reset
	rf_policy px passthrough "$src" "allow_other = yes" "ownership = xattr" "crash_limit = 32"
	rf_policy ad passthrough "$adopt" "allow_other = yes" "ownership = xattr"
	rf_start px ad
	uid=$(rf_uid px) auid=$(rf_uid ad)

	rf_log "$fs: a source a tenant serves is refused"
	run_fsck -c "$T/policy" "$src"
	[ $fsck_rc = 8 ] || rf_fail "fsck of a served source: exit $fsck_rc"
	expect "is the source of tenant px ($T/policy:" "the served source"
	expect "mounted on $T/px.mnt: stop it first" "the served source"
	# with a policy that does not name it: the worker holds it open
	run_fsck -c "$T/other.policy" "$src"
	[ $fsck_rc = 8 ] || rf_fail "fsck of a source a worker holds: exit $fsck_rc"
	expect "$src is open in process " "the held source"
	rf_stop

	rf_log "$fs: -n reports every case and changes nothing"
	make_tree "$src" "$uid"
	before=$(snapshot "$src")
	run_fsck -n -c "$T/policy" "$src"
	[ $fsck_rc = 4 ] || { cat "$T/fsck.out" >&2; rf_fail "-n: exit $fsck_rc, not 4"; }
	expect "the tenant's uid $uid gid $uid, reporting only" "-n"
	expect "$src/norec: no ownership record (made beside ringfence) [-y: record written as it shows: $uid:$uid mode 100644]" "-n"
	expect "$src/badtype: record says directory, the object is a regular file" "-n"
	expect "$src/dmg: damaged record (2 bytes, no version of ours)" "-n"
	expect "$src/newer: record of a newer version than this ringfence-fsck reads" "-n"
	expect "$src/sub/.ringfence.tmp.7: leftover of a worker that died making a directory" "-n"
	expect "$src/sub/.ringfence.tmp.8: hidden from clients (a temporary name), not an empty directory" "-n"
	expect "$src/sub/sl: a symlink in the backing directory" "-n"
	expect "$src/sl2: a symlink in the backing directory" "-n"
	expect "$src/ff: a fifo in the backing directory" "-n"
	expect "$src/cd: a character device in the backing directory" "-n"
	expect "$src/bd: a block device in the backing directory" "-n"
	expect "$src/rootowned: owned by uid 0, not by the tenant (uid $uid)" "-n"
	expect "16 objects, 1 version 1 records, 12 errors: 0 corrected, 12 left (1 leftover" "-n"
	grep -q "good\|/v1\|/sub:" "$T/fsck.out" && rf_fail "-n reported a sound object: $(grep "good\|/v1\|/sub:" "$T/fsck.out")"
	[ "$(snapshot "$src")" = "$before" ] || rf_fail "-n changed the tree"

	rf_log "$fs: -y repairs all but a newer record and a hidden directory with contents"
	run_fsck -y -c "$T/policy" "$src"
	[ $fsck_rc = 5 ] || { cat "$T/fsck.out" >&2; rf_fail "-y: exit $fsck_rc, not 1|4"; }
	expect "12 errors: 10 corrected, 2 left" "-y"
	[ "$(rec "$src/newer" | cut -c1-16)" = 5246737403002400 ] || rf_fail "-y touched a newer record"
	[ -d "$src/sub/.ringfence.tmp.8" ] || rf_fail "-y removed a hidden directory with contents"
	[ -e "$src/sub/.ringfence.tmp.7" ] && rf_fail "-y left the leftover"
	[ "$(stat -c %i "$src/sub/sl")" = "$(stat -c %i "$src/sl2")" ] || rf_fail "the symlink's two names are no longer one"
	bad=$(find "$src" ! -user "$uid" | head -3)
	[ -z "$bad" ] || rf_fail "after -y, objects not the tenant's: $bad"
	run_fsck -n -c "$T/policy" "$src"
	[ $fsck_rc = 4 ] || { cat "$T/fsck.out" >&2; rf_fail "-n after -y: exit $fsck_rc"; }
	expect "2 errors: 0 corrected, 2 left (0 leftover" "-n after -y"
	rm -r "$src/newer" "$src/sub/.ringfence.tmp.8"
	run_fsck -c "$T/policy" "$src"
	[ $fsck_rc = 0 ] || { cat "$T/fsck.out" >&2; rf_fail "a clean tree: exit $fsck_rc"; }
	expect "0 errors: 0 corrected, 0 left" "a clean tree"

	rf_log "$fs: through the mount, the repaired tree is what fsck said"
	rf_start px ad
	m=$T/px.mnt
	[ "$(readlink "$m/sub/sl")" = ../good ] && [ "$(readlink "$m/sl2")" = ../good ] ||
		rf_fail "the symlinks through the mount: $(readlink "$m/sub/sl") $(readlink "$m/sl2")"
	[ "$(stat -c '%h %u' "$m/sl2")" = "2 $uid" ] || rf_fail "the symlink's links: $(stat -c '%h %u' "$m/sl2")"
	[ "$(stat -c '%F %t:%T' "$m/cd")" = "character special file 1:3" ] || rf_fail "cd: $(stat -c '%F %t:%T' "$m/cd")"
	[ "$(stat -c '%F %t:%T' "$m/bd")" = "block special file 7:0" ] || rf_fail "bd: $(stat -c '%F %t:%T' "$m/bd")"
	[ -p "$m/ff" ] || rf_fail "the fifo is not a fifo through the mount"
	[ "$(stat -c '%F %u %g %a' "$m/badtype")" = "regular empty file 2002 2003 750" ] ||
		rf_fail "badtype: $(stat -c '%F %u %g %a' "$m/badtype")"
	[ "$(stat -c '%u %a' "$m/dmg")" = "$uid 0" ] || rf_fail "dmg: $(stat -c '%u %a' "$m/dmg")"
	chmod 640 "$m/dmg" || rf_fail "chmod of a replaced record"
	[ "$(stat -c '%u %g %a' "$m/rootowned")" = "0 0 644" ] || rf_fail "rootowned: $(stat -c '%u %g %a' "$m/rootowned")"
	[ "$(stat -c '%u %a' "$m/norec")" = "$uid 644" ] || rf_fail "norec: $(stat -c '%u %a' "$m/norec")"
	[ "$(stat -c '%u %g %a' "$m/v1")" = "2002 2003 640" ] || rf_fail "v1: $(stat -c '%u %g %a' "$m/v1")"
	grep "unexpected completion\|plugin: .*cannot be read" "$T/broker.log" && rf_fail "the repaired tree made the plugin complain"

	rf_log "$fs: the crash test's tree: -n finds it clean, or only leftovers -y removes"
	rf_kill_during_makes px "$m/c"
	rf_stop
	run_fsck -n -c "$T/policy" "$src"
	left=$(grep -c "leftover of a worker that died making a directory" "$T/fsck.out")
	errors=$(sed -n 's/.* \([0-9]*\) errors: .*/\1/p' "$T/fsck.out")
	[ "$errors" = "$left" ] || { cat "$T/fsck.out" >&2; rf_fail "after the kills: $errors errors, $left of them leftovers"; }
	run_fsck -y -c "$T/policy" "$src"
	run_fsck -n -c "$T/policy" "$src"
	[ $fsck_rc = 0 ] || { cat "$T/fsck.out" >&2; rf_fail "after the kills and -y: exit $fsck_rc"; }
	rf_log "  $(sed -n 's/.*: \([0-9]* objects\),.*/\1/p' "$T/fsck.out") after 5 kills, clean after $left leftovers removed"

	rf_log "$fs: --adopt-owners moves real owners into records"
	chown 0:0 "$adopt" && chmod 755 "$adopt"
	touch "$adopt/f" && chown 1000:100 "$adopt/f" && chmod 4751 "$adopt/f"
	mkdir "$adopt/d" && chown 33:33 "$adopt/d" && chmod 2775 "$adopt/d"
	ln -s ../f "$adopt/d/l" && chown -h 5:6 "$adopt/d/l"
	mknod "$adopt/d/b" b 7 1
	run_fsck --adopt-owners -c "$T/policy" "$adopt"
	[ $fsck_rc = 0 ] || { cat "$T/fsck.out" >&2; rf_fail "--adopt-owners: exit $fsck_rc"; }
	expect "the tenant's uid $auid gid $auid, adopting owners" "--adopt-owners takes the tenant from the policy"
	expect "5 objects, 0 version 1 records, 0 errors" "--adopt-owners"
	bad=$(find "$adopt" ! -user "$auid" -o -type l | head -3)
	[ -z "$bad" ] || rf_fail "after --adopt-owners: $bad"
	[ "$(stat -c %a "$adopt/f") $(stat -c %a "$adopt/d")" = "600 700" ] || rf_fail "backing modes after --adopt-owners"
	run_fsck -n -c "$T/policy" "$adopt"
	[ $fsck_rc = 0 ] || { cat "$T/fsck.out" >&2; rf_fail "-n after --adopt-owners: exit $fsck_rc"; }
	rf_start px ad
	m=$T/ad.mnt
	[ "$(stat -c '%u %g %a' "$m/f")" = "1000 100 4751" ] || rf_fail "adopted f: $(stat -c '%u %g %a' "$m/f")"
	[ "$(stat -c '%u %g %a' "$m/d")" = "33 33 2775" ] || rf_fail "adopted d: $(stat -c '%u %g %a' "$m/d")"
	[ "$(stat -c '%u %g' "$m/d/l") $(readlink "$m/d/l")" = "5 6 ../f" ] || rf_fail "adopted l: $(stat -c '%u %g' "$m/d/l")"
	[ "$(stat -c '%F %t:%T' "$m/d/b")" = "block special file 7:1" ] || rf_fail "adopted b: $(stat -c '%F %t:%T' "$m/d/b")"
	[ "$(stat -c '%u %a' "$m")" = "0 755" ] || rf_fail "the adopted root: $(stat -c '%u %a' "$m")"
	rf_stop
	run_fsck --adopt-owners -c "$T/other.policy" "$adopt"
	[ $fsck_rc = 0 ] || rf_fail "--adopt-owners of an adopted tree, the owner from its root: exit $fsck_rc"
	run_fsck -n --owner "$auid:$auid" -c "$T/other.policy" "$adopt"
	[ $fsck_rc = 0 ] || rf_fail "--owner $auid:$auid: exit $fsck_rc"
	expect "the tenant's uid $auid gid $auid, reporting only" "--owner"
	run_fsck -n --owner rf-no-such-user -c "$T/other.policy" "$adopt"
	[ $fsck_rc = 16 ] || rf_fail "--owner of no user: exit $fsck_rc, not 16"
	expect "no user 'rf-no-such-user'" "--owner of no user"
	umount "$T/$fs" || rf_fail "unmount $T/$fs"
done
rf_log "ringfence-fsck: --help, and a usage error is 16"
"$FSCK" --help | grep -q "^usage: ringfence-fsck" || rf_fail "--help"
run_fsck
[ $fsck_rc = 16 ] || rf_fail "no SOURCE: exit $fsck_rc"
