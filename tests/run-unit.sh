#!/bin/sh
# Run Check unit suites; each is a program whose exit status says how it went
# (0 pass, 77 skipped because the machine lacks something, else fail).
# Prints one line per suite and a closing "N passed, N failed, N skipped".
# A skip is reported, never counted as a pass; with RINGFENCE_REQUIRE_ALL=1
# (as CI sets it) a skip fails the run.
set -u
pass=0 fail=0 skip=0
for t in "$@"; do
	name=$(basename "$t")
	out=$(CK_DEFAULT_TIMEOUT=${CK_DEFAULT_TIMEOUT:-20} "$t" 2>&1)
	rc=$?
	case $rc in
	0) pass=$((pass + 1)); echo "PASS $name: $(echo "$out" | grep -E '^[0-9]+%' | tail -1)" ;;
	77) skip=$((skip + 1)); echo "SKIP $name: $(echo "$out" | grep SKIP | head -1)" ;;
	*) fail=$((fail + 1)); echo "FAIL $name (exit $rc)"; echo "$out" | sed 's/^/    /' ;;
	esac
done
echo "unit: $pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ] || exit 1
if [ "$skip" -ne 0 ] && [ "${RINGFENCE_REQUIRE_ALL:-0}" = 1 ]; then
	echo "unit: skips are failures here (RINGFENCE_REQUIRE_ALL=1)"
	exit 1
fi
exit 0
