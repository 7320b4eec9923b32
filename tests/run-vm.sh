#!/bin/bash
# make check-vm: the tests again on Linux 7.3 or later, in a guest. Fetches
# the kernel once (tools/kernel73.sh), boots it with virtme-ng under QEMU
# with TCG (KVM guests die early on the machines this is built on), the
# host's root shared read-only, and runs tests/vm-guest.sh there. Needs
# root, qemu-system-x86 and udev (make check-vm installs them).
#
# The guest's exit status is the tests'; a guest that has not finished
# after VM_TIMEOUT seconds (default 2400) is killed, with QEMU, and counts
# as a failure. Prints "check-vm: ..." with the kernel and the outcome.
# VM_MEMORY (3G), VM_CPUS (2) size the guest; VM_ACCEL is QEMU's -accel
# (tcg,thread=single); VM_APPEND is added to the guest kernel's command
# line (default "clocksource=hpet loglevel=5"). The guest's console
# goes to VM_CONSOLE (build/check-vm-console.log), its end printed on a
# failure; VM_VERBOSE=1 shows all of it. Everything vm-guest.sh reads from
# the environment passes through. VM_COMMAND runs that shell command in the
# guest instead of tests/vm-guest.sh, from the repository's root, with the
# same exit status, limits and output (e.g. to try a kernel interface).
set -u
if [ $# -gt 0 ]; then
	case $1 in
	-h | --help) sed -n '2,/^set -u/{/^set -u/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
	*) echo "usage: tests/run-vm.sh (make check-vm); settings come from the environment (--help)" >&2; exit 2 ;;
	esac
fi
ROOT=$(cd "$(dirname "$0")/.." && pwd)
LIMIT=${VM_TIMEOUT:-2400}

if [ "$(id -u)" != 0 ]; then
	echo "check-vm: needs root (the guest runs the integration tests as root): sudo make check-vm" >&2
	exit 1
fi
for c in qemu-system-x86_64 udevadm /usr/bin/python3; do
	command -v "$c" >/dev/null || {
		echo "check-vm: $c is missing (make check-vm installs it)" >&2
		exit 1
	}
done
KDIR=$("$ROOT/tools/kernel73.sh") || {
	echo "check-vm: no Linux 7.3 kernel to boot (tools/kernel73.sh said why)" >&2
	exit 1
}
REL=$(cat "$KDIR/release")
VER=$(cat "$KDIR/version")

# libfuse 3.17's programs for t_program, fetched here: the guest has no
# network
RF_LIBFUSE4_DIR=$("$ROOT/tools/libfuse4.sh") || {
	echo "check-vm: no libfuse 3.17 programs for t_program (tools/libfuse4.sh said why)" >&2
	exit 1
}

# What vm-guest.sh reads, passed on the guest's command line.
env_args=""
for v in VM_TESTS VM_TRANSPORTS VM_TEST_TIMEOUT RF_TIME_SCALE RINGFENCE_REQUIRE_ALL CK_DEFAULT_TIMEOUT \
	RF_POLICY_EXTRA RF_LIBFUSE4_DIR; do
	[ -n "${!v:-}" ] && env_args="$env_args $v=$(printf %q "${!v}")"
done
if [ -n "${VM_COMMAND:-}" ]; then
	# the line from which the guest's standard error is shown, as
	# vm-guest.sh prints it
	guest_cmd="${env_args:+export$env_args && }echo \"vm: Linux \$(uname -r)\" >&2 && $VM_COMMAND"
else
	guest_cmd="$env_args ./tests/vm-guest.sh"
fi
# HPET has no vDSO path: every clock read in the guest is a system call, as
# on hosts whose clocksource the vDSO cannot read (some hypervisors)
# loglevel=5: the console carries warnings and worse (WARN_ON, oopses, a
# panic), which the console log keeps
APPEND=${VM_APPEND-clocksource=hpet loglevel=5}
append=()
[ -n "$APPEND" ] && append=(--append "$APPEND")

