#!/bin/bash
# The sandbox of a running worker, read from outside: credentials,
# capabilities, seccomp, namespaces, root.
. "$(dirname "$0")/lib.sh"
rf_setup
rf_policy pt passthrough "$T/src" "max_file_size = 1M"
rf_policy mem memfs ""
rf_start pt mem
echo data >"$T/pt.mnt/file"

W=$(rf_worker pt)
rf_assert_worker_fenced "$W"
st=/proc/$W/status
rf_log "ps tells the keeper from the plugin host"
H=$(rf_host "$W")
[ -n "$H" ] || rf_fail "the worker has no plugin host"
for p in "keeper $W" "host $H"; do
	set -- $p
	[ "$(tr '\0' ' ' <"/proc/$2/cmdline" | sed 's/ *$//')" = "ringfence-worker: $1 pt" ] ||
		rf_fail "$1 $2: cmdline is '$(tr '\0' ' ' <"/proc/$2/cmdline")'"
	[ "$(cat "/proc/$2/comm")" = "rf-$1" ] || rf_fail "$1 $2: comm is $(cat "/proc/$2/comm")"
	ps -o args= -p "$2" | grep -qx "ringfence-worker: $1 pt" ||
		rf_fail "$1 $2: ps shows '$(ps -o args= -p "$2")'"
done
rf_log "descriptors: /dev/null for 0-2, the channel, rings, eventfds, its own files"
rf_assert_tenant_fds pt
rf_assert_tenant_fds mem
rf_log "credentials and capabilities, in every thread"
# the queue threads start while the worker is root (a zero-copy queue takes
# CAP_SYS_ADMIN in the thread that adds it): none may keep anything
id=$(rf_uid pt)
nthreads=0
for tst in /proc/"$W"/task/*/status; do
	tid=$(basename "$(dirname "$tst")")
	grep -q "^Uid:[[:space:]]*$id[[:space:]]$id[[:space:]]$id[[:space:]]$id$" "$tst" ||
		rf_fail "thread $tid: uid: $(grep Uid "$tst"), not $id"
	grep -q "^Gid:[[:space:]]*$id[[:space:]]$id[[:space:]]$id[[:space:]]$id$" "$tst" ||
		rf_fail "thread $tid: gid: $(grep Gid "$tst"), not $id"
	grep -q '^Groups:[[:space:]]*$' "$tst" || rf_fail "thread $tid: supplementary groups: $(grep Groups "$tst")"
	for c in CapInh CapPrm CapEff CapBnd CapAmb; do
		grep -q "^$c:[[:space:]]*0000000000000000" "$tst" || rf_fail "thread $tid: $(grep "^$c" "$tst")"
	done
	grep -q '^NoNewPrivs:[[:space:]]*1' "$tst" || rf_fail "thread $tid: no no_new_privs"
	grep -q '^Seccomp:[[:space:]]*2' "$tst" || rf_fail "thread $tid: no seccomp filter"
	nthreads=$((nthreads + 1))
done
[ "$nthreads" -gt "$(rf_field pt queues)" ] || rf_fail "only $nthreads threads: the queue threads are missing"
grep -q '^NSpid:[[:space:]]*'"$W"'[[:space:]]*1$' "$st" || rf_fail "not PID 1 of its namespace: $(grep NSpid "$st")"

rf_log "namespaces differ from the broker's"
for ns in mnt net ipc uts pid; do
	[ "$(readlink "/proc/$W/ns/$ns")" != "$(readlink "/proc/$BROKER_PID/ns/$ns")" ] ||
		rf_fail "worker shares the broker's $ns namespace"
done
[ "$(readlink /proc/"$W"/ns/net)" != "$(readlink /proc/"$(rf_worker mem)"/ns/net)" ] ||
	rf_fail "two tenants share a network namespace"

rf_log "root: a read-only tmpfs with /proc and /source only"
[ "$(ls /proc/"$W"/root | tr '\n' ' ')" = "proc source " ] || rf_fail "root holds: $(ls /proc/"$W"/root)"
[ "$(cat /proc/"$W"/root/source/file)" = data ] || rf_fail "/source is not the tenant's source"
grep -qE '^[^ ]+ / tmpfs ro,' "/proc/$W/mounts" || rf_fail "root is not a read-only tmpfs: $(cat /proc/"$W"/mounts)"
grep -qE ' /source [^ ]+ [^ ]*nosuid,nodev' "/proc/$W/mounts" || rf_fail "/source lacks nosuid,nodev"
[ "$(wc -l <"/proc/$W/mounts")" = 3 ] || rf_fail "more than three mounts: $(cat /proc/"$W"/mounts)"
[ "$(ls /proc/"$(rf_worker mem)"/root | tr '\n' ' ')" = "proc " ] || rf_fail "memfs root holds a source"
nsenter -t "$W" -u hostname | grep -qx ringfence || rf_fail "hostname"
grep -q '^Max core file size *0 *0' "/proc/$W/limits" || rf_fail "core dumps allowed"
# 65536 descriptors; where the broker may not raise its hard limit (no
# CAP_SYS_RESOURCE), that limit, and the log says so
nofile=65536
if ! (ulimit -Hn 65536) 2>/dev/null; then
	nofile=$(ulimit -Hn)
	grep -q "pt: worker: descriptors: at most $nofile, the broker's hard RLIMIT_NOFILE" "$T/broker.log" ||
		rf_fail "no word in the log of the descriptor limit $nofile"
fi
grep -q "^Max open files *$nofile *$nofile " "/proc/$W/limits" ||
	rf_fail "nofile limit: $(grep 'open files' "/proc/$W/limits"), expected $nofile"
grep -q '^Max file size *1048576 *1048576' "/proc/$W/limits" || rf_fail "fsize limit"
grep -q '^Max data size *1073741824 *1073741824' "/proc/$W/limits" || rf_fail "data limit"
rf_log "each queue thread runs on its queue's CPU"
online=$(nproc)
pinned=$(for st in /proc/"$W"/task/*/status; do sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' "$st"; done |
	grep -c -x '[0-9]*' || true)
[ "$pinned" -ge "$online" ] || rf_fail "$pinned threads bound to one CPU, expected one per online CPU ($online)"

rf_log "max_file_size: a write past it fails with EFBIG, the worker lives on"
out=$(dd if=/dev/zero of="$T/pt.mnt/big" bs=512K count=4 2>&1) && rf_fail "wrote past max_file_size"
echo "$out" | grep -q "File too large" || rf_fail "dd said: $out"
[ "$(stat -c %s "$T/src/big")" = 1048576 ] || rf_fail "backing file is $(stat -c %s "$T/src/big") bytes"
[ "$(rf_field pt state)" = running ] || rf_fail "worker died on EFBIG"
rf_stop
