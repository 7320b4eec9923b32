#!/bin/bash
# The plugin's state (policy state_size): memory the broker keeps for the
# mount's life and maps into every worker generation, so that what a
# plugin keeps there outlives its worker's death; a restart (a new mount)
# starts afresh; the worker holds no descriptor of it.
. "$(dirname "$0")/lib.sh"
rf_setup
PERSIST=$BUILD/tests/plugins/persist.so

inits() { cat "$T/ps.mnt/inits" 2>&1; }
# kill the worker and wait for its successor to serve
kill_worker() {
	local w
	w=$(rf_worker ps)
	kill -KILL "$w"
	rf_wait_successor ps "$w"
}

rf_log "without state_size the plugin gets none"
rf_policy ps "$PERSIST"
rf_start ps
[ "$(inits)" = "no state" ] || rf_fail "inits: $(inits)"
[ "$(rf_field ps state_size)" = 0 ] || rf_fail "state_size=$(rf_field ps state_size)"
rf_stop

rf_log "state_size = 64K: what the plugin keeps there outlives three worker deaths"
rf_policy_reset
rf_policy ps "$PERSIST" "" "state_size = 64K" "crash_limit = 10"
rf_start ps
[ "$(inits)" = "inits=1 generation=0 state=65536" ] || rf_fail "first: $(inits)"
[ "$(rf_field ps state_size)" = 65536 ] || rf_fail "state_size=$(rf_field ps state_size)"
at=$(grep "memfd:ringfence-state" "/proc/$(rf_worker ps)/maps" | cut -d- -f1)
for i in 2 3 4; do
	kill_worker
	# at one address in every generation: pointers into it stay valid
	[ "$(grep "memfd:ringfence-state" "/proc/$(rf_worker ps)/maps" | cut -d- -f1)" = "$at" ] ||
		rf_fail "the state moved from $at"
	[ "$(inits)" = "inits=$i generation=$((i - 1)) state=65536" ] || rf_fail "after death $((i - 1)): $(inits)"
done
W=$(rf_worker ps)
grep -q "memfd:ringfence-state" "/proc/$W/maps" || rf_fail "the state is not mapped in worker $W"
ls -l "/proc/$W/fd" | grep -q "ringfence-state" && rf_fail "worker $W holds a descriptor of the state"

rf_log "  a restart is a new mount: the state starts afresh"
"$CTL" -s "$T/ctl.sock" restart ps >/dev/null || rf_fail "restart"
rf_wait_state ps running
[ "$(inits)" = "inits=1 generation=0 state=65536" ] || rf_fail "after restart: $(inits)"
rf_stop

rf_log "state_size must be a multiple of 4K"
rf_policy_reset
rf_policy ps "$PERSIST" "" "state_size = 1000"
out=$("$RINGFENCED" --check "$T/policy" 2>&1) && rf_fail "state_size = 1000 was accepted"
echo "$out" | grep -q "^$T/policy:[0-9]*: state_size" || rf_fail "--check said: $out"
