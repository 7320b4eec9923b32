#!/bin/bash
# POSIX ownership for several users: the same script of operations (as
# root, alice and bob; tests/integration/ownership.py) on a tmpfs directory
# and on a ringfence mount must give the same results, errno for errno,
# and leave the same owners, groups and modes. The worker stays without
# any capability.
. "$(dirname "$0")/lib.sh"
rf_setup
mkdir -p "$T/ref"
mount -t tmpfs -o size=16M,mode=0755 rf-ref "$T/ref"
EXTRA_MOUNTS+=("$T/ref")

rf_log "memfs: every user's operations agree with tmpfs"
rf_policy mem memfs "" "allow_other = yes"
rf_start mem
python3 "$ROOT/tests/integration/ownership.py" "$T/ref" "$T/mem.mnt" >"$T/mem.out" ||
	{ grep '^!!' "$T/mem.out" >&2; rf_fail "memfs differs from tmpfs"; }
rf_log "  $(tail -1 "$T/mem.out")"
rf_assert_worker_fenced "$(rf_worker mem)"
rf_stop
