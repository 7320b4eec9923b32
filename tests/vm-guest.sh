#!/bin/bash
# Runs inside the Linux 7.3 guest that tests/run-vm.sh boots (make
# check-vm): the unit suites and the integration tests that exercise the
# kernel, on the guest's kernel, with the host's build seen read-only.
# Prints the same "unit:" and "integration:" lines as make check.
#
# The guest runs under QEMU's TCG, 5-20 times slower than the host:
# RF_TIME_SCALE stretches the tests' bounded waits, VM_TEST_TIMEOUT bounds
# each test. VM_TESTS and VM_TRANSPORTS choose what runs.
set -u
if [ $# -gt 0 ]; then
	case $1 in
	-h | --help) sed -n '2,/^set -u/{/^set -u/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
	*) echo "usage: tests/vm-guest.sh (run in the guest by tests/run-vm.sh); settings come from the environment (--help)" >&2; exit 2 ;;
	esac
fi
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-$ROOT/build}
export RF_TIME_SCALE=${RF_TIME_SCALE:-5}
# tests that would taint the host's kernel if ringfence failed them (a
# kernel WARN) run only here
export RF_IN_VM=1
# on standard error, which the guest's console shares: run-vm.sh shows
# the tests' errors from this line on
echo "vm: Linux $(uname -r), $(nproc) CPUs, clocksource $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null), cgroup $(stat -fc %T /sys/fs/cgroup)" >&2
rc=0
"$ROOT/tests/run-unit.sh" "$BUILD"/tests/check_* || rc=1
TESTS=${VM_TESTS:-"t_posix t_data t_bufpool t_zerocopy t_sandbox t_hostile t_recovery t_faults t_limits t_disk t_restore t_hostrestart t_upgrade t_broker_upgrade t_hostile2 t_program"} \
	TRANSPORTS=${VM_TRANSPORTS:-uring} TEST_TIMEOUT=${VM_TEST_TIMEOUT:-900} \
	"$ROOT/tests/run-integration.sh" || rc=1
exit $rc
