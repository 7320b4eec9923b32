#!/bin/bash
# make bench: side by side, in one run, on one tmpfs:
#   tmpfs        the tmpfs itself (the ceiling)
#   uring        ringfence passthrough, FUSE io-uring, fixed-buffer data ops
#   classic      ringfence passthrough, /dev/fuse, fixed-buffer data ops
#   hp-uring     libfuse's passthrough_hp as it ships (Debian unstable's
#                fuse3, built by tools/libfuse-peer.sh), -o io_uring
#   hp-classic   the same on /dev/fuse
#   hpm-uring    passthrough_hp with its kernel caches matched to
#                ringfence's: --nocache, entry and attribute times to live
#                of 1 s (no writeback cache, no FOPEN_KEEP_CACHE)
#   hpm-classic  the same on /dev/fuse
# and, when named in TARGETS, plain-io (as uring, file data by pread and
# pwrite), no-sandbox (as uring, no namespaces, root or seccomp) and
# eager-forget (as uring, each FORGET read as it comes, not batched) and
# normal-sched (as uring, the worker at the normal policy: sched_idle = off)
# and restore (as uring, with restore_nodes = 65536: every node id and open
# file recorded for a successor) and host-restart (as uring, with
# host_restart = yes: the keeper outlives its plugin host)
# and no-pin (as uring, queue threads not bound to their CPUs) and spin
# (as uring, each plugin host queue thread on the next CPU, keeper and
# host polling the rings up to 30 us before they sleep) and one-process
# (as uring, no plugin host: the keeper runs the plugin itself, which
# prices the hand-over between the two processes) and
# private-payload (as uring, request payloads in the worker's private
# memory instead of the shared pool, file data by pread/pwrite) and
# baseline (as uring, served by the build in the directory BASELINE, of
# another commit: the cost of a change, side by side) and, for a libfuse
# program, prog-uring and prog-classic (ringfence tenants whose program is
# the host release's own passthrough_hp, built by tools/libfuse-program.sh
# against the host's libfuse3, served through ringfence's libfuse3.so.3)
# beside hp12-classic (that same binary on the host's libfuse, /dev/fuse:
# same code, two hosts); all three run it with --nocache (no writeback
# cache, which ringfence does not negotiate), and it mounts with
# default_permissions itself. And for a program of libfuse 3.17 on,
# prog4-uring and prog4-classic (tenants whose program is libfuse 3.18's
# passthrough_hp as Debian unstable would build it, tools/libfuse4.sh,
# through ringfence's libfuse3.so.4, which moves the data of the files it
# opens with fuse_passthrough_open itself) beside hp4-uring and hp4-classic
# (that same binary on libfuse 3.18's own libfuse3.so.4 of the peer's
# build, with --nopassthrough as every peer); all four with --nocache. Every
# peer runs with --nopassthrough (kernel passthrough needs CAP_SYS_ADMIN in
# the server, which an untrusted one never has) and default_permissions,
# as every ringfence mount has.
# Workloads: fio, psync, numjobs=2: 1 MiB sequential read and write with
# O_DIRECT and buffered, 4 KiB random read O_DIRECT; and create (O_CREAT +
# close), stat and unlink of FILES files, each timed on its own. Rounds
# interleave targets and workloads, each round starting one target further
# on, so noise spreads over all of them;
# each cell is the median of ROUNDS runs with min-max and the ratio to the
# uring cell; the comparison table gives ringfence / peer as the ratio of
# medians with the range of the per-round ratios. Server CPU: the serving
# processes' user + system time per GiB moved or per operation (a
# ringfence worker's keeper and plugin host together). Also:
# memory of an idle mount, and 4 KiB random-read IOPS (numjobs=8) against
# queue_depth (QDS).
#
# BUSY=1 runs the same with a busy loop per CPU at normal priority, started
# before the first round and ended after the last (a host whose CPUs other
# work keeps busy); results then go to latest-busy.*.
#
# Writes bench/results/latest.{tsv,md,png} (latest-busy.{tsv,md} with
# BUSY=1) and raw.tsv. Needs root; turns enable_uring on for the run and
# restores it. Knobs: ROUNDS (3), RUNTIME (seconds per fio run, 4), SIZE
# (per fio job, 256M), QD_SIZE (per job of the queue_depth runs, 64M),
# FILES (10000), TARGETS, WORKLOADS, QDS ("1 2 4 8 16"; "" skips them), BUSY,
# BASELINE,
# PERF (a directory: each fio run's server is recorded there with `perf
# record -g`, as TARGET.WORKLOAD.ROUND.data, with a symbol summary .txt).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
B=$ROOT/build
OUT=$ROOT/bench/results
ROUNDS=${ROUNDS:-3}
RUNTIME=${RUNTIME:-4}
SIZE=${SIZE:-256M}
FILES=${FILES:-10000}
QD_SIZE=${QD_SIZE:-64M}
BUSY=${BUSY:-0}
PERF=${PERF:-}
[ -z "$PERF" ] || mkdir -p "$PERF"
TARGETS=${TARGETS:-tmpfs uring classic hp-uring hp-classic hpm-uring hpm-classic}
WORKLOADS=${WORKLOADS:-seqread-direct seqwrite-direct seqread-buffered seqwrite-buffered randread-4k-direct metadata}
if [ "$BUSY" = 1 ]; then QDS=${QDS-}; else QDS=${QDS-1 2 4 8 16}; fi
PARAM=/sys/module/fuse/parameters/enable_uring
[ "$(id -u)" = 0 ] || { echo "bench: run as root" >&2; exit 1; }
[ -w "$PARAM" ] || { echo "bench: this kernel has no FUSE io-uring" >&2; exit 1; }
for c in fio python3 gnuplot; do
	command -v $c >/dev/null || { echo "bench: $c is missing (make bench installs it)" >&2; exit 1; }
