#!/usr/bin/python3
# A client that holds files, a directory and its cwd open in a ringfence
# mount across worker deaths (t_restore.sh); with --unlinked also a file
# it unlinked while holding it open. Reads commands from stdin,
# answers each with one line: "ok", or "fail: WHAT" naming the call and
# its error. Commands: "step N" (every check, then block N written),
# "verify N" (blocks 0..N-1 read back through a new open), "drop 0" (f's
# pages out of the page cache, so that its next read reaches the worker).
import errno
import os
import sys

mnt = sys.argv[1]
unlinked = "--unlinked" in sys.argv[2:]
BLOCK = 4096
os.chdir(os.path.join(mnt, "a/b"))
dirfd = os.open(".", os.O_RDONLY | os.O_DIRECTORY)
fixed = os.open("f", os.O_RDONLY)
fixed_data = os.pread(fixed, 1 << 20, 0)
log = os.open("w", os.O_RDWR | os.O_CREAT, 0o644)
log_r = os.open("w", os.O_RDONLY)
moving = os.open("r0", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
if unlinked:
    gone = os.open("gone", os.O_RDWR | os.O_CREAT, 0o644)
    os.unlink("gone")


def block(n):
    return (("%08d" % n) * (BLOCK // 8)).encode()


def step(n):
    # file data through descriptors opened before every death
    got = os.pread(fixed, 1 << 20, 0)
    if got != fixed_data:
        # what a read that failed after copying cached pages returns
        if fixed_data.startswith(got):
            return "read of f: short, %d of %d bytes" % (len(got), len(fixed_data))
        return "read of f: other bytes"
    os.fstat(fixed)
    for i in range(n):
        if os.pread(log_r, BLOCK, i * BLOCK) != block(i):
            return "read of w block %d: other bytes" % i
    if os.pwrite(log, block(n), n * BLOCK) != BLOCK:
        return "short write"
    os.fsync(log)
    if unlinked:
        os.pwrite(gone, block(n), n * BLOCK)
        for i in range(n + 1):
            if os.pread(gone, BLOCK, i * BLOCK) != block(i):
                return "unlinked file block %d: other bytes" % i
    # names through the held directory and the cwd
    names = set(os.listdir(dirfd))
    if not {"f", "w", "r%d" % n} <= names:
        return "listing: %s" % sorted(names)
    os.stat("f", dir_fd=dirfd)
    with open("f", "rb") as f:
        if f.read() != fixed_data:
            return "f through the cwd: other bytes"
    # a file renamed while open: written through, renamed again
    os.write(moving, b"%d\n" % n)
    os.rename("r%d" % n, "r%d" % (n + 1), src_dir_fd=dirfd, dst_dir_fd=dirfd)
    return "ok"


def drop():
    os.posix_fadvise(fixed, 0, 0, os.POSIX_FADV_DONTNEED)
    return "ok"


def verify(n):
    with open(os.path.join(mnt, "a/b/w"), "rb") as f:
        data = f.read()
    for i in range(n):
        if data[i * BLOCK:(i + 1) * BLOCK] != block(i):
            return "w block %d: other bytes" % i
    with open(os.path.join(mnt, "a/b/r%d" % n), "rb") as f:
        want = b"".join(b"%d\n" % i for i in range(n))
        got = f.read()
        if got != want:
            return "r%d: %r" % (n, got[:80])
    return "ok"


for line in sys.stdin:
    cmd, arg = line.split()
    try:
        if cmd == "drop":
            out = drop()
        else:
            out = step(int(arg)) if cmd == "step" else verify(int(arg))
    except OSError as e:
        out = "fail: %s: %s" % (e.strerror, e.filename or "descriptor")
        if e.errno in (errno.EIO, errno.ESTALE):
            out = "fail: %s (%s)" % (errno.errorcode[e.errno], out)
    print(out if out == "ok" else ("fail: " + out if not out.startswith("fail") else out),
          flush=True)
