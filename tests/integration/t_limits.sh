#!/bin/bash
# Per-tenant limits through cgroups (v2 where available, else v1): the
# values land in the tenant's groups, the worker is inside them, a memory
# bomb in one tenant is stopped by its limit while another tenant's fio
# keeps running, and the groups go when the tenants do.
. "$(dirname "$0")/lib.sh"
rf_setup
rf_policy mem memfs "" "options = size=900M" "memory_max = 48M" "pids_max = 64" "cpu_weight = 50"
rf_policy pt passthrough "$T/src"
rf_policy nrm memfs "" "sched_idle = off"
rf_start mem pt nrm

W=$(rf_worker mem)
mech=$(rf_field mem limits)
rf_log "limits through $mech"
case $mech in
cgroup2*)
	g=/sys/fs/cgroup/ringfence/mem
	[ "$(cat $g/memory.max)" = $((48 << 20)) ] || rf_fail "memory.max"
	[ "$(cat $g/pids.max)" = 64 ] || rf_fail "pids.max"
	[ "$(cat $g/cpu.weight)" = 50 ] || rf_fail "cpu.weight"
	grep -q "^0::/ringfence/mem$" "/proc/$W/cgroup" || rf_fail "worker not in $g"
	GROUPS_MADE=("$g")
	;;
cgroup1*)
	[ "$(cat /sys/fs/cgroup/memory/ringfence/mem/memory.limit_in_bytes)" = $((48 << 20)) ] ||
		rf_fail "memory.limit_in_bytes"
	[ "$(cat /sys/fs/cgroup/pids/ringfence/mem/pids.max)" = 64 ] || rf_fail "pids.max"
	[ "$(cat /sys/fs/cgroup/cpu/ringfence/mem/cpu.shares)" = 512 ] || rf_fail "cpu.shares"
	for c in memory pids cpu; do
		grep -qE "^[0-9]+:([^:]*,)?$c(,[^:]*)?:/ringfence/mem$" "/proc/$W/cgroup" ||
			rf_fail "worker not in the $c group: $(cat /proc/"$W"/cgroup)"
	done
	GROUPS_MADE=(/sys/fs/cgroup/memory/ringfence/mem /sys/fs/cgroup/pids/ringfence/mem
		/sys/fs/cgroup/cpu/ringfence/mem)
	;;
*) rf_fail "no cgroup mechanism: $mech" ;;
esac
rf_log "a policy silent on limits: memory_max = 1G, pids_max = 64 + two per queue, cpu weight 100"
NQ=$(rf_field pt queues)
WP=$(rf_worker pt)
case $(rf_field pt limits) in
cgroup2\(memory,pids,cpu\))
	[ "$(cat /sys/fs/cgroup/ringfence/pt/memory.max)" = $((1 << 30)) ] || rf_fail "default memory.max"
	[ "$(cat /sys/fs/cgroup/ringfence/pt/pids.max)" = $((64 + 2 * NQ)) ] || rf_fail "default pids.max"
	[ "$(cat /sys/fs/cgroup/ringfence/pt/cpu.weight)" = 100 ] || rf_fail "default cpu.weight"
	GROUPS_MADE+=(/sys/fs/cgroup/ringfence/pt)
	;;
cgroup1\(memory,pids,cpu\))
	[ "$(cat /sys/fs/cgroup/memory/ringfence/pt/memory.limit_in_bytes)" = $((1 << 30)) ] ||
		rf_fail "default memory.limit_in_bytes"
	[ "$(cat /sys/fs/cgroup/pids/ringfence/pt/pids.max)" = $((64 + 2 * NQ)) ] || rf_fail "default pids.max"
	[ "$(cat /sys/fs/cgroup/cpu/ringfence/pt/cpu.shares)" = 1024 ] || rf_fail "default cpu.shares"
	GROUPS_MADE+=(/sys/fs/cgroup/memory/ringfence/pt /sys/fs/cgroup/pids/ringfence/pt
		/sys/fs/cgroup/cpu/ringfence/pt)
	;;
*) rf_fail "a tenant without limits got $(rf_field pt limits), not the defaults" ;;
esac

