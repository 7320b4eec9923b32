#!/bin/bash
# make bench-vm: the payload paths of Linux 7.3 side by side, in one run, in
# the QEMU guest that tests/run-vm.sh boots (this script runs in it):
#   entries  a payload buffer per entry (bufpool = off), as on Linux 6.18
#   pool     the kernel's buffer pools; data copied through them (zero_copy = off)
#   zc       buffer pools and zero copy: data between the backing file and
#            the client's own pages (the default where the kernel has both)
# Three passthrough tenants of one broker over one backing file system
# (BACKING: tmpfs, or ext4 on a loop device over a file in the guest's
# memory, which reads cached data without blocking), queue_depth 8,
# max_write 1M. Workloads: fio psync numjobs=2, 1 MiB O_DIRECT sequential
# read and write, 4 KiB O_DIRECT random read and write. Rounds interleave targets and
# workloads; each cell is the median of ROUNDS runs, with the ratio to
# entries, the worker's CPU seconds per GiB moved and the bytes it staged
# in the pool per byte moved (read_fixed + write_fixed + inline bytes that
# were not zero-copied).
#
# QEMU's TCG emulates the CPU: absolute figures say nothing about a real
# machine; only the ratios between targets of one run mean something.
# Prints a markdown table between "bench-vm: begin" and "bench-vm: end",
# which make bench-vm keeps in bench/results/vm-latest.md. Knobs: ROUNDS
# (3), RUNTIME (seconds per fio run, 5), SIZE (per fio job, 64M), BACKING
# (tmpfs), WORKLOADS (all four).
set -euo pipefail
if [ $# -gt 0 ]; then
	case $1 in
	-h | --help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
	*) echo "usage: bench/vm.sh (run in the 7.3 guest by make bench-vm; --help)" >&2; exit 2 ;;
	esac
fi
ROOT=$(cd "$(dirname "$0")/.." && pwd)
B=$ROOT/build
ROUNDS=${ROUNDS:-3}
RUNTIME=${RUNTIME:-5}
SIZE=${SIZE:-64M}
BACKING=${BACKING:-tmpfs}
TARGETS="entries pool zc"
WORKLOADS=${WORKLOADS:-"seqread-direct seqwrite-direct randread-4k-direct randwrite-4k-direct"}
[ "$(id -u)" = 0 ] || { echo "bench-vm: run as root" >&2; exit 1; }
[ -w /sys/module/fuse/parameters/enable_uring ] || { echo "bench-vm: no FUSE io-uring" >&2; exit 1; }
case $BACKING in tmpfs | ext4) ;; *) echo "bench-vm: BACKING is tmpfs or ext4, not $BACKING" >&2; exit 2 ;; esac

