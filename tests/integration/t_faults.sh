#!/bin/bash
# Fault injection: four clients write and read files while the worker is
# killed again and again (sometimes twice in a row, so that a successor dies
# while adopting). Afterwards: no client is stuck, every write that was
# acknowledged is there byte for byte (fio verify=crc32c runs too), and the
# mount serves. On io-uring, requests the kernel had handed to a dying
# worker are found and ended (rescued) by its successor.
. "$(dirname "$0")/lib.sh"
rf_setup
rf_policy pt passthrough "$T/src" "crash_limit = 32" "crash_window = 60"
rf_start pt
M=$T/pt.mnt
KILLS=${KILLS:-8}
head -c $((4 << 20)) /dev/urandom >"$T/blob"

# Clients 1 and 2 bypass the page cache (O_DIRECT); 3 and 4 use it, so
# that readahead and writeback (background requests) are in flight too.
client() { # N: write, read back; log what was acknowledged
	local n=$1 i iflag=iflag=direct oflag=oflag=direct
	[ "$n" -gt 2 ] && iflag=iflag=fullblock oflag=conv=fsync
	for i in $(seq 1000); do
		[ -e "$T/stop" ] && break
		if dd if="$T/blob" of="$M/c$n.$i" bs=256K $oflag status=none 2>/dev/null; then
			echo "c$n.$i" >>"$T/acked.$n"
		fi
		dd if="$M/c$n.$((i > 1 ? i - 1 : 1))" of=/dev/null bs=256K $iflag status=none 2>/dev/null || true
	done
}
# fio writes each file and reads it back checking crc32c; a run that ends
# without error had its data acknowledged, and it is checked again at the end
FIO_ARGS=(--rw=write --bs=256k --size=2M --ioengine=psync --verify=crc32c --do_verify=1
	--verify_state_save=0)
fio_client() {
	local i
	for i in $(seq 1000); do
		[ -e "$T/stop" ] && break
		if fio --name=v --filename="$M/v.$i" "${FIO_ARGS[@]}" --output=/dev/null 2>/dev/null; then
			echo "v.$i" >>"$T/acked.fio"
		fi
	done
}
pids=()
for n in 1 2 3 4; do
	client $n &
	pids+=($!)
	EXTRA_PIDS+=($!)
done
fio_client &
pids+=($!)
EXTRA_PIDS+=($!)

rf_log "killing the worker $KILLS times under load"
rf_klog_mark faults
for k in $(seq "$KILLS"); do
	sleep 1.5
	rf_wait_state pt running
	W=$(rf_worker pt)
	[ "${W:-0}" -gt 1 ] || rf_fail "no worker to kill"
	kill -KILL "$W"
	if [ $((k % 3)) = 0 ]; then # and its successor, while it adopts
		for _ in $(seq 50); do
			W2=$(rf_worker pt)
			[ "${W2:-0}" -gt 1 ] && [ "$W2" != "$W" ] && break
			sleep 0.02
		done
		[ "${W2:-0}" -gt 1 ] && kill -KILL "$W2"
	fi
done
rf_wait_state pt running
sleep 1
touch "$T/stop"
stopped=$(date +%s)
for p in "${pids[@]}"; do
	for _ in $(rf_tries 300); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
	if kill -0 "$p" 2>/dev/null; then
		ps -o pid,stat,wchan:30,cmd --ppid "$p" >&2
		kill -KILL "$p"
		rf_fail "client $p is stuck $((30 * RF_TIME_SCALE)) s after the last kill"
	fi
	wait "$p"
done
rf_log "  the clients ended $(($(date +%s) - stopped)) s after being told to stop"

rf_log "every acknowledged write is intact"
want=$(sha256sum <"$T/blob" | cut -d' ' -f1)
total=0
for n in 1 2 3 4; do
	[ -f "$T/acked.$n" ] || continue
	while read -r f; do
		got=$(sha256sum <"$T/src/$f" | cut -d' ' -f1)
		[ "$got" = "$want" ] || rf_fail "$f was acknowledged but differs"
		total=$((total + 1))
	done <"$T/acked.$n"
done
[ "$total" -gt 0 ] || rf_fail "no write was acknowledged at all"
nfio=0
while read -r f; do
	fio --name=v --filename="$M/$f" "${FIO_ARGS[@]}" --verify_only --output="$T/fio.out" ||
		rf_fail "fio: $f was written and verified under fire, and now fails: $(cat "$T/fio.out")"
	nfio=$((nfio + 1))
done <"$T/acked.fio"
[ "$nfio" -gt 0 ] || rf_fail "no fio run completed at all"
rf_log "  $total acknowledged files and $nfio fio-verified files intact; $(rf_field pt crashes) deaths, adopted $(rf_field pt adopted), rescued $(rf_field pt rescued)"
rf_log "  $(grep -c 'never reached a worker' "$T/broker.log") lost requests ended; asked: $(grep -o 'asked for [0-9]*' "$T/broker.log" | awk '{print $3}' | tr '\n' ' ')"
rf_log "  $(rf_klog_misses faults) kernel log lines for ids asked for and not found, $(grep -c 'kernel counts\|all in slots' "$T/broker.log") successors bounded by the kernel's count"
[ "$(rf_field pt crashes)" -ge "$KILLS" ] || rf_fail "crashes = $(rf_field pt crashes)"
# a successor that cannot place an entry it inherited dies rather than lose a
# request; it never should (two entries on one slot would share it)
! grep -q "fetched into no slot we know" "$T/broker.log" ||
	rf_fail "a successor inherited an entry it could not place"
echo after >"$M/after" && [ "$(cat "$M/after")" = after ] || rf_fail "the mount does not serve"
rf_stop
