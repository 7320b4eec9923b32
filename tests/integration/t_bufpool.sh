#!/bin/bash
# The kernel's io-uring buffer pools (FUSE 7.46, Linux 7.3). Where the
# kernel has them (io-uring transport, 7.3 or later): tenants of queue
# depth 8, 32 and 128 with 1 MiB writes use them, pin at most what
# per-entry buffers would (and at most 32 MiB), move data correctly (fio
# verify, direct and buffered), and bufpool = off keeps per-entry buffers;
# the pinned bytes of each are printed. Elsewhere: auto uses per-entry
# buffers, and bufpool = on is refused, saying why.
. "$(dirname "$0")/lib.sh"
rf_setup
FIO=(--bs=1M --size=8M --ioengine=psync --verify=crc32c --do_verify=1 --verify_state_save=0
	--output=/dev/null)

if [ "$TRANSPORT" = classic ]; then
	rf_log "on /dev/fuse: bufpool = on is an error of the policy; auto keeps per-entry buffers"
	rf_policy on passthrough "$T/on" "bufpool = on"
	out=$("$RINGFENCED" --check "$T/policy" 2>&1) && rf_fail "bufpool = on with transport = classic was accepted"
	echo "$out" | grep -q "policy:[0-9]*: bufpool: on needs FUSE io-uring, and transport is classic" ||
		rf_fail "not the error expected: $out"
	rf_policy_reset
	rf_policy auto passthrough "$T/auto"
	rf_start auto
	[ "$(rf_field auto buffers)" = entries ] || rf_fail "auto: buffers=$(rf_field auto buffers)"
	rf_stop
	exit 0
fi
if ! rf_kernel_at_least 7 3; then
	rf_log "no buffer pools in this kernel: auto keeps per-entry buffers, on is refused"
	rf_policy auto passthrough "$T/auto"
	rf_policy on passthrough "$T/on" "bufpool = on"
	rf_start auto
	rf_wait_state on failed
	[ "$(rf_field auto buffers)" = entries ] || rf_fail "auto: buffers=$(rf_field auto buffers)"
	rf_status on | grep -q "reason=bufpool = on, but the kernel offers no FUSE io-uring buffer pools" ||
		rf_fail "bufpool = on was not refused with its reason: $(rf_status on)"
	rf_stop
	exit 0
fi

# RF_POLICY_EXTRA="bufpool = off": every tenant keeps per-entry buffers
forced=$(rf_forced bufpool)
[ "$forced" = off ] && rf_log "bufpool = off for every tenant (RF_POLICY_EXTRA)"
for d in 8 32 128; do
	rf_policy "d$d" passthrough "$T/d$d" "queue_depth = $d" "max_write = 1M"
done
rf_policy off passthrough "$T/off" "queue_depth = 32" "bufpool = off"
rf_start d8 d32 d128 off
for t in d8 d32 d128 off; do
	want=pool
	[ $t = off ] || [ "$forced" = off ] && want=entries
	[ "$(rf_field $t buffers)" = "$want" ] || rf_fail "$t: buffers=$(rf_field $t buffers), not $want"
	pinned=$(rf_field $t pinned)
	if [ $want = pool ]; then
		[ "$pinned" -le $((32 << 20)) ] || rf_fail "$t pins $pinned bytes, more than 32 MiB"
	fi
	rf_log "  $t: queue depth $(rf_field $t depth) x $(rf_field $t queues) queues," \
		"buffers=$(rf_field $t buffers), $((pinned >> 10)) KiB pinned"
	M=$T/$t.mnt
	fio --name=d --filename="$M/direct" --rw=write --direct=1 "${FIO[@]}" ||
		rf_fail "$t: fio O_DIRECT write and verify"
	fio --name=b --filename="$M/buffered" --rw=randwrite --bs=4k --size=2M --ioengine=psync \
		--verify=crc32c --do_verify=1 --verify_state_save=0 --output=/dev/null ||
		rf_fail "$t: fio buffered 4 KiB writes and verify"
	cmp "$M/direct" "$T/$t/direct" || rf_fail "$t: the backing file differs"
done
# the pool moved the data: READ_FIXED / WRITE_FIXED through it
[ "$(rf_field d128 read_fixed_bytes)" -gt 0 ] && [ "$(rf_field d128 write_fixed_bytes)" -gt 0 ] ||
	rf_fail "d128: no fixed-buffer data ops"
off=$(rf_field off pinned) d32=$(rf_field d32 pinned)
if [ "$forced" != off ]; then
	[ "$d32" -lt "$off" ] || rf_fail "depth 32 with a pool pins $d32 bytes, without $off"
fi
rf_stop
