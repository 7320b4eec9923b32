#!/usr/bin/env python3
# Run one script of file operations, each as a given user, on two trees --
# a reference (a tmpfs directory) and a ringfence mount -- and report every
# difference: an operation that succeeds on one and not the other, or fails
# with another errno, and, at the end, any path whose type, mode bits,
# owner, group or link count differ.
#
# usage: ownership.py REFERENCE MOUNT    (as root; prints one line per op)
import errno
import os
import stat
import sys

# uid, gid, supplementary groups; 2003 is a group alice and bob share
USERS = {
    "root": (0, 0, [0]),
    "alice": (2001, 2001, [2001, 2003]),
    "bob": (2002, 2002, [2002, 2003]),
}


def run_as(user, fn):
    """Run fn() in a child with the user's credentials: "ok" or an errno name."""
    uid, gid, groups = USERS[user]
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            os.setgroups(groups)
            os.setresgid(gid, gid, gid)
            os.setresuid(uid, uid, uid)
            os.umask(0o022)
            fn()
            res = "ok"
        except OSError as e:
            res = errno.errorcode.get(e.errno, str(e.errno))
        os.write(w, res.encode())
        os._exit(0)
    os.close(w)
    out = os.read(r, 64).decode()
    os.close(r)
    os.waitpid(pid, 0)
    return out


def create(p, mode=0o644):
    os.close(os.open(p, os.O_CREAT | os.O_EXCL | os.O_WRONLY, mode))


def write(p):
    with open(p, "a") as f:
        f.write("x")


def trunc_open(p):
    os.close(os.open(p, os.O_WRONLY | os.O_TRUNC))