done

T=$(mktemp -d /tmp/ringfence-bench.XXXXXX)
chmod 755 "$T"
. "$ROOT/tools/hoststate.sh"
host_save
BROKERS=() HOGS=()
declare -A PEERS=()
cleanup() {
	local b t
	for b in "${HOGS[@]}"; do kill "$b" 2>/dev/null || true; done
	for b in "${BROKERS[@]}"; do stop_broker "$b"; done
	for t in "${!PEERS[@]}"; do
		if kill -0 "${PEERS[$t]}" 2>/dev/null; then
			umount "$T/$t.mnt" 2>/dev/null || umount -l "$T/$t.mnt"
			wait "${PEERS[$t]}" 2>/dev/null || true
		fi
	done
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
has() { [[ " $TARGETS " == *" $1 "* ]]; }
PEER_DIR=""
if [[ " $TARGETS " == *" hp-"* ]] || [[ " $TARGETS " == *" hpm-"* ]] || [[ " $TARGETS " == *" hp4-"* ]]; then
	PEER_DIR=$("$ROOT/tools/libfuse-peer.sh")
	PEER_VER=$(cat "$PEER_DIR/version")
fi
PROG_DIR=""
if [[ " $TARGETS " == *" prog-"* ]] || has hp12-classic; then
	PROG_DIR=$("$ROOT/tools/libfuse-program.sh")
	PROG_VER=$(cat "$PROG_DIR/version")
fi
L4_DIR=""
if [[ " $TARGETS " == *" prog4-"* ]] || [[ " $TARGETS " == *" hp4-"* ]]; then
	L4_DIR=$("$ROOT/tools/libfuse4.sh")
	L4_VER=$(cat "$L4_DIR/version")
fi
# the program's arguments on either host, after its source and mount point
PROG_ARGS="--foreground --nocache"

# ---- mounts ----
mkdir -p "$T/tmpfs"
mount -t tmpfs -o size=8G,mode=0755 ringfence-bench "$T/tmpfs"
for d in $TARGETS uring classic qd1 qd2 qd4 qd16 idle; do
	mkdir -p "$T/tmpfs/$d" "$T/$d.mnt" # the brokers hand each to its tenant
done
tenant() { # NAME [extra lines]: a passthrough section over $T/tmpfs/NAME
	local n=$1
	shift
	# every source on the one tmpfs, unlimited (disk_shared)
	printf '[mount %s]\nmountpoint = %s/%s.mnt\nplugin = passthrough\nsource = %s/tmpfs/%s\ndisk_shared = yes\n' \
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
	local ok=0
	start_broker "$B/ringfencectl" "$T/$n.sock" "$k" "$B/ringfenced" "$T/$n.policy" \
		"$T/$n.log" "$@" || ok=$?
	BROKERS+=("$BROKER")
	[ "$ok" = 0 ] || { cat "$T/$n.log" >&2; exit 1; }
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
H=$(awk '{ print $1 }' "/proc/$W/task/$W/children")
MEM="$MEM host_rss_kib=$(kib "$H" VmRSS) host_anon_kib=$(kib "$H" RssAnon)"
stop_broker "${BROKERS[-1]}"
unset 'BROKERS[-1]'
say "idle mount: $MEM"

main=("$(tenant uring transport=uring)" "$(tenant classic transport=classic)")
if has normal-sched; then
	main+=("$(tenant normal-sched transport=uring sched_idle=off)")
fi
if has restore; then
	main+=("$(tenant restore transport=uring restore_nodes=65536)")
fi
if has host-restart; then
	main+=("$(tenant host-restart transport=uring host_restart=yes)")
fi
# a libfuse program as a tenant: passthrough_hp over its source, under the
# seccomp policy it was learnt to need (bench/passthrough_hp.policy)
progtenant() { # NAME TRANSPORT [DIR]
	printf '[mount %s]\nmountpoint = %s/%s.mnt\nprogram = %s/bin/passthrough_hp\n' "$1" "$T" "$1" "${3:-$PROG_DIR}"
	printf 'program_args = /source {mountpoint} %s\nsource = %s/tmpfs/%s\ndisk_shared = yes\n' \
		"$PROG_ARGS" "$T" "$1"
	printf 'transport = %s\nseccomp_policy = %s/bench/passthrough_hp.policy\n' "$2" "$ROOT"
}
for t in prog-uring prog-classic; do
	has "$t" && main+=("$(progtenant "$t" "${t#prog-}")")
done
for t in prog4-uring prog4-classic; do
	has "$t" && main+=("$(progtenant "$t" "${t#prog4-}" "$L4_DIR")")
done
for q in $QDS; do
	[ "$q" = 8 ] || main+=("$(tenant "qd$q" transport=uring queue_depth="$q")")
done
policy "$T/main.policy" "$T/main.sock" "${main[@]}"
start main ${#main[@]}
# targets served by a broker of their own, started with the switch of the
# same name: ringfenced --bench-unsafe=TARGET
UNSAFE="plain-io eager-forget no-pin no-sandbox private-payload spin one-process"
for t in $UNSAFE; do
	has "$t" || continue
	policy "$T/$t.policy" "$T/$t.sock" "$(tenant "$t" transport=uring)"
	start "$t" 1 "--bench-unsafe=$t"
done
# baseline: as uring, served by another build (BASELINE: its build
# directory, e.g. of an earlier commit), on a broker of its own
if has baseline; then
	[ -x "${BASELINE:-}/ringfenced" ] ||
		{ echo "bench: TARGETS names baseline: set BASELINE to a build directory" >&2; exit 1; }
	policy "$T/baseline.policy" "$T/baseline.sock" "$(tenant baseline transport=uring)"
	start_broker "$BASELINE/ringfencectl" "$T/baseline.sock" 1 "$BASELINE/ringfenced" \
		"$T/baseline.policy" "$T/baseline.log" || { cat "$T/baseline.log" >&2; exit 1; }
	BROKERS+=("$BROKER")
	say "baseline: $BASELINE ($(git -C "$BASELINE/.." rev-parse --short HEAD 2>/dev/null || echo ?))"
fi
# the peers, each as root in the foreground; default_permissions as every
# ringfence mount has it (the kernel checks permissions, which costs a
# GETATTR of the parent per create and unlink)
hp4_line() { # TARGET: what an hp4 peer runs
	echo "passthrough_hp SOURCE MOUNTPOINT $PROG_ARGS --nopassthrough$([ "$1" = hp4-uring ] && echo " -o io_uring")" \
		"(built against libfuse3-dev $L4_VER, on the peer build's libfuse3.so.4 $PEER_VER)"
}
peer_cmd() { # TARGET: the peer's command line, without source and mount point
	local t=$1 bin=passthrough_hp extra=()
	case $t in hpm-*) bin=passthrough_hp-matched extra=(--nocache) ;; esac
	case $t in *-uring) extra+=(-o io_uring) ;; esac
	echo "$PEER_DIR/bin/$bin --foreground --nopassthrough ${extra[*]} -o default_permissions"
}
for t in $TARGETS; do
	case $t in hp-* | hpm-* | hp12-classic | hp4-*) ;; *) continue ;; esac
	# shellcheck disable=SC2046
	if [ "$t" = hp12-classic ]; then
		# shellcheck disable=SC2086 # PROG_ARGS: its words
		"$PROG_DIR/bin/passthrough_hp" "$T/tmpfs/$t" "$T/$t.mnt" $PROG_ARGS 2>"$T/$t.log" &
	elif [[ $t == hp4-* ]]; then
		# shellcheck disable=SC2086 # PROG_ARGS: its words
		LD_LIBRARY_PATH=$PEER_DIR/lib "$L4_DIR/bin/passthrough_hp" "$T/tmpfs/$t" "$T/$t.mnt" $PROG_ARGS \
			--nopassthrough $([ "$t" = hp4-uring ] && echo -o io_uring) 2>"$T/$t.log" &
	else
		$(peer_cmd "$t") "$T/tmpfs/$t" "$T/$t.mnt" 2>"$T/$t.log" &
	fi
	PEERS[$t]=$!
	for _ in $(seq 100); do mountpoint -q "$T/$t.mnt" && break; sleep 0.1; done
	mountpoint -q "$T/$t.mnt" || { cat "$T/$t.log" >&2; exit 1; }
	if [ "$t" = hp12-classic ]; then
		say "$t: passthrough_hp SOURCE MOUNTPOINT $PROG_ARGS (fuse3 $PROG_VER, pid ${PEERS[$t]})"
	elif [[ $t == hp4-* ]]; then
		say "$t: $(hp4_line "$t") (pid ${PEERS[$t]})"
	else
		say "$t: $(peer_cmd "$t") (fuse3 $PEER_VER, pid ${PEERS[$t]})"
	fi
done

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
	hp-* | hpm-* | hp12-classic | hp4-*) echo "${PEERS[$1]}" ;;
	qd8) field "$T/main.sock" uring worker ;;
	*)
		# a broker of its own (UNSAFE), or a tenant of the main one
		if [[ " $UNSAFE baseline " == *" $1 "* ]]; then
			field "$T/$1.sock" "$1" worker
		else
			field "$T/main.sock" "$1" worker
		fi
		;;
	esac
}
# ... and with the processes it started: a ringfence worker's plugin host
server_pids() {
	local p
	p=$(server_pid "$1")
	[ -z "$p" ] || echo "$p" $(cat "/proc/$p/task/$p/children" 2>/dev/null)
}
# user + system ticks of the processes named (a space-separated list)
cpu_ticks() {
	local p t=0
	for p in $1; do
		t=$((t + $(awk '{ print $14 + $15 }' "/proc/$p/stat" 2>/dev/null || echo 0)))
	done
	echo $t
}

