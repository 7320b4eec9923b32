#!/bin/bash
# make fuzz: build each libFuzzer harness in tests/fuzz (clang, ASan+UBSan)
# and run it for SECONDS, seeded with the test fixtures. The corpus grows
# in build-fuzz/corpus/NAME; a crash leaves its input in build-fuzz/ and
# fails the run with the command that replays it.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_EACH=${1:-60}
shift || true
OUT=build-fuzz
CFLAGS="-g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -std=gnu11 -D_GNU_SOURCE -Iinclude -Iipc -Ipolicy"
LIB="ipc/log.c policy/policy.c policy/seccomp_policy.c"
mkdir -p "$OUT"
failed=0
for name in "$@"; do
	bin=$OUT/$name corpus=$OUT/corpus/$name
	mkdir -p "$corpus"
	case $name in
	fuzz_policy) cp tests/fixtures/*.policy examples/ringfence.policy "$corpus"/ ;;
	fuzz_seccomp) cp tests/fixtures/*.seccomp seccomp.policy "$corpus"/ ;;
	fuzz_escape) printf '\100plain\nline\033[2J\\\302\233\303\251' >"$corpus/seed" ;;
	esac
	echo "fuzz: $name, building"
	# shellcheck disable=SC2086
	clang $CFLAGS "tests/fuzz/$name.c" $LIB -lseccomp -o "$bin"
	echo "fuzz: $name, ${SECONDS_EACH}s"
	if "$bin" -max_total_time="$SECONDS_EACH" -max_len=4096 -print_final_stats=1 \
		-artifact_prefix="$OUT/$name-" "$corpus" >"$OUT/$name.log" 2>&1; then
		runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$OUT/$name.log" | grep -o '[0-9]*$')
		echo "fuzz: $name passed: $runs inputs, corpus $(ls "$corpus" | wc -l) files"
	else
		failed=$((failed + 1))
		grep -E "ERROR|SUMMARY|Test unit written" "$OUT/$name.log" | head -5
		echo "fuzz: $name FAILED; replay: $bin $OUT/$name-crash-* (log: $OUT/$name.log)"
	fi
done
echo "fuzz: $(($# - failed)) passed, $failed failed"
[ "$failed" -eq 0 ]
