#!/bin/bash
# A tenant in development (debug = yes): root attaches gdb and strace to
# its plugin host as `ringfencectl debug` says, no watchdog ends the host
# while it is held stopped, and a crash leaves a core in core_dir that gdb
# reads down to the plugin's line, from the first host and from one its
# keeper started again. The keeper stays undumpable; a tenant without
# debug dumps no core and `ringfencectl debug` refuses it.
. "$(dirname "$0")/lib.sh"
rf_setup
HANG=$BUILD/tests/plugins/hang.so

rf_log "--check: core_dir only with debug = yes, never inside the mount point"
printf '[mount a]\nmountpoint = %s/a.mnt\nplugin = memfs\ncore_dir = %s/cores\n' "$T" "$T" >"$T/bad.policy"
out=$("$RINGFENCED" --check "$T/bad.policy" 2>&1) && rf_fail "--check passed core_dir without debug"
echo "$out" | grep -q "^$T/bad.policy:4: core_dir: only a tenant with debug = yes dumps core" ||
	rf_fail "--check said: $out"
printf '[mount a]\nmountpoint = %s/a.mnt\nplugin = memfs\ndebug = yes\ncore_dir = %s/a.mnt/c\n' "$T" "$T" >"$T/bad.policy"
out=$("$RINGFENCED" --check "$T/bad.policy" 2>&1) && rf_fail "--check passed core_dir inside the mount point"
echo "$out" | grep -q "^$T/bad.policy:5: core_dir: .* must not contain one another" || rf_fail "--check said: $out"

rf_policy dbg "$HANG" "" "debug = yes" "request_timeout = 1" "heartbeat_timeout = 1"
rf_policy crash "$HANG" "" "options = crash_getattr" "debug = yes" "core_dir = $T/cores"
rf_policy plain "$HANG" ""
rf_start dbg crash plain
grep -q "dbg: debug = yes: its plugin host may be traced and dumps core, and no watchdog" "$T/broker.log" ||
	rf_fail "no debug warning in the log: $(grep dbg: "$T/broker.log")"
[ "$(rf_field dbg debug)" = yes ] && [ "$(rf_field plain debug)" = no ] || rf_fail "status debug="

rf_log "ringfencectl debug: refused without debug = yes, the host and the commands with it"
out=$("$CTL" -s "$T/ctl.sock" debug plain 2>&1) && rf_fail "ringfencectl debug plain: $out"
echo "$out" | grep -q "the tenant has debug = no" || rf_fail "ringfencectl debug plain said: $out"
W=$(rf_worker dbg)
H=$(rf_host "$W")
out=$("$CTL" -s "$T/ctl.sock" debug dbg) || rf_fail "ringfencectl debug dbg"
echo "$out" | grep -qx "tenant dbg: plugin host $H of worker $W" || rf_fail "ringfencectl debug said: $out"
gdbline=$(echo "$out" | sed -n 's/^  \(gdb .*\)/\1/p')
[ "$gdbline" = "gdb -iex 'set sysroot /' -p $H $BUILD/ringfence-worker" ] || rf_fail "its gdb line: $gdbline"
# the host is dumpable (its /proc files are its user's, not root's), the
# keeper not
dumpable() { [ "$(stat -c %u "/proc/$1/environ")" != 0 ]; }
dumpable "$H" || rf_fail "the debug tenant's plugin host is not dumpable"
dumpable "$W" && rf_fail "the debug tenant's keeper is dumpable"
P=$(rf_host "$(rf_worker plain)")
dumpable "$P" && rf_fail "a tenant without debug has a dumpable plugin host"
grep -q "^Max core file size *0 *0 " "/proc/$P/limits" || rf_fail "plain host: $(grep core "/proc/$P/limits")"
grep -q "^Max core file size *unlimited" "/proc/$H/limits" || rf_fail "debug host: $(grep core "/proc/$H/limits")"

rf_log "gdb, as printed: the worker's and the plugin's symbols"
# shellcheck disable=SC2086 # the printed words, with its quoted -iex
eval timeout -s KILL 60 "${gdbline/gdb /gdb -nx -batch }" -ex "'p ringfence_plugin.name'" \
	-ex "'thread apply all bt'" >"$T/gdb.out" 2>&1 || { cat "$T/gdb.out" >&2; rf_fail "gdb"; }
grep -q '^\$1 = 0x[0-9a-f]* "hang"$' "$T/gdb.out" || rf_fail "gdb did not read the plugin: $(grep '^\$1' "$T/gdb.out")"
grep -q " in host_queue_main (" "$T/gdb.out" || rf_fail "gdb: no host_queue_main in the backtraces"
rf_log "strace -f -p, as printed: the host's threads"
timeout -s INT 2 strace -f -p "$H" -o "$T/strace.out" 2>/dev/null &
ST=$!
sleep 1
rf_stat_errno "$T/dbg.mnt/none" >/dev/null
wait $ST
grep -q "io_uring_enter(" "$T/strace.out" || rf_fail "strace saw: $(head -3 "$T/strace.out")"

rf_log "held stopped past request_timeout and heartbeat_timeout: no watchdog ends it"
kill -STOP "$H"
stat "$T/dbg.mnt/late" >/dev/null 2>&1 &
CL=$!
sleep 3.5
kill -CONT "$H"
wait $CL && rf_fail "a lookup of late found it"
[ "$(rf_worker dbg)" = "$W" ] && [ "$(rf_host "$W")" = "$H" ] || rf_fail "the stopped host was replaced"
[ "$(rf_field dbg watchdog_kills)" = 0 ] && [ "$(rf_field dbg heartbeat_kills)" = 0 ] ||
	rf_fail "watchdog_kills=$(rf_field dbg watchdog_kills) heartbeat_kills=$(rf_field dbg heartbeat_kills)"

pattern=$(cat /proc/sys/kernel/core_pattern)
case $pattern in
/* | \|*)
	rf_log "core_pattern is $pattern: cores go there, not to core_dir (not checked here)"
	;;
*)
	rf_log "a crash: a core in core_dir, the tenant's, that gdb reads to the plugin's line"
	W=$(rf_worker crash)
	first=$(rf_host "$W")
	rf_stat_errno "$T/crash.mnt" >/dev/null
	rf_wait_next_host crash "$W" "$first"
	core=$(find "$T/cores" -maxdepth 1 -type f -name 'core*' | head -1)
	[ -n "$core" ] || rf_fail "no core in $T/cores: $(ls -la "$T/cores")"
	[ "$(stat -c '%u %a' "$core")" = "$(rf_uid crash) 600" ] || rf_fail "core: $(stat -c '%u %a' "$core")"
	[ "$(stat -c '%u %a' "$T/cores")" = "$(rf_uid crash) 700" ] || rf_fail "core_dir: $(stat -c '%u %a' "$T/cores")"
	timeout -s KILL 60 gdb -nx -batch "$BUILD/ringfence-worker" "$core" -ex bt >"$T/gdbcore.out" 2>&1 ||
		{ cat "$T/gdbcore.out" >&2; rf_fail "gdb on the core"; }
	grep -q "^#0  hang_getattr (.*) at tests/plugins/hang.c:" "$T/gdbcore.out" ||
		rf_fail "the core's backtrace: $(grep '^#' "$T/gdbcore.out" | head -3)"
	# the keeper's next host is dumpable too, under the keeper's deny list
	H=$(rf_host "$W")
	[ -n "$H" ] && [ "$H" != "$first" ] || rf_fail "no next host"
	dumpable "$H" || rf_fail "the next host is not dumpable"
	;;
esac
rf_stop