# In a cpu group of its own the worker runs SCHED_IDLE, every thread of it
# (policy 5 in /proc/PID/task/TID/sched); sched_idle = off keeps the
# normal policy (0)
policies() { # PID: the distinct scheduling policies of its threads
	awk '$1 == "policy" { print $3 }' /proc/"$1"/task/*/sched | sort -u | tr '\n' ' '
}
for tn in mem pt; do
	[ "$(policies "$(rf_worker $tn)")" = "5 " ] ||
		rf_fail "$tn: worker threads' policies $(policies "$(rf_worker $tn)"), not SCHED_IDLE (5)"
	[ "$(rf_field $tn sched)" = idle ] || rf_fail "$tn: status sched=$(rf_field $tn sched)"
done
[ "$(policies "$(rf_worker nrm)")" = "0 " ] ||
	rf_fail "nrm (sched_idle = off): policies $(policies "$(rf_worker nrm)")"
[ "$(rf_field nrm sched)" = normal ] || rf_fail "nrm: status sched=$(rf_field nrm sched)"
echo idle >"$T/pt.mnt/sched" && [ "$(cat "$T/pt.mnt/sched")" = idle ] || rf_fail "I/O on pt"
rf_log "workers in their own cpu groups run SCHED_IDLE; sched_idle = off runs normal"
# a pids cgroup holds the tasks; RLIMIT_NPROC is left as it was
[ "$(awk '/^Max processes/ { print $3 }' "/proc/$WP/limits")" = "$(ulimit -u)" ] ||
	rf_fail "RLIMIT_NPROC changed where a pids cgroup holds the tasks: $(grep processes "/proc/$WP/limits")"

rf_log "memory bomb in one tenant, fio in the other"
fio --name=bystander --directory="$T/pt.mnt" --size=32M --rw=randrw --bs=64k --direct=1 \
	--ioengine=psync --verify=crc32c --verify_state_save=0 --verify_fatal=1 --runtime=6 --time_based \
	--output="$T/fio.out" &
fio_pid=$!
sleep 1
dd if=/dev/zero of="$T/mem.mnt/bomb" bs=1M count=300 status=none 2>/dev/null &&
	rf_fail "300 MiB fitted under memory_max = 48M"
for _ in $(seq 50); do [ "$(rf_field mem crashes)" = 1 ] && break; sleep 0.1; done
[ "$(rf_field mem crashes)" = 1 ] || rf_fail "the bomb's worker survived"
grep -qE "mem: worker was killed by signal 9|$(rf_host_death mem) killed by signal 9" "$T/broker.log" || rf_fail "no kill in the log"
rf_wait_state mem running # replaced, inside the same groups
W=$(rf_worker mem)
grep -q "ringfence/mem" "/proc/$W/cgroup" || rf_fail "the new worker is outside its groups"
wait "$fio_pid" || { sed 's/^/    /' "$T/fio.out"; rf_fail "the other tenant's fio failed"; }
rf_log "bomb stopped by its limit; the other tenant's verified fio ran to the end"
[ "$(rf_field pt state)" = running ] || rf_fail "the other tenant stopped"
rf_stop
for g in "${GROUPS_MADE[@]}"; do [ -d "$g" ] && rf_fail "$g outlived its tenant"; done
for c in memory pids cpu; do
	for tn in pt nrm; do
		[ -d "/sys/fs/cgroup/$c/ringfence/$tn" ] && rf_fail "cgroup of $tn left behind"
	done
done
[ -d /sys/fs/cgroup/ringfence/nrm ] && rf_fail "cgroup of nrm left behind"

case $mech in
cgroup2*)
	# as under systemd with Delegate=yes: v2 lets no process stay in a group
	# that hands controllers down, so the broker moves itself to a leaf
	rf_log "cgroup v2 delegation: a broker alone in its group moves to <group>/broker, tenants below <group>/ringfence"
	D=/sys/fs/cgroup/rf-test-delegate.$$
	mkdir "$D" || rf_fail "mkdir $D"
	EXTRA_DIRS+=("$D/ringfence/d" "$D/ringfence" "$D/broker" "$D")
	rf_policy_reset
	rf_policy d memfs "" "memory_max = 32M" "pids_max = 40"
	RF_BROKER_CGROUP=$D rf_start d
	grep -qx "0::/${D#/sys/fs/cgroup/}/broker" "/proc/$BROKER_PID/cgroup" ||
		rf_fail "the broker is in $(cat "/proc/$BROKER_PID/cgroup"), not $D/broker"
	grep -qx "0::/${D#/sys/fs/cgroup/}/ringfence/d" "/proc/$(rf_worker d)/cgroup" ||
		rf_fail "the worker is in $(cat "/proc/$(rf_worker d)/cgroup"), not $D/ringfence/d"
	[ "$(cat "$D/ringfence/d/memory.max")" = $((32 << 20)) ] || rf_fail "delegated memory.max"
	[ "$(cat "$D/ringfence/d/pids.max")" = 40 ] || rf_fail "delegated pids.max"
	grep -q "cgroup2: tenants' groups go below $D/ringfence; the broker moved into $D/broker" \
		"$T/broker.log" || rf_fail "the broker did not say where the groups go"
	echo delegated >"$T/d.mnt/f" && [ "$(cat "$T/d.mnt/f")" = delegated ] || rf_fail "delegated tenant I/O"
	rf_stop
	[ -d "$D/ringfence/d" ] && rf_fail "$D/ringfence/d outlived its tenant"
	;;
*) rf_log "cgroup v2 delegation: not here (every controller is bound to a v1 hierarchy)" ;;
esac
exit 0
