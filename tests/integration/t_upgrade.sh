#!/bin/bash
# ringfencectl upgrade TENANT [PLUGIN]: a new worker generation, of a new
# plugin file if named, keeping the mount, its node ids and open files
# (restore_nodes); not a crash. A plugin that cannot restore what the
# kernel holds, or does not load, is rolled back to the old one, and the
# command says so; the clients' files work throughout. With host_restart
# only the plugin host is replaced, and clients see no error but EIO for
# what the old host held.
. "$(dirname "$0")/lib.sh"
rf_setup
LOAD=$(dirname "$0")/restore_load.py

# No upgrade counts as a crash: every death the broker counted went the
# crash path ("a new worker in"), whatever else happened meanwhile (in the
# 7.3 guest a successor's rescue can die on its own: see the note there)
no_crash_but_crashes() {
	local c n
	c=$(rf_field up crashes)
	n=$(grep -c "up: a new worker in" "$T/broker.log")
	[ "$c" = "$n" ] || rf_fail "crashes=$c, but $n deaths went the crash path"
	CRASHES=$c
}
# writers that keep files open in up's mount (restore_load.py run), their
# record in $T/$1; $T/kills emptied for the upgrades' times
start_writers() {
	rm -f "$T/load-stop"
	: >"$T/kills"
	python3 "$LOAD" run "$T/up.mnt" "$T/src" "$T/load-stop" "$T/$1" &
	LOADER=$!
	EXTRA_PIDS+=($LOADER)
	rf_wait_file "$T/$1.ready"
}
# upgrade [PLUGIN]: the answer in $out, the status in $rc
upgrade() {
	out=$("$CTL" -s "$T/ctl.sock" upgrade up "$@" 2>&1)
	rc=$?
}

# the whole worker first (host_restart's run is the last)
rf_policy up passthrough "$T/src" "restore_nodes = 1024" "host_restart = no"
rf_policy plain passthrough "$T/src2" "restore_nodes = 0"
rf_start up plain
rf_client_start up
[ "$(rf_client step 0)" = ok ] || rf_fail "before any upgrade"
start_writers load.json

rf_log "upgrade to the same plugin: a new generation, the files stay open, no crash"
w=$(rf_worker up)
python3 -c 'import time; print("%.6f" % time.time(), end=" ")' >>"$T/kills"
upgrade
python3 -c 'import time; print("%.6f" % time.time())' >>"$T/kills"
[ $rc = 0 ] || rf_fail "upgrade: $out"
echo "$out" | grep -q "^up upgraded to passthrough (generation 1): [0-9]* node ids and [0-9]* open files restored$" ||
	rf_fail "upgrade said: $out"
rf_log "  $out"
[ "$(rf_worker up)" != "$w" ] || rf_fail "the same worker serves"
[ "$(rf_client step 1)" = ok ] || rf_fail "after the upgrade"
no_crash_but_crashes

rf_log "upgrade to another file: the worker maps it"
cp "$BUILD/plugins/passthrough.so" "$T/passthrough-v2.so"
python3 -c 'import time; print("%.6f" % time.time(), end=" ")' >>"$T/kills"
upgrade "$T/passthrough-v2.so"
python3 -c 'import time; print("%.6f" % time.time())' >>"$T/kills"
[ $rc = 0 ] || rf_fail "upgrade: $out"
[ "$(rf_field up plugin)" = "$T/passthrough-v2.so" ] || rf_fail "plugin=$(rf_field up plugin)"
# by inode: the path maps shows is the worker's view, after its pivot_root
# (in the 7.3 guest, where /tmp is a mount of its own, it lacks "/tmp")
ino=$(stat -c %i "$T/passthrough-v2.so")
hp=$(rf_host "$(rf_worker up)")
awk -v i="$ino" '$5 == i && /passthrough-v2.so$/ { f = 1 } END { exit !f }' "/proc/$hp/maps" ||
	rf_fail "the new file (inode $ino) is not mapped in the plugin host: $(grep passthrough "/proc/$hp/maps" | head -2)"
[ "$(rf_client step 2)" = ok ] || rf_fail "after the second upgrade"
sleep 1
touch "$T/load-stop"
wait "$LOADER" || rf_fail "the writers failed"
python3 "$LOAD" judge "$T/load.json" "$T/kills" >"$T/judge.out"
rc=$?
while read -r l; do rf_log "  $l"; done <"$T/judge.out"
[ $rc = 0 ] || rf_fail "errors or corrupt data across the upgrades"

rf_log "a plugin that cannot restore (hello: no restore_node) is rolled back"
no_crash_but_crashes
upgrade hello
[ $rc = 1 ] || rf_fail "upgrade to hello succeeded: $out"
echo "$out" | grep -q "^error: up: hello did not take over: restore: .* could not be restored by this plugin (it has no restore_node).*; rolled back to $T/passthrough-v2.so (generation $((4 + CRASHES)))" ||
	rf_fail "upgrade said: $out"