# ---- workloads ----
declare -A FIO=(
	[seqread-direct]="--rw=read --bs=1M --direct=1"
	[seqwrite-direct]="--rw=write --bs=1M --direct=1"
	[seqread-buffered]="--rw=read --bs=1M --direct=0"
	[seqwrite-buffered]="--rw=write --bs=1M --direct=0 --end_fsync=1"
	[randread-4k-direct]="--rw=randread --bs=4k --direct=1"
)
RAW=$T/raw.tsv
printf 'round\tworkload\ttarget\tvalue\tunit\tcpu_s\tbytes\tops\n' >"$RAW"

# run_fio TARGET WORKLOAD JOBS SIZE: prints value, unit, server CPU s,
# bytes, operations
run_fio() {
	local t=$1 w=$2 jobs=$3 size=$4 pid c0 c1 rec="" perf_pid=""
	pid=$(server_pids "$t")
	if [ -n "$PERF" ] && [ -n "$pid" ]; then
		rec=$PERF/$t.$w.${ROUND:-0}
		perf record -q -e cpu-clock -g -p "${pid// /,}" -o "$rec.data" 2>/dev/null &
		perf_pid=$!
	fi
	c0=$(cpu_ticks "$pid")
	# shellcheck disable=SC2086
	fio --name=rf --directory="$(dir_of "$t")" ${FIO[$w]} --ioengine=psync --numjobs="$jobs" \
		--size="$size" --runtime="$RUNTIME" --time_based --group_reporting \
		--output-format=json --output="$T/fio.json" >/dev/null
	c1=$(cpu_ticks "$pid")
	if [ -n "$perf_pid" ]; then
		kill -INT "$perf_pid" && wait "$perf_pid" || true
		perf report -q -i "$rec.data" --no-children --sort sym --percent-limit 1 \
			2>/dev/null | grep -v '^$' | head -40 >"$rec.txt" || true
	fi
	python3 - "$T/fio.json" "$w" $((c1 - c0)) "$(getconf CLK_TCK)" <<'EOP'
import json, sys
j = json.load(open(sys.argv[1]))["jobs"][0]
w, ticks, hz = sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
nbytes = j["read"]["io_bytes"] + j["write"]["io_bytes"]
ops = j["read"]["total_ios"] + j["write"]["total_ios"]
if w.startswith("randread"):
    v, u = (j["read"]["iops"] + j["write"]["iops"]) / 1000, "kIOPS"
else:
    v, u = (j["read"]["bw"] + j["write"]["bw"]) / 1024.0, "MiB/s"
print("%.1f\t%s\t%.3f\t%d\t%d" % (v, u, ticks / hz, nbytes, ops))
EOP
}
# run_meta TARGET ROUND: FILES creates (O_CREAT + close), then stats, then
# unlinks, each timed with the server's CPU; one raw line each
run_meta() {
	python3 - "$(dir_of "$1")/meta" "$FILES" "$(server_pids "$1")" "$(getconf CLK_TCK)" "$2" "$1" <<'EOP'
import os, sys, time
d, n, pids, hz, rnd, target = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(), int(sys.argv[4]), sys.argv[5], sys.argv[6]
def ticks():
    t = 0
    for pid in pids:
        f = open("/proc/%s/stat" % pid).read().rsplit(")", 1)[1].split()
        t += int(f[11]) + int(f[12])
    return t
os.makedirs(d, exist_ok=True)
names = ["%s/f%d" % (d, i) for i in range(n)]
def create(p): os.close(os.open(p, os.O_CREAT | os.O_WRONLY, 0o644))
for op, fn in (("create", create), ("stat", os.stat), ("unlink", os.unlink)):
    c0, t0 = ticks(), time.monotonic()
    for p in names: fn(p)
    t1, c1 = time.monotonic(), ticks()
    print("%s\tmeta-%s\t%s\t%.1f\tkops/s\t%.3f\t0\t%d" % (rnd, op, target, n / (t1 - t0) / 1000, (c1 - c0) / hz, n))
EOP
}
report() { # progress for the lines just added to RAW
	local r w t v u
	while IFS=$'\t' read -r r w t v u _; do
		n=$((n + 1))
		say "$(printf '[%3d/%d] round %d  %-20s %-11s %8s %s' "$n" "$total" "$r" "$w" "$t" "$v" "$u")"
	done
}

