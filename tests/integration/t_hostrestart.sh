#!/bin/bash
# host_restart: a dead plugin host is replaced alone. The worker's keeper,
# its FUSE rings and the requests the kernel queues meanwhile stay, so
# that clients see nothing of a plugin's death but EIO for what the dead
# host held and could not be run again (a write in flight). Ten SIGKILLs
# of the plugin host under a client holding files open, then under fio's
# verifying reads and two writers: no ECANCELED (the kernel's answer for
# requests it hands a dead worker's ring), no ESTALE, no corrupt byte.
# The watchdog ends a host that holds a request too long, and the
# heartbeat one that answers no PING, not their keeper.
# memfs keeps its tree; a plugin that dies at every getattr ends in the
# EIO responder after crash_limit host deaths, each counted.
. "$(dirname "$0")/lib.sh"
rf_setup
# in the 7.3 guest (TCG, every step many times slower) five kills a run,
# and only what the kernel's buffer pools and zero copy change: the
# client and the load; memfs and the crash loop are the host's
KILLS=10
[ "${RF_IN_VM:-}" = 1 ] && KILLS=5

# kill tenant $1's plugin host (recording when, and when it was dead, in
# $T/kills) and wait for the next one to serve
kill_host() {
	local w h
	w=$(rf_worker "$1")
	h=$(rf_host "$w")
	[ -n "$h" ] || rf_fail "$1: worker $w has no plugin host"
	python3 "$(dirname "$0")/restore_load.py" kill "$h" "$T/kills"
	rf_wait_next_host "$1" "$w" "$h"
}

rf_log "a client holding files open sees nothing of $KILLS plugin host deaths"
rf_policy rs passthrough "$T/src" "host_restart = yes" "restore_nodes = 1024" "crash_limit = 20"
rf_start rs
W0=$(rf_worker rs)
G0=$(rf_field rs generation)
rf_client_start rs
rf_klog_mark hosts
rf_deaths_with_client kill_host rs $KILLS
[ "$(rf_worker rs)" = "$W0" ] || rf_fail "the keeper changed"
[ "$(rf_field rs crashes)" = $KILLS ] || rf_fail "crashes=$(rf_field rs crashes), not $KILLS"
[ "$(rf_field rs generation)" = $((G0 + KILLS)) ] || rf_fail "generation $(rf_field rs generation), not $((G0 + KILLS))"
[ "$(rf_field rs restore_failed)" = 0 ] || rf_fail "restore_failed=$(rf_field rs restore_failed)"
[ "$(rf_field rs restored_files)" -ge $((4 * KILLS)) ] || rf_fail "restored_files=$(rf_field rs restored_files)"
[ "$(rf_field rs outside_kills)" = $KILLS ] || rf_fail "outside_kills=$(rf_field rs outside_kills), not $KILLS"
grep -q "rs: plugin host was killed by signal 9" "$T/broker.log" || rf_fail "no host death in the log"
grep -q "rs: plugin host generation $((G0 + KILLS)) serving" "$T/broker.log" || rf_fail "no host start in the log"
n=$(grep -c "starting worker generation" "$T/broker.log")
[ "$n" = 0 ] || rf_fail "$n new workers started; only plugin hosts should have"
rf_assert_worker_fds "$W0" 2 host_restart
# the keeper's FUSE entries lived on: no successor asked the kernel for
# anything (a worker's respawn did, a kernel log line a miss)
n=$(rf_klog_misses hosts)
[ "$n" = 0 ] || rf_fail "$KILLS plugin host deaths made $n kernel log lines"
rf_log "  keeper $W0 served throughout; $(rf_field rs restored_nodes) node ids and $(rf_field rs restored_files) open files restored by $KILLS hosts"
cmp "$T/src/a/b/f" "$T/rs.mnt/a/b/f" || rf_fail "f differs in the source"
rf_stop