# (user, what, function of the tree's base path)
OPS = [
    ("root", "mkdir shared (sticky, world-writable)",
     lambda b: (os.mkdir(b + "/shared"), os.chmod(b + "/shared", 0o1777))),
    ("root", "mkdir sgid (setgid, group 2003)",
     lambda b: (os.mkdir(b + "/sgid"), os.chown(b + "/sgid", 0, 2003),
                os.chmod(b + "/sgid", 0o2775))),
    ("root", "mkdir priv (alice's, 0700)",
     lambda b: (os.mkdir(b + "/priv", 0o700), os.chown(b + "/priv", 2001, 2001))),
    ("alice", "create shared/a", lambda b: create(b + "/shared/a")),
    ("bob", "create shared/b", lambda b: create(b + "/shared/b")),
    ("bob", "unlink alice's shared/a in a sticky dir", lambda b: os.unlink(b + "/shared/a")),
    ("alice", "rename bob's shared/b in a sticky dir",
     lambda b: os.rename(b + "/shared/b", b + "/shared/c")),
    ("alice", "create sgid/f (group inherited)", lambda b: create(b + "/sgid/f")),
    ("alice", "mkdir sgid/d (group and setgid inherited)", lambda b: os.mkdir(b + "/sgid/d")),
    ("alice", "mkfifo sgid/fifo", lambda b: os.mkfifo(b + "/sgid/fifo")),
    ("alice", "symlink sgid/ln", lambda b: os.symlink("f", b + "/sgid/ln")),
    ("alice", "chown her file to bob", lambda b: os.chown(b + "/sgid/f", 2002, -1)),
    ("alice", "chgrp her file to her own group", lambda b: os.chown(b + "/sgid/f", -1, 2001)),
    ("alice", "chgrp her file to a group she is not in",
     lambda b: os.chown(b + "/sgid/f", -1, 2002)),
    ("bob", "chmod alice's file", lambda b: os.chmod(b + "/sgid/f", 0o777)),
    ("alice", "chmod u+s her file", lambda b: os.chmod(b + "/shared/a", 0o4755)),
    ("root", "chown a setuid file (clears setuid)",
     lambda b: os.chown(b + "/shared/a", 2002, 2002)),
    ("alice", "create shared/g", lambda b: create(b + "/shared/g")),
    ("alice", "chmod g+s as a member", lambda b: os.chmod(b + "/shared/g", 0o2755)),
    ("root", "chgrp shared/g to bob's group", lambda b: os.chown(b + "/shared/g", -1, 2002)),
    ("alice", "chmod g+s as a non-member (setgid dropped)",
     lambda b: os.chmod(b + "/shared/g", 0o2775)),
    ("alice", "truncate bob's 0644 file", lambda b: os.truncate(b + "/shared/b", 0)),
    ("alice", "touch (now) bob's 0644 file", lambda b: os.utime(b + "/shared/b", None)),
    ("alice", "open O_TRUNC bob's 0644 file", lambda b: trunc_open(b + "/shared/b")),
    ("bob", "chmod his file 0666", lambda b: os.chmod(b + "/shared/b", 0o666)),
    ("alice", "touch (now) bob's 0666 file", lambda b: os.utime(b + "/shared/b", None)),
    ("alice", "set explicit times on bob's 0666 file",
     lambda b: os.utime(b + "/shared/b", (1, 1))),
    ("alice", "open O_TRUNC bob's 0666 file", lambda b: trunc_open(b + "/shared/b")),
    ("alice", "hard link sgid/f", lambda b: os.link(b + "/sgid/f", b + "/sgid/f2")),
    ("bob", "list alice's 0700 dir", lambda b: os.listdir(b + "/priv")),
    ("bob", "create in alice's 0700 dir", lambda b: create(b + "/priv/x")),
    ("alice", "create in her 0700 dir", lambda b: create(b + "/priv/x")),
    ("bob", "rmdir alice's dir from root's 0755 dir", lambda b: os.rmdir(b + "/priv")),
    ("bob", "rename his file across dirs", lambda b: os.rename(b + "/shared/b", b + "/sgid/b2")),
    ("alice", "unlink bob's file in a non-sticky group dir",
     lambda b: os.unlink(b + "/sgid/b2")),
    ("bob", "chown his file to himself (no change)", lambda b: os.chown(b + "/shared/a", 2002, 2002)),
    ("root", "chmod any file", lambda b: os.chmod(b + "/sgid/f", 0o600)),
    ("bob", "read alice's 0600 file", lambda b: open(b + "/sgid/f").close()),
    ("alice", "rmdir her non-empty dir", lambda b: os.rmdir(b + "/priv")),
    ("alice", "create shared/s 06775 (setuid, setgid)",
     lambda b: (create(b + "/shared/s"), os.chmod(b + "/shared/s", 0o6777))),
    ("bob", "write to it (clears setuid and setgid)", lambda b: write(b + "/shared/s")),
    ("alice", "create shared/t 06777",
     lambda b: (create(b + "/shared/t"), os.chmod(b + "/shared/t", 0o6777))),
    ("bob", "truncate it (clears setuid and setgid)", lambda b: os.truncate(b + "/shared/t", 0)),
    ("alice", "create shared/o 06777",
     lambda b: (create(b + "/shared/o"), os.chmod(b + "/shared/o", 0o6777))),
    ("bob", "open it O_TRUNC (clears setuid and setgid; killpriv)",
     lambda b: trunc_open(b + "/shared/o")),
    ("alice", "create shared/n 06757 (setgid, group may not execute)",
     lambda b: (create(b + "/shared/n"), os.chmod(b + "/shared/n", 0o6757))),
    ("bob", "write to it (clears setuid only)", lambda b: write(b + "/shared/n")),
    ("alice", "create shared/r 04777",
     lambda b: (create(b + "/shared/r"), os.chmod(b + "/shared/r", 0o4777))),
    ("root", "write to it (root keeps setuid)", lambda b: write(b + "/shared/r")),
    ("alice", "create shared/sg 02775",
     lambda b: (create(b + "/shared/sg"), os.chmod(b + "/shared/sg", 0o2775))),
    ("root", "chown it (clears setgid)", lambda b: os.chown(b + "/shared/sg", 2002, -1)),
    ("root", "mkdir bobs (bob's sticky dir)",
     lambda b: (os.mkdir(b + "/bobs"), os.chown(b + "/bobs", 2002, 2002),
                os.chmod(b + "/bobs", 0o1777))),
    ("alice", "create bobs/x", lambda b: create(b + "/bobs/x")),
    ("bob", "unlink alice's file in his own sticky dir", lambda b: os.unlink(b + "/bobs/x")),
    ("bob", "mkdir in alice's 02755 dir", lambda b: os.mkdir(b + "/sgid/d/no")),
    ("bob", "mkdir in a group dir he can write (setgid dir)", lambda b: os.mkdir(b + "/sgid/bd")),
    # device nodes: only a caller with CAP_MKNOD makes one, but anyone an
    # overlayfs whiteout (a 0:0 character device); inert on the mount
    ("root", "mknod shared/cdev (character 1:3)",
     lambda b: os.mknod(b + "/shared/cdev", stat.S_IFCHR | 0o644, os.makedev(1, 3))),
    ("root", "mknod shared/bdev (block 7:0)",
     lambda b: os.mknod(b + "/shared/bdev", stat.S_IFBLK | 0o600, os.makedev(7, 0))),
    ("alice", "mknod a character device (no CAP_MKNOD)",
     lambda b: os.mknod(b + "/shared/acdev", stat.S_IFCHR | 0o644, os.makedev(1, 3))),
    ("alice", "mknod shared/wh (0:0 character: a whiteout)",
     lambda b: os.mknod(b + "/shared/wh", stat.S_IFCHR | 0o600, 0)),
    ("root", "chown shared/cdev to alice", lambda b: os.chown(b + "/shared/cdev", 2001, 2001)),
    ("alice", "chmod her device node", lambda b: os.chmod(b + "/shared/cdev", 0o600)),
    ("alice", "rename her device node", lambda b: os.rename(b + "/shared/cdev", b + "/shared/null")),
    ("root", "hard link shared/bdev", lambda b: os.link(b + "/shared/bdev", b + "/sgid/bdev2")),
    ("bob", "unlink alice's whiteout in a sticky dir", lambda b: os.unlink(b + "/shared/wh")),
    ("root", "unlink shared/bdev", lambda b: os.unlink(b + "/shared/bdev")),
]


