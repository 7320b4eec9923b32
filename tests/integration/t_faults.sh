#!/bin/bash
# Fault injection: four clients write and read files while the worker is
# killed again and again (sometimes twice in a row, so that a successor dies
# while adopting). Afterwards: no client is stuck, every write that was
# acknowledged is there byte for byte, and the mount serves.
. "$(dirname "$0")/lib.sh"
rf_setup
rf_policy pt passthrough "$T/src" "crash_limit = 32" "crash_window = 60"
rf_start pt
M=$T/pt.mnt
KILLS=${KILLS:-8}
head -c $((4 << 20)) /dev/urandom >"$T/blob"

# On the io-uring path the clients use O_DIRECT: a background request
# (readahead, page-cache writeback) handed to a dying worker can be lost in
# the kernel (README, "Known problems"), and its client would wait until the
# connection is aborted. On /dev/fuse they use the page cache.
if [ "$TRANSPORT" = uring ]; then
	IFLAG=iflag=direct OFLAG=oflag=direct
else
	IFLAG=iflag=fullblock OFLAG=conv=fsync
fi
client() { # N: write, read back; log what was acknowledged
	local n=$1 i
	for i in $(seq 1000); do
		[ -e "$T/stop" ] && break
		if dd if="$T/blob" of="$M/c$n.$i" bs=256K $OFLAG status=none 2>/dev/null; then
			echo "c$n.$i" >>"$T/acked.$n"
		fi
		dd if="$M/c$n.$((i > 1 ? i - 1 : 1))" of=/dev/null bs=256K $IFLAG status=none 2>/dev/null || true
	done
}
pids=()
for n in 1 2 3 4; do
	client $n &
	pids+=($!)
	EXTRA_PIDS+=($!)
done

rf_log "killing the worker $KILLS times under load"
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
for p in "${pids[@]}"; do
	for _ in $(seq 300); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
	if kill -0 "$p" 2>/dev/null; then
		ps -o pid,stat,wchan:30,cmd --ppid "$p" >&2
		kill -KILL "$p"
		rf_fail "client $p is stuck 30 s after the last kill"
	fi
	wait "$p"
done

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
rf_log "  $total acknowledged files intact; $(rf_field pt crashes) deaths, adopted $(rf_field pt adopted)"
[ "$(rf_field pt crashes)" -ge "$KILLS" ] || rf_fail "crashes = $(rf_field pt crashes)"
echo after >"$M/after" && [ "$(cat "$M/after")" = after ] || rf_fail "the mount does not serve"
rf_stop