say "laying out files: $SIZE per job${QDS:+, $QD_SIZE for the queue_depth runs}"
for t in $TARGETS; do
	fio --name=rf --directory="$(dir_of "$t")" --rw=write --bs=1M --direct=1 --numjobs=2 \
		--size="$SIZE" --ioengine=psync --output=/dev/null
done
qd_target() { if [ "$1" = 8 ]; then echo uring; else echo "qd$1"; fi; }
for q in $QDS; do
	fio --name=rf --directory="$(dir_of "$(qd_target "$q")")" --rw=write --bs=1M --direct=1 \
		--numjobs=8 --size="$QD_SIZE" --ioengine=psync --output=/dev/null
done

if [ "$BUSY" = 1 ]; then
	for _ in $(seq "$(nproc)"); do
		bash -c 'while :; do :; done' &
		HOGS+=($!)
	done
	say "busy host: ${#HOGS[@]} busy loops at normal priority (pids ${HOGS[*]})"
fi
nw=0
for w in $WORKLOADS; do
	if [ "$w" = metadata ]; then nw=$((nw + 3)); else nw=$((nw + 1)); fi
done
n=0 total=$((ROUNDS * ($(wc -w <<<"$TARGETS") * nw + $(wc -w <<<"$QDS"))))
# each round starts one target further on, so that no target always runs
# right after the same one (the tmpfs ceiling first, say)
read -ra TLIST <<<"$TARGETS"
order() { # ROUND: the targets in that round's order
	local i n=${#TLIST[@]}
	for ((i = 0; i < n; i++)); do echo "${TLIST[$(((i + $1 - 1) % n))]}"; done
}
for r in $(seq "$ROUNDS"); do
	ROUND=$r
	for w in $WORKLOADS; do
		for t in $(order "$r"); do
			if [ "$w" = metadata ]; then
				run_meta "$t" "$r" >"$T/line"
			else
				printf '%d\t%s\t%s\t%s\n' "$r" "$w" "$t" "$(run_fio "$t" "$w" 2 "$SIZE")" >"$T/line"
			fi
			cat "$T/line" >>"$RAW"
			report <"$T/line"
		done
	done
	for q in $QDS; do
		printf '%d\tqd-randread-4k-8jobs\tqd%s\t%s\n' "$r" "$q" \
			"$(run_fio "$(qd_target "$q")" randread-4k-direct 8 "$QD_SIZE")" >"$T/line"
		cat "$T/line" >>"$RAW"
		report <"$T/line"
	done
done
for b in "${HOGS[@]}"; do kill "$b" 2>/dev/null || true; done
HOGS=()

# ---- tables and plots ----
mkdir -p "$OUT"
SUF=""
[ "$BUSY" = 1 ] && SUF=-busy
cp "$RAW" "$OUT/raw$SUF.tsv"
PEER_LINES=""
for t in $TARGETS; do
	case $t in hp-* | hpm-*)
		PEER_LINES="$PEER_LINES$t=$(peer_cmd "$t" | sed "s|$PEER_DIR/bin/||") SOURCE MOUNTPOINT"$'\n'
		;;
	hp12-classic)
		PEER_LINES="$PEER_LINES$t=passthrough_hp SOURCE MOUNTPOINT $PROG_ARGS (fuse3 $PROG_VER, the host's libfuse)"$'\n'
		;;
	prog-*)
		PEER_LINES="$PEER_LINES$t=the same passthrough_hp as a ringfence tenant's program (program_args = /source {mountpoint} $PROG_ARGS), through ringfence's libfuse3.so.3"$'\n'
		;;
	hp4-*)
		PEER_LINES="$PEER_LINES$t=$(hp4_line "$t")"$'\n'
		;;
	prog4-*)
		PEER_LINES="$PEER_LINES$t=the same passthrough_hp as a ringfence tenant's program (program_args = /source {mountpoint} $PROG_ARGS, its passthrough on), through ringfence's libfuse3.so.4"$'\n'
		;;
	esac
