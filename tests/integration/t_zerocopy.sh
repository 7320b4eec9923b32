#!/bin/bash
# Zero copy (FUSE 7.46, Linux 7.3): where the kernel has it, a passthrough
# tenant's file data moves between its backing files and the clients' own
# pages, counted in zero_copy_bytes to the byte for O_DIRECT I/O, and
# correct under fio verify (direct, buffered, concurrent); on a tmpfs
# source, transfers that fit a pipe go through one (spliced_bytes), larger
# ones do not; a plugin that serves from memory (memfs) is untouched;
# zero_copy = off keeps the copy through the pool; stats shows 1 MiB reads
# arriving whole. (t_hostile attacks the zero-copy slots.) Elsewhere: auto
# leaves it off, and on is refused, saying why.
. "$(dirname "$0")/lib.sh"
rf_setup

if [ "$TRANSPORT" = classic ]; then
	rf_log "on /dev/fuse: zero_copy = on is an error of the policy"
	rf_policy on passthrough "$T/on" "zero_copy = on"
	out=$("$RINGFENCED" --check "$T/policy" 2>&1) && rf_fail "zero_copy = on with transport = classic was accepted"
	echo "$out" | grep -q "policy:[0-9]*: zero_copy: on needs FUSE io-uring, and transport is classic" ||
		rf_fail "not the error expected: $out"
	exit 0
fi
if ! rf_kernel_at_least 7 3; then
	rf_log "no zero copy in this kernel: auto leaves it off, on is refused"
	rf_policy auto passthrough "$T/auto"
	rf_policy on passthrough "$T/on" "zero_copy = on"
	rf_start auto
	rf_wait_state on failed
	[ "$(rf_field auto zero_copy)" = off ] || rf_fail "auto: zero_copy=$(rf_field auto zero_copy)"
	rf_status on | grep -q "reason=.*zero_copy = on, but the kernel offers no FUSE io-uring buffer pools" ||
		rf_fail "zero_copy = on was not refused with its reason: $(rf_status on)"
	rf_stop
	exit 0
fi

# RF_POLICY_EXTRA="zero_copy = off" or "bufpool = off": nothing is zero-copied
forced=on
[ "$(rf_forced zero_copy)" = off ] || [ "$(rf_forced bufpool)" = off ] && forced=off
[ $forced = off ] && rf_log "zero copy is off for every tenant (RF_POLICY_EXTRA)"
rf_policy zc passthrough "$T/zc" "max_write = 1M"
rf_policy copy passthrough "$T/copy" "max_write = 1M" "zero_copy = off"
rf_policy mem memfs ""
# a source on tmpfs, whose small transfers go through a pipe
mkdir "$T/small"
mount -t tmpfs -o size=64M,mode=0755 ringfence-test "$T/small" || rf_fail "mount a tmpfs"
EXTRA_MOUNTS+=("$T/small")
rf_policy small passthrough "$T/small" "max_write = 1M"
rf_start zc copy mem small
[ "$(rf_field zc zero_copy)" = $forced ] || rf_fail "zc: zero_copy=$(rf_field zc zero_copy), not $forced"
[ "$(rf_field copy zero_copy)" = off ] || rf_fail "copy: zero_copy=$(rf_field copy zero_copy)"

rf_log "O_DIRECT: every byte between the backing file and the client's pages"
head -c $((8 << 20)) /dev/urandom >"$T/data"
for t in zc copy; do
	zc0=$(rf_field $t zero_copy_bytes)
	dd if="$T/data" of="$T/$t.mnt/direct" bs=1M oflag=direct status=none || rf_fail "$t: O_DIRECT write"
	zc1=$(rf_field $t zero_copy_bytes)
	dd if="$T/$t.mnt/direct" of="$T/$t.back" bs=1M iflag=direct status=none || rf_fail "$t: O_DIRECT read"
	zc2=$(rf_field $t zero_copy_bytes)
	cmp "$T/data" "$T/$t.back" || rf_fail "$t: O_DIRECT read back differs"
	cmp "$T/data" "$T/$t/direct" || rf_fail "$t: the backing file differs"
	rf_log "  $t: zero_copy_bytes +$((zc1 - zc0)) writing, +$((zc2 - zc1)) reading 8 MiB"
	want=$((8 << 20))
	[ $t = copy ] || [ $forced = off ] && want=0
	[ $((zc1 - zc0)) = $want ] && [ $((zc2 - zc1)) = $want ] ||
		rf_fail "$t: zero-copied $((zc1 - zc0)) and $((zc2 - zc1)) bytes of 8 MiB each way, not $want"
done
[ $forced = off ] || [ "$(rf_field zc zero_copy_ops)" -gt 0 ] || rf_fail "zc: zero_copy_ops=0"

