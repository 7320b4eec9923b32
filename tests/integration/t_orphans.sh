#!/bin/bash
# A worker never outlives its broker. It dies with it (PDEATHSIG, set after
# the worker's credentials change, which clears it, and locked by seccomp)
# even while plugin code holds its main thread; it exits as soon as the
# broker's end of its socket closes, even with a queue thread stuck in the
# plugin; and a starting broker kills what a dead one left (the workers it
# recorded, processes left in a tenant's cgroup) before it mounts.
. "$(dirname "$0")/lib.sh"
rf_setup
HOSTILE=$BUILD/tests/plugins/hostile.so

# start time of PID, field 22 of /proc/PID/stat (after the comm)
starttime() {
	local s
	s=$(cat "/proc/$1/stat") || return 1
	s=${s##*) }
	set -- $s
	echo "${20}"
}

# PID ended within TENTHS tenths of a second (a zombie has ended: its
# reaper, init, may take its time)
gone_within() { # PID TENTHS
	local i
	for i in $(seq "$2"); do
		case $(sed -n 's/^State:[[:space:]]*\(.\).*/\1/p' "/proc/$1/status" 2>/dev/null) in
		"" | Z) return 0 ;;
		esac
		sleep 0.1
	done
	return 1
}

kill_broker() {
	kill -KILL "$BROKER_PID"
	wait "$BROKER_PID" 2>/dev/null
	BROKER_PID=""
}

rf_log "a plugin holding the main thread: the worker dies with the broker"
rf_policy h "$HOSTILE" "$T/src" "options = block_init" "start_timeout = 600"
"$RINGFENCED" -f -c "$T/policy" >"$T/broker.log" 2>&1 &
BROKER_PID=$!
for _ in $(seq 100); do
	W=$(rf_worker h 2>/dev/null)
	[ -n "$W" ] && [ "$W" != 0 ] && grep -q '^Seccomp:[[:space:]]*2' "/proc/$W/status" 2>/dev/null && break
	sleep 0.1
done
[ -n "$W" ] && [ "$W" != 0 ] || rf_fail "no worker started"
sleep 0.5 # deep in the plugin's init now
[ "$(rf_field h state)" = starting ] || rf_fail "the tenant is $(rf_field h state), not starting"
kill_broker
gone_within "$W" 30 || rf_fail "worker $W outlived its broker: $(grep State "/proc/$W/status")"
rf_log "  worker $W went with the broker"
# the next broker clears the mount the dead one left
sed -i '/block_init/d' "$T/policy"
rf_start h
rf_stop
rf_policy_reset

rf_log "a queue thread stuck in the plugin: the worker goes, its client gets an error"
rf_policy h "$HOSTILE" "$T/src"
rf_policy mem memfs ""
rf_start h mem
WH=$(rf_worker h)
WM=$(rf_worker mem)
stat "$T/h.mnt/attack-block" >/dev/null 2>&1 &
CLIENT=$!
EXTRA_PIDS+=("$CLIENT")
sleep 0.5
kill -0 "$CLIENT" 2>/dev/null || rf_fail "the client of attack-block did not wait"
kill_broker
gone_within "$WH" 30 || rf_fail "the hostile worker $WH outlived its broker"
gone_within "$WM" 30 || rf_fail "the memfs worker $WM outlived its broker"
gone_within "$CLIENT" 50 || rf_fail "the client waits on after its worker died: $(grep State "/proc/$CLIENT/status")"
wait "$CLIENT" && rf_fail "the held stat succeeded"
rf_log "  both workers went; the held client failed"
# the next broker clears the stale mounts and serves again
rf_start h mem
grep -q "h: a stale ringfence mount is on" "$T/broker.log" || rf_fail "no stale mount was cleared"
rf_stop

rf_log "a new broker kills the workers a dead one recorded, and nothing else"
sleep 600 &
OLD=$!
disown $OLD
sleep 600 &
REUSED=$!
disown $REUSED
EXTRA_PIDS+=("$OLD" "$REUSED")
{
	echo "# as a dead broker left it"
	echo "boot $(cat /proc/sys/kernel/random/boot_id)"
	echo "$OLD $(starttime "$OLD") h"
	echo "$REUSED $(($(starttime "$REUSED") + 1)) mem" # a PID reused since
} >"$T/ctl.sock.workers"
rf_start h mem
gone_within "$OLD" 1 || rf_fail "the recorded worker $OLD was not killed"
kill -0 "$REUSED" 2>/dev/null || rf_fail "a process whose start time does not match was killed"
grep -q "h: worker $OLD of a previous broker is still running; killing it" "$T/broker.log" ||
	rf_fail "the broker did not say what it killed"
grep -q "^[0-9]* [0-9]* h$" "$T/ctl.sock.workers" || rf_fail "the running workers are not recorded"
[ "$(grep -c "^$(rf_worker h) $(starttime "$(rf_worker h)") h$" "$T/ctl.sock.workers")" = 1 ] ||
	rf_fail "the record does not name worker $(rf_worker h) and its start time: $(cat "$T/ctl.sock.workers")"
rf_stop
[ -e "$T/ctl.sock.workers" ] && rf_fail "the record outlived a clean stop"
rf_log "  $OLD killed, $REUSED (start time differs) left alone, the file gone after a clean stop"

rf_log "a new broker empties a tenant's cgroup that a dead one left"
rf_policy_reset
rf_policy h "$HOSTILE" "$T/src" "pids_max = 100"
rf_start h
W=$(rf_worker h)
cg=$(awk -F: '$2 == "pids" || $2 == "" { print $3; exit }' "/proc/$W/cgroup")
case $cg in */ringfence/h) ;; *) rf_fail "worker $W is not in a tenant cgroup: $(cat "/proc/$W/cgroup")" ;; esac
if grep -q '^[0-9]*:pids:' "/proc/$W/cgroup"; then dir=/sys/fs/cgroup/pids$cg; else dir=/sys/fs/cgroup$cg; fi
rf_stop
[ -d "$dir" ] && rf_fail "$dir outlived the tenant"
mkdir -p "$dir"
EXTRA_DIRS+=("$dir")
sleep 600 &
LEFT=$!
disown $LEFT
EXTRA_PIDS+=("$LEFT")
echo "$LEFT" >"$dir/cgroup.procs"
rf_start h
gone_within "$LEFT" 1 || rf_fail "process $LEFT left in $dir survived the new broker"
grep -q "h: $dir still holds processes of a previous broker; killing them" "$T/broker.log" ||
	rf_fail "the broker did not say what it emptied"
rf_stop
rf_log "  $dir: process $LEFT killed before the mount"
exit 0
