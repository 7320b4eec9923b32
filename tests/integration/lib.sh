#!/bin/bash
# Helpers for integration tests on real mounts. Source it; then call
# rf_setup, rf_start POLICY, and let the EXIT trap clean up: the broker is
# stopped by its PID, the mounts it made are checked and, if still there,
# aborted and detached by path, and the temp directory is removed.
#
# Exit codes: 0 pass, 1 fail, 77 skipped (the kernel lacks something).

set -u
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=${BUILD:-$ROOT/build}
RINGFENCED=$BUILD/ringfenced
CTL=$BUILD/ringfencectl
TRANSPORT=${TRANSPORT:-uring}
T=""
BROKER_PID=""
MOUNTS=()
EXTRA_PIDS=() # other brokers a test started, stopped by PID at cleanup
EXTRA_MOUNTS=() # file systems a test mounted itself (not ringfence's), unmounted at cleanup
EXTRA_DIRS=() # directories a test made outside $T (cgroups), removed at cleanup

# How many times slower than a plain host this machine is: the 7.3 guest
# under QEMU's TCG sets it (tests/vm-guest.sh), and every bounded wait of
# the helpers below lasts that many times longer. rf_tries N: the loop
# counter of a wait of N tries.
RF_TIME_SCALE=${RF_TIME_SCALE:-1}
rf_tries() { seq $(($1 * RF_TIME_SCALE)); }

rf_log() { echo "  [$(basename "$0" .sh)/$TRANSPORT] $*"; }
rf_fail() {
	echo "  FAIL: $*" >&2
	# the runner repeats it in its summary, past the broker log below
	[ -z "${RF_FAIL_NOTE:-}" ] || echo "$*" >>"$RF_FAIL_NOTE"
	if [ -n "$T" ] && [ -f "$T/broker.log" ]; then
		echo "  --- broker log ---" >&2
		sed 's/^/  | /' "$T/broker.log" >&2
	fi
	exit 1
}
rf_skip() { echo "  SKIP: $*"; exit 77; }