rf_log "fio verifying reads and two writers under $KILLS plugin host SIGKILLs"
rf_policy_reset
rm -rf "$T/src"
rf_policy rs passthrough "$T/src" "host_restart = yes" "restore_nodes = 1024" "crash_limit = 20" "crash_window = 1"
rf_start rs
rf_fio_load_start "$T/rs.mnt" "$T/src"
for i in $(seq 1 "$KILLS"); do
	kill_host rs
	sleep 1.7
done
rf_fio_load_stop judge-host
# a read the dead host held is run again by the next: fio sees no error
[ "$FIO_ERRS" = 0 ] || rf_fail "fio: $FIO_ERRS errors (first errno $FIO_FIRST) across plugin host deaths"
[ "$(rf_field rs restore_failed)" = 0 ] || rf_fail "restore_failed=$(rf_field rs restore_failed)"
n=$(grep -c "starting worker generation" "$T/broker.log")
[ "$n" = 0 ] || rf_fail "$n new workers started; only plugin hosts should have"
rf_stop

rf_log "request_timeout: the watchdog ends the plugin host that holds a request, not its keeper"
rf_policy_reset
rf_policy wd "$BUILD/tests/plugins/hang.so" "" "host_restart = yes" "request_timeout = 2"
rf_start wd
W0=$(rf_worker wd)
H0=$(rf_host "$W0")
start=$(date +%s)
# a lookup, not run again: EIO once its host is gone
err=$(rf_stat_errno "$T/wd.mnt/stuck" $((10 * RF_TIME_SCALE)))
took=$(($(date +%s) - start))
[ "$err" = EIO ] || rf_fail "the stuck lookup: $err"
[ $took -le $((6 * RF_TIME_SCALE)) ] || rf_fail "the stuck lookup took $took s with request_timeout = 2"
grep -q "wd: watchdog: request [0-9]* (opcode 1) held for more than request_timeout = 2 s; ending the plugin host of worker $W0" \
	"$T/broker.log" || rf_fail "the watchdog did not end the plugin host"
rf_wait_next_host wd "$W0" "$H0"
grep -q "wd: plugin host was killed by signal 9 (Killed) after: watchdog: request" "$T/broker.log" ||
	rf_fail "the host's death is not told with the watchdog's reason"
for f in watchdog_kills:1 crashes:1 outside_kills:0; do
	[ "$(rf_field wd "${f%:*}")" = "${f#*:}" ] || rf_fail "${f%:*}=$(rf_field wd "${f%:*}"), not ${f#*:}"
done
[ "$(rf_stat_errno "$T/wd.mnt")" = OK ] || rf_fail "the mount does not serve after the watchdog"
n=$(grep -c "starting worker generation" "$T/broker.log")
[ "$n" = 0 ] || rf_fail "$n new workers started; only a plugin host should have"
rf_log "  the stuck lookup failed after $took s; keeper $W0 serves on with a new host"
rf_stop

rf_log "heartbeat_timeout: a frozen plugin host is ended alone, a frozen keeper whole"
rf_policy_reset
rf_policy hb "$BUILD/tests/plugins/hang.so" "" "host_restart = yes" "heartbeat_timeout = 2"
rf_start hb
W0=$(rf_worker hb)
H0=$(rf_host "$W0")
kill -STOP "$H0"
start=$(date +%s)
rf_wait_next_host hb "$W0" "$H0"
took=$(($(date +%s) - start))
kill -0 "$H0" 2>/dev/null && rf_fail "the frozen host $H0 is alive"
grep -q "hb: heartbeat: queue [0-9]* did not answer for heartbeat_timeout = 2 s; ending the plugin host of worker $W0" \
	"$T/broker.log" || rf_fail "the heartbeat did not end the plugin host"
grep -q "hb: plugin host was killed by signal 9 (Killed) after: heartbeat: " "$T/broker.log" ||
	rf_fail "the host's death is not told with the heartbeat's reason"
for f in heartbeat_kills:1 crashes:1 outside_kills:0; do
	[ "$(rf_field hb "${f%:*}")" = "${f#*:}" ] || rf_fail "${f%:*}=$(rf_field hb "${f%:*}"), not ${f#*:}"
