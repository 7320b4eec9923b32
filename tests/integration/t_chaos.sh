#!/bin/bash
# CHAOS_SECONDS (60) of a plugin that misbehaves at random
# (tests/plugins/chaos.c): wrong answers of every kind, random IPC messages,
# random words over the pool's control area, each from a seed it logs.
# Throughout, the broker answers, the memfs tenant beside it reads back
# everything it wrote, every client call on the chaos mount returns, and
# the kernel stays untainted. The chaos worker dies again and again; each
# death must be the worker's, said why, and followed by a successor.
. "$(dirname "$0")/lib.sh"
rf_setup
SECS=${CHAOS_SECONDS:-60}
# CHAOS_OPTIONS: no_pool, answer_all (tests/plugins/chaos.c), to narrow a failure down
rf_policy ch "$BUILD/tests/plugins/chaos.so" "" "request_timeout = 2" "heartbeat_timeout = 2" \
	"crash_limit = 32" "crash_window = 1" "start_timeout = 10" \
	${CHAOS_OPTIONS:+"options = $CHAOS_OPTIONS"}
rf_policy mem memfs ""
taint0=$(cat /proc/sys/kernel/tainted)
rf_start ch mem

rf_log "$SECS s of chaos beside a memfs tenant"
# clients of the chaos mount: any answer will do, but every call returns
cat >"$T/client.py" <<'PY'
import os, random, sys, time
m, secs, out = sys.argv[1], float(sys.argv[2]), sys.argv[3]
random.seed(os.getpid())
calls = slow = 0
worst = 0.0
end = time.time() + secs
while time.time() < end:
    f = "%s/f%d" % (m, random.randrange(10))
    t0 = time.time()
    try:
        op = random.randrange(6)
        if op == 0:
            os.stat(f)
        elif op == 1:
            os.listdir(m)
        elif op == 2:
            # O_NONBLOCK: a random mode can make the name a fifo, whose
            # open would wait for a writer, not for the file system
            fd = os.open(f, os.O_RDONLY | os.O_NONBLOCK)
            try:
                os.read(fd, 1 << 16)
            finally:
                os.close(fd)
        elif op == 3:
            with open(f, "r+b") as h:
                h.write(b"chaos %d\n" % calls)
        elif op == 4:
            os.truncate(f, random.randrange(64))
        else:
            os.statvfs(m)
    except OSError:
        pass
    d = time.time() - t0
    worst = max(worst, d)
    slow += d > 5
    calls += 1
with open(out, "w") as o:
    o.write("%d %d %.1f\n" % (calls, slow, worst))
PY
CLIENTS=()
for c in 1 2; do
	python3 "$T/client.py" "$T/ch.mnt" "$SECS" "$T/client$c.out" &
	CLIENTS+=($!)
done
EXTRA_PIDS+=("${CLIENTS[@]}")
end=$(($(date +%s) + SECS))
i=0
while [ "$(date +%s)" -lt "$end" ]; do
	i=$((i + 1))
	echo "probe $i" >"$T/mem.mnt/p$((i % 8))" && [ "$(cat "$T/mem.mnt/p$((i % 8))")" = "probe $i" ] ||
		rf_fail "the memfs tenant lost a write after $i probes"
	if [ $((i % 4)) = 0 ]; then
		kill -0 "$BROKER_PID" 2>/dev/null || rf_fail "the broker died"
		[ "$(timeout 3 "$CTL" -s "$T/ctl.sock" status mem | tr ' ' '\n' | sed -n 's/^state=//p')" = running ] ||
			rf_fail "status of the memfs tenant did not say running within 3 s"
	fi
	sleep 0.25
done
rf_log "  $i probes of the memfs tenant, each read back; the broker answered every status"
for c in 1 2; do
	for _ in $(seq 150); do [ -s "$T/client$c.out" ] && break; sleep 0.1; done
	if read -r calls slow worst 2>/dev/null <"$T/client$c.out"; then
		rf_log "  client $c: $calls calls, the slowest $worst s, $slow over 5 s"
		[ "$calls" -gt 20 ] || rf_fail "client $c made only $calls calls"
	else
		# a call still in the kernel when the chaos ended: the
		# watchdog or the stop ends it (the next check)
		pid=${CLIENTS[$((c - 1))]}
		rf_log "  client $c is still in a call 15 s after the end: $(grep State "/proc/$pid/status"), in $(head -3 "/proc/$pid/stack" | tr '\n' ' ')"
	fi
done
# the chaos did what it is for: deaths, each said why
crashes=$(rf_field ch crashes)
[ "$crashes" -ge 5 ] || rf_fail "only $crashes deaths of the chaos worker: it did too little"
# the pool's control area is read-only in the plugin's process: a scribble
# faults there (the broker's pool check stays for what the keeper writes)
pool=$(grep -c "$(rf_host_death ch) killed by signal 11" "$T/broker.log")
ipc=$(grep -cE "ch: (killing worker|ending the plugin host of worker) [0-9]*: (malformed message|message|descriptors|IPC)" "$T/broker.log")
gaveup=$(grep -cE "ch: worker: queue [0-9]*: the kernel (refused commit id|knows no request)" "$T/broker.log")
watchdog=$(rf_field ch watchdog_kills)
rf_log "  $crashes deaths: $pool faults on the pool, $ipc for IPC, $gaveup gave up on a reply the kernel refused, $watchdog by the watchdog"
[ "$pool" -ge 1 ] && [ "$ipc" -ge 1 ] || rf_fail "the chaos never hit the pool ($pool) or the channel ($ipc)"
grep -q "ch: worker: chaos: seed [0-9]*" "$T/broker.log" || rf_fail "no seed in the log"
[ "$(cat /proc/sys/kernel/tainted)" = "$taint0" ] ||
	rf_fail "the kernel was tainted: $taint0 -> $(cat /proc/sys/kernel/tainted)"
# idle, its plugin hosts still die now and then (the chaos thread needs no
# request): seen running once within 10 s, the tenant was not given up
rf_wait_state ch running
rf_stop
# stopped, the tenant ends every call still waiting with an error
for pid in "${EXTRA_PIDS[@]}"; do
	for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	kill -0 "$pid" 2>/dev/null &&
		rf_fail "a client still waits 10 s after the tenant stopped: $(grep State "/proc/$pid/status"), in $(tr '\n' ' ' <"/proc/$pid/stack")"
done
exit 0
