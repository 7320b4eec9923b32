#!/bin/bash
# Operations: systemd's notify protocol, a busy mount at shutdown, and a
# stale mount left by a broker that was killed.
. "$(dirname "$0")/lib.sh"
rf_setup
rf_policy pt passthrough "$T/src"
# a mountpoint with a space, which /proc/self/mountinfo writes as \040
mkdir -p "$T/sp ace.mnt"
MOUNTS+=("$T/sp ace.mnt")
printf '[mount sp]\nmountpoint = %s\nplugin = memfs\ntransport = %s\n\n' "$T/sp ace.mnt" "$TRANSPORT" >>"$T/policy"

rf_log "sd_notify: READY, RELOADING, STOPPING"
python3 - "$T/notify.sock" "$T/notify.log" <<'PY' &
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
s.settimeout(30)
with open(sys.argv[2], "w", buffering=1) as out:
    try:
        while True:
            msg = s.recv(4096).decode()
            out.write(msg.replace("\n", " ") + "\n")
            if "STOPPING=1" in msg:
                break
    except socket.timeout:
        pass
PY
listener=$!
EXTRA_PIDS+=($listener)
for _ in $(seq 50); do [ -S "$T/notify.sock" ] && break; sleep 0.1; done
NOTIFY_SOCKET=$T/notify.sock rf_start pt
for _ in $(seq 50); do grep -q READY=1 "$T/notify.log" && break; sleep 0.1; done
grep -q "READY=1 STATUS=serving 2 of 2 tenants" "$T/notify.log" || rf_fail "no READY: $(cat "$T/notify.log")"
kill -HUP "$BROKER_PID"
for _ in $(seq 50); do [ "$(grep -c READY=1 "$T/notify.log")" = 2 ] && break; sleep 0.1; done
grep -q "RELOADING=1" "$T/notify.log" && [ "$(grep -c READY=1 "$T/notify.log")" = 2 ] ||
	rf_fail "reload not announced: $(cat "$T/notify.log")"

rf_log "unlinks: every FORGET arrives; on io-uring, read in batches"
mkdir "$T/pt.mnt/fg"
(cd "$T/pt.mnt/fg" && seq 2000 | xargs touch)
f0=$(rf_field pt forgets) r0=$(rf_field pt classic_requests)
rm -r "$T/pt.mnt/fg"
for _ in $(rf_tries 50); do
	[ $(($(rf_field pt forgets) - f0)) -ge 2000 ] && break
	sleep 0.1
done
forgets=$(($(rf_field pt forgets) - f0)) reads=$(($(rf_field pt classic_requests) - r0))
[ "$forgets" -ge 2000 ] || rf_fail "2000 unlinks, $forgets FORGETs"
# each read of /dev/fuse rests 10 ms after a FORGET (worker/keeper/request.c)
[ "$TRANSPORT" = classic ] || [ $((reads * 2)) -le "$forgets" ] ||
	rf_fail "$forgets FORGETs in $reads reads of /dev/fuse: not batched"
rf_log "  $forgets FORGETs in $reads reads"

rf_log "a busy mount at shutdown: a bounded wait, then a lazy detach"
echo data >"$T/pt.mnt/f"
exec 9<"$T/pt.mnt/f"
rf_stop
exec 9<&-
wait "$listener"
grep -q "STOPPING=1" "$T/notify.log" || rf_fail "no STOPPING"
grep -q "pt.mnt still busy after 2000 ms; detaching it lazily" "$T/broker.log" ||
	rf_fail "no lazy detach: $(cat "$T/broker.log")"

rf_log "a killed broker leaves stale mounts; the next one cleans them up"
rf_start pt sp
echo there >"$T/sp ace.mnt/g" || rf_fail "the tenant on a path with a space does not serve"
kill -KILL "$BROKER_PID"
wait "$BROKER_PID" 2>/dev/null
BROKER_PID=""
rf_is_mounted "$T/pt.mnt" || rf_fail "no stale mount to clean (the test needs one)"
for _ in $(seq 50); do
	stat "$T/pt.mnt" >/dev/null 2>&1 || break # the dead worker's connection
	sleep 0.1
done
rf_start pt sp
grep -q "a stale ringfence mount is on $T/pt.mnt" "$T/broker.log" || rf_fail "stale mount not reported"
grep -qF "a stale ringfence mount is on $T/sp ace.mnt" "$T/broker.log" ||
	rf_fail "the stale mount on a path with a space was not found"
grep -q "cannot find the new mount" "$T/broker.log" && rf_fail "a new mount was not found in mountinfo"
[ "$(MP=$(rf_mountinfo_path "$T/sp ace.mnt") awk '$5 == ENVIRON["MP"]' /proc/self/mountinfo | wc -l)" = 1 ] ||
	rf_fail "not exactly one mount on $T/sp ace.mnt"
[ "$(cat "$T/pt.mnt/f")" = data ] || rf_fail "the new broker does not serve"
[ "$(awk -v mp="$T/pt.mnt" '$5 == mp' /proc/self/mountinfo | wc -l)" = 1 ] ||
	rf_fail "more than one mount on $T/pt.mnt"
rf_stop
