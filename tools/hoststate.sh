#!/bin/bash
# Host state that demo, bench and the integration runner change and must
# give back: the fuse module's enable_uring parameter, and fusectl's mount
# (the broker mounts it when absent). Source it, call host_save once, and
# host_restore on exit.
RF_UPARAM=/sys/module/fuse/parameters/enable_uring
RF_FUSECTL=/sys/fs/fuse/connections

host_save() {
	HOST_URING=$(cat "$RF_UPARAM" 2>/dev/null || echo absent)
	HOST_FUSECTL=0
	mountpoint -q "$RF_FUSECTL" && HOST_FUSECTL=1
	return 0
}

# host_uring Y|N: set enable_uring; fails where the kernel has no FUSE io-uring
host_uring() {
	[ "$HOST_URING" != absent ] && echo "$1" >"$RF_UPARAM"
}

host_restore() {
	[ "${HOST_URING:-absent}" != absent ] && echo "$HOST_URING" >"$RF_UPARAM"
	if [ "${HOST_FUSECTL:-1}" = 0 ] && mountpoint -q "$RF_FUSECTL"; then
		umount "$RF_FUSECTL" 2>/dev/null
	fi
	return 0
}

# unmount_backing DIR: unmount the file system a benchmark's tenants used,
# lazily if it stays busy: a dead worker's rings release the backing files
# it held asynchronously, so retry for up to 5 s first
unmount_backing() {
	for _ in $(seq 50); do
		mountpoint -q "$1" || return 0
		umount "$1" 2>/dev/null || sleep 0.1
	done
	mountpoint -q "$1" && umount -l "$1"
	return 0
}

# stop_broker PID: SIGTERM and wait (it unmounts its tenants)
stop_broker() {
	if [ -n "$1" ] && kill -0 "$1" 2>/dev/null; then
		kill -TERM "$1"
		wait "$1" || true
	fi
}

# start_broker CTL SOCKET N RINGFENCED POLICY LOG: start RINGFENCED on POLICY
# (logging to LOG), set BROKER to its pid, and wait up to 10 s for N
# running tenants
# start_broker CTL SOCKET NTENANTS RINGFENCED POLICY LOG [BROKER ARGS...]
start_broker() {
	local ctl=$1 sock=$2 n=$3 bin=$4 policy=$5 log=$6
	shift 6
	"$bin" "$@" -f -c "$policy" 2>"$log" &
	# shellcheck disable=SC2034 # the caller reads it
	BROKER=$!
	for _ in $(seq 100); do
		[ "$("$ctl" -s "$sock" status 2>/dev/null | grep -c state=running)" = "$n" ] && return 0
		sleep 0.1
	done
	echo "ringfenced: $n tenants not running after 10 s" >&2
	return 1
}
