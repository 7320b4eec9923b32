#!/bin/bash
# A worker that dies holding a request: its successor answers that request
# (EIO) on the io-uring path, where the kernel keeps it; on /dev/fuse the
# kernel ends it itself. Five deaths in a minute fail the tenant, and
# ringfencectl restart brings it back. A worker that stops answering the
# broker's heartbeat is replaced; one busy with a request is not.
. "$(dirname "$0")/lib.sh"
rf_setup
# the broker again, on the hang and memfs tenants most sections use
back_to_hg() {
	rf_stop
	rf_policy_reset
	rf_policy hg "$BUILD/tests/plugins/hang.so" ""
	rf_policy mem memfs ""
	rf_start hg mem
}
rf_policy hg "$BUILD/tests/plugins/hang.so" ""
rf_policy mem memfs "" # keeps the broker up when hg fails
rf_start hg mem

rf_log "a request the dead worker held ends in an error at once"
W=$(rf_worker hg)
( stat "$T/hg.mnt/stuck" >/dev/null 2>"$T/stuck.err"; echo $? >"$T/stuck.rc" ) &
client=$!
sleep 0.5
kill -0 "$client" || rf_fail "the stuck request did not wait"
rf_klog_mark held
kill -KILL "$W"
for _ in $(seq 100); do kill -0 "$client" 2>/dev/null || break; sleep 0.1; done
kill -0 "$client" 2>/dev/null && { kill -KILL "$client"; rf_fail "the client still waits 10 s after the worker died"; }
[ "$(cat "$T/stuck.rc")" != 0 ] || rf_fail "the stuck request succeeded"
rf_wait_state hg running
if [ "$TRANSPORT" = uring ]; then
	grep -q "Input/output error" "$T/stuck.err" || rf_fail "client saw: $(cat "$T/stuck.err")"
	# the successor's answer went out at once (the client has it), but
	# counts as adopted when its entry fetches the next request, which may
	# be after the broker's kick: send one from each CPU until it does
	for _ in $(rf_tries 50); do
		[ "$(rf_field hg adopted)" = 1 ] && break
		for c in $(seq 0 $(($(nproc) - 1))); do taskset -c "$c" stat "$T/hg.mnt" >/dev/null; done
		sleep 0.2
	done
	[ "$(rf_field hg adopted)" = 1 ] || rf_fail "adopted = $(rf_field hg adopted)"
	grep -q "finished request [0-9]* (LOOKUP) of a dead worker" "$T/broker.log" ||
		rf_fail "no adoption in the log"
	# the kernel counted one request, the one the slot held: the
	# successor asked for no other, and committed nothing the kernel
	# would refuse (each refusal is a line in the kernel's log)
	grep -q "hg: worker: the kernel's 1 requests are all in slots" "$T/broker.log" ||
		rf_fail "the successor did not bound its rescue by the kernel's count"
	n=$(rf_klog_misses held)
	[ "$n" = 0 ] || rf_fail "the successor's commits made $n kernel log lines: $(dmesg | grep "commit_id .* not found" | tail -2)"
fi
rf_log "  the client saw: $(sed 's/.*: //' "$T/stuck.err")"
stat "$T/hg.mnt" >/dev/null || rf_fail "the mount does not serve after recovery"

