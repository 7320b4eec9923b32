#!/bin/bash
# Start-up errors, worker death without hangs, clean shutdown.
. "$(dirname "$0")/lib.sh"
rf_setup

rf_log "a bad policy names its line, and nothing is mounted"
printf '[mount x]\nmountpoint = %s/x\nplugin = hello\nqueue_depth = lots\n' "$T" >"$T/bad.policy"
out=$("$RINGFENCED" -f -c "$T/bad.policy" 2>&1) && rf_fail "bad policy accepted"
echo "$out" | grep -q "bad.policy:4: queue_depth: expected a whole number, got 'lots'" ||
	rf_fail "error does not name the line: $out"
"$RINGFENCED" --check "$T/bad.policy" >/dev/null 2>&1 && rf_fail "--check accepted a bad policy"
"$RINGFENCED" --help | grep -q -- "--check" || rf_fail "--help"
"$CTL" --help | grep -q status || rf_fail "ringfencectl --help"
"$BUILD/ringfence-worker" --help | grep -q ipc-fd || rf_fail "ringfence-worker --help"

rf_log "a FIFO as a policy, an include fan-out: errors at once, never a hang"
mkfifo "$T/fifo.policy"
out=$(timeout 5 "$RINGFENCED" --check "$T/fifo.policy" 2>&1)
[ $? = 1 ] || rf_fail "--check on a FIFO did not fail at once: $out"
echo "$out" | grep -q "fifo.policy: cannot read: not a regular file" || rf_fail "--check on a FIFO: $out"
printf '@include %s\n' "$T/fifo.policy" >"$T/fifo.seccomp"
out=$(timeout 5 "$RINGFENCED" --check-seccomp "$T/fifo.seccomp" 2>&1)
[ $? = 1 ] || rf_fail "--check-seccomp including a FIFO did not fail at once: $out"
echo "$out" | grep -q "fifo.seccomp:1:10: cannot read '.*fifo.policy': not a regular file" ||
	rf_fail "--check-seccomp including a FIFO: $out"
for l in 0 1 2 3 4; do
	for _ in $(seq 40); do echo "@include fan$((l + 1)).seccomp"; done >"$T/fan$l.seccomp"
done
echo "read: 1" >"$T/fan5.seccomp"
out=$(timeout 5 "$RINGFENCED" --check-seccomp "$T/fan0.seccomp" 2>&1)
[ $? = 1 ] || rf_fail "an include fan-out of 40, 5 deep, did not fail at once"
[ "$(echo "$out" | grep -c "one policy may read at most 64 files")" = 1 ] ||
	rf_fail "the fan-out was not refused once: $(echo "$out" | head -5)"

rf_log "seccomp policies: --check-seccomp lists rules or names FILE:LINE:COL"
"$RINGFENCED" --check-seccomp "$ROOT/seccomp.policy" >"$T/sc.out" || rf_fail "shipped seccomp.policy rejected"
grep -q "default: trap" "$T/sc.out" && grep -q "^io_uring_enter" "$T/sc.out" || rf_fail "no rules listed"
printf 'read: 1\nwrite: arg9 == 1\n' >"$T/bad.seccomp"
out=$("$RINGFENCED" --check-seccomp "$T/bad.seccomp" 2>&1) && rf_fail "bad seccomp policy accepted"
echo "$out" | grep -q "bad.seccomp:2:8: expected arg0..arg5" || rf_fail "seccomp error: $out"
printf '[mount x]\nmountpoint = %s\nplugin = hello\nseccomp_policy = %s/bad.seccomp\n' "$T" "$T" >"$T/scpol.policy"
out=$("$RINGFENCED" --check "$T/scpol.policy" 2>&1) && rf_fail "--check passed a bad seccomp policy"
echo "$out" | grep -q "scpol.policy:1: \[mount x\]: its seccomp policy is not valid" || rf_fail "--check: $out"

# side_broker POLICY SOCKET TENANT...: start another broker, wait until every
# TENANT has failed (its crash loop ended in the EIO responder)
side_broker() {
	local pol=$1 sock=$2 t i
	shift 2
	"$RINGFENCED" -f -c "$pol" >"$pol.log" 2>&1 &
	SIDE=$!
	EXTRA_PIDS+=($SIDE)
	for t in "$@"; do
		for i in $(rf_tries 300); do
			"$CTL" -s "$sock" status "$t" 2>/dev/null | grep -q "state=failed .* worker=[1-9]" && break
			sleep 0.1
		done
		"$CTL" -s "$sock" status "$t" | grep -q "state=failed" ||
			rf_fail "$t did not end in failed: $("$CTL" -s "$sock" status "$t" 2>&1; cat "$pol.log")"
	done
}

