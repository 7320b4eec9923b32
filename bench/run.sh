#!/bin/bash
# make bench (first cut): 1 MiB O_DIRECT sequential reads and writes with
# fio, side by side in one run, on
#   tmpfs      the backing tmpfs itself (the ceiling)
#   uring      ringfence passthrough over FUSE io-uring, fixed-buffer data ops
#   classic    ringfence passthrough over /dev/fuse, fixed-buffer data ops
# Each cell is the median of ROUNDS runs (default 3) with min-max and the
# ratio to the uring cell. Rounds interleave the targets so that machine
# noise spreads over all of them. Writes bench/results/latest.{tsv,md}.
# Needs root; turns enable_uring on for the run and restores it.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
B=$ROOT/build
ROUNDS=${ROUNDS:-3}
RUNTIME=${RUNTIME:-5}
SIZE=${SIZE:-256M}
PARAM=/sys/module/fuse/parameters/enable_uring
[ "$(id -u)" = 0 ] || { echo "bench: run as root" >&2; exit 1; }
[ -w "$PARAM" ] || { echo "bench: this kernel has no FUSE io-uring" >&2; exit 1; }

T=$(mktemp -d /tmp/ringfence-bench.XXXXXX)
chmod 755 "$T"
. "$ROOT/tools/hoststate.sh"
host_save
BROKER=""
cleanup() {
	stop_broker "$BROKER"
	# ring teardown releases the backing files asynchronously: retry
	for _ in $(seq 50); do
		mountpoint -q "$T/tmpfs" || break
		umount "$T/tmpfs" 2>/dev/null || sleep 0.1
	done
	mountpoint -q "$T/tmpfs" && umount -l "$T/tmpfs"
	host_restore
	rm -rf --one-file-system "$T"
}
trap cleanup EXIT
host_uring Y

mkdir -p "$T/tmpfs" "$T/uring.mnt" "$T/classic.mnt"
mount -t tmpfs -o size=2G,mode=0755 ringfence-bench "$T/tmpfs"
for d in direct uring classic; do
	mkdir -p "$T/tmpfs/$d"
	chown 65534:65534 "$T/tmpfs/$d"
done
cat >"$T/policy" <<EOP
[global]
control_socket = $T/ctl.sock
[mount uring]
mountpoint = $T/uring.mnt
plugin = passthrough
source = $T/tmpfs/uring
transport = uring
[mount classic]
mountpoint = $T/classic.mnt
plugin = passthrough
source = $T/tmpfs/classic
transport = classic
EOP
start_broker "$B/ringfencectl" "$T/ctl.sock" 2 "$B/ringfenced" "$T/policy" "$T/broker.log"

dir_of() {
	case $1 in
	tmpfs) echo "$T/tmpfs/direct" ;;
	*) echo "$T/$1.mnt" ;;
	esac
}

# fio_mibs TARGET RW: MiB/s of one run
fio_mibs() {
	fio --name=rf --directory="$(dir_of "$1")" --rw="$2" --bs=1M --direct=1 \
		--ioengine=psync --numjobs=2 --size="$SIZE" --runtime="$RUNTIME" --time_based \
		--group_reporting --output-format=json --output="$T/fio.json" >/dev/null
	python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))["jobs"][0]
print("%.1f" % ((j["read"]["bw"] + j["write"]["bw"]) / 1024.0))' "$T/fio.json"
}

TARGETS="tmpfs uring classic"
WORKLOADS="read write"
echo "bench: laying out files"
for t in $TARGETS; do
	fio --name=rf --directory="$(dir_of "$t")" --rw=write --bs=1M --direct=1 --numjobs=2 \
		--size="$SIZE" --output=/dev/null
done
declare -A R
for r in $(seq "$ROUNDS"); do
	for w in $WORKLOADS; do
		for t in $TARGETS; do
			v=$(fio_mibs "$t" "$w")
			R[$w.$t]="${R[$w.$t]:-} $v"
			printf 'bench: round %d/%d  %-5s %-8s %8s MiB/s\n' "$r" "$ROUNDS" "$w" "$t" "$v"
		done
	done
done

mkdir -p "$ROOT/bench/results"
{
	printf 'workload\ttarget\tmedian_mib_s\tmin\tmax\tratio_to_uring\n'
	for w in $WORKLOADS; do
		for t in $TARGETS; do
			echo "$w $t ${R[$w.$t]} | ${R[$w.uring]}"
		done
	done | python3 -c '
import statistics, sys
for line in sys.stdin:
    head, ref = line.split("|")
    w, t, *vals = head.split()
    vals = [float(v) for v in vals]
    ref = statistics.median(float(v) for v in ref.split())
    m = statistics.median(vals)
    print("%s\t%s\t%.0f\t%.0f\t%.0f\t%.2f" % (w, t, m, min(vals), max(vals), m / ref))'
} >"$ROOT/bench/results/latest.tsv"
{
	echo "1 MiB O_DIRECT sequential, fio psync, numjobs=2, ${RUNTIME}s per run, median of $ROUNDS rounds;"
	echo "backing store tmpfs; $(nproc) CPUs, kernel $(uname -r), $(date -u +%Y-%m-%d)."
	echo "Command: \`make bench\` (ROUNDS=$ROUNDS RUNTIME=$RUNTIME SIZE=$SIZE)."
	echo
	echo "| workload | target | median MiB/s | min-max | ratio to uring |"
	echo "|---|---|---|---|---|"
	tail -n +2 "$ROOT/bench/results/latest.tsv" |
		awk -F'\t' '{ printf "| %s | %s | %s | %s-%s | %s |\n", $1, $2, $3, $4, $5, $6 }'
} >"$ROOT/bench/results/latest.md"
echo
cat "$ROOT/bench/results/latest.md"
