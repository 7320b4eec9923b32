#!/bin/bash
# Bulk data through the passthrough plugin: a 256 MiB file round trip (64 MiB
# in the 7.3 guest) with checksums through the mount and the backing
# directory, four concurrent writers, and a short fio run with
# verification. Then make bench's switches (ringfenced --bench-unsafe) do
# what they say.
. "$(dirname "$0")/lib.sh"
rf_setup
# a quarter in the guest, whose emulated CPU makes and hashes the data 5-20
# times slower: still many times what the queues' buffers hold
MB=256
[ "${RF_IN_VM:-}" = 1 ] && MB=64
rf_policy pt passthrough "$T/src"
rf_start pt
M=$T/pt.mnt S=$T/src

rf_log "$MB MiB round trip"
head -c $((MB << 20)) /dev/urandom >"$T/big.in"
want=$(sha256sum <"$T/big.in" | cut -d' ' -f1)
dd if="$T/big.in" of="$M/big" bs=1M status=none conv=fsync || rf_fail "write $MB MiB"
[ "$(sha256sum <"$S/big" | cut -d' ' -f1)" = "$want" ] || rf_fail "checksum in the backing dir"
# O_DIRECT so the page cache cannot answer for the plugin
got=$(dd if="$M/big" bs=1M iflag=direct status=none | sha256sum | cut -d' ' -f1)
[ "$got" = "$want" ] || rf_fail "checksum read back through the mount"
# and the other way: written in the backing dir, read through the mount
head -c $((MB / 4 << 20)) /dev/urandom >"$S/other"
chown "$(rf_uid pt):$(rf_uid pt)" "$S/other"
[ "$(dd if="$M/other" bs=1M iflag=direct status=none | sha256sum)" = "$(sha256sum <"$S/other")" ] ||
	rf_fail "file written in the backing dir reads differently through the mount"
rm -f "$T/big.in" "$M/big" "$M/other"

rf_log "4 concurrent writers"
pids=()
for i in 1 2 3 4; do
	( head -c $((MB / 8 << 20)) /dev/urandom >"$T/w$i.in" &&
		dd if="$T/w$i.in" of="$M/w$i" bs=128K status=none conv=fsync ) &
	pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || rf_fail "writer $p failed"; done
for i in 1 2 3 4; do
	cmp -s "$T/w$i.in" "$S/w$i" || rf_fail "writer $i: backing file differs"
	cmp -s "$T/w$i.in" "$M/w$i" || rf_fail "writer $i: mount reads differently"
done
rm -f "$T"/w*.in "$M"/w?

rf_log "fio: random read/write, verified"
fio --name=rf --directory="$M" --size=32M --numjobs=2 --rw=randrw --bs=4k,64k \
	--ioengine=psync --direct=1 --verify=crc32c --verify_state_save=0 --verify_fatal=1 --do_verify=1 \
	--runtime=8 --time_based=0 --group_reporting --output="$T/fio.out" ||
	{ sed 's/^/    /' "$T/fio.out"; rf_fail "fio"; }
grep -E 'READ:|WRITE:' "$T/fio.out" | sed 's/^ */    /'
grep -q 'verify: bad' "$T/fio.out" && rf_fail "fio verify failed"
rm -f "$M"/rf.*

rf_log "5000 files alive at once (passthrough holds a descriptor for each)"
python3 - "$M/many" <<'EOP' || rf_fail "5000 files"
import os, sys
d = sys.argv[1]
os.mkdir(d)
for i in range(5000):
    os.close(os.open("%s/f%d" % (d, i), os.O_CREAT | os.O_WRONLY, 0o644))
for i in range(5000):
    os.stat("%s/f%d" % (d, i))
for i in range(5000):
    os.unlink("%s/f%d" % (d, i))
os.rmdir(d)
EOP

