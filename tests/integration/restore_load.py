#!/usr/bin/python3
# Load for t_restore.sh: writers that keep files open read-write in a
# ringfence mount while its worker is killed, recording every call.
#
#   restore_load.py run MNT SRC STOPFILE OUT.json
#       until STOPFILE exists (at most 600 s): two threads, each with its
#       own file held open: write a block, read it back; a third looks a
#       name up through a held directory. OUT.json.ready appears once the
#       files are laid out and the threads run (kill nothing before).
#       Every call's start, end and errno go to OUT.json, then each block
#       of each file in SRC (the backing directory) is checked against
#       what was last written there.
#   restore_load.py kill PID KILLS
#       SIGKILL the worker PID and append "KILLED DEAD" to KILLS: the time
#       of the signal and the time every thread of it had died (its rings
#       torn down), both time.time().
#   restore_load.py judge OUT.json KILLS
#       An error is allowed only for a call the dead worker held or the
#       kernel handed to its ring: ended after the kill, begun before the
#       worker was dead or within TEARDOWN (times RF_TIME_SCALE) after
#       (the kernel tears a dead
#       task's rings down in a work queue, and until then gives new
#       requests to its idle entries, ending each with ECANCELED itself:
#       Linux 6.18, fs/fuse/dev_uring.c). Allowed: EIO (the adoption
#       rules), ECANCELED (that kernel answer), ECONNABORTED (/dev/fuse:
#       the kernel ends what the dead worker had read). Any other error, or
#       any error outside those windows, is a failure. Prints the pause
#       each kill caused (the slowest call across it) and the p99 latency
#       near kills and away from them.
#   restore_load.py judge-host OUT.json KILLS
#       As judge, for kills of a plugin host (host_restart): EIO only, and
#       only for calls begun before the host was dead.
#   restore_load.py steady OUT.json EVENTS
#       For events that must cost clients nothing (a broker upgrade):
#       EVENTS holds "START END" lines; any error is a failure. Prints the
#       pause each caused (the slowest call across it) and the p99 latency
#       near the events and away from them.
import json
import os
import sys
import threading
import time

BLOCK = 4096
NBLOCKS = 256


def pattern(f, b, seq):
    return (b"%02d:%05d:%09d\n" % (f, b, seq)) * (BLOCK // 19) + b"\n" * (BLOCK % 19)


def running(stopfile, deadline=time.time() + 600):
    return time.time() < deadline and not os.path.exists(stopfile)


def run(mnt, src, stopfile, out):
    ops = []  # (t0, t1, kind, errno)
    lock = threading.Lock()
    last = [dict() for _ in range(2)]  # block -> (seq ok, seq in doubt)
    os.makedirs(os.path.join(mnt, "load"), exist_ok=True)
    for f in range(2):
        with open(os.path.join(mnt, "load", "f%d" % f), "wb") as fh:
            for b in range(NBLOCKS):
                fh.write(pattern(f, b, 0))
        for b in range(NBLOCKS):
            last[f][b] = (0, None)
    bad = []

    def rec(t0, kind, err):
        with lock:
            ops.append((t0, time.time(), kind, err))

    def writer(f):
        fd = os.open(os.path.join(mnt, "load", "f%d" % f), os.O_RDWR)
        seq, b = 0, 0
        while running(stopfile):
            seq += 1
            b = (b * 7 + 13) % NBLOCKS
            data = pattern(f, b, seq)
            t0 = time.time()
            try:
                n = os.pwrite(fd, data, b * BLOCK)
                rec(t0, "write", 0)
                if n != BLOCK:
                    bad.append("short write")
                last[f][b] = (seq, None)
            except OSError as e:
                rec(t0, "write", e.errno)
                last[f][b] = (last[f][b][0], seq)
                continue
            t0 = time.time()
            try:
                got = os.pread(fd, BLOCK, b * BLOCK)
                rec(t0, "read", 0)
                if got != data:
                    bad.append("f%d block %d: read back other bytes" % (f, b))
            except OSError as e:
                rec(t0, "read", e.errno)
        os.close(fd)

    def looker():
        d = os.open(os.path.join(mnt, "load"), os.O_RDONLY | os.O_DIRECTORY)
        while running(stopfile):
            t0 = time.time()
            try:
                os.stat("f0", dir_fd=d)
                rec(t0, "stat", 0)
            except OSError as e:
                rec(t0, "stat", e.errno)
            time.sleep(0.001)
        os.close(d)

    th = [threading.Thread(target=writer, args=(f,)) for f in range(2)]
    th.append(threading.Thread(target=looker))
    for t in th:
        t.start()
    open(out + ".ready", "w").close()
    for t in th:
        t.join()
    # the backing files hold what was last written, or a write in doubt
    for f in range(2):
        with open(os.path.join(src, "load", "f%d" % f), "rb") as fh:
            data = fh.read()
        for b in range(NBLOCKS):
            got = data[b * BLOCK:(b + 1) * BLOCK]
            ok, doubt = last[f][b]
            if got != pattern(f, b, ok) and (doubt is None or got != pattern(f, b, doubt)):
                bad.append("f%d block %d: corrupt in the source" % (f, b))
    json.dump({"ops": ops, "bad": bad}, open(out, "w"))


def pct(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(p * len(v)))] if v else 0.0