if [ "$TRANSPORT" = uring ]; then
	rf_log "a request safe to repeat is run again: the client never notices"
	rf_stop
	rf_policy_reset
	# (its sleep is clock_nanosleep, which the shipped policy allows)
	rf_policy sl "$BUILD/tests/plugins/hang.so" "" "options = slow_getattr"
	rf_start sl
	sleep 2.5 # let the root's cached attributes expire
	( stat "$T/sl.mnt" >/dev/null 2>"$T/sl.err"; echo $? >"$T/sl.rc" ) &
	client=$!
	sleep 0.7
	W=$(rf_worker sl)
	[ "${W:-0}" -gt 1 ] || rf_fail "no worker to kill"
	kill -KILL "$W"
	for _ in $(seq 100); do kill -0 "$client" 2>/dev/null || break; sleep 0.1; done
	kill -0 "$client" 2>/dev/null && { kill -KILL "$client"; rf_fail "the client waits"; }
	[ "$(cat "$T/sl.rc")" = 0 ] || rf_fail "stat failed: $(cat "$T/sl.err")"
	grep -q "running request [0-9]* (GETATTR) of a dead worker again" "$T/broker.log" ||
		rf_fail "GETATTR was not run again: $(grep -i 'dead worker' "$T/broker.log")"
	[ "$(rf_field sl adopted_rerun)" = 1 ] || rf_fail "adopted_rerun = $(rf_field sl adopted_rerun)"

	rf_log "  once: a request that kills the worker running it again ends in EIO"
	rf_stop
	rf_policy_reset
	# deaths spaced wider than the crash window never fail the tenant
	rf_policy sl "$BUILD/tests/plugins/hang.so" "" "options = crash_getattr" \
		"crash_limit = 32" "crash_window = 1"
	rf_start sl
	sleep 1.5 # let the root's cached attributes expire
	( stat "$T/sl.mnt" >/dev/null 2>"$T/sl.err"; echo $? >"$T/sl.rc" ) &
	client=$!
	for _ in $(rf_tries 100); do kill -0 "$client" 2>/dev/null || break; sleep 0.1; done
	kill -0 "$client" 2>/dev/null && { kill -KILL "$client"; rf_fail "the client waits ($(rf_field sl crashes) deaths)"; }
	grep -q "Input/output error" "$T/sl.err" || rf_fail "stat: $(cat "$T/sl.err")"
	# (by the keeper, with host_restart)
	again="running request [0-9]* \(GETATTR\) of a dead worker again|request [0-9]* \(GETATTR\): the next host runs it again"
	[ "$(grep -cE "$again" "$T/broker.log")" = 1 ] ||
		rf_fail "run again: $(grep -cE "$again" "$T/broker.log") times"
	[ "$(rf_field sl crashes)" = 2 ] || rf_fail "crashes = $(rf_field sl crashes)"
	back_to_hg
fi

rf_log "requests made while no worker exists are served once the next one is ready"
# the kernel sends them only on the next commit of their queue, so the
# broker kicks every queue (a FUSE_NOTIFY_RETRIEVE from each CPU) once the
# successor is ready; nothing else here makes a request on those CPUs
rf_stop
rf_policy_reset
rf_policy hs "$BUILD/tests/plugins/hang.so" "" "options = slow_init hang_statfs"
rf_policy mem memfs ""
rf_start hs mem
NCPU=$(rf_field hs queues)
kill -KILL "$(rf_worker hs)"
sleep 0.5 # the successor is still in its 1.5 s init
[ "$(rf_field hs state)" = starting ] || rf_fail "hs is $(rf_field hs state) during the outage"
clients=()
for c in $(seq 0 $((NCPU - 1))); do
	grep -q "^$c$" <(seq "$(nproc)" | awk '{print $1 - 1}') || continue # an offline CPU
	( taskset -c "$c" stat "$T/hs.mnt/during-$c" >/dev/null 2>&1; echo "$c" >>"$T/served" ) &
	clients+=($!)
done
rf_wait_state hs running
for pid in "${clients[@]}"; do
	for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	kill -0 "$pid" 2>/dev/null && rf_fail "a request made during the outage still waits 5 s after the successor started (served: $(tr '\n' ' ' <"$T/served" 2>/dev/null))"
done
rf_log "  ${#clients[@]} requests from ${#clients[@]} CPUs served after the outage"

rf_log "a plugin that never answers STATFS and dies: no process of the broker waits on its mount"
for i in 1 2 3; do
	kill -KILL "$(rf_worker hs)"
	rf_wait_state hs starting
	rf_wait_state hs running
done
kids=$(ps -o pid= --ppid "$BROKER_PID" | wc -l)
[ "$kids" = 2 ] || rf_fail "the broker has $kids children after 4 respawns, not its 2 workers: $(ps -o pid,stat,wchan:20,args --ppid "$BROKER_PID")"
[ "$(rf_field hs crashes)" = 4 ] || rf_fail "crashes = $(rf_field hs crashes)"
rf_log "  4 respawns, 2 children (the workers)"
back_to_hg

rf_log "five deaths within a minute: failed, clients get EIO at once; restart brings it back"
for i in $(seq $((5 - $(rf_field hg crashes)))); do
	rf_wait_state hg running
	kill -KILL "$(rf_worker hg)"
	sleep 0.2
