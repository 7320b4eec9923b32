#!/bin/bash
# POSIX operations through the passthrough plugin, checked against the
# backing directory; proof that the chosen transport and fixed-buffer ops
# carried them.
. "$(dirname "$0")/lib.sh"
rf_setup
rf_policy pt passthrough "$T/src"
rf_start pt
M=$T/pt.mnt S=$T/src

rf_log "create, write, read"
echo "hello ringfence" >"$M/a.txt" || rf_fail "create"
[ "$(cat "$M/a.txt")" = "hello ringfence" ] || rf_fail "read back"
[ "$(cat "$S/a.txt")" = "hello ringfence" ] || rf_fail "backing file content"
printf 'more' >>"$M/a.txt"
[ "$(cat "$S/a.txt")" = "$(printf 'hello ringfence\nmore')" ] || rf_fail "append"

rf_log "rename, rename noreplace/exchange, link, unlink"
mv "$M/a.txt" "$M/b.txt" || rf_fail "rename"
[ -e "$S/b.txt" ] && [ ! -e "$S/a.txt" ] || rf_fail "rename not in backing dir"
echo other >"$M/c.txt"
mv -n "$M/c.txt" "$M/b.txt"
[ "$(head -c 5 "$M/b.txt")" = hello ] || rf_fail "mv -n replaced the target"
python3 - "$M" <<'PY' || rf_fail "renameat2 RENAME_EXCHANGE"
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
d = sys.argv[1]
r = libc.renameat2(-100, (d + "/b.txt").encode(), -100, (d + "/c.txt").encode(), 2)
if r != 0:
    raise SystemExit("renameat2: " + os.strerror(ctypes.get_errno()))
assert open(d + "/b.txt").read() == "other\n"
PY
ln "$M/b.txt" "$M/hard" || rf_fail "link"
[ "$(stat -c %h "$M/b.txt")" = 2 ] || rf_fail "link count"
rm "$M/hard" "$M/c.txt" || rf_fail "unlink"
[ ! -e "$S/hard" ] || rf_fail "unlink not in backing dir"

rf_log "directories and readdir"
mkdir -p "$M/d1/d2" || rf_fail "mkdir"
for i in $(seq 1 300); do : >"$M/d1/f$i"; done
[ "$(ls "$M/d1" | wc -l)" = 301 ] || rf_fail "readdir of 301 entries: $(ls "$M/d1" | wc -l)"
[ "$(ls -a "$M/d1" | sort | head -2 | tr '\n' ' ')" = ". .. " ] || rf_fail "readdir lacks . and .."
[ "$(ls -la "$M/d1" | grep -c ' f[0-9]*$')" = 300 ] || rf_fail "ls -l (readdirplus) lists $(ls -la "$M/d1" | grep -c ' f[0-9]*$') files"
[ "$(ls -la "$M/d1" | awk '$NF == "f7" { print $5 }')" = 0 ] || rf_fail "readdirplus attributes"
rmdir "$M/d1" 2>/dev/null && rf_fail "rmdir of a non-empty directory"
rm -r "$M/d1" || rf_fail "rm -r"
[ ! -e "$S/d1" ] || rf_fail "rm -r not in backing dir"

rf_log "symlinks, fifos"
ln -s b.txt "$M/sym" || rf_fail "symlink"
[ "$(readlink "$M/sym")" = b.txt ] || rf_fail "readlink"
[ "$(cat "$M/sym")" = other ] || rf_fail "follow symlink"
mkfifo "$M/fifo" || rf_fail "mkfifo"
[ -p "$S/fifo" ] || rf_fail "fifo in backing dir"

rf_log "attributes: chmod, truncate, utimens, statfs"
chmod 640 "$M/b.txt" && [ "$(stat -c %a "$S/b.txt")" = 640 ] || rf_fail "chmod"
truncate -s 100000 "$M/b.txt" && [ "$(stat -c %s "$S/b.txt")" = 100000 ] || rf_fail "truncate up"
truncate -s 3 "$M/b.txt" && [ "$(cat "$M/b.txt")" = oth ] || rf_fail "truncate down"
touch -d "2001-02-03 04:05:06" "$M/b.txt"
[ "$(stat -c %Y "$S/b.txt")" = "$(date -d "2001-02-03 04:05:06" +%s)" ] || rf_fail "utimens"
stat -f "$M" >/dev/null || rf_fail "statfs"
[ "$(stat -f -c %b "$M")" = "$(stat -f -c %b "$S")" ] || rf_fail "statfs block count"