def snapshot(base):
    out = {}
    for root, dirs, files in os.walk(base):
        for n in dirs + files:
            p = os.path.join(root, n)
            st = os.lstat(p)
            dev = stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode)
            out[os.path.relpath(p, base)] = (
                stat.S_IFMT(st.st_mode), oct(stat.S_IMODE(st.st_mode)), st.st_uid, st.st_gid,
                st.st_nlink if not stat.S_ISDIR(st.st_mode) else 0,
                "%d:%d" % (os.major(st.st_rdev), os.minor(st.st_rdev)) if dev else "")
    return out


def main():
    ref, mnt = sys.argv[1] + "/t", sys.argv[2] + "/t"
    # OWNERSHIP_SKIP: operations (by a word of their description) a run
    # leaves out, with its reason in the test that sets it
    skip = os.environ.get("OWNERSHIP_SKIP", "")
    for b in (ref, mnt):
        os.mkdir(b)
        os.chmod(b, 0o755)
    diffs = 0
    for i, (user, what, fn) in enumerate(OPS):
        if skip and skip in what:
            print("   %2d %-6s %-50s skipped (OWNERSHIP_SKIP)" % (i, user, what))
            continue
        a, b = run_as(user, lambda: fn(ref)), run_as(user, lambda: fn(mnt))
        mark = "  " if a == b else "!!"
        diffs += a != b
        print("%s %2d %-6s %-50s reference=%s ringfence=%s" % (mark, i, user, what, a, b))
    sa, sb = snapshot(ref), snapshot(mnt)
    for p in sorted(set(sa) | set(sb)):
        if sa.get(p) != sb.get(p):
            diffs += 1
            print("!! stat %-20s reference=%s ringfence=%s" % (p, sa.get(p), sb.get(p)))
    print("%d operations, %d paths compared, %d differences" % (len(OPS), len(sa), diffs))
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
