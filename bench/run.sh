#!/bin/bash
# make bench: side by side, in one run, on one tmpfs:
#   tmpfs       the tmpfs itself (the ceiling)
#   uring       ringfence passthrough, FUSE io-uring, fixed-buffer data ops
#   classic     ringfence passthrough, /dev/fuse, fixed-buffer data ops
#   plain-io    as uring, file data by pread/pwrite (--bench-unsafe=plain-io)
#   no-sandbox  as uring, no namespaces/root/seccomp (--bench-unsafe=no-sandbox)
#   libfuse     Debian's libfuse 3 passthrough_ll example (the outside peer),
#               with default_permissions like every ringfence mount
# Workloads: fio, psync, numjobs=2: 1 MiB sequential read and write with
# O_DIRECT and buffered, 4 KiB random read O_DIRECT; and create + stat +
# unlink of FILES files. Rounds interleave targets and workloads, so noise
# spreads over all of them; each cell is the median of ROUNDS runs with
# min-max and the ratio to the uring cell. Also: server CPU seconds per GiB
# moved, memory of an idle mount, and 4 KiB random-read IOPS (numjobs=8)
# against queue_depth 1..16.
#
# Writes bench/results/latest.{tsv,md,png} and raw.tsv. Needs root; turns
# enable_uring on for the run and restores it. Knobs: ROUNDS (3), RUNTIME
# (seconds per fio run, 4), SIZE (per fio job, 256M), QD_SIZE (per job of
# the queue_depth runs, 64M), FILES (10000).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
B=$ROOT/build
OUT=$ROOT/bench/results
ROUNDS=${ROUNDS:-3}
RUNTIME=${RUNTIME:-4}
SIZE=${SIZE:-256M}
FILES=${FILES:-10000}
QD_SIZE=${QD_SIZE:-64M}
PARAM=/sys/module/fuse/parameters/enable_uring
EXAMPLES=/usr/share/doc/libfuse3-dev/examples
[ "$(id -u)" = 0 ] || { echo "bench: run as root" >&2; exit 1; }
[ -w "$PARAM" ] || { echo "bench: this kernel has no FUSE io-uring" >&2; exit 1; }
[ -f "$EXAMPLES/passthrough_ll.c" ] || { echo "bench: libfuse3-dev is missing (make bench installs it)" >&2; exit 1; }
for c in fio python3 gnuplot pkg-config; do
	command -v $c >/dev/null || { echo "bench: $c is missing (make bench installs it)" >&2; exit 1; }
done

