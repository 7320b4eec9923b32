#!/usr/bin/python3
# Metadata and data churn in a mount while t_restore.sh kills its worker:
#   memfs_chaos.py MNT SECONDS [WAITFILE]
# creates files (written whole, then closed), renames, unlinks, makes and
# removes directories and sets xattrs, noting what each call's success
# promised. Then every promise is checked (a name created and not since
# removed holds its bytes; a name removed or renamed away is gone), except
# for names a failed call left in doubt (a call in flight at a kill may or
# may not have happened), and the whole tree is read and removed again,
# once WAITFILE exists (the kills are over).
import errno
import os
import random
import sys
import time

mnt, seconds = sys.argv[1], float(sys.argv[2])
root = os.path.join(mnt, "chaos")
os.makedirs(root, exist_ok=True)
rng = random.Random(5)
want = {}  # relative name -> bytes (files) or None (directory)
doubt = set()
failures = {}


def content(i):
    return (b"%06d" % i) * (100 + (i * 37) % 3000)


def failed(e, *names):
    failures[e.errno] = failures.get(e.errno, 0) + 1
    doubt.update(names)


stop = time.time() + seconds
i = 0
while time.time() < stop:
    i += 1
    op = rng.random()
    files = [n for n, v in want.items() if v is not None]
    dirs = ["."] + [n for n, v in want.items() if v is None]
    d = rng.choice(dirs)
    if op < 0.45 or not files:
        n = os.path.normpath(os.path.join(d, "f%d" % i))
        try:
            with open(os.path.join(root, n), "wb") as f:
                f.write(content(i))
            want[n] = content(i)
        except OSError as e:
            failed(e, n)
    elif op < 0.6:
        src = rng.choice(files)
        dst = os.path.normpath(os.path.join(d, "r%d" % i))
        try:
            os.rename(os.path.join(root, src), os.path.join(root, dst))
            want[dst] = want.pop(src)
        except OSError as e:
            failed(e, src, dst)
    elif op < 0.75:
        n = rng.choice(files)
        try:
            os.unlink(os.path.join(root, n))
            del want[n]
        except OSError as e:
            failed(e, n)
    elif op < 0.85:
        n = os.path.normpath(os.path.join(d, "d%d" % i))
        try:
            os.mkdir(os.path.join(root, n))
            want[n] = None
        except OSError as e:
            failed(e, n)
    else:
        n = rng.choice(files)
        try:
            os.setxattr(os.path.join(root, n), "user.i", b"%d" % i)
        except OSError as e:
            failed(e, n)

while len(sys.argv) > 3 and not os.path.exists(sys.argv[3]):
    time.sleep(0.05)
bad = []
for n, v in sorted(want.items()):
    if n in doubt or any(n.startswith(x + "/") for x in doubt):
        continue
    p = os.path.join(root, n)
    try:
        if v is None:
            if not os.path.isdir(p):
                bad.append("%s: not a directory" % n)
        else:
            with open(p, "rb") as f:
                if f.read() != v:
                    bad.append("%s: other bytes" % n)
    except OSError as e:
        bad.append("%s: %s" % (n, e.strerror))
# everything there is readable, and goes away again
seen = 0
for dp, dn, fn in os.walk(root, topdown=False):
    for f in fn:
        p = os.path.join(dp, f)
        rel = os.path.relpath(p, root)
        try:
            with open(p, "rb") as fh:
                fh.read()
            if rel not in want and rel not in doubt:
                bad.append("%s: there, but removed or never made" % rel)
            os.unlink(p)
            seen += 1
        except OSError as e:
            bad.append("%s: %s" % (rel, e.strerror))
    for x in dn:
        try:
            os.rmdir(os.path.join(dp, x))
        except OSError as e:
            bad.append("rmdir %s: %s" % (os.path.relpath(os.path.join(dp, x), root), e.strerror))
print("%d calls, %d failed (%s), %d names in doubt, %d files read back and removed, %d wrong" %
      (i, sum(failures.values()),
       ", ".join("%d %s" % (c, errno.errorcode.get(e, e)) for e, c in sorted(failures.items())),
       len(doubt), seen, len(bad)))
for b in bad[:10]:
    print("  " + b)
sys.exit(1 if bad else 0)