T=$(mktemp -d /tmp/ringfence-bench-vm.XXXXXX)
chmod 755 "$T"
. "$ROOT/tools/hoststate.sh"
host_save
BROKER=""
cleanup() {
	stop_broker "$BROKER"
	unmount_backing "$T/backing"
	host_restore
	rm -rf --one-file-system "$T"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
host_uring Y
START=$(date +%s)
say() { printf 'bench-vm [%4ds] %s\n' $(($(date +%s) - START)) "$*" >&2; }

mkdir -p "$T/backing"
if [ "$BACKING" = ext4 ]; then
	[ -e /dev/loop-control ] || modprobe loop
	truncate -s 2G "$T/ext4.img"
	mkfs.ext4 -q -F "$T/ext4.img"
	mount -o loop "$T/ext4.img" "$T/backing"
	chmod 755 "$T/backing"
else
	mount -t tmpfs -o size=2G,mode=0755 ringfence-bench "$T/backing"
fi
{
	printf '[global]\ncontrol_socket = %s/ctl.sock\nusers_file = %s/users\n' "$T" "$T"
	for t in $TARGETS; do
		mkdir -p "$T/backing/$t" "$T/$t.mnt"
		printf '[mount %s]\nmountpoint = %s/%s.mnt\nplugin = passthrough\nsource = %s/backing/%s\n' \
			"$t" "$T" "$t" "$T" "$t"
		# every source on the one tmpfs, unlimited
		printf 'transport = uring\nqueue_depth = 8\nmax_write = 1M\ndisk_shared = yes\n'
		case $t in
		entries) echo "bufpool = off" ;;
		pool) printf 'bufpool = on\nzero_copy = off\n' ;;
		zc) printf 'bufpool = on\nzero_copy = on\n' ;;
		esac
	done
} >"$T/policy"
"$B/ringfenced" -f -c "$T/policy" 2>"$T/broker.log" &
BROKER=$!
field() { "$B/ringfencectl" -s "$T/ctl.sock" status "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }
for _ in $(seq 600); do
	[ "$("$B/ringfencectl" -s "$T/ctl.sock" status 2>/dev/null | grep -c state=running)" = 3 ] && break
	kill -0 "$BROKER" 2>/dev/null || { cat "$T/broker.log" >&2; exit 1; }
	sleep 0.1
done
for t in $TARGETS; do
	[ "$(field "$t" state)" = running ] || { cat "$T/broker.log" >&2; exit 1; }
	say "$t: buffers=$(field "$t" buffers) zero_copy=$(field "$t" zero_copy) pinned=$(field "$t" pinned)"
done
[ "$(field zc zero_copy)" = on ] && [ "$(field pool buffers)" = pool ] && [ "$(field entries buffers)" = entries ] ||
	{ echo "bench-vm: the three payload paths are not all there" >&2; exit 1; }

declare -A FIO=(
	[seqread-direct]="--rw=read --bs=1M --direct=1"
	[seqwrite-direct]="--rw=write --bs=1M --direct=1"
	[randread-4k-direct]="--rw=randread --bs=4k --direct=1"
	[randwrite-4k-direct]="--rw=randwrite --bs=4k --direct=1"
)
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
# bytes the worker of $1 moved through the pool so far
pooled() {
	local s
	s=$("$B/ringfencectl" -s "$T/ctl.sock" status "$1")
	python3 -c 'import sys; f = dict(w.split("=", 1) for w in sys.argv[1].split() if "=" in w)
print(int(f["read_fixed_bytes"]) + int(f["write_fixed_bytes"]) + int(f["inline_bytes"]) - int(f["zero_copy_bytes"]))' "$s"
}
RAW=$T/raw.tsv
printf 'round\tworkload\ttarget\tvalue\tunit\tcpu_s\tbytes\tpooled\n' >"$RAW"
run_fio() { # TARGET WORKLOAD: value unit cpu_s bytes pooled
	local t=$1 w=$2 pid c0 c1 p0 p1
	pid=$(field "$t" worker)
	c0=$(cpu_ticks "$pid")
	p0=$(pooled "$t")
	# shellcheck disable=SC2086
	fio --name=rf --directory="$T/$t.mnt" ${FIO[$w]} --ioengine=psync --numjobs=2 \
		--size="$SIZE" --runtime="$RUNTIME" --time_based --group_reporting \
		--output-format=json --output="$T/fio.json" >/dev/null
	c1=$(cpu_ticks "$pid")
	p1=$(pooled "$t")
	python3 - "$T/fio.json" "$w" $((c1 - c0)) "$(getconf CLK_TCK)" $((p1 - p0)) <<'EOP'
import json, sys
j = json.load(open(sys.argv[1]))["jobs"][0]
w, ticks, hz, pooled = sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
nbytes = j["read"]["io_bytes"] + j["write"]["io_bytes"]
if w.startswith("rand"):
    v, u = (j["read"]["iops"] + j["write"]["iops"]) / 1000, "kIOPS"
else:
    v, u = (j["read"]["bw"] + j["write"]["bw"]) / 1024.0, "MiB/s"
print("%.2f\t%s\t%.3f\t%d\t%d" % (v, u, ticks / hz, nbytes, pooled))
EOP
}

say "laying out files: $SIZE per job"
for t in $TARGETS; do
	fio --name=rf --directory="$T/$t.mnt" --rw=write --bs=1M --direct=1 --numjobs=2 \
		--size="$SIZE" --ioengine=psync --output=/dev/null
done
n=0 total=$((ROUNDS * $(wc -w <<<"$WORKLOADS") * $(wc -w <<<"$TARGETS")))
for r in $(seq "$ROUNDS"); do
	for w in $WORKLOADS; do
		for t in $TARGETS; do
			n=$((n + 1))
			line=$(run_fio "$t" "$w")
			printf '%d\t%s\t%s\t%s\n' "$r" "$w" "$t" "$line" >>"$RAW"
			say "$(printf '[%2d/%d] round %d  %-18s %-8s %8s %s' "$n" "$total" "$r" "$w" "$t" \
				"$(cut -f1 <<<"$line")" "$(cut -f2 <<<"$line")")"
		done
	done
done

echo "bench-vm: begin"
python3 - "$RAW" "$ROUNDS" "$RUNTIME" "$SIZE" "$(nproc)" "$(uname -r)" "$BACKING" <<'EOP'
import collections, statistics, sys
raw, rounds, runtime, size, ncpu, kernel, backing = sys.argv[1:]
cells, cpu, pool = (collections.defaultdict(list) for _ in range(3))
unit, order_w, order_t = {}, [], []
for line in open(raw).read().splitlines()[1:]:
    r, w, t, v, u, c, b, p = line.split("\t")
    cells[(w, t)].append(float(v))
    unit[w] = u
    if int(b) > 0:
        cpu[(w, t)].append(float(c) / (int(b) / 2**30))
        pool[(w, t)].append(int(p) / int(b))
    if w not in order_w: order_w.append(w)
    if t not in order_t: order_t.append(t)
print("Linux %s in a QEMU TCG guest, %s vCPUs, backing file system %s: fio psync numjobs=2, "
      "%s s per run, %s per job, median of %s rounds (min-max). Emulated CPU: only the ratios "
      "mean anything. Command: `make bench-vm` (ROUNDS=%s RUNTIME=%s SIZE=%s BACKING=%s)."
      % (kernel, ncpu, backing, runtime, size, rounds, rounds, runtime, size, backing))
print()
print("| workload | target | median | min-max | ratio to entries | worker CPU s/GiB | pool bytes per byte |")
print("|---|---|---|---|---|---|---|")
for w in order_w:
    ref = statistics.median(cells[(w, "entries")])
    for t in order_t:
        v = cells[(w, t)]
        m = statistics.median(v)
        c = "%.2f" % statistics.median(cpu[(w, t)]) if cpu[(w, t)] else "-"
        p = "%.2f" % statistics.median(pool[(w, t)]) if pool[(w, t)] else "-"
        print("| %s | %s | %.2f %s | %.2f-%.2f | %.2f | %s | %s |" % (w, t, m, unit[w], min(v), max(v), m / ref, c, p))
EOP
echo "bench-vm: end"
for t in $TARGETS; do
	say "$t: $("$B/ringfencectl" -s "$T/ctl.sock" status "$t" | tr ' ' '\n' |
		grep -E '^(read_fixed|write_fixed|inline|zero_copy|spliced)_bytes=' | tr '\n' ' ')"
done
say "done"
