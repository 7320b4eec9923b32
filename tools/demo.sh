#!/bin/bash
# make demo: a two-tenant deployment from examples/demo.policy.in: the
# passthrough plugin on a demo directory through FUSE over io-uring, and
# memfs through /dev/fuse; run a short workload, show ringfencectl status,
# unmount.
# Needs root. Turns /sys/module/fuse/parameters/enable_uring on for the run
# and restores it afterwards.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
B=$ROOT/build
[ "$(id -u)" = 0 ] || { echo "demo: run as root (it mounts): sudo make demo" >&2; exit 1; }

D=$(mktemp -d /tmp/ringfence-demo.XXXXXX)
chmod 755 "$D"
# data/ is empty: the broker hands it to the tenant's dynamic user
mkdir -p "$D/data" "$D/mnt" "$D/scratch"
. "$ROOT/tools/hoststate.sh"
host_save
BROKER=""
cleanup() {
	stop_broker "$BROKER"
	host_restore
	rm -rf --one-file-system "$D"
}
trap cleanup EXIT
host_uring Y || echo "demo: this kernel has no FUSE io-uring; the demo will use /dev/fuse"

sed -e "s|@DIR@|$D|g" "$ROOT/examples/demo.policy.in" >"$D/demo.policy"
echo "== policy ($D/demo.policy)"
grep -v '^#' "$D/demo.policy" | sed '/^$/d; s/^/   /'
"$B/ringfenced" --check "$D/demo.policy"

echo "== starting ringfenced"
start_broker "$B/ringfencectl" "$D/ctl.sock" 2 "$B/ringfenced" "$D/demo.policy" "$D/broker.log"
sed 's/^/   /' "$D/broker.log"
M=$D/mnt
echo "== workload on $M"
echo "hello through a fenced ring" >"$M/greeting.txt"
echo "   wrote greeting.txt: $(cat "$M/greeting.txt")"
mkdir -p "$M/docs/notes" && for i in 1 2 3; do echo "note $i" >"$M/docs/notes/$i.txt"; done
echo "   made docs/notes/ with $(ls "$M/docs/notes" | wc -l) files"
head -c $((64 << 20)) /dev/urandom >"$D/blob"
t0=$(date +%s.%N)
dd if="$D/blob" of="$M/blob" bs=1M oflag=direct status=none
t1=$(date +%s.%N)
dd if="$M/blob" of=/dev/null bs=1M iflag=direct status=none
t2=$(date +%s.%N)
cmp -s "$D/blob" "$M/blob" && cmp -s "$D/blob" "$D/data/blob" &&
	echo "   64 MiB blob written and read back, identical through the mount and in the backing directory"
awk -v a="$t0" -v b="$t1" -v c="$t2" 'BEGIN { printf "   O_DIRECT 1 MiB writes %.0f MiB/s, reads %.0f MiB/s (one run, not a benchmark)\n", 64/(b-a), 64/(c-b) }'
mv "$M/greeting.txt" "$M/docs/greeting.txt" && ln -s docs/greeting.txt "$M/link"
setfattr -n user.demo -v yes "$M/docs/greeting.txt"
echo "   renamed, symlinked, tagged: $(readlink "$M/link"), user.demo=$(getfattr --absolute-names --only-values -n user.demo "$M/link")"
echo "   the backing directory holds:"
(cd "$D/data" && find . -mindepth 1 | sort | sed 's/^/      /')

echo "== the second tenant: memfs on $D/scratch, classic transport"
seq 1 1000 >"$D/scratch/numbers" && echo "   wrote $(wc -l <"$D/scratch/numbers") lines to scratch/numbers, in memory"
echo "== ringfencectl status"
"$B/ringfencectl" -s "$D/ctl.sock" status | awk '{
	line = "   "
	for (i = 1; i <= NF; i++) {
		split($i, kv, "=")
		if (kv[1] ~ /^(tenant|state|transport|queues|worker|requests|uring_requests|classic_requests|read_fixed_bytes|write_fixed_bytes|p50_us|p99_us|limits)$/)
			line = line " " $i
	}
	print line
}'
W=$("$B/ringfencectl" -s "$D/ctl.sock" status demo | tr ' ' '\n' | sed -n 's/^worker=//p')
echo "== the worker ($W)"
grep -E '^(Uid|Gid|CapEff|CapBnd|NoNewPrivs)' "/proc/$W/status" | sed 's/^/   /'
echo "   /dev/fuse descriptors held: $(ls -l "/proc/$W/fd" | grep -c /dev/fuse || true)"

echo "== stopping (SIGTERM unmounts)"
kill -TERM "$BROKER"
wait "$BROKER"
BROKER=""
for mp in "$M" "$D/scratch"; do
	if awk -v mp="$mp" '$5 == mp { f = 1 } END { exit !f }' /proc/self/mountinfo; then
		echo "demo: $mp is still mounted" >&2
		exit 1
	fi
done
echo "   both tenants unmounted; demo done"