rf_log "a plugin that fails init: said why; after five tries its clients get EIO at once"
mkdir -p "$T/ni.mnt"
MOUNTS+=("$T/ni.mnt")
printf '[global]\ncontrol_socket = %s/c2.sock\nusers_file = %s/users\n[mount p]\nmountpoint = %s/ni.mnt\nplugin = passthrough\ntransport = %s\n' \
	"$T" "$T" "$T" "$TRANSPORT" >"$T/noinit.policy"
side_broker "$T/noinit.policy" "$T/c2.sock" p
grep -q "plugin passthrough init: Invalid argument" "$T/noinit.policy.log" || rf_fail "init failure not reported"
grep -q "p: .*5 deaths within 60 s: answering EIO until restarted" "$T/noinit.policy.log" ||
	rf_fail "no crash-loop verdict: $(cat "$T/noinit.policy.log")"
out=$(timeout 5 stat "$T/ni.mnt" 2>&1) && rf_fail "stat of a failed tenant succeeded"
echo "$out" | grep -q "Input/output error" || rf_fail "a failed tenant answered: $out"
kill -TERM $SIDE && wait $SIDE || rf_fail "broker did not stop cleanly"
rf_is_mounted "$T/ni.mnt" && rf_fail "ni.mnt left mounted"

rf_log "a plugin that hangs or crashes in init: deadline, back-off, EIO responder"
mkdir -p "$T/h1.mnt" "$T/h2.mnt"
MOUNTS+=("$T/h1.mnt" "$T/h2.mnt")
cat >"$T/hang.policy" <<EOP
[global]
control_socket = $T/c4.sock
users_file = $T/users
[mount h1]
mountpoint = $T/h1.mnt
plugin = $BUILD/tests/plugins/hang.so
options = hang_init
start_timeout = 1
crash_limit = 3
transport = $TRANSPORT
[mount h2]
mountpoint = $T/h2.mnt
plugin = $BUILD/tests/plugins/hang.so
options = crash_init
transport = $TRANSPORT
EOP
start=$(date +%s)
side_broker "$T/hang.policy" "$T/c4.sock" h1 h2
[ $(($(date +%s) - start)) -le $((20 * RF_TIME_SCALE)) ] || rf_fail "giving up took $(($(date +%s) - start)) s"
grep -q "h1: worker did not become ready within start_timeout = 1 s" "$T/hang.policy.log" ||
	rf_fail "no start_timeout message"
grep -q "h1: .*3 deaths within 60 s: answering EIO" "$T/hang.policy.log" || rf_fail "crash_limit = 3 ignored"
grep -q "h2: worker exited: its plugin host was killed by signal 11" "$T/hang.policy.log" || rf_fail "no crash message"
grep -q "h2: a new worker in 400 ms (death 4)" "$T/hang.policy.log" || rf_fail "no back-off"
for m in h1 h2; do
	timeout 5 stat "$T/$m.mnt" >/dev/null 2>&1 && rf_fail "$m answered while failed"
done
"$CTL" -s "$T/c4.sock" restart h2 >/dev/null 2>&1 # crashes again, but the command works
kill -TERM $SIDE && wait $SIDE || rf_fail "broker did not stop cleanly"
rf_is_mounted "$T/h1.mnt" && rf_fail "h1 left mounted"
rf_is_mounted "$T/h2.mnt" && rf_fail "h2 left mounted"

if [ "$TRANSPORT" = classic ] && [ "$(cat /sys/module/fuse/parameters/enable_uring)" != Y ]; then
	rf_log "transport = uring without FUSE io-uring: refused, said why"
	mkdir -p "$T/u.mnt"
	printf '[global]\ncontrol_socket = %s/c3.sock\nusers_file = %s/users\n[mount u]\nmountpoint = %s/u.mnt\nplugin = hello\ntransport = uring\n' \
		"$T" "$T" "$T" >"$T/u.policy"
	timeout 20 "$RINGFENCED" -f -c "$T/u.policy" >"$T/u.log" 2>&1 && rf_fail "uring mount without io-uring"
	grep -q "enable_uring" "$T/u.log" || rf_fail "no reason given: $(cat "$T/u.log")"
	rf_is_mounted "$T/u.mnt" && rf_fail "refused mount left mounted"
fi

rf_log "a mountpoint reached through a symlink: refused, the real path named"
mkdir -p "$T/real.mnt"
ln -s "$T/real.mnt" "$T/link.mnt"
printf '[global]\ncontrol_socket = %s/c5.sock\nusers_file = %s/users\n[mount l]\nmountpoint = %s/link.mnt\nplugin = hello\n' \
	"$T" "$T" "$T" >"$T/l.policy"
timeout 20 "$RINGFENCED" -f -c "$T/l.policy" >"$T/l.log" 2>&1 && rf_fail "a symlinked mountpoint was served"
grep -qF "mountpoint $T/link.mnt resolves to $T/real.mnt (a symlink on the way)" "$T/l.log" ||
	rf_fail "no reason given: $(cat "$T/l.log")"
rf_is_mounted "$T/real.mnt" && rf_fail "a refused mount was left mounted"