rf_log "extended attributes"
setfattr -n user.colour -v blue "$M/b.txt" || rf_fail "setxattr"
[ "$(getfattr --absolute-names --only-values -n user.colour "$M/b.txt")" = blue ] || rf_fail "getxattr"
[ "$(getfattr --absolute-names --only-values -n user.colour "$S/b.txt")" = blue ] || rf_fail "xattr in backing file"
getfattr --absolute-names -d "$M/b.txt" | grep -q 'user.colour="blue"' || rf_fail "listxattr"
setfattr -x user.colour "$M/b.txt" || rf_fail "removexattr"
getfattr --absolute-names -n user.colour "$M/b.txt" 2>/dev/null && rf_fail "xattr still there"

rf_log "fallocate, holes, fsync"
fallocate -l 1M "$M/alloc" || rf_fail "fallocate"
[ "$(stat -c %s "$S/alloc")" = 1048576 ] || rf_fail "fallocate size"
python3 - "$M/sparse" <<'PY' || rf_fail "lseek SEEK_DATA / fsync"
import os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644)
os.pwrite(fd, b"x" * 4096, 1 << 20)
os.fsync(fd)
assert os.lseek(fd, 0, os.SEEK_DATA) == 1 << 20, os.lseek(fd, 0, os.SEEK_DATA)
os.close(fd)
PY

rf_log "errors reach the client"
cat "$M/nope" 2>/dev/null && rf_fail "read of a missing file"
mkdir "$M/b.txt" 2>/dev/null && rf_fail "mkdir over a file"
[ "$(cd "$M" && (ls nope 2>&1 || true) | grep -c 'No such file')" = 1 ] || rf_fail "ENOENT text"

rf_log "transport and data path"
rf_log "a symlink swapped into a name in the backing directory is never followed"
# clients create and remove "race" (O_NOFOLLOW: the kernel follows no
# symlink either) while a process on the host puts a symlink to "target"
# in its place in the backing directory; following it would make
# $S/target (tests/unit/check_passthrough plants the symlink before every
# request instead of racing, and fails the old code every time)
python3 - "$M" "$S" <<'PY' || rf_fail "the swapper race: $?"
import os, sys, time
m, s = sys.argv[1], sys.argv[2]
pid = os.fork()
if pid == 0:
    end = time.time() + 4
    while time.time() < end:
        try:
            os.symlink("target", s + "/race.new")
            os.rename(s + "/race.new", s + "/race")
            os.unlink(s + "/race")
        except OSError:
            pass
    os._exit(0)
tries = 0
end = time.time() + 4
while time.time() < end:
    for flags in (os.O_WRONLY | os.O_CREAT, os.O_RDWR | os.O_CREAT | os.O_TRUNC):
        flags |= os.O_NOFOLLOW
        tries += 1
        try:
            os.close(os.open(m + "/race", flags, 0o644))
            os.unlink(m + "/race")
        except OSError:
            pass
os.waitpid(pid, 0)
if os.path.lexists(s + "/target"):
    raise SystemExit("a create followed the planted symlink (%d tries)" % tries)
print("    %d creates raced the swapper; nothing followed it" % tries)
PY
rm -f "$S/race" "$S/race.new"

W=$(rf_worker pt)
rf_assert_worker_fenced "$W"
[ "$(rf_field pt transport)" = "$TRANSPORT" ] || rf_fail "transport is $(rf_field pt transport)"
req=$(rf_field pt requests) ur=$(rf_field pt uring_requests) cr=$(rf_field pt classic_requests)
if [ "$TRANSPORT" = uring ]; then
	[ "$ur" -gt 100 ] || rf_fail "only $ur requests came through io-uring"
	# FORGET and INTERRUPT still arrive through /dev/fuse
	[ "$((ur + cr))" = "$req" ] || rf_fail "request counters do not add up"
else
	[ "$ur" = 0 ] && [ "$cr" = "$req" ] || rf_fail "classic mount used io-uring ($ur)"
fi
# the kernel's buffer pools where it has them (7.3), on io-uring only
want=entries
[ "$TRANSPORT" = uring ] && rf_kernel_at_least 7 3 && [ "$(rf_forced bufpool)" != off ] && want=pool
[ "$(rf_field pt buffers)" = "$want" ] || rf_fail "buffers=$(rf_field pt buffers), not $want"
[ "$(rf_field pt pinned)" -gt 0 ] || rf_fail "pinned=$(rf_field pt pinned)"
[ "$(rf_field pt read_fixed_ops)" -gt 0 ] || rf_fail "no READ_FIXED"
[ "$(rf_field pt write_fixed_ops)" -gt 0 ] || rf_fail "no WRITE_FIXED"
rf_status pt | sed 's/^/    /'
rf_stop