def kill(pid, kills_file):
    t_kill = time.time()
    os.kill(pid, 9)
    # dead: every thread, the queue threads that own the rings included
    # (the main thread is a zombie before they are)
    while True:
        try:
            alive = 0
            for t in os.listdir("/proc/%d/task" % pid):
                with open("/proc/%d/task/%s/stat" % (pid, t)) as f:
                    alive += f.read().rsplit(")", 1)[1].split()[0] not in "ZX"
        except OSError:
            break
        if not alive:
            break
        time.sleep(0.0002)
    with open(kills_file, "a") as f:
        f.write("%.6f %.6f\n" % (t_kill, time.time()))


TEARDOWN = 0.05 * float(os.environ.get("RF_TIME_SCALE", "1"))
ALLOWED = {5: "EIO", 125: "ECANCELED", 103: "ECONNABORTED"}


def judge(out, kills_file, allowed_errs=ALLOWED, teardown=TEARDOWN):
    r = json.load(open(out))
    kills = [tuple(float(x) for x in l.split()) for l in open(kills_file) if l.strip()]
    errs, allowed, near, far = [], {}, [], []
    pauses, late = [], 0.0
    for k, dead in kills:
        across = [o for o in r["ops"] if o[0] <= dead and o[1] >= k]
        pauses.append(max([o[1] - o[0] for o in across], default=0.0))
    for t0, t1, kind, err in r["ops"]:
        lat = t1 - t0
        is_near = any(k - 0.5 <= t0 <= k + 2.0 for k, _ in kills)
        (near if is_near else far).append(lat)
        if not err:
            continue
        held = [(k, dead) for k, dead in kills if t0 <= dead + teardown and t1 >= k]
        if err in allowed_errs and held:
            allowed[err] = allowed.get(err, 0) + 1
            late = max(late, t0 - held[0][1])
        else:
            k, dead = min(kills, key=lambda x: abs(x[0] - t0))
            errs.append("%s errno %d, %.3f to %.3f ms after the kill (dead at %.3f ms)" %
                        (kind, err, (t0 - k) * 1e3, (t1 - k) * 1e3, (dead - k) * 1e3))
    print("calls %d; errors of calls the dying workers held or were handed: %s; other "
          "errors %d; corrupt blocks %d" %
          (len(r["ops"]), ", ".join("%d %s" % (allowed.get(e, 0), n) for e, n in allowed_errs.items()),
           len(errs), len(r["bad"])))
    if allowed_errs is not ALLOWED:
        print("allowed: %s, only for calls begun before the death" %
              ", ".join(allowed_errs.values()))
    print("from a kill to the worker's death %.1f ms at most; the latest such call began "
          "%.1f ms after its worker's death" %
          (max((d - k) * 1e3 for k, d in kills), late * 1e3))
    print("pause per kill (slowest call across it), ms: %s" %
          " ".join("%.0f" % (p * 1e3) for p in pauses))
    print("p99 latency: %.2f ms within 0.5 s before to 2 s after a kill, %.2f ms elsewhere; "
          "max %.0f ms" % (pct(near, 0.99) * 1e3, pct(far, 0.99) * 1e3,
                           max(near + far) * 1e3))
    for e in errs[:10] + r["bad"][:10]:
        print("  " + e)
    return 1 if errs or r["bad"] else 0


def steady(out, events_file):
    r = json.load(open(out))
    events = [tuple(float(x) for x in l.split()) for l in open(events_file) if l.strip()]
    near, far = [], []
    pauses = [max([o[1] - o[0] for o in r["ops"] if o[0] <= e and o[1] >= s], default=0.0)
              for s, e in events]
    for t0, t1, kind, err in r["ops"]:
        near_one = any(s - 0.5 <= t0 <= e + 2.0 for s, e in events)
        (near if near_one else far).append(t1 - t0)
    errs = ["%s errno %d at %.3f" % (kind, err, t0) for t0, t1, kind, err in r["ops"] if err]
    print("calls %d; errors %d; corrupt blocks %d" % (len(r["ops"]), len(errs), len(r["bad"])))
    print("each event took, ms: %s; pause (slowest call across it), ms: %s" %
          (" ".join("%.0f" % ((e - s) * 1e3) for s, e in events),
           " ".join("%.0f" % (p * 1e3) for p in pauses)))
    print("p99 latency: %.2f ms within 0.5 s before to 2 s after an event, %.2f ms elsewhere; "
          "max %.0f ms" % (pct(near, 0.99) * 1e3, pct(far, 0.99) * 1e3,
                           max(near + far, default=0.0) * 1e3))
    for e in errs[:10] + r["bad"][:10]:
        print("  " + e)
    return 1 if errs or r["bad"] or not r["ops"] else 0


if __name__ == "__main__":
    if sys.argv[1] == "run":
        run(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5])
    elif sys.argv[1] == "kill":
        kill(int(sys.argv[2]), sys.argv[3])
    elif sys.argv[1] == "judge-host":
        # a plugin host's death (host_restart): the keeper and its rings
        # stay, so only EIO, for a call the dead host held (a write in
        # flight), and only for calls begun before it was dead
        sys.exit(judge(sys.argv[2], sys.argv[3], {5: "EIO"}, 0.0))
    elif sys.argv[1] == "steady":
        sys.exit(steady(sys.argv[2], sys.argv[3]))
    else:
        sys.exit(judge(sys.argv[2], sys.argv[3]))