# A path as /proc/self/mountinfo writes it (space, tab, newline and
# backslash as \ooo); compare it through ENVIRON, which awk leaves alone.
rf_mountinfo_path() {
	local p=${1//\\/\\134}
	p=${p// /\\040}
	p=${p//$'\t'/\\011}
	p=${p//$'\n'/\\012}
	printf '%s' "$p"
}

# Abort a FUSE connection and detach its mount, without ever stat()ing it.
rf_force_unmount() {
	local mp=$1 id
	id=$(MP=$(rf_mountinfo_path "$mp") awk '$5 == ENVIRON["MP"] && / - fuse\.ringfence / { split($3, d, ":"); print d[1] * 1048576 + d[2] }' /proc/self/mountinfo | tail -1)
	[ -z "$id" ] && return 0
	[ -w "/sys/fs/fuse/connections/$id/abort" ] && echo 1 >"/sys/fs/fuse/connections/$id/abort"
	umount --no-canonicalize -l "$mp" 2>/dev/null || true
}

rf_is_mounted() {
	MP=$(rf_mountinfo_path "$1") awk '$5 == ENVIRON["MP"] { found = 1 } END { exit !found }' /proc/self/mountinfo
}

rf_cleanup() {
	local rc=$? mp i
	trap - EXIT
	if [ -n "$BROKER_PID" ] && kill -0 "$BROKER_PID" 2>/dev/null; then
		kill -TERM "$BROKER_PID" 2>/dev/null
		for i in $(seq 50); do
			kill -0 "$BROKER_PID" 2>/dev/null || break
			sleep 0.1
		done
		if kill -0 "$BROKER_PID" 2>/dev/null; then
			echo "  cleanup: broker $BROKER_PID ignored SIGTERM; killing it" >&2
			kill -KILL "$BROKER_PID" 2>/dev/null
			[ $rc -eq 0 ] && rc=1
		fi
		wait "$BROKER_PID" 2>/dev/null
	fi
	for i in "${EXTRA_PIDS[@]}"; do
		kill -KILL "$i" 2>/dev/null && wait "$i" 2>/dev/null
	done
	for mp in "${MOUNTS[@]}"; do
		if rf_is_mounted "$mp"; then
			echo "  cleanup: $mp was still mounted; detaching" >&2
			rf_force_unmount "$mp"
			[ $rc -eq 0 ] && rc=1
		fi
	done
	for i in "${EXTRA_DIRS[@]}"; do
		[ -d "$i" ] && rmdir "$i" 2>/dev/null
	done
	for mp in "${EXTRA_MOUNTS[@]}"; do
		mountpoint -q "$mp" && { umount "$mp" 2>/dev/null || umount -l "$mp"; }
	done
	# RF_KEEP_LOG=FILE: keep the broker's log of a run that passed too
	[ -n "${RF_KEEP_LOG:-}" ] && [ -f "$T/broker.log" ] && cp "$T/broker.log" "$RF_KEEP_LOG"
	[ -n "$T" ] && rm -rf --one-file-system "$T"
	exit $rc
}

rf_setup() {
	T=$(mktemp -d /tmp/ringfence-test.XXXXXX)
	chmod 755 "$T"
	trap rf_cleanup EXIT
	trap 'exit 130' INT TERM
	if [ "$TRANSPORT" = uring ] &&
		[ "$(cat /sys/module/fuse/parameters/enable_uring 2>/dev/null)" != Y ]; then
		rf_skip "FUSE io-uring is off (/sys/module/fuse/parameters/enable_uring)"
	fi
}

# rf_policy NAME PLUGIN [SOURCE] [extra lines...]: append a mount section
# to $T/policy with mountpoint $T/NAME.mnt, and create the directories.
# PLUGIN "-": no plugin line (a program's mount: "program = ..." follows).
rf_policy() {
	local name=$1 plugin=$2 src=${3:-}
	shift 3 || shift $#
	mkdir -p "$T/$name.mnt"
	MOUNTS+=("$T/$name.mnt")
	if [ ! -f "$T/policy" ]; then
		printf '[global]\ncontrol_socket = %s/ctl.sock\nusers_file = %s/users\n\n' "$T" "$T" >"$T/policy"
	fi
	{
		printf '[mount %s]\nmountpoint = %s\ntransport = %s\n' "$name" "$T/$name.mnt" "$TRANSPORT"
		[ "$plugin" = - ] || printf 'plugin = %s\n' "$plugin"
		if [ -n "$src" ]; then
			# empty: the broker hands it to the tenant's dynamic user
			mkdir -p "$src"
			printf 'source = %s\n' "$src"
			# the suites keep every source on the one file system of
			# $T, unlimited: said so, unless the test says otherwise
			printf '%s\n' "$@" | grep -q '^disk_shared *=' || printf 'disk_shared = yes\n'
		fi
		for l in "$@"; do printf '%s\n' "$l"; done
		rf_policy_extra "$@"
		printf '\n'
	} >>"$T/policy"
}

# RF_POLICY_EXTRA: "key = value" lines, one per line, that every mount gets
# unless the test sets that key itself (e.g. "bufpool = off" runs a suite
# without the kernel's buffer pools).
rf_policy_extra() {
	local x k l own
	while IFS= read -r x; do
		k=$(rf_key_of "$x")
		[ -n "$k" ] || continue
		own=0
		for l in "$@"; do
			[ "$(rf_key_of "$l")" = "$k" ] && own=1
		done
		[ $own = 1 ] || printf '%s\n' "$x"
	done <<<"${RF_POLICY_EXTRA:-}"
}

# The key of policy line $1 ("key = value"), without blanks.
rf_key_of() {
	local k=${1%%=*}
	echo "${k// /}"
}

# The value RF_POLICY_EXTRA gives key $1, if any.
rf_forced() {
	local x
	while IFS= read -r x; do
		[ "$(rf_key_of "$x")" = "$1" ] && { x=${x#*=}; echo "${x// /}"; }
	done <<<"${RF_POLICY_EXTRA:-}"
}

# A new policy from scratch for the next rf_start (the broker before it
# stopped: its mounts are gone).
rf_policy_reset() {
	rm -f "$T/policy"
	MOUNTS=()
}

rf_status() { "$CTL" -s "$T/ctl.sock" status "$@"; }

# the uid tenant $1's worker runs as (its gid is the same for a dynamic user)
rf_uid() { rf_field "$1" uid; }

# Is the running kernel MAJOR.MINOR or later?
rf_kernel_at_least() {
	local v maj min
	v=$(uname -r)
	maj=${v%%.*}
	min=${v#*.}
	min=${min%%[!0-9]*}
	[ "$maj" -gt "$1" ] || { [ "$maj" = "$1" ] && [ "${min:-0}" -ge "$2" ]; }
}

# The kernel's "fuse: qid=Q commit_id N not found" lines since a mark:
# rf_klog_mark NAME writes the mark into the kernel log; rf_klog_misses NAME
# counts those lines after it (a mark the log has since dropped fails the
# test rather than count nothing)
rf_klog_mark() { echo "ringfence-test: mark $1.$$" >/dev/kmsg; }
rf_klog_misses() {
	local log
	log=$(dmesg)
	grep -q "ringfence-test: mark $1.$$\$" <<<"$log" || rf_fail "the kernel log no longer has mark $1"
	sed -n "/ringfence-test: mark $1.$$\$/,\$p" <<<"$log" | grep -c "commit_id .* not found" || true
}

# field NAME from the status line of tenant $1
rf_field() {
	rf_status "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"
}

# Start the broker on $T/policy and wait until every tenant in $@ runs
# (in the cgroup v2 group $RF_BROKER_CGROUP, if set, as its only process).
rf_start() {
	local i t ok cfg=(-c "$T/policy")
	# RF_DEFAULT_CONFIG=1: no -c, the broker's built-in policy path
	[ -n "${RF_DEFAULT_CONFIG:-}" ] && cfg=()
	if [ -n "${RF_BROKER_CGROUP:-}" ]; then
		# the broker alone in the cgroup v2 group RF_BROKER_CGROUP
		# shellcheck disable=SC2016,SC2086 # $$ is the inner shell's
		bash -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$RF_BROKER_CGROUP" \
			"$RINGFENCED" ${RF_BROKER_ARGS:-} -f "${cfg[@]}" >"$T/broker.log" 2>&1 &
	else
		# shellcheck disable=SC2086 # RF_BROKER_ARGS: extra words, e.g. --bench-unsafe=...
		"$RINGFENCED" ${RF_BROKER_ARGS:-} -f "${cfg[@]}" >"$T/broker.log" 2>&1 &
	fi
	BROKER_PID=$!
	for i in $(rf_tries 100); do
		ok=1
		for t in "$@"; do
			[ "$(rf_field "$t" state 2>/dev/null)" = running ] || ok=0
		done
		[ $ok = 1 ] && return 0
		kill -0 "$BROKER_PID" 2>/dev/null || rf_fail "broker exited during start-up"
		sleep 0.1
	done
	rf_fail "tenants $* not running after $((10 * RF_TIME_SCALE)) s"
}

# Stop the broker with SIGTERM and check that its mounts are gone.
rf_stop() {
	local i mp
	kill -TERM "$BROKER_PID"
	for i in $(rf_tries 100); do
		kill -0 "$BROKER_PID" 2>/dev/null || break
		sleep 0.1
	done
	kill -0 "$BROKER_PID" 2>/dev/null && rf_fail "broker did not exit on SIGTERM"
	wait "$BROKER_PID"
	local rc=$?
	BROKER_PID=""
	[ $rc -eq 0 ] || rf_fail "broker exited with status $rc"
	# a step between two states of a tenant that broker/state.c lacks
	grep -F "broker bug" "$T/broker.log" | head -3 | grep . && rf_fail "the broker logged a bug of its own"
	for mp in "${MOUNTS[@]}"; do
		rf_is_mounted "$mp" && rf_fail "$mp still mounted after SIGTERM"
	done
	return 0
}

# rf_wait_state TENANT STATE: up to 10 s (times RF_TIME_SCALE). A failure
# names the last state it read, not a later one: a tenant whose state
# keeps changing may be in STATE again by then.
rf_wait_state() {
	local i s=""
	for i in $(rf_tries 100); do
		s=$(rf_field "$1" state 2>/dev/null)
		[ "$s" = "$2" ] && return 0
		sleep 0.1
	done
	rf_fail "tenant $1 is '$s', not '$2', after $((10 * RF_TIME_SCALE)) s"
}

# Worker PID of tenant $1.
rf_worker() { rf_field "$1" worker; }

# Assert worker $1 and its plugin host (where it has one) hold no
# /dev/fuse descriptor and run without privilege.
rf_assert_worker_fenced() {
	local host
	[ -n "$1" ] && [ "$1" != 0 ] || rf_fail "no worker pid"
	rf_assert_process_fenced "$1"
	host=$(rf_host "$1")
	[ -z "$host" ] || rf_assert_process_fenced "$host"
}

rf_assert_process_fenced() {
	local pid=$1 fds
	fds=$(ls -l "/proc/$pid/fd" 2>/dev/null | grep -c '/dev/fuse' || true)
	[ "$fds" = 0 ] || rf_fail "worker $pid holds $fds /dev/fuse descriptors"
	grep -qE '^Uid:[[:space:]]*([1-9][0-9]*)[[:space:]]+\1[[:space:]]+\1[[:space:]]+\1$' "/proc/$pid/status" ||
		rf_fail "worker $pid runs as root or with mixed uids: $(grep Uid "/proc/$pid/status")"
	grep -q '^CapEff:[[:space:]]*0000000000000000' "/proc/$pid/status" || rf_fail "worker has effective caps"
	grep -q '^CapBnd:[[:space:]]*0000000000000000' "/proc/$pid/status" || rf_fail "worker has a bounding set"
	grep -q '^NoNewPrivs:[[:space:]]*1' "/proc/$pid/status" || rf_fail "worker lacks no_new_privs"
	grep -q '^Seccomp:[[:space:]]*2' "/proc/$pid/status" || rf_fail "worker has no seccomp filter"
}

# rf_host PID: the plugin host of worker PID (its one child), or nothing
rf_host() {
	awk '{ print $1 }' "/proc/$1/task/$1/children" 2>/dev/null
}

# Assert that worker $1 (of a mount with $2 queues) and its plugin host
# hold exactly the descriptors the design gives them: 0-2 on /dev/null, the
# broker channel (3), and per queue one ring, the two wake-up eventfds
# (its own and the other process's, which it writes to wake it) and one
# socket between the two; the keeper's rings from 4 on, and only files of
# its own source (/source in its root): the host's, and the backing files
# the keeper serves while clients hold them open. With a third argument,
# host_restart, the keeper also keeps what it starts the next host with
# and takes back from a dead one: the host's rings and ends of the
# sockets, the host's channel to the broker, the source, the plugin's
# file, the pool read-only. A host's fd 3 is its own channel to the
# broker, never its keeper's (checked by inode).
rf_assert_worker_fds() {
	local host
	if [ "${3:-}" = host_restart ]; then
		rf_assert_process_fds "$1" "$2" keeper+
	else
		rf_assert_process_fds "$1" "$2" keeper
	fi
	host=$(rf_host "$1")
	[ -n "$host" ] || rf_fail "worker $1 has no plugin host"
	rf_assert_process_fds "$host" "$2" host
	[ "$(readlink "/proc/$host/fd/3")" != "$(readlink "/proc/$1/fd/3")" ] ||
		rf_fail "plugin host $host holds its keeper's channel to the broker"
}

# rf_assert_tenant_fds TENANT: rf_assert_worker_fds for TENANT's worker,
# with its queues and its host_restart
rf_assert_tenant_fds() {
	local hr=
	[ "$(rf_field "$1" host_restart)" = yes ] && hr=host_restart
	rf_assert_worker_fds "$(rf_worker "$1")" "$(rf_field "$1" queues)" $hr
}

# rf_host_death TENANT: how the broker's log begins its word of TENANT's
# plugin host dying ("... killed by signal 11" follows): with host_restart
# the host's own death, without it its worker's exit
rf_host_death() {
	if [ "$(rf_field "$1" host_restart)" = yes ]; then
		echo "$1: plugin host was"
	else
		echo "$1: worker exited: its plugin host was"
	fi
}

rf_assert_process_fds() {
	local pid=$1 nq=$2 role=$3 fd link rings=0 evs=0 socks=0 i
	for i in 0 1 2; do
		[ "$(stat -L -c %F:%t:%T "/proc/$pid/fd/$i" 2>/dev/null)" = "character special file:1:3" ] ||
			rf_fail "$role $pid: fd $i is $(readlink "/proc/$pid/fd/$i"), not /dev/null"
	done
	case $(readlink "/proc/$pid/fd/3") in socket:*) ;; *) rf_fail "$role $pid: fd 3 is not its socket" ;; esac
	for fd in /proc/"$pid"/fd/*; do
		i=${fd##*/}
		link=$(readlink "$fd") || continue # closed meanwhile
		case $role:$i:$link in
		*:0:* | *:1:* | *:2:*) ;;
		*:socket:*) socks=$((socks + 1)) ;;
		*:anon_inode:\[io_uring\])
			[ "$role" != keeper ] || { [ "$i" -ge 4 ] && [ "$i" -lt $((4 + nq)) ]; } ||
				rf_fail "$role $pid: a ring at fd $i"
			rings=$((rings + 1)) ;;
		*:anon_inode:\[eventfd\]) evs=$((evs + 1)) ;;
		host:*:/source | host:*:/source/*) ;;
		keeper*:*:/source/*) ;; # a backing file (worker/keeper/backing.c), while open
		keeper+:*:/source | keeper+:*:*.so | keeper+:*:/memfd:ringfence-pool*) ;;
		*) rf_fail "$role $pid: fd $i is $link, which the design does not give it" ;;
		esac
	done
	[ "$role" = keeper+ ] && rings=$((rings - nq)) && socks=$((socks - nq - 1))
	[ "$rings" = "$nq" ] && [ "$evs" = $((2 * nq)) ] && [ "$socks" = $((nq + 1)) ] ||
		rf_fail "$role $pid: $rings rings, $evs eventfds and $socks sockets for $nq queues"
}

# rf_kill_during_makes TENANT DIR: uid 2001 makes files, directories and
# symlinks in DIR (on TENANT's mount; made here, mode 1777) while
# TENANT's worker is SIGKILLed five times; returns once TENANT serves again
# and the maker has stopped
# rf_stat_errno PATH [SECONDS]: the errno name a client gets for
# stat(PATH), or OK (waiting at most SECONDS, 10 by default)
rf_stat_errno() {
	timeout "${2:-10}" python3 -c '
import errno, os, sys
try:
    os.stat(sys.argv[1])
    print("OK")
except OSError as e:
    print(errno.errorcode.get(e.errno, e.errno))' "$1"
}

# rf_hostile_pair [POLICY LINES...]: a fresh policy and broker with the
# hostile test plugin as tenant "h" (those lines added) and memfs as "mem"
rf_hostile_pair() {
	rf_policy_reset
	rf_policy h "$BUILD/tests/plugins/hostile.so" "$T/src" "$@"
	rf_policy mem memfs ""
	rf_start h mem
}

# rf_bystander_ok WHAT: the memfs tenant "mem" beside a hostile one still
# reads back what it is given, runs, and so does the broker, after WHAT
rf_bystander_ok() {
	echo "$1" >"$T/mem.mnt/probe" && [ "$(cat "$T/mem.mnt/probe")" = "$1" ] ||
		rf_fail "the memfs tenant broke after '$1'"
	[ "$(rf_field mem state)" = running ] ||
		rf_fail "memfs tenant not running after '$1': $(rf_status 2>&1)"
	kill -0 "$BROKER_PID" || rf_fail "the broker died after '$1'"
}

# rf_wait_successor TENANT PID: until a worker other than PID serves
# TENANT (the worker read first: once a new one exists, "running" is its
# own; read before, it could still be the dead worker's)
rf_wait_successor() {
	local i n
	for i in $(rf_tries 100); do
		n=$(rf_worker "$1")
		[ "$n" != "$2" ] && [ "$n" != 0 ] && [ "$(rf_field "$1" state)" = running ] && return 0
		sleep 0.1
	done
	rf_fail "no successor of worker $2 of $1 after $((10 * RF_TIME_SCALE)) s"
}

# rf_wait_next_host TENANT KEEPER HOST: TENANT's keeper KEEPER serves with
# a plugin host other than HOST, fenced, the tenant running (host_restart)
rf_wait_next_host() {
	local n i
	for i in $(rf_tries 100); do
		n=$(rf_host "$2")
		[ -n "$n" ] && [ "$n" != "$3" ] && [ "$(rf_field "$1" state)" = running ] && break
		sleep 0.1
	done
	[ -n "$n" ] && [ "$n" != "$3" ] || rf_fail "$1: no plugin host after $3 in $((10 * RF_TIME_SCALE)) s"
	[ "$(rf_worker "$1")" = "$2" ] || rf_fail "$1: the keeper $2 did not stay (now $(rf_worker "$1"))"
	rf_assert_process_fenced "$n"
}

# rf_wait_host_replaced TENANT WORKER HOST: after the death of WORKER's
# plugin host HOST, what the tenant's host_restart says comes next serves:
# a new host under the same keeper, or a new worker
rf_wait_host_replaced() {
	if [ "$(rf_field "$1" host_restart)" = yes ]; then
		rf_wait_next_host "$1" "$2" "$3"
	else
		rf_wait_successor "$1" "$2"
	fi
}

# rf_fio_load_start MNT SRC: fio lays out a 16 MiB file in MNT, then runs
# verifying reads of it, one at a time (at most one in flight at a kill),
# beside restore_load.py's two writers and its looker (SRC: the backing
# directory, for their check at the end); returns once all run, with
# $T/kills emptied for restore_load.py kill. Both run until
# rf_fio_load_stop.
rf_fio_load_start() {
	fio --name=pre --filename="$1/fio.dat" --rw=write --bs=4k --size=16M --verify=crc32c \
		--do_verify=0 --verify_state_save=0 --output="$T/fio-pre.out" ||
		rf_fail "fio could not write its file"
	fio --name=verify --filename="$1/fio.dat" --rw=randread --bs=4k --size=16M --direct=1 \
		--verify=crc32c --verify_only --time_based --runtime=600 --continue_on_error=read \
		--output-format=json --output="$T/fio.json" &
	RF_FIO=$!
	EXTRA_PIDS+=($RF_FIO)
	python3 "$(dirname "$0")/restore_load.py" run "$1" "$2" "$T/load-stop" "$T/load.json" &
	RF_LOAD=$!
	EXTRA_PIDS+=($RF_LOAD)
	rf_wait_file "$T/load.json.ready"
	sleep 1
	: >"$T/kills"
}

# rf_fio_load_stop VERDICT: stop both (fio by SIGINT, after which it
# writes its report), log what fio read and restore_load.py VERDICT
# (judge, judge-host) says of the writers, and fail on that verdict.
# Sets FIO_ERRS and FIO_FIRST (fio's error count and first errno).
rf_fio_load_stop() {
	local says ios p99 max rc l
	touch "$T/load-stop"
	kill -INT "$RF_FIO" 2>/dev/null # (it may have ended: its errors are checked)
	wait "$RF_LOAD" || rf_fail "the writers failed"
	wait "$RF_FIO"
	says=$(python3 -c '
import json, sys
s = open(sys.argv[1]).read()
j = json.loads(s[s.index("{"):])["jobs"][0]
r = j["read"]
print(j["total_err"], j["first_error"], r["total_ios"], r["clat_ns"]["percentile"]["99.000000"] // 1000,
      r["clat_ns"]["max"] // 1000000)' "$T/fio.json") || rf_fail "fio: $(head -c 600 "$T/fio.json")"
	read -r FIO_ERRS FIO_FIRST ios p99 max <<<"$says"
	rf_log "  fio: $ios verified reads, $FIO_ERRS errors, p99 $p99 us, max $max ms"
	python3 "$(dirname "$0")/restore_load.py" "$1" "$T/load.json" "$T/kills" >"$T/judge.out"
	rc=$?
	while read -r l; do rf_log "  $l"; done <"$T/judge.out"
	[ $rc = 0 ] || rf_fail "errors or corrupt data: see above"
}

# rf_wait_log TEXT WHY: until the broker's log holds TEXT (a fixed
# string), up to 5 s (times RF_TIME_SCALE); else the test fails with WHY
rf_wait_log() {
	local i
	for i in $(rf_tries 50); do
		grep -qF -- "$1" "$T/broker.log" && return 0
		sleep 0.1
	done
	rf_fail "$2"
}

# rf_wait_file PATH: until it exists, up to 60 s (times RF_TIME_SCALE)
rf_wait_file() {
	local i
	for i in $(rf_tries 600); do
		[ -e "$1" ] && return 0
		sleep 0.1
	done
	rf_fail "no $1 after $((60 * RF_TIME_SCALE)) s"
}

# A client holding files, a directory and its cwd open in mount $1
# (restore_client.py, as coprocess C; further arguments are its): it makes
# a/b/f first. rf_client CMD N: one command, its one-line answer.
rf_client_start() {
	local m=$1
	shift
	mkdir -p "$T/$m.mnt/a/b"
	head -c 100000 /dev/urandom >"$T/$m.mnt/a/b/f"
	coproc C { exec python3 "$ROOT/tests/integration/restore_client.py" "$T/$m.mnt" "$@"; }
	RF_CLIENT_PID=$C_PID
	EXTRA_PIDS+=("$RF_CLIENT_PID")
}
rf_client() {
	local out
	echo "$1 $2" >&"${C[1]}"
	read -r -t $((20 * RF_TIME_SCALE)) out <&"${C[0]}" || out="fail: no answer"
	echo "$out"
}
rf_client_stop() {
	exec {C[1]}>&-
	wait "$RF_CLIENT_PID" 2>/dev/null
}

# rf_deaths_with_client KILL TENANT N: N deaths of TENANT by the test's
# function KILL (a worker's, a plugin host's), each followed by a step of
# the client (rf_client_start'ed), which then verifies what it wrote and
# stops
rf_deaths_with_client() {
	local i out
	[ "$(rf_client step 0)" = ok ] || rf_fail "$2: before any death"
	for i in $(seq 1 "$3"); do
		"$1" "$2"
		out=$(rf_client step "$i")
		[ "$out" = ok ] || rf_fail "$2: after death $i: $out"
	done
	out=$(rf_client verify $(($3 + 1)))
	[ "$out" = ok ] || rf_fail "$2: verify: $out"
	rf_client_stop
}

rf_kill_during_makes() {
	local name=$1 dir=$2 maker k
	mkdir "$dir" && chmod 1777 "$dir" || rf_fail "make $dir"
	setpriv --reuid=2001 --regid=2001 --clear-groups bash -c '
		for i in $(seq 5000); do
			[ -e "$2" ] && break
			: >"$1/f$i" 2>/dev/null; mkdir "$1/d$i" 2>/dev/null; ln -s x "$1/l$i" 2>/dev/null
		done' _ "$dir" "$T/stop.$name" &
	maker=$!
	EXTRA_PIDS+=($maker)
	for k in 1 2 3 4 5; do
		sleep 0.3
		rf_wait_state "$name" running
		kill -KILL "$(rf_worker "$name")"
	done
	rf_wait_state "$name" running
	touch "$T/stop.$name"
	wait $maker || true
	rm -f "$T/stop.$name"
}