rf_log "an open file's data with the plugin host stopped: the keeper serves it (backing files)"
head -c $((1 << 20)) /dev/urandom >"$M/bk" || rf_fail "write bk"
H=$(rf_host "$(rf_worker pt)")
python3 - "$M/bk" "$H" <<'EOP' || rf_fail "an open file's data did not move with the plugin host stopped"
import mmap, os, signal, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_DIRECT)
buf = mmap.mmap(-1, 65536)
host = int(sys.argv[2])
signal.alarm(10)
os.kill(host, signal.SIGSTOP)
try:
    got = os.preadv(fd, [buf], 65536)
    put = os.pwritev(fd, [buf], 0)
finally:
    os.kill(host, signal.SIGCONT)
os.close(fd)
sys.exit(0 if got == put == 65536 else 1)
EOP
cmp -s <(head -c 65536 "$S/bk") <(tail -c +65537 "$S/bk" | head -c 65536) ||
	rf_fail "the keeper's write of bk is not in the backing file"
rm -f "$M/bk"

rf_log "counters"
rb=$(rf_field pt read_fixed_bytes) wb=$(rf_field pt write_fixed_bytes)
[ "$wb" -ge $((MB << 20)) ] || rf_fail "only $wb bytes went through WRITE_FIXED"
[ "$rb" -ge $((MB << 20)) ] || rf_fail "only $rb bytes went through READ_FIXED"
rf_assert_worker_fenced "$(rf_worker pt)"
rf_stop

rf_log "tmpfs source: transfers of every size by pread/pwrite in line, none by fixed-buffer ops"
rf_policy_reset
mkdir -p "$T/mem"
mount -t tmpfs -o size=64M,mode=0755 rf-test "$T/mem"
EXTRA_MOUNTS+=("$T/mem")
# (with zero copy a transfer of any size is a ring op: the data is in the
# client's pages, which nothing else reaches; t_zerocopy covers that)
rf_policy tm passthrough "$T/mem" "zero_copy = off"
rf_start tm
head -c $((4 << 20)) /dev/urandom >"$T/m.in"
dd if="$T/m.in" of="$T/tm.mnt/small" bs=4K oflag=direct status=none || rf_fail "4K writes"
dd if="$T/m.in" of="$T/tm.mnt/big" bs=1M oflag=direct status=none || rf_fail "1M writes"
cmp -s "$T/m.in" <(dd if="$T/tm.mnt/small" bs=4K iflag=direct status=none) || rf_fail "4K reads differ"
cmp -s "$T/m.in" <(dd if="$T/tm.mnt/big" bs=1M iflag=direct status=none) || rf_fail "1M reads differ"
cmp -s "$T/m.in" "$T/mem/small" || rf_fail "the tmpfs file differs"
cmp -s "$T/m.in" "$T/mem/big" || rf_fail "the tmpfs file differs"
[ "$(rf_field tm inline_bytes)" = $((16 << 20)) ] || rf_fail "inline_bytes = $(rf_field tm inline_bytes)"
[ "$(rf_field tm read_fixed_bytes)" = 0 ] || rf_fail "reads were fixed-buffer ops"
[ "$(rf_field tm write_fixed_bytes)" = 0 ] || rf_fail "writes were fixed-buffer ops"
rf_stop
umount "$T/mem"

# rf_roundtrip: 8 MiB through the mount (O_DIRECT both ways), compared
rf_roundtrip() {
	head -c $((8 << 20)) /dev/urandom >"$T/p.in"
	dd if="$T/p.in" of="$M/p" bs=1M oflag=direct status=none || rf_fail "write 8 MiB"
	dd if="$M/p" of="$T/p.out" bs=1M iflag=direct status=none || rf_fail "read 8 MiB"
	cmp -s "$T/p.in" "$T/p.out" || rf_fail "8 MiB came back different"
	cmp -s "$T/p.in" "$S/p" || rf_fail "8 MiB reached the backing file different"
}

rf_log "--bench-unsafe: a bad switch is refused"
out=$("$RINGFENCED" --bench-unsafe=no-sandbox,bogus -f -c "$T/policy" 2>&1) &&
	rf_fail "--bench-unsafe=bogus was accepted"
echo "$out" | grep -q "unknown 'bogus' (expected no-sandbox, plain-io, eager-forget, no-pin, private-payload, spin, one-process)" || rf_fail "said: $out"