T=$(mktemp -d /tmp/ringfence-bench.XXXXXX)
chmod 755 "$T"
. "$ROOT/tools/hoststate.sh"
host_save
BROKERS=() PEER=""
cleanup() {
	local b
	for b in "${BROKERS[@]}"; do stop_broker "$b"; done
	if [ -n "$PEER" ] && kill -0 "$PEER" 2>/dev/null; then
		umount "$T/libfuse.mnt" 2>/dev/null || umount -l "$T/libfuse.mnt"
		wait "$PEER" 2>/dev/null || true
	fi
	unmount_backing "$T/tmpfs"
	host_restore
	rm -rf --one-file-system "$T"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
host_uring Y
START=$(date +%s)
say() { printf 'bench [%4ds] %s\n' $(($(date +%s) - START)) "$*"; }

# ---- the peer ----
mkdir -p "$T/bin"
cc -O2 -o "$T/bin/passthrough_ll" "$EXAMPLES/passthrough_ll.c" \
	$(pkg-config --cflags --libs fuse3)

# ---- mounts ----
TARGETS="tmpfs uring classic plain-io no-sandbox libfuse"
QDS="1 2 4 8 16"
mkdir -p "$T/tmpfs"
mount -t tmpfs -o size=8G,mode=0755 ringfence-bench "$T/tmpfs"
for d in $TARGETS qd1 qd2 qd4 qd16 idle; do
	mkdir -p "$T/tmpfs/$d" "$T/$d.mnt" # the brokers hand each to its tenant
done
tenant() { # NAME [extra lines]: a passthrough section over $T/tmpfs/NAME
	local n=$1
	shift
	printf '[mount %s]\nmountpoint = %s/%s.mnt\nplugin = passthrough\nsource = %s/tmpfs/%s\n' \
		"$n" "$T" "$n" "$T" "$n"
	for l in "$@"; do printf '%s\n' "$l"; done
}
policy() { # FILE SOCKET sections...
	local f=$1 s=$2
	shift 2
	printf '[global]\ncontrol_socket = %s\nusers_file = %s/users\n' "$s" "$T" >"$f"
	for sec in "$@"; do printf '%s\n' "$sec" >>"$f"; done
}
start() { # NAME NTENANTS [broker args]: start broker NAME on $T/NAME.policy
	local n=$1 k=$2
	shift 2
	start_broker "$B/ringfencectl" "$T/$n.sock" "$k" "$B/ringfenced" "$T/$n.policy" \
		"$T/$n.log" "$@" || { cat "$T/$n.log" >&2; exit 1; }
	BROKERS+=("$BROKER")
}
field() { # SOCKET TENANT KEY
	"$B/ringfencectl" -s "$1" status "$2" | tr ' ' '\n' | sed -n "s/^$3=//p"
}
kib() { awk -v k="$2" '$1 == k":" { print $2 }' "/proc/$1/status"; }

# Memory of one idle mount (queue_depth 8, max_write 1M), on a broker of
# its own so that its pinned memory is the mount's alone.
policy "$T/idle.policy" "$T/idle.sock" "$(tenant idle transport=uring)"
start idle 1
W=$(field "$T/idle.sock" idle worker)
sleep 1
# the pool is the mapping at RF_POOL_BASE: its size, and what the worker touched
read -r pool_kib pool_rss_kib < <(awk '/^100000000000-/ { p = 1; next }
	p && /^Size:/ { s = $2 } p && /^Rss:/ { print s, $2; exit }' "/proc/$W/smaps")
MEM="worker_rss_kib=$(kib "$W" VmRSS) worker_anon_kib=$(kib "$W" RssAnon)"
MEM="$MEM worker_file_kib=$(kib "$W" RssFile) worker_shmem_kib=$(kib "$W" RssShmem)"
MEM="$MEM pool_kib=$pool_kib pool_touched_by_worker_kib=$pool_rss_kib"
MEM="$MEM pinned_kib=$(kib "${BROKERS[-1]}" VmPin)"
stop_broker "${BROKERS[-1]}"
unset 'BROKERS[-1]'
say "idle mount: $MEM"

policy "$T/main.policy" "$T/main.sock" "$(tenant uring transport=uring)" \
	"$(tenant classic transport=classic)" \
	"$(tenant qd1 transport=uring queue_depth=1)" "$(tenant qd2 transport=uring queue_depth=2)" \
	"$(tenant qd4 transport=uring queue_depth=4)" "$(tenant qd16 transport=uring queue_depth=16)"
policy "$T/plain.policy" "$T/plain.sock" \
	"$(tenant plain-io transport=uring)"
policy "$T/nosb.policy" "$T/nosb.sock" "$(tenant no-sandbox transport=uring)"
start main 6
start plain 1 --bench-unsafe=plain-io
start nosb 1 --bench-unsafe=no-sandbox
# default_permissions as every ringfence mount has it (the kernel checks
# permissions, which costs a GETATTR of the parent per create and unlink)
"$T/bin/passthrough_ll" -f -o source="$T/tmpfs/libfuse",default_permissions "$T/libfuse.mnt" \
	2>"$T/libfuse.log" &
PEER=$!
for _ in $(seq 100); do mountpoint -q "$T/libfuse.mnt" && break; sleep 0.1; done
mountpoint -q "$T/libfuse.mnt" || { cat "$T/libfuse.log" >&2; exit 1; }

dir_of() {
	case $1 in
	tmpfs) echo "$T/tmpfs/tmpfs" ;;
	*) echo "$T/$1.mnt" ;;
	esac
}
# PID of the process serving TARGET (none for tmpfs)
server_pid() {
	case $1 in
	tmpfs) echo "" ;;
	libfuse) echo "$PEER" ;;
	plain-io) field "$T/plain.sock" plain-io worker ;;
	no-sandbox) field "$T/nosb.sock" no-sandbox worker ;;
	qd8) field "$T/main.sock" uring worker ;;
	*) field "$T/main.sock" "$1" worker ;;
	esac
}
cpu_ticks() { [ -n "$1" ] && awk '{ print $14 + $15 }' "/proc/$1/stat" || echo 0; }

# ---- workloads ----
declare -A FIO=(
	[seqread-direct]="--rw=read --bs=1M --direct=1"
	[seqwrite-direct]="--rw=write --bs=1M --direct=1"
	[seqread-buffered]="--rw=read --bs=1M --direct=0"
	[seqwrite-buffered]="--rw=write --bs=1M --direct=0 --end_fsync=1"
	[randread-4k-direct]="--rw=randread --bs=4k --direct=1"
)
WORKLOADS="seqread-direct seqwrite-direct seqread-buffered seqwrite-buffered randread-4k-direct metadata"
RAW=$T/raw.tsv
printf 'round\tworkload\ttarget\tvalue\tunit\tcpu_s\tbytes\n' >"$RAW"

