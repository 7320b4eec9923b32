#!/bin/sh
# tests/check-libfuse-abi.sh LIB [SYSTEM_LIB]: ringfence's libfuse3.so.3
# (or .so.4) exports each of its functions under the name and symbol
# version Debian's library of its soname (SYSTEM_LIB, default the
# installed libfuse3.so.3) has for it, the
# default version where Debian's is the default (but for its plugin host's
# rf_* hook, under a RINGFENCE_LIBFUSE_ version), and defines every version
# node Debian's does (a program names the versions it needs, and the loader
# refuses a library without one of them).
set -eu
lib=$1
sys=${2:-$(ls /usr/lib/*/libfuse3.so.3 2>/dev/null | head -1)}
[ -n "$sys" ] && [ -e "$sys" ] ||
	{ echo "check-libfuse-abi: no Debian libfuse3.so.3 to compare with (apt-get install libfuse3-3)" >&2; exit 1; }
# "name version" per exported function, a hidden version in parentheses;
# and the version nodes
funcs() { objdump -T "$1" | awk '$4 == ".text" && $NF != "" { print $NF, $(NF-1) }' | sort; }
nodes() { objdump -T "$1" | awk '$4 == "*ABS*" { print $NF }' | sort; }
soname() { readelf -d "$1" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p'; }
[ "$(soname "$lib")" = "$(soname "$sys")" ] ||
	{ echo "check-libfuse-abi: $lib's soname is '$(soname "$lib")', $sys's '$(soname "$sys")'" >&2; exit 1; }
ours=$(funcs "$lib")
theirs=$(funcs "$sys")
[ -n "$ours" ] || { echo "check-libfuse-abi: $lib exports no function" >&2; exit 1; }
bad=0
echo "$ours" | while read -r name ver; do
	echo "$theirs" | grep -qxF "$name $ver" && continue
	# ringfence's own hook for its plugin host, under a version of its own
	case "$name $ver" in rf_*" RINGFENCE_LIBFUSE_"*) continue ;; esac
	echo "check-libfuse-abi: $lib exports $name $ver, which $sys does not" >&2
	exit 1
done || bad=1
for n in $(nodes "$sys"); do
	nodes "$lib" | grep -qxF "$n" || { echo "check-libfuse-abi: $lib lacks version $n" >&2; bad=1; }
done
[ $bad = 0 ] || exit 1
echo "check-libfuse-abi: $(echo "$ours" | grep -vc ' RINGFENCE_') of $(echo "$theirs" | wc -l) functions of $sys, under its versions"
