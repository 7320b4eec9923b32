#!/bin/sh
# tests/check-abi.sh WORKER ABI_LIB: the plugin ABI library (what plugins
# link against) names only what the worker exports, under the worker's own
# soname, so that a plugin linked against it loads in the worker and calls
# the worker's functions.
set -eu
worker=$1 lib=$2
soname() { readelf -d "$1" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p'; }
[ -n "$(soname "$lib")" ] || { echo "check-abi: $lib has no soname" >&2; exit 1; }
[ "$(soname "$worker")" = "$(soname "$lib")" ] ||
	{ echo "check-abi: $worker's soname '$(soname "$worker")' is not $lib's '$(soname "$lib")'" >&2; exit 1; }
names=$(nm -D --defined-only "$lib" | awk '$2 == "T" { print $3 }')
[ -n "$names" ] || { echo "check-abi: $lib defines no function" >&2; exit 1; }
have=$(nm -D --defined-only "$worker" | awk '$2 == "T" { print $3 }')
missing=0
for n in $names; do
	echo "$have" | grep -qx "$n" || { echo "check-abi: $worker does not export $n" >&2; missing=1; }
done
[ $missing = 0 ] || exit 1
echo "check-abi: $(echo "$names" | wc -l) rf_* functions, exported by the worker as $(soname "$lib")"
