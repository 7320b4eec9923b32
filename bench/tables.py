#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Tables of a `make bench` run (bench/run.sh): from its raw.tsv, writes
latest{SUFFIX}.tsv and .md, and the data of the plots (bw.dat, qd.dat).

Each cell is the median of its rounds with their range. The comparison
table gives, for each workload, ringfence / peer as the ratio of the two
medians, with the range of the per-round ratios (round r of one over round r
of the other, measured minutes apart in the same interleaved run), and the
server CPU per GiB moved or per operation of both."""
import argparse
import collections
import statistics

# (ringfence target, peer target, column title)
PAIRS = [
    ("uring", "hpm-uring", "uring / hpm-uring"),
    ("classic", "hpm-classic", "classic / hpm-classic"),
    ("uring", "hp-uring", "uring / hp-uring"),
    ("classic", "hp-classic", "classic / hp-classic"),
    # a libfuse program on ringfence's libfuse and on the host's: same code, two hosts
    ("prog-uring", "hp12-classic", "prog-uring / hp12-classic"),
    ("prog-classic", "hp12-classic", "prog-classic / hp12-classic"),
    # a program of libfuse 3.18 on ringfence's libfuse3.so.4 and on libfuse's
    ("prog4-uring", "hp4-uring", "prog4-uring / hp4-uring"),
    ("prog4-classic", "hp4-classic", "prog4-classic / hp4-classic"),
]
TARGET = 1.2  # the target ratio, against the matched peer


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    for a in ("raw", "out", "suffix", "knobs", "cpus", "kernel", "memory",
              "peer-version", "peers"):
        ap.add_argument("--" + a, default="")
    o = ap.parse_args()

    cells = collections.defaultdict(dict)  # (w, t) -> {round: value}
    cpu = collections.defaultdict(list)  # (w, t) -> [s/GiB or us/op]
    unit, order_w, order_t = {}, [], []
    for line in open(o.raw).read().splitlines()[1:]:
        r, w, t, v, u, c, b, ops = line.split("\t")
        cells[(w, t)][int(r)] = float(v)
        unit[w] = u
        if u == "MiB/s" and int(b) > 0:
            cpu[(w, t)].append(float(c) / (int(b) / 2**30))
        elif u != "MiB/s" and int(ops) > 0:
            cpu[(w, t)].append(float(c) * 1e6 / int(ops))
        if w not in order_w:
            order_w.append(w)
        if t not in order_t:
            order_t.append(t)

    def med(w, t):
        v = cells.get((w, t))
        return statistics.median(v.values()) if v else None

    def cpu_of(w, t):
        c = cpu.get((w, t))
        return statistics.median(c) if c and t != "tmpfs" else None

    def cpu_unit(w):
        return "s/GiB" if unit[w] == "MiB/s" else "us/op"

    md = []
    rounds = max((len(v) for v in cells.values()), default=0)
    md.append("fio psync, two jobs; median of %d rounds (min-max); %s CPUs, kernel %s." %
              (rounds, o.cpus, o.kernel))
    md.append("Backing store: one tmpfs. Command: `make bench` (%s)." % o.knobs)
    if o.peers.strip():
        md.append("")
        md.append("Peer: libfuse's passthrough_hp%s:" %
                  (" from Debian's fuse3 %s (tools/libfuse-peer.sh)" % o.peer_version
                   if o.peer_version else ""))
        md.append("")
        for p in o.peers.strip().splitlines():
            name, cmd = p.split("=", 1)
            md.append("- %s: `%s`" % (name, cmd))
    pairs = [p for p in PAIRS if any((w, p[0]) in cells and (w, p[1]) in cells for w in order_w)]
    if pairs:
        md.append("")
        md.append("ringfence / peer: ratio of the medians (range of the per-round ratios); "
                  "server CPU per GiB or per operation, ringfence vs peer. "
                  "Target: %.1f against the matched peer." % TARGET)
        md.append("")
        head = "| workload | " + " | ".join(p[2] for p in pairs) + " | CPU uring vs hpm-uring |"
        md.append(head)
        md.append("|---" * (len(pairs) + 2) + "|")
        for w in order_w:
            if w.startswith("qd-"):
                continue
            row = ["%s" % w]
            for a, b, _ in pairs:
                ma, mb = med(w, a), med(w, b)
                if ma is None or mb is None or mb == 0:
                    row.append("-")
                    continue
                per = [cells[(w, a)][r] / cells[(w, b)][r]
                       for r in cells[(w, a)] if r in cells[(w, b)] and cells[(w, b)][r]]
                mark = " **below %.1f**" % TARGET if b.startswith("hpm-") and ma / mb < TARGET else ""
                row.append("%.2f (%.2f-%.2f)%s" % (ma / mb, min(per), max(per), mark))
            ca, cb = cpu_of(w, "uring"), cpu_of(w, "hpm-uring")
            row.append("%.2f vs %.2f %s" % (ca, cb, cpu_unit(w)) if ca is not None and cb is not None
                       else "-")
            md.append("| " + " | ".join(row) + " |")

    tsv = ["workload\ttarget\tmedian\tmin\tmax\tunit\tratio_to_uring\tserver_cpu\tcpu_unit"]
    md.append("")
    md.append("| workload | target | median | min-max | ratio to uring | server CPU |")
    md.append("|---|---|---|---|---|---|")
    for w in order_w:
        ref = med(w, "qd8" if w.startswith("qd-") else "uring")
        for t in order_t:
            v = cells.get((w, t))
            if not v:
                continue
            m = med(w, t)
            c = cpu_of(w, t)
            ratio = "%.2f" % (m / ref) if ref else "-"
            cs = "%.2f %s" % (c, cpu_unit(w)) if c is not None else "-"
            tsv.append("%s\t%s\t%.1f\t%.1f\t%.1f\t%s\t%s\t%s\t%s" %
                       (w, t, m, min(v.values()), max(v.values()), unit[w], ratio,
                        "%.3f" % c if c is not None else "-", cpu_unit(w)))
            md.append("| %s | %s | %.1f %s | %.1f-%.1f | %s | %s |" %
                      (w, t, m, unit[w], min(v.values()), max(v.values()), ratio, cs))
    if o.memory:
        md.append("")
        md.append("Idle mount (queue_depth 8, max_write 1M, 2 queues), KiB: " +
                  o.memory.replace("_kib", ""))
    open("%s/latest%s.tsv" % (o.out, o.suffix), "w").write("\n".join(tsv) + "\n")
    open("%s/latest%s.md" % (o.out, o.suffix), "w").write("\n".join(md) + "\n")

    # data for the plots
    ws = [w for w in order_w if unit[w] == "MiB/s"]
    ts = [t for t in order_t if not t.startswith("qd") and all((w, t) in cells for w in ws)]
    with open(o.out + "/bw.dat", "w") as f:
        if ws and ts:
            f.write("target " + " ".join(ws) + "\n")
            for t in ts:
                f.write(t + " " + " ".join("%.1f" % med(w, t) for w in ws) + "\n")
    with open(o.out + "/qd.dat", "w") as f:
        for q in (1, 2, 4, 8, 16):
            v = cells.get(("qd-randread-4k-8jobs", "qd%d" % q))
            if v:
                f.write("%d %.1f %.1f %.1f\n" % (q, statistics.median(v.values()), min(v.values()),
                                                 max(v.values())))


if __name__ == "__main__":
    main()
