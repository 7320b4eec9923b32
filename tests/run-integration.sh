#!/bin/bash
# Integration tests on real mounts, for both transports. Needs root and
# /dev/fuse. The io-uring pass turns /sys/module/fuse/parameters/enable_uring
# on; the classic pass turns it off (so auto picks /dev/fuse and a policy
# that demands io-uring is refused); the original value is restored, and so
# is fusectl's mount state.
#
# Each test is bounded in time; 77 means skipped (reported, not a pass).
# The tests in TESTS_ONCE exercise nothing a transport changes (make
# install and the SDK, ringfence-plugin-check's own checks, debugging a
# plugin host, ringfence-fsck, the control plane, a source's checks): they
# run in the first pass this kernel can run. A test's parts of that kind
# skip themselves in the later pass, which runs with RF_REPEAT_PASS=1.
# Prints "integration: N passed, N failed, N skipped", after a line per
# failed test with the reason its rf_fail gave (a failure prints the
# broker's log, which can bury the reason in a long output).
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TESTS=${TESTS:-"t_posix t_data t_bufpool t_zerocopy t_plugins t_async t_lifecycle t_sandbox t_hostile t_orphans t_chaos t_limits t_disk t_control t_ops t_recovery t_faults t_ownership t_fsck t_source t_install t_plugin_check t_debug t_state t_restore t_hostrestart t_upgrade t_broker_upgrade t_hostile2 t_program"}
TRANSPORTS=${TRANSPORTS:-"uring classic"}
TESTS_ONCE=${TESTS_ONCE-"t_install t_plugin_check t_debug t_fsck t_control t_source"}
LIMIT=${TEST_TIMEOUT:-300}
pass=0 fail=0 skip=0
failed=""
reasons=""
RF_FAIL_NOTE=$(mktemp /tmp/ringfence-fail.XXXXXX)
export RF_FAIL_NOTE

if [ "$(id -u)" != 0 ]; then
	echo "integration: needs root (mounts, rings); run: sudo make check" >&2
	exit 1
fi
[ -c /dev/fuse ] || modprobe fuse 2>/dev/null
if [ ! -c /dev/fuse ]; then
	echo "integration: no /dev/fuse" >&2
	exit 1
fi
. "$ROOT/tools/hoststate.sh"
host_save
trap 'host_restore; rm -f "$RF_FAIL_NOTE"' EXIT
# every test keeps its dynamic users in its own users_file, never the host's
HOST_USERS=/var/lib/ringfence/users
had_users=0
[ -e "$HOST_USERS" ] && had_users=1

first=${TRANSPORTS%% *}
if [ "$HOST_URING" = absent ] && [ "$first" = uring ] && [[ " $TRANSPORTS " == *" classic "* ]]; then
	first=classic
fi
for tr in $TRANSPORTS; do
	if [ "$HOST_URING" = absent ]; then
		[ "$tr" = uring ] && echo "integration: this kernel has no FUSE io-uring ($RF_UPARAM)"
	elif [ "$tr" = uring ]; then
		host_uring Y
	else
		host_uring N
	fi
	repeat=""
	[ "$tr" != "$first" ] && repeat=1
	for t in $TESTS; do
		if [ -n "$repeat" ] && [[ " $TESTS_ONCE " == *" $t "* ]]; then
			echo "== $t: independent of the transport, run in the $first pass"
			continue
		fi
		start=$(date +%s)
		echo "== $t ($tr)"
		: >"$RF_FAIL_NOTE"
		RF_REPEAT_PASS=$repeat TRANSPORT=$tr timeout -k 10 "$LIMIT" bash "$ROOT/tests/integration/$t.sh"
		rc=$?
		secs=$(($(date +%s) - start))
		case $rc in
		0) pass=$((pass + 1)); echo "PASS $t ($tr, ${secs}s)" ;;
		77) skip=$((skip + 1)); echo "SKIP $t ($tr)" ;;
		124) fail=$((fail + 1)); failed="$failed $t/$tr"; echo "FAIL $t ($tr): timed out after ${LIMIT}s" ;;
		*) fail=$((fail + 1)); failed="$failed $t/$tr"; echo "FAIL $t ($tr, exit $rc)" ;;
		esac
		case $rc in 0 | 77) ;; *)
			why=$(head -n 1 "$RF_FAIL_NOTE")
			[ "$rc" = 124 ] && why="timed out after ${LIMIT}s${why:+ (last: $why)}"
			reasons="$reasons  $t/$tr: ${why:-exit $rc}"$'\n' ;;
		esac
	done
done
if [ "$had_users" = 0 ] && [ -e "$HOST_USERS" ]; then
	fail=$((fail + 1))
	failed="$failed host-users-file"
	echo "FAIL: a test wrote $HOST_USERS (set users_file in its policy): $(cat "$HOST_USERS")"
fi
[ -n "$failed" ] && echo "failed:$failed"
[ -n "$reasons" ] && printf '%s' "$reasons"
echo "integration: $pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ] || exit 1
if [ "$skip" -ne 0 ] && [ "${RINGFENCE_REQUIRE_ALL:-0}" = 1 ]; then
	echo "integration: skips are failures here (RINGFENCE_REQUIRE_ALL=1)"
	exit 1
fi
exit 0
