#!/bin/bash
# Node ids and open files that outlive the worker (policy restore_nodes):
# a client holding files open for reading and writing, a directory and its
# cwd in the mount sees nothing of ten SIGKILLs of the passthrough worker,
# not even a file renamed while open; the status counts what was restored.
# Without restore_nodes the same client gets errors (the test's control).
. "$(dirname "$0")/lib.sh"
rf_setup
CLIENT=$(dirname "$0")/restore_client.py

# kill the worker and wait for its successor to serve
kill_worker() {
	local w
	w=$(rf_worker $1)
	kill -KILL "$w"
	for _ in $(rf_tries 100); do
		[ "$(rf_field $1 state)" = running ] && [ "$(rf_worker $1)" != "$w" ] && return 0
		sleep 0.1
	done
	rf_fail "no successor of worker $w"
}

# start the client on mount $1 as coprocess C
client_start() {
	mkdir -p "$T/$1.mnt/a/b"
	head -c 100000 /dev/urandom >"$T/$1.mnt/a/b/f"
	coproc C { exec python3 "$CLIENT" "$T/$1.mnt"; }
	CPID=$C_PID
}
client() {
	local out
	echo "$1 $2" >&"${C[1]}"
	read -r -t $((20 * RF_TIME_SCALE)) out <&"${C[0]}" || out="fail: no answer"
	echo "$out"
}
client_stop() {
	exec {C[1]}>&-
	wait "$CPID" 2>/dev/null
}

rf_log "restore_nodes = 1024: ten worker deaths, clients see none"
rf_policy rs passthrough "$T/src" "restore_nodes = 1024" "crash_limit = 20"
rf_start rs
client_start rs
[ "$(client step 0)" = ok ] || rf_fail "before any death"
for i in $(seq 1 10); do
	kill_worker rs
	out=$(client step "$i")
	[ "$out" = ok ] || rf_fail "after death $i: $out"
done
out=$(client verify 11)
[ "$out" = ok ] || rf_fail "verify: $out"
client_stop
cmp "$T/src/a/b/f" "$T/rs.mnt/a/b/f" || rf_fail "f differs in the source"
n=$(rf_field rs restored_nodes)
f=$(rf_field rs restored_files)
[ "$(rf_field rs restore_failed)" = 0 ] || rf_fail "restore_failed=$(rf_field rs restore_failed)"
# each successor restored a, a/b, f, w, the renamed file; its open files
[ "$n" -ge 50 ] || rf_fail "restored_nodes=$n"
[ "$f" -ge 40 ] || rf_fail "restored_files=$f"
[ "$(rf_field rs restore_nodes)" = 1024 ] || rf_fail "restore_nodes=$(rf_field rs restore_nodes)"
grep -q "restored [0-9]* node ids and [0-9]* open files" "$T/broker.log" || rf_fail "no restore in the log"
rf_log "  restored $n node ids and $f open files in all; the last restore: $(grep -o "restored [0-9]* node ids.* in [0-9.]* ms" "$T/broker.log" | tail -1)"
rf_stop

rf_log "without restore_nodes, the same client fails after one death"
rf_policy_reset
rm -rf "$T/src"
rf_policy rs passthrough "$T/src" "crash_limit = 20"
rf_start rs
client_start rs
[ "$(client step 0)" = ok ] || rf_fail "before any death"
kill_worker rs
out=$(client step 1)
case "$out" in
"fail: EIO"* | "fail: ESTALE"*) ;;
*) rf_fail "without restore_nodes after a death: $out" ;;
esac
client_stop
rf_stop