rf_log "  $out"
[ "$(rf_field up plugin)" = "$T/passthrough-v2.so" ] || rf_fail "plugin=$(rf_field up plugin)"
[ "$(rf_field up state)" = running ] || rf_fail "state=$(rf_field up state)"
[ "$(rf_client step 3)" = ok ] || rf_fail "after the rollback"
no_crash_but_crashes

rf_log "a file that does not load is rolled back too"
echo "not a plugin" >"$T/bad.so"
upgrade "$T/bad.so"
[ $rc = 1 ] || rf_fail "upgrade to bad.so succeeded: $out"
echo "$out" | grep -q "^error: up: $T/bad.so did not take over: .*load plugin.*; rolled back to" ||
	rf_fail "upgrade said: $out"
[ "$(rf_client step 4)" = ok ] || rf_fail "after the second rollback"
out=$(rf_client verify 5)
[ "$out" = ok ] || rf_fail "verify: $out"

rf_log "refused: no restore_nodes, no such plugin, no such tenant"
out=$("$CTL" -s "$T/ctl.sock" upgrade plain 2>&1) && rf_fail "plain was upgraded: $out"
echo "$out" | grep -q "has no restore_nodes" || rf_fail "plain: $out"
upgrade "$T/none.so"
[ $rc = 1 ] && echo "$out" | grep -q "none.so: No such file" || rf_fail "none.so: $out"
out=$("$CTL" -s "$T/ctl.sock" upgrade nobody 2>&1) && rf_fail "nobody: $out"
echo "$out" | grep -q "no tenant 'nobody'" || rf_fail "nobody: $out"
no_crash_but_crashes
# six generations of upgrades and rollbacks, and one per crash
[ "$(rf_field up generation)" = $((6 + CRASHES)) ] || rf_fail "generation=$(rf_field up generation)"
rf_client_stop
rf_stop

rf_log "host_restart: the plugin host alone is replaced; the keeper and its rings stay"
rf_policy_reset
rm -rf "$T/src"
rf_policy up passthrough "$T/src" "restore_nodes = 1024" "host_restart = yes"
rf_start up
rf_client_start up
[ "$(rf_client step 0)" = ok ] || rf_fail "host_restart: before any upgrade"
start_writers load2.json
w=$(rf_worker up)
for p in "" "$T/passthrough-v2.so"; do
	h=$(rf_host "$w")
	python3 -c 'import time; print("%.6f" % time.time(), end=" ")' >>"$T/kills"
	upgrade $p
	python3 -c 'import time; print("%.6f" % time.time())' >>"$T/kills"
	[ $rc = 0 ] || rf_fail "host_restart: upgrade $p: $out"
	rf_log "  $out"
	[ "$(rf_worker up)" = "$w" ] || rf_fail "host_restart: the keeper did not stay"
	[ "$(rf_host "$w")" != "$h" ] || rf_fail "host_restart: the same plugin host serves"
done
echo "$out" | grep -q "^up upgraded to $T/passthrough-v2.so (generation 2): [0-9]* node ids and [0-9]* open files restored$" ||
	rf_fail "host_restart: upgrade said: $out"
ino=$(stat -c %i "$T/passthrough-v2.so")
awk -v i="$ino" '$5 == i && /passthrough-v2.so$/ { f = 1 } END { exit !f }' "/proc/$(rf_host "$w")/maps" ||
	rf_fail "host_restart: the new file is not mapped in the plugin host"
[ "$(rf_client step 1)" = ok ] || rf_fail "host_restart: after the upgrades"
# (under the writers too: the old host's end, and the rollback's)
python3 -c 'import time; print("%.6f" % time.time(), end=" ")' >>"$T/kills"
upgrade hello
python3 -c 'import time; print("%.6f" % time.time())' >>"$T/kills"
[ $rc = 1 ] || rf_fail "host_restart: upgrade to hello succeeded: $out"
echo "$out" | grep -q "^error: up: hello did not take over: restore: .*; rolled back to $T/passthrough-v2.so (generation 4)" ||
	rf_fail "host_restart: upgrade said: $out"
rf_log "  $out"
[ "$(rf_worker up)" = "$w" ] || rf_fail "host_restart: the keeper did not stay for the rollback"
[ "$(rf_client step 2)" = ok ] || rf_fail "host_restart: after the rollback"
out=$(rf_client verify 3)
[ "$out" = ok ] || rf_fail "host_restart: verify: $out"
sleep 1
touch "$T/load-stop"
wait "$LOADER" || rf_fail "host_restart: the writers failed"
python3 "$LOAD" judge-host "$T/load2.json" "$T/kills" >"$T/judge.out"
rc=$?
while read -r l; do rf_log "  $l"; done <"$T/judge.out"
[ $rc = 0 ] || rf_fail "host_restart: errors or corrupt data across the upgrades"
[ "$(rf_field up crashes)" = 0 ] || rf_fail "host_restart: crashes=$(rf_field up crashes)"
n=$(grep -c "starting worker generation" "$T/broker.log")
[ "$n" = 0 ] || rf_fail "host_restart: $n new workers started"
rf_client_stop
rf_stop