rf_log "on tmpfs: 4 KiB and 64 KiB transfers through the entry's pipe, 1 MiB ones not"
M=$T/small.mnt
s0=$(rf_field small spliced_bytes)
z0=$(rf_field small zero_copy_bytes)
dd if="$T/data" of="$M/f" bs=4k count=256 oflag=direct status=none || rf_fail "small: 4 KiB O_DIRECT writes"
s1=$(rf_field small spliced_bytes)
dd if="$M/f" of="$T/small.back" bs=64k iflag=direct status=none || rf_fail "small: 64 KiB O_DIRECT reads"
s2=$(rf_field small spliced_bytes)
dd if="$T/data" of="$M/g" bs=1M count=4 oflag=direct status=none || rf_fail "small: 1 MiB O_DIRECT writes"
dd if="$M/g" of=/dev/null bs=1M iflag=direct status=none || rf_fail "small: 1 MiB O_DIRECT reads"
s3=$(rf_field small spliced_bytes)
z3=$(rf_field small zero_copy_bytes)
cmp <(head -c $((1 << 20)) "$T/data") "$T/small/f" || rf_fail "small: the backing file differs"
cmp "$T/small/f" "$T/small.back" || rf_fail "small: read back differs"
cmp <(head -c $((4 << 20)) "$T/data") "$T/small/g" || rf_fail "small: the 1 MiB writes' file differs"
rf_log "  small: spliced_bytes +$((s1 - s0)) writing 1 MiB by 4 KiB, +$((s2 - s1)) reading it by 64 KiB," \
	"+$((s3 - s2)) by 1 MiB; zero_copy_bytes +$((z3 - z0))"
want=$((1 << 20))
[ $forced = off ] && want=0
[ $((s1 - s0)) = $want ] && [ $((s2 - s1)) = $want ] && [ $((s3 - s2)) = 0 ] ||
	rf_fail "small: spliced $((s1 - s0)), $((s2 - s1)) and $((s3 - s2)) bytes, not $want, $want and 0"
[ $((z3 - z0)) = $((want * 10)) ] || rf_fail "small: zero-copied $((z3 - z0)) bytes, not $((want * 10))"

rf_log "a 1 MiB read arrives whole (stats: READ and WRITE by size)"
"$CTL" -s "$T/ctl.sock" stats zc >"$T/stats" || rf_fail "stats"
reads=$(awk '$1 == "read" && $2 == "<=1M" { print $3 }' "$T/stats")
writes=$(awk '$1 == "write" && $2 == "<=1M" { print $3 }' "$T/stats")
[ "${reads:-0}" -ge 8 ] && [ "${writes:-0}" -ge 8 ] ||
	rf_fail "stats: ${reads:-0} reads and ${writes:-0} writes of 1 MiB, not 8 each: $(grep -E '^  (read|write) ' "$T/stats")"
"$CTL" -s "$T/ctl.sock" --json stats zc | python3 -c '
import json, sys
s = json.load(sys.stdin)["tenants"][0]
assert s["read_sizes"]["<=1M"] >= 8 and s["write_sizes"]["<=1M"] >= 8, s["read_sizes"]
assert s["zero_copy"] in ("on", "off") and "zero_copy_bytes" in s' || rf_fail "stats json"

rf_log "fio verify: direct and buffered, several clients at once"
FIO=(--size=16M --verify=crc32c --do_verify=1 --verify_state_save=0 --output=/dev/null)
for t in zc mem; do
	M=$T/$t.mnt
	fio --name=d --directory="$M" --filename_format='fio-direct.$jobnum' --rw=randrw \
		--bs=64k --direct=1 --numjobs=4 --ioengine=psync --size=4M --verify=crc32c \
		--do_verify=1 --verify_state_save=0 --output=/dev/null ||
		rf_fail "$t: fio O_DIRECT random read/write and verify, 4 jobs"
	fio --name=b --filename="$M/fio-buffered" --rw=randwrite --bs=4k "${FIO[@]}" --ioengine=psync ||
		rf_fail "$t: fio buffered 4 KiB writes and verify"
	fio --name=a --filename="$M/fio-aio" --rw=randwrite --bs=128k --direct=1 --ioengine=libaio \
		--iodepth=8 "${FIO[@]}" || rf_fail "$t: fio libaio O_DIRECT iodepth 8 and verify"
done
python3 - "$T/zc.mnt/mapped" <<'EOF' || rf_fail "zc: a shared mapping's pages"
import mmap, os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644)
os.ftruncate(fd, 1 << 20)
m = mmap.mmap(fd, 1 << 20)
for i in range(0, 1 << 20, 4096):
    m[i:i + 8] = i.to_bytes(8, "little")
m.flush()
m.close()
os.close(fd)
os.system("echo 3 > /proc/sys/vm/drop_caches")
with open(sys.argv[1], "rb") as f:
    b = f.read()
assert all(int.from_bytes(b[i:i + 8], "little") == i for i in range(0, 1 << 20, 4096))
EOF
[ "$(rf_field mem zero_copy_ops)" = 0 ] || rf_fail "memfs serves from memory, yet zero_copy_ops=$(rf_field mem zero_copy_ops)"
[ "$(rf_field copy zero_copy_ops)" = 0 ] || rf_fail "zero_copy = off, yet zero_copy_ops=$(rf_field copy zero_copy_ops)"
[ "$(rf_field copy spliced_ops)" = 0 ] || rf_fail "zero_copy = off, yet spliced_ops=$(rf_field copy spliced_ops)"
rf_log "  zc: zero_copy_ops=$(rf_field zc zero_copy_ops) zero_copy_bytes=$(rf_field zc zero_copy_bytes)" \
	"inline_ops=$(rf_field zc inline_ops); memfs and zero_copy = off: none"
rf_stop