done
# 2 s, a PING every second, the watchdog's tick, a new host's start and
# the wait for it (3 and 4 s seen on the host)
[ $took -le $((4 + 2 * RF_TIME_SCALE)) ] || rf_fail "a new host after $took s with heartbeat_timeout = 2"
[ "$(rf_stat_errno "$T/hb.mnt")" = OK ] || rf_fail "the mount does not serve after the heartbeat"
rf_log "  a new plugin host after $took s; keeper $W0 serves on"
# the keeper is asked to end its host, which it cannot: the next PING
# left unanswered kills it (or the first, when the new host had not
# answered one yet: two host ends in a row are the keeper's failing)
kill -STOP "$W0"
rf_wait_successor hb "$W0"
kill -0 "$W0" 2>/dev/null && rf_fail "the frozen keeper $W0 is alive"
grep -q "hb: heartbeat: queue [0-9]* did not answer for heartbeat_timeout = 2 s; killing worker $W0" \
	"$T/broker.log" || rf_fail "no heartbeat kill of the keeper in the log"
n=$(rf_field hb heartbeat_kills)
[ "$n" = 2 ] || [ "$n" = 3 ] || rf_fail "heartbeat_kills=$n, not 2 or 3"
[ "$(rf_stat_errno "$T/hb.mnt")" = OK ] || rf_fail "the mount does not serve after the keeper's kill"
pings="one PING"
[ "$n" = 3 ] && pings="two PINGs"
rf_log "  a frozen keeper: killed after $pings left unanswered, a new worker serves"
rf_stop

[ "${RF_IN_VM:-}" = 1 ] && exit 0

rf_log "memfs keeps its tree and open files across five plugin host deaths"
rf_policy_reset
rf_policy mf memfs "" "host_restart = yes" "state_size = 64M" "restore_nodes = 4096" "crash_limit = 20" "crash_window = 1"
rf_start mf
M=$T/mf.mnt
mkdir -p "$M/d/e"
head -c 300000 /dev/urandom >"$T/ref"
cp "$T/ref" "$M/d/e/big"
rf_client_start mf --unlinked
rf_deaths_with_client kill_host mf 5
cmp "$T/ref" "$M/d/e/big" || rf_fail "memfs: d/e/big differs"
[ "$(rf_field mf restore_failed)" = 0 ] || rf_fail "memfs: restore_failed=$(rf_field mf restore_failed)"
rf_stop

rf_log "a plugin that dies at every getattr: crash_limit host deaths, then the EIO responder"
rf_policy_reset
rf_policy hg "$BUILD/tests/plugins/hang.so" "" "host_restart = yes" "options = crash_getattr" \
	"crash_limit = 3" "crash_window = 60"
rf_start hg
W0=$(rf_worker hg)
# the getattr kills a host, is run again once by the next, kills it too,
# and gets EIO; the next getattr kills the third: the responder's turn
err=$(rf_stat_errno "$T/hg.mnt")
[ "$err" = EIO ] || rf_fail "stat after two host deaths: $err"
[ "$(rf_worker hg)" = "$W0" ] || rf_fail "the keeper did not stay for the first two deaths"
# (with the worker: through /dev/fuse the kernel ends what it read with
# ECONNABORTED)
err=$(rf_stat_errno "$T/hg.mnt")
case $TRANSPORT:$err in uring:EIO | classic:ECONNABORTED) ;; *) rf_fail "stat at the third host death: $err" ;; esac
rf_wait_state hg failed
[ "$(rf_field hg crashes)" = 3 ] || rf_fail "crashes=$(rf_field hg crashes), not 3"
[ "$(grep -c "hg: plugin host was killed by signal 11" "$T/broker.log")" -ge 2 ] ||
	rf_fail "fewer than two host deaths in the log"
[ "$(rf_worker hg)" != "$W0" ] || rf_fail "the responder is the old keeper"
grep -q "hg: worker .*its plugin hosts dying too often" "$T/broker.log" || rf_fail "no word of the crash loop"
[ "$(rf_stat_errno "$T/hg.mnt")" = EIO ] || rf_fail "the responder does not answer EIO"
rf_stop