done
KNOBS="ROUNDS=$ROUNDS RUNTIME=$RUNTIME SIZE=$SIZE FILES=$FILES"
[ "$BUSY" = 1 ] && KNOBS="BUSY=1 $KNOBS"
python3 "$ROOT/bench/tables.py" --raw "$RAW" --out "$OUT" --suffix="$SUF" --knobs "$KNOBS" \
	--cpus "$(nproc)" --kernel "$(uname -r)" --memory "${MEM:-}" \
	--peer-version "${PEER_VER:-}" --peers "$PEER_LINES"
if [ -z "$SUF" ] && [ -s "$OUT/bw.dat" ]; then
	QDPLOT=0 LAYOUT="1,1"
	[ -s "$OUT/qd.dat" ] && QDPLOT=1 LAYOUT="2,1"
	gnuplot <<EOG
set terminal pngcairo size 1100,800 font ",10" noenhanced
set output "$OUT/latest.png"
set multiplot layout $LAYOUT
set title "1 MiB sequential, fio psync numjobs=2 (median MiB/s, make bench)"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set key outside right
set ylabel "MiB/s"
set grid ytics
plot for [c=2:*] "$OUT/bw.dat" using c:xtic(1) title columnhead
set title "4 KiB random read O_DIRECT, numjobs=8, against queue_depth (median, min-max)"
set style data linespoints
set xlabel "queue_depth"
set ylabel "kIOPS"
set logscale x 2
set xrange [0.8:20]
set yrange [0:*]
unset key
if ($QDPLOT) plot "$OUT/qd.dat" using 1:2:3:4 with yerrorlines lw 2
unset multiplot
EOG
fi
rm -f "$OUT/bw.dat" "$OUT/qd.dat"
say "done: $OUT/latest$SUF.{tsv,md}"
echo
cat "$OUT/latest$SUF.md"
