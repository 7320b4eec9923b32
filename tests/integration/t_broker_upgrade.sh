#!/bin/bash
# ringfencectl upgrade-broker and SIGUSR2: the broker re-executes the file
# at the path it was started from, in the same process, keeping every
# mount and worker. Clients writing and reading files held open see no
# error and no corrupt byte across it; the workers are the same processes
# after; the new image answers the control socket, supervises (a worker
# killed after it is replaced), reloads, and unmounts everything on
# SIGTERM. A binary that cannot take the state over is refused and the
# old image serves on. A broker that crashes still takes its workers with
# it, the upgraded one too.
. "$(dirname "$0")/lib.sh"
rf_setup
LOAD=$(dirname "$0")/restore_load.py

# the broker runs from a copy, so that the test can put other files at
# its path
mkdir "$T/bin"
cp "$BUILD/ringfenced" "$T/bin/ringfenced"
RINGFENCED=$T/bin/ringfenced
# a new build at that path: another inode, as a package upgrade leaves
new_build() {
	cp "$BUILD/ringfenced" "$T/bin/ringfenced.new" && mv "$T/bin/ringfenced.new" "$T/bin/ringfenced"
}
exe_inode() { stat -L -c %i "/proc/$BROKER_PID/exe"; }
nfds() { find "/proc/$BROKER_PID/fd" -mindepth 1 | wc -l; }
stamp() { date +%s.%N; }
# upgrade-broker, timed into $T/events: the answer in $out, the status in $rc
upgrade_broker() {
	local t0
	t0=$(stamp)
	out=$("$CTL" -s "$T/ctl.sock" upgrade-broker 2>&1)
	rc=$?
	echo "$t0 $(stamp)" >>"$T/events"
}
# the tenants' workers, generations and crashes, one line
workers() {
	local n
	for n in up mem; do
		printf '%s:%s:%s:%s ' "$n" "$(rf_worker $n)" "$(rf_field $n generation)" "$(rf_field $n crashes)"
	done
}
# the broker is the same process, serving the same workers
same() {
	kill -0 "$BROKER_PID" 2>/dev/null || rf_fail "$1: the broker is gone"
	[ "$(workers)" = "$W" ] || rf_fail "$1: workers $(workers), before $W"
	[ "$(rf_field up state)" = running ] && [ "$(rf_field mem state)" = running ] ||
		rf_fail "$1: $(rf_status)"
	[ "$(nfds)" = "$FDS" ] || rf_fail "$1: the broker holds $(nfds) descriptors, before $FDS: $(ls -l /proc/$BROKER_PID/fd)"
	echo hello >"$T/mem.mnt/probe" && [ "$(cat "$T/mem.mnt/probe")" = hello ] ||
		rf_fail "$1: memfs does not serve"
}

rf_policy up passthrough "$T/src" "restore_nodes = 1024"
rf_policy mem memfs "" "state_size = 16M"
rf_start up mem
rf_client_start up
[ "$(rf_client step 0)" = ok ] || rf_fail "before any upgrade"
echo kept >"$T/mem.mnt/kept"
: >"$T/events"
python3 "$LOAD" run "$T/up.mnt" "$T/src" "$T/load-stop" "$T/load.json" &
LOADER=$!
EXTRA_PIDS+=($LOADER)
rf_wait_file "$T/load.json.ready"
sleep 2 # latency away from the upgrades, to compare
W=$(workers)
FDS=$(nfds)
PID0=$BROKER_PID

rf_log "upgrade-broker onto the same file: the same process and workers"
upgrade_broker
[ $rc = 0 ] || rf_fail "upgrade-broker: $out"
echo "$out" | grep -qx "broker upgraded to ringfenced .* (from .*), pid $BROKER_PID, upgrade 1: 2 tenants taken over, 2 workers serving on" ||
	rf_fail "upgrade-broker said: $out"
rf_log "  $out"
same "after the first upgrade"
[ "$(rf_client step 1)" = ok ] || rf_fail "client after the first upgrade"

rf_log "a new build at the path: the process runs it"
new_build
ino=$(stat -c %i "$T/bin/ringfenced")
[ "$(exe_inode)" != "$ino" ] || rf_fail "the test did not make a new inode"
upgrade_broker
[ $rc = 0 ] && echo "$out" | grep -q "pid $BROKER_PID, upgrade 2: " || rf_fail "upgrade-broker: $out"
[ "$(exe_inode)" = "$ino" ] || rf_fail "the broker runs inode $(exe_inode), not the new $ino"
same "after the second upgrade"

rf_log "SIGUSR2 does the same"
t0=$(stamp)
kill -USR2 "$BROKER_PID"
for i in $(rf_tries 100); do
	grep -q "pid $BROKER_PID, upgrade 3: 2 tenants taken over" "$T/broker.log" && break
	sleep 0.1
done
echo "$t0 $(stamp)" >>"$T/events"
grep -q "pid $BROKER_PID, upgrade 3: 2 tenants taken over, 2 workers serving on" "$T/broker.log" ||
	rf_fail "no third upgrade after SIGUSR2"
same "after SIGUSR2"
[ "$(rf_client step 2)" = ok ] || rf_fail "client after SIGUSR2"

rf_log "a binary that cannot take the state over is refused; the old image serves on"
ino=$(exe_inode)
printf '#!/bin/sh\necho "this build reads broker state format 9 only"\nexit 1\n' >"$T/bin/ringfenced.new"
chmod 755 "$T/bin/ringfenced.new"
mv "$T/bin/ringfenced.new" "$T/bin/ringfenced"
upgrade_broker
[ $rc = 1 ] || rf_fail "a refusing binary was taken: $out"
echo "$out" | grep -qx "error: upgrade-broker: $T/bin/ringfenced cannot take over: this build reads broker state format 9 only" ||
	rf_fail "upgrade-broker said: $out"