# run_fio TARGET WORKLOAD JOBS SIZE: prints value, unit, server CPU s, bytes
run_fio() {
	local t=$1 w=$2 jobs=$3 size=$4 pid c0 c1
	pid=$(server_pid "$t")
	c0=$(cpu_ticks "$pid")
	# shellcheck disable=SC2086
	fio --name=rf --directory="$(dir_of "$t")" ${FIO[$w]} --ioengine=psync --numjobs="$jobs" \
		--size="$size" --runtime="$RUNTIME" --time_based --group_reporting \
		--output-format=json --output="$T/fio.json" >/dev/null
	c1=$(cpu_ticks "$pid")
	python3 - "$T/fio.json" "$w" $((c1 - c0)) "$(getconf CLK_TCK)" <<'EOP'
import json, sys
j = json.load(open(sys.argv[1]))["jobs"][0]
w, ticks, hz = sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
nbytes = j["read"]["io_bytes"] + j["write"]["io_bytes"]
if w.startswith("randread"):
    print("%.1f\tkIOPS\t%.3f\t%d" % ((j["read"]["iops"] + j["write"]["iops"]) / 1000, ticks / hz, nbytes))
else:
    print("%.1f\tMiB/s\t%.3f\t%d" % ((j["read"]["bw"] + j["write"]["bw"]) / 1024.0, ticks / hz, nbytes))
EOP
}
# run_meta TARGET: FILES creates, stats and unlinks
run_meta() {
	local t=$1 pid c0 c1
	pid=$(server_pid "$t")
	c0=$(cpu_ticks "$pid")
	v=$(python3 - "$(dir_of "$t")/meta" "$FILES" <<'EOP'
import os, sys, time
d, n = sys.argv[1], int(sys.argv[2])
os.makedirs(d, exist_ok=True)
t0 = time.monotonic()
for i in range(n):
    os.close(os.open("%s/f%d" % (d, i), os.O_CREAT | os.O_WRONLY, 0o644))
for i in range(n):
    os.stat("%s/f%d" % (d, i))
for i in range(n):
    os.unlink("%s/f%d" % (d, i))
print("%.1f" % (3 * n / (time.monotonic() - t0) / 1000))
EOP
)
	c1=$(cpu_ticks "$pid")
	printf '%s\tkops/s\t%s\t0\n' "$v" "$(python3 -c "print('%.3f' % (($c1 - $c0) / $(getconf CLK_TCK)))")"
}

say "laying out files: $SIZE per job, $QD_SIZE for the queue_depth runs"
for t in $TARGETS; do
	fio --name=rf --directory="$(dir_of "$t")" --rw=write --bs=1M --direct=1 --numjobs=2 \
		--size="$SIZE" --ioengine=psync --output=/dev/null
done
for t in uring qd1 qd2 qd4 qd16; do
	fio --name=rf --directory="$(dir_of "$t")" --rw=write --bs=1M --direct=1 --numjobs=8 \
		--size="$QD_SIZE" --ioengine=psync --output=/dev/null
done

n=0 total=$((ROUNDS * (6 * 6 + 5)))
for r in $(seq "$ROUNDS"); do
	for w in $WORKLOADS; do
		for t in $TARGETS; do
			n=$((n + 1))
			if [ "$w" = metadata ]; then
				line=$(run_meta "$t")
			else
				line=$(run_fio "$t" "$w" 2 "$SIZE")
			fi
			printf '%d\t%s\t%s\t%s\n' "$r" "$w" "$t" "$line" >>"$RAW"
			say "$(printf '[%3d/%d] round %d  %-18s %-10s %8s %s' "$n" "$total" "$r" "$w" "$t" \
				"$(cut -f1 <<<"$line")" "$(cut -f2 <<<"$line")")"
		done
	done
	for q in $QDS; do
		n=$((n + 1))
		t=qd$q
		[ "$q" = 8 ] && d=uring || d=$t
		line=$(run_fio "$d" randread-4k-direct 8 "$QD_SIZE")
		printf '%d\tqd-randread-4k-8jobs\t%s\t%s\n' "$r" "$t" "$line" >>"$RAW"
		say "$(printf '[%3d/%d] round %d  %-18s %-10s %8s %s' "$n" "$total" "$r" \
			"qd randread x8" "$t" "$(cut -f1 <<<"$line")" "$(cut -f2 <<<"$line")")"
	done
