#!/bin/bash
# Replies sent from the plugin's own threads reach the right ring: four
# concurrent O_DIRECT readers of a generated file, checked byte for byte.
. "$(dirname "$0")/lib.sh"
rf_setup
rf_policy as "$BUILD/tests/plugins/async.so" ""
rf_start as
M=$T/as.mnt
python3 -c '
import sys
sys.stdout.buffer.write(bytes(i % 251 for i in range(16 << 20)))' >"$T/want"
pids=()
for i in 1 2 3 4; do
	dd if="$M/pattern" of="$T/got$i" bs=256K iflag=direct status=none &
	pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || rf_fail "reader $p failed"; done
for i in 1 2 3 4; do cmp -s "$T/want" "$T/got$i" || rf_fail "reader $i got different bytes"; done
rf_log "4 x 16 MiB read through asynchronous replies"
[ "$(rf_field as errors)" = 0 ] || rf_fail "errors: $(rf_field as errors)"
rf_stop