rf_log "  $out"
[ "$(exe_inode)" = "$ino" ] || rf_fail "the broker's image changed"
same "after a refused upgrade"
rm "$T/bin/ringfenced"
upgrade_broker
[ $rc = 1 ] && echo "$out" | grep -q "cannot take over: cannot execute: No such file or directory" ||
	rf_fail "no binary: $out"
same "after a missing binary"
new_build
[ "$(rf_client step 3)" = ok ] || rf_fail "client after the refusals"

sleep 1
touch "$T/load-stop"
wait "$LOADER" || rf_fail "the writers failed"
python3 "$LOAD" steady "$T/load.json" "$T/events" >"$T/judge.out"
rc=$?
while read -r l; do rf_log "  $l"; done <"$T/judge.out"
[ $rc = 0 ] || rf_fail "clients saw errors or corrupt data across the broker upgrades"

rf_log "another control connection open: the upgrade waits until it ends (its 5 s time-out)"
# The peer says when it is connected: python starts slowly in the TCG
# guest, and an upgrade asked before the connection would not wait.
python3 -c 'import socket, sys, time
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
open(sys.argv[2], "w").close()
time.sleep(30)' "$T/ctl.sock" "$T/silent.up" &
SILENT=$!
EXTRA_PIDS+=($SILENT)
rf_wait_file "$T/silent.up"
logged=$(wc -l <"$T/broker.log")
t0=$(date +%s%N)
upgrade_broker
[ $rc = 0 ] && echo "$out" | grep -q "pid $BROKER_PID, upgrade 4: " || rf_fail "upgrade-broker: $out"
ms=$((($(date +%s%N) - t0) / 1000000))
[ $ms -ge 4000 ] || rf_fail "the upgrade did not wait for the silent peer ($ms ms)"
tail -n +$((logged + 1)) "$T/broker.log" |
	grep -q "upgrade-broker: waiting until no tenant is between states (1 other control connection open)" ||
	rf_fail "the broker did not say what it waited for"
rf_log "  answered after $ms ms"
kill "$SILENT"
same "after waiting"

rf_log "a worker killed just before: the upgrade waits for its successor, or the new image replaces it"
w=$(rf_worker up)
logged=$(wc -l <"$T/broker.log")
kill -KILL "$w"
upgrade_broker
[ $rc = 0 ] && echo "$out" | grep -q "pid $BROKER_PID, upgrade 5: 2 tenants taken over" || rf_fail "upgrade-broker: $out"
rf_wait_successor up "$w"
[ "$(rf_field up crashes)" = 1 ] || rf_fail "the killed worker was not counted: $(rf_status up)"
if tail -n +$((logged + 1)) "$T/broker.log" | grep -q "upgrade-broker: waiting until no tenant is between states"; then
	rf_log "  (the upgrade waited for the successor)"
else
	rf_log "  (the death reached the new image, which replaced the worker)"
fi
[ "$(rf_client step 4)" = ok ] || rf_fail "client after the successor"

rf_log "the upgraded broker supervises: a worker it did not start is replaced when killed"
w=$(rf_worker mem)
kill -KILL "$w"
rf_wait_successor mem "$w"
[ "$(rf_field mem crashes)" = 1 ] || rf_fail "mem: $(rf_status mem)"
[ "$(cat "$T/mem.mnt/kept")" = kept ] || rf_fail "memfs lost a file across its worker"

rf_log "the upgraded broker reloads: a mount added, then removed"
rf_policy third hello ""
"$CTL" -s "$T/ctl.sock" reload | grep -q "1 added, 0 removed" || rf_fail "reload did not add third"
rf_wait_state third running
[ "$(cat "$T/third.mnt/hello")" = "Hello from a ringfenced plugin." ] ||
	rf_fail "third's file reads: $(cat "$T/third.mnt/hello" 2>&1 | head -c 80)"
head -n -7 "$T/policy" >"$T/policy.new" && mv "$T/policy.new" "$T/policy"
kill -HUP "$BROKER_PID"
for i in $(rf_tries 50); do
	rf_is_mounted "$T/third.mnt" || break
	sleep 0.1
done
rf_is_mounted "$T/third.mnt" && rf_fail "the reload did not remove third"
out=$(rf_client verify 5)
[ "$out" = ok ] || rf_fail "verify: $out"
rf_client_stop
[ "$BROKER_PID" = "$PID0" ] || rf_fail "the broker's pid changed"
rf_stop

rf_log "a crash of an upgraded broker takes its workers with it"
rf_start up mem
upgrade_broker
[ $rc = 0 ] || rf_fail "upgrade-broker: $out"
w1=$(rf_worker up)
w2=$(rf_worker mem)
kill -KILL "$BROKER_PID"
wait "$BROKER_PID" 2>/dev/null
BROKER_PID=""
for i in $(rf_tries 50); do
	kill -0 "$w1" 2>/dev/null || kill -0 "$w2" 2>/dev/null || break
	sleep 0.1
done
kill -0 "$w1" 2>/dev/null && rf_fail "worker $w1 outlived its broker"
kill -0 "$w2" 2>/dev/null && rf_fail "worker $w2 outlived its broker"
for mp in "$T/up.mnt" "$T/mem.mnt"; do
	rf_force_unmount "$mp"
done
exit 0