rf_log "request_timeout: the watchdog replaces a worker that holds a request too long"
mkdir -p "$T/st.mnt"
printf '[global]\ncontrol_socket = %s/c5.sock\nusers_file = %s/users\n[mount st]\nmountpoint = %s/st.mnt\nplugin = %s\nrequest_timeout = 2\ntransport = %s\n' \
	"$T" "$T" "$T" "$BUILD/tests/plugins/hang.so" "$TRANSPORT" >"$T/st.policy"
MOUNTS+=("$T/st.mnt")
"$RINGFENCED" -f -c "$T/st.policy" >"$T/st.log" 2>&1 &
st_broker=$!
EXTRA_PIDS+=($st_broker)
for _ in $(rf_tries 100); do "$CTL" -s "$T/c5.sock" status st 2>/dev/null | grep -q state=running && break; sleep 0.1; done
start=$(date +%s)
stat "$T/st.mnt/stuck" >/dev/null 2>&1 && rf_fail "the stuck lookup succeeded"
took=$(($(date +%s) - start))
[ $took -le 6 ] || rf_fail "the stuck request took $took s with request_timeout = 2"
grep -q "st: watchdog: request [0-9]* (opcode 1) held for more than request_timeout = 2 s" "$T/st.log" ||
	rf_fail "no watchdog: $(cat "$T/st.log")"
for _ in $(rf_tries 50); do "$CTL" -s "$T/c5.sock" status st | grep -q "state=running.*watchdog_kills=1" && break; sleep 0.1; done
"$CTL" -s "$T/c5.sock" status st | grep -q "state=running.*generation=1 .*watchdog_kills=1" ||
	rf_fail "not replaced: $("$CTL" -s "$T/c5.sock" status st)"
stat "$T/st.mnt" >/dev/null || rf_fail "the mount does not serve after the watchdog"
kill -TERM $st_broker
wait $st_broker
rf_log "  the stuck request failed after $took s; the mount serves on"

rf_log "worker killed mid-read: it is replaced, clients see at most an error, nobody hangs"
rf_policy pt passthrough "$T/src"
rf_policy mem memfs ""
rf_start pt mem
head -c $((64 << 20)) /dev/urandom >"$T/src/f"
chown "$(rf_uid pt)" "$T/src/f"
want=$(sha256sum <"$T/src/f" | cut -d' ' -f1)
# each read either returns the whole file or fails: never wrong data, never a hang
( for i in $(seq 30); do
	got=$(dd if="$T/pt.mnt/f" bs=1M iflag=direct status=none 2>/dev/null | sha256sum | cut -d' ' -f1)
	[ "$got" = "$want" ] && echo ok || echo err
done >"$T/reads" ) &
reader=$!
sleep 0.5
W=$(rf_worker pt)
kill -KILL "$W"
# "running" until the broker reaps the dead one: wait for its successor
for _ in $(rf_tries 100); do
	[ "$(rf_field pt generation)" = 1 ] && [ "$(rf_field pt state)" = running ] && break
	sleep 0.1
done
[ "$(rf_worker pt)" != "$W" ] && [ "$(rf_worker pt)" != 0 ] || rf_fail "no new worker"
[ "$(rf_field pt crashes)" = 1 ] && [ "$(rf_field pt generation)" = 1 ] ||
	rf_fail "crashes/generation: $(rf_status pt)"
for i in $(rf_tries 300); do kill -0 "$reader" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$reader" 2>/dev/null; then
	kill -KILL "$reader"
	rf_fail "a client still waits $((30 * RF_TIME_SCALE)) s after the worker was replaced"
fi
wait "$reader"
[ "$(grep -c ok "$T/reads")" -ge 20 ] || rf_fail "reads after recovery fail: $(sort "$T/reads" | uniq -c)"
rf_log "  $(grep -c ok "$T/reads") of 30 reads whole, $(grep -c err "$T/reads") failed; adopted $(rf_field pt adopted)"
[ "$(dd if="$T/pt.mnt/f" bs=1M iflag=direct status=none | sha256sum | cut -d' ' -f1)" = "$want" ] ||
	rf_fail "the file reads differently after recovery"
grep -q "pt: worker was killed by signal 9 (Killed)" "$T/broker.log" &&
	grep -q "pt: a new worker in [0-9]* ms (death 1)" "$T/broker.log" || rf_fail "no recovery in the log"
rf_log "the other tenant never noticed"
echo still >"$T/mem.mnt/x" && [ "$(cat "$T/mem.mnt/x")" = still ] || rf_fail "memfs tenant broken"
[ "$(rf_field mem state)" = running ] || rf_fail "memfs tenant state"

rf_log "SIGTERM unmounts everything and reaps the workers"
wm=$(rf_worker mem)
rf_stop
kill -0 "$wm" 2>/dev/null && rf_fail "worker $wm outlived the broker"
[ -e "$T/ctl.sock" ] && rf_fail "control socket left behind"
exit 0