rf_log "--bench-unsafe=plain-io: file data by pread/pwrite, none by fixed-buffer ops but zero-copied data"
rf_policy_reset
rf_policy pt passthrough "$S"
RF_BROKER_ARGS=--bench-unsafe=plain-io rf_start pt
rf_roundtrip
# zero-copied data (Linux 7.3) can only move by fixed-buffer ops: those,
# and nothing else
fixed=$(($(rf_field pt read_fixed_bytes) + $(rf_field pt write_fixed_bytes)))
[ "$fixed" = "$(rf_field pt zero_copy_bytes)" ] ||
	rf_fail "fixed-buffer ops used: $fixed bytes, $(rf_field pt zero_copy_bytes) of them zero-copied"
[ "$(rf_field pt bytes_read)" -ge $((8 << 20)) ] || rf_fail "bytes_read = $(rf_field pt bytes_read)"
rf_assert_worker_fenced "$(rf_worker pt)"
rf_stop

rf_log "--bench-unsafe=private-payload: the same bytes through payloads outside the pool"
# per-entry buffers: with the kernel's buffer pools (7.3) the payloads are
# the pool's, and zero copy moves data by READ_FIXED
rf_policy_reset
rf_policy pt passthrough "$S" "bufpool = off"
RF_BROKER_ARGS=--bench-unsafe=private-payload rf_start pt
grep -q "private-payload: payloads outside the pool" "$T/broker.log" || rf_fail "no warning in the log"
rf_roundtrip
[ "$(rf_field pt read_fixed_bytes)" = 0 ] || rf_fail "READ_FIXED used with private payloads"
[ "$(rf_field pt bytes_read)" -ge $((8 << 20)) ] || rf_fail "bytes_read = $(rf_field pt bytes_read)"
rf_assert_worker_fenced "$(rf_worker pt)"
rf_stop
rf_policy_reset
rf_policy pt passthrough "$S"

# make bench's targets of the hand-over, on the host only (make bench
# runs there; the guest's time goes to what its kernel changes)
if [ "${RF_IN_VM:-}" != 1 ]; then
	rf_log "--bench-unsafe=one-process: no plugin host, the keeper runs the plugin"
	RF_BROKER_ARGS=--bench-unsafe=one-process rf_start pt
	W=$(rf_worker pt)
	[ -z "$(rf_host "$W")" ] || rf_fail "worker $W has a plugin host: $(rf_host "$W")"
	grep -q "one-process: no plugin host" "$T/broker.log" || rf_fail "no warning in the log"
	rf_roundtrip
	grep -q '^Seccomp:[[:space:]]*2' "/proc/$W/status" || rf_fail "worker $W has no seccomp filter"
	rf_stop

	rf_log "--bench-unsafe=spin: keeper and host poll each other, the same bytes"
	RF_BROKER_ARGS=--bench-unsafe=spin rf_start pt
	W=$(rf_worker pt)
	[ -n "$(rf_host "$W")" ] || rf_fail "worker $W has no plugin host"
	rf_roundtrip
	mkdir "$M/spun" && touch "$M/spun/a" && [ -e "$S/spun/a" ] || rf_fail "a create through the spinning pair"
	rf_stop
fi

rf_log "--bench-unsafe=no-sandbox: no seccomp, no namespaces, same data path"
RF_BROKER_ARGS=--bench-unsafe=no-sandbox rf_start pt
W=$(rf_worker pt)
grep -q '^Seccomp:[[:space:]]*0' "/proc/$W/status" || rf_fail "worker $W has a seccomp filter"
[ "$(readlink "/proc/$W/ns/mnt")" = "$(readlink /proc/self/ns/mnt)" ] ||
	rf_fail "worker $W is in a mount namespace of its own"
grep -q "^Uid:[[:space:]]*$(rf_uid pt)[[:space:]]" "/proc/$W/status" || rf_fail "worker uid is not the tenant's"
grep -q "workers run WITHOUT their sandbox" "$T/broker.log" || rf_fail "no warning in the log"
rf_roundtrip
[ "$(rf_field pt read_fixed_bytes)" -ge $((8 << 20)) ] || rf_fail "READ_FIXED not used"
rf_stop