done

# ---- tables and plots ----
mkdir -p "$OUT"
cp "$RAW" "$OUT/raw.tsv"
python3 - "$RAW" "$OUT" "$ROUNDS" "$RUNTIME" "$SIZE" "$FILES" "$(nproc)" "$(uname -r)" "$MEM" <<'EOP'
import collections, statistics, sys
raw, out, rounds, runtime, size, files, ncpu, kernel, mem = sys.argv[1:]
cells = collections.defaultdict(list)
cpu = collections.defaultdict(list)
unit = {}
order_w, order_t = [], []
for line in open(raw).read().splitlines()[1:]:
    r, w, t, v, u, c, b = line.split("\t")
    cells[(w, t)].append(float(v))
    unit[w] = u
    if int(b) > 0:
        cpu[(w, t)].append(float(c) / (int(b) / 2**30))
    if w not in order_w: order_w.append(w)
    if t not in order_t: order_t.append(t)
def ref_of(w):
    return "qd8" if w.startswith("qd-") else "uring"
tsv = ["workload\ttarget\tmedian\tmin\tmax\tunit\tratio_to_uring\tserver_cpu_s_per_gib"]
md = []
md.append("fio psync, %s s per run, median of %s rounds (min-max); %s CPUs, kernel %s." % (runtime, rounds, ncpu, kernel))
md.append("Backing store: one tmpfs. Command: `make bench` (ROUNDS=%s RUNTIME=%s SIZE=%s FILES=%s)." % (rounds, runtime, size, files))
md.append("")
md.append("| workload | target | median | min-max | ratio to uring | server CPU s/GiB |")
md.append("|---|---|---|---|---|---|")
for w in order_w:
    for t in order_t:
        v = cells.get((w, t))
        if not v: continue
        m = statistics.median(v)
        ref = statistics.median(cells[(w, ref_of(w))])
        c = cpu.get((w, t))
        cs = "%.2f" % statistics.median(c) if c and t != "tmpfs" else "-"
        tsv.append("%s\t%s\t%.1f\t%.1f\t%.1f\t%s\t%.2f\t%s" % (w, t, m, min(v), max(v), unit[w], m / ref, cs))
        md.append("| %s | %s | %.1f %s | %.1f-%.1f | %.2f | %s |" % (w, t, m, unit[w], min(v), max(v), m / ref, cs))
md.append("")
md.append("Idle mount (queue_depth 8, max_write 1M, 2 queues), KiB: " + mem.replace("_kib", ""))
open(out + "/latest.tsv", "w").write("\n".join(tsv) + "\n")
open(out + "/latest.md", "w").write("\n".join(md) + "\n")
# data for the plots
with open(out + "/bw.dat", "w") as f:
    ws = [w for w in order_w if unit[w] == "MiB/s"]
    ts = [t for t in order_t if not t.startswith("qd")]
    f.write("target " + " ".join(ws) + "\n")
    for t in ts:
        f.write(t + " " + " ".join("%.1f" % statistics.median(cells[(w, t)]) for w in ws) + "\n")
with open(out + "/qd.dat", "w") as f:
    for t in ["qd1", "qd2", "qd4", "qd8", "qd16"]:
        v = cells.get(("qd-randread-4k-8jobs", t))
        if v: f.write("%s %.1f %.1f %.1f\n" % (t[2:], statistics.median(v), min(v), max(v)))
EOP
gnuplot <<EOG
set terminal pngcairo size 1100,800 font ",10" noenhanced
set output "$OUT/latest.png"
set multiplot layout 2,1
set title "1 MiB sequential, fio psync numjobs=2 (median MiB/s, make bench)"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set key outside right
set ylabel "MiB/s"
set grid ytics
plot for [c=2:5] "$OUT/bw.dat" using c:xtic(1) title columnhead
set title "4 KiB random read O_DIRECT, numjobs=8, against queue_depth (median, min-max)"
set style data linespoints
set xlabel "queue_depth"
set ylabel "kIOPS"
set logscale x 2
set xrange [0.8:20]
set yrange [0:*]
unset key
plot "$OUT/qd.dat" using 1:2:3:4 with yerrorlines lw 2
unset multiplot
EOG
rm -f "$OUT/bw.dat" "$OUT/qd.dat"
say "done: $OUT/latest.{tsv,md,png}"
echo
cat "$OUT/latest.md"