done
rf_wait_state hg failed
rf_status hg | grep -q "5 deaths within 60 s: answering EIO until restarted" ||
	rf_fail "reason: $(rf_status hg)"
out=$(timeout 5 stat "$T/hg.mnt/stuck" 2>&1) && rf_fail "a failed tenant answered"
echo "$out" | grep -q "Input/output error" || rf_fail "a failed tenant said: $out"
"$CTL" -s "$T/ctl.sock" restart hg >/dev/null || rf_fail "restart"
rf_wait_state hg running
[ "$(rf_field hg crashes)" = 0 ] || rf_fail "restart kept the crash count"
stat "$T/hg.mnt" >/dev/null || rf_fail "restarted tenant does not serve"

rf_log "an aborted connection is not recovered: the tenant fails"
id=$(awk -v mp="$T/hg.mnt" '$5 == mp { split($3, d, ":"); print d[1] * 1048576 + d[2] }' /proc/self/mountinfo)
echo 1 >"/sys/fs/fuse/connections/$id/abort"
rf_wait_state hg failed
grep -q "hg: the FUSE connection has ended (an abort through /sys/fs/fuse/connections/$id/abort, or an unmount); nothing to recover" "$T/broker.log" ||
	rf_fail "no word of the ended connection"
[ "$(rf_field mem state)" = running ] || rf_fail "the other tenant suffered"
rf_stop

rf_log "a frozen worker misses its heartbeat and is replaced"
rf_policy_reset
# (the whole worker; with host_restart a frozen host is ended first:
# t_hostrestart)
rf_policy hb "$BUILD/tests/plugins/hang.so" "" "heartbeat_timeout = 2" "host_restart = no"
rf_start hb
W=$(rf_worker hb)
rf_klog_mark quiet
kill -STOP "$W"
start=$(date +%s)
for _ in $(rf_tries 100); do [ "$(rf_field hb generation)" = 1 ] && break; sleep 0.1; done
took=$(($(date +%s) - start))
rf_wait_state hb running
[ "$(rf_field hb heartbeat_kills)" = 1 ] || rf_fail "heartbeat_kills = $(rf_field hb heartbeat_kills)"
[ "$(rf_field hb generation)" = 1 ] || rf_fail "not replaced: $(rf_status hb)"
[ "$(rf_worker hb)" != "$W" ] || rf_fail "the frozen worker $W is still the worker"
kill -0 "$W" 2>/dev/null && rf_fail "the frozen worker $W is still alive"
grep -q "hb: heartbeat: queue [0-9]* did not answer for heartbeat_timeout = 2 s; killing worker $W" \
	"$T/broker.log" || rf_fail "no heartbeat kill in the log"
# 2 s, a PING every second, the watchdog's tick, and a new worker's start
[ $took -le $((3 + 2 * RF_TIME_SCALE)) ] || rf_fail "replaced after $took s with heartbeat_timeout = 2"
stat "$T/hb.mnt" >/dev/null || rf_fail "the mount does not serve after the heartbeat kill"
if [ "$TRANSPORT" = uring ]; then
	# a quiet mount: the kernel held no request, so nothing was asked for
	grep -q "hb: worker: the kernel's 0 requests are all in slots" "$T/broker.log" ||
		rf_fail "the successor of a quiet mount did not know that nothing was lost"
	n=$(rf_klog_misses quiet)
	[ "$n" = 0 ] || rf_fail "a quiet mount's successor made $n kernel log lines"
fi
rf_log "  replaced after $took s"

rf_log "a worker holding a request is not a frozen one: request_timeout judges it"
( stat "$T/hb.mnt/stuck" >/dev/null 2>&1 ) &
client=$!
sleep 5
kill -0 "$client" || rf_fail "the stuck request did not wait"
[ "$(rf_field hb heartbeat_kills)" = 1 ] || rf_fail "a busy worker was killed: $(rf_status hb)"
[ "$(rf_field hb generation)" = 1 ] || rf_fail "a busy worker was replaced: $(rf_status hb)"
# a client of a sent request cannot be killed: end the request instead
kill -KILL "$(rf_worker hb)"
for _ in $(seq 100); do kill -0 "$client" 2>/dev/null || break; sleep 0.1; done
kill -0 "$client" 2>/dev/null && rf_fail "the client still waits after its worker died"
wait "$client" 2>/dev/null || true
rf_stop