# One host thread runs all vCPUs: with a thread per vCPU (QEMU's default),
# a vCPU may run code another has just patched (the kernel's live
# patching of static keys), and the guest dies of a stray int3
# ("Oops: int3" in sched_clock_cpu at boot, about one boot in five here)
ACCEL=${VM_ACCEL:-tcg,thread=single}

echo "check-vm: Linux $VER under QEMU (${ACCEL}, ${VM_CPUS:-2} CPUs, ${VM_MEMORY:-3G}${APPEND:+, $APPEND}), at most $LIMIT s"
start=$(date +%s)
# QEMU opens the path of its standard output and error afresh, truncating
# a file they were redirected to (make check >log would lose what came
# before): give it pipes, and copy them here
pipes=$(mktemp -d) || exit 1
mkfifo "$pipes/out" "$pipes/err" || exit 1
cat "$pipes/out" &
CAT_OUT=$!
# the guest's console shares standard error with the tests' (vng
# --verbose): all of it goes to the console log, and the tests' part
# (from vm-guest.sh's first line on, without the kernel's) on to here
CONSOLE=${VM_CONSOLE:-$ROOT/build/check-vm-console.log}
mkdir -p "$(dirname "$CONSOLE")" || exit 1
if [ "${VM_VERBOSE:-0}" = 1 ]; then
	tee "$CONSOLE" <"$pipes/err" >&2 &
else
	tee "$CONSOLE" <"$pipes/err" | (
		started=0
		while IFS= read -r line || [ -n "$line" ]; do
			[[ $line == "vm: Linux "* ]] && started=1
			[ $started = 1 ] && [[ ! $line =~ ^\[\ *[0-9]+\.[0-9]+\]\  ]] && printf '%s\n' "$line"
		done
	) >&2 &
fi
CAT_ERR=$!
# its own session, so that a timeout ends QEMU with it
cd "$ROOT" || exit 1
setsid env PATH="$KDIR/root/usr/bin:$PATH" PYTHONPATH="$KDIR/root/usr/lib/python3/dist-packages" \
	/usr/bin/python3 "$KDIR/root/usr/bin/vng" --verbose \
	-r "$KDIR/root/usr/lib/modules/$REL/vmlinuz" --force-9p --disable-kvm \
	--memory "${VM_MEMORY:-3G}" --cpus "${VM_CPUS:-2}" --rodir="$ROOT" "${append[@]}" "--qemu-opts=-accel $ACCEL" \
	-- "cd $(printf %q "$ROOT") && $guest_cmd" </dev/null >"$pipes/out" 2>"$pipes/err" &
VM=$!
stop_vm() {
	kill -TERM -- "-$VM" 2>/dev/null
	for _ in $(seq 100); do kill -0 "$VM" 2>/dev/null || return 0; sleep 0.1; done
	kill -KILL -- "-$VM" 2>/dev/null
}
trap 'stop_vm; rm -rf "$pipes"; exit 130' INT TERM
timed_out=0
while kill -0 "$VM" 2>/dev/null; do
	if [ $(($(date +%s) - start)) -ge "$LIMIT" ]; then
		timed_out=1
		stop_vm
		break
	fi
	sleep 1
done
wait "$VM"
rc=$?
wait "$CAT_OUT" "$CAT_ERR"
rm -rf "$pipes"
secs=$(($(date +%s) - start))
console_tail() {
	echo "check-vm: the end of the guest's console ($CONSOLE):"
	tail -n 40 "$CONSOLE" | sed 's/^/  | /'
}
if [ "$timed_out" = 1 ]; then
	console_tail
	echo "check-vm: FAIL: Linux $VER: the guest had not finished after $LIMIT s; killed"
	exit 1
fi
if [ "$rc" != 0 ]; then
	console_tail
	echo "check-vm: FAIL: Linux $VER: the guest's tests exited with status $rc (${secs}s)"
	exit 1
fi
echo "check-vm: Linux $VER: passed (${secs}s)"
