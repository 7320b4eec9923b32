#!/bin/bash
# memfs and hello, two tenants of one broker, each with its own worker.
. "$(dirname "$0")/lib.sh"
rf_setup
rf_policy mem memfs "" "options = size=64M"
rf_policy hi hello ""
rf_policy pt passthrough "$T/src"
rf_start mem hi pt
M=$T/mem.mnt H=$T/hi.mnt

rf_log "hello: one read-only file"
[ "$(ls "$H")" = hello ] || rf_fail "hello lists $(ls "$H")"
grep -q "Hello from a ringfenced plugin" "$H/hello" || rf_fail "hello content"
{ echo x >"$H/new"; } 2>/dev/null && rf_fail "hello accepted a create"
{ echo x >>"$H/hello"; } 2>/dev/null && rf_fail "hello accepted a write"

rf_log "memfs: files, dirs, links, xattrs, data"
mkdir -p "$M/a/b" && echo one >"$M/a/b/f" || rf_fail "memfs create"
[ "$(cat "$M/a/b/f")" = one ] || rf_fail "memfs read"
mv "$M/a/b/f" "$M/a/g" && ln -s g "$M/a/l" && ln "$M/a/g" "$M/a/h" || rf_fail "memfs rename/links"
[ "$(cat "$M/a/l")" = one ] && [ "$(stat -c %h "$M/a/g")" = 2 ] || rf_fail "memfs link semantics"
setfattr -n user.k -v v "$M/a/g" && [ "$(getfattr --absolute-names --only-values -n user.k "$M/a/g")" = v ] ||
	rf_fail "memfs xattr"
head -c $((8 << 20)) /dev/urandom >"$T/r"
cp "$T/r" "$M/r" && cmp -s "$T/r" "$M/r" || rf_fail "memfs 8 MiB round trip"
truncate -s 1000 "$M/r" && [ "$(stat -c %s "$M/r")" = 1000 ] || rf_fail "memfs truncate"
head -c $((80 << 20)) /dev/zero >"$M/full" 2>/dev/null && rf_fail "memfs size=64M not enforced"
rm -rf "$M/a" "$M/r" "$M/full" && [ -z "$(ls "$M")" ] || rf_fail "memfs rm -r"

# ops TENANT OPCODE: how many of OPCODE the tenant has served
ops() { "$CTL" -s "$T/ctl.sock" stats "$1" | awk -v o="$2" '$1 == "op" && $2 == o { n = $3 } END { print n + 0 }'; }
rf_log "memfs: no security.capability round trip per write (handle_killpriv)"
x0=$(ops mem GETXATTR)
dd if=/dev/zero of="$M/w" bs=64k count=32 status=none || rf_fail "memfs dd"
x1=$(ops mem GETXATTR)
[ $((x1 - x0)) -le 2 ] || rf_fail "32 writes cost $((x1 - x0)) GETXATTRs"
rm -f "$M/w"
rf_log "memfs and passthrough on a local file system: no FLUSH on close (RF_OPEN_NOFLUSH)"
for t in mem pt; do
	f0=$(ops $t FLUSH) r0=$(ops $t RELEASE)
	for i in $(seq 20); do echo "$i" >"$T/$t.mnt/f$i" && cat "$T/$t.mnt/f$i" >/dev/null; done
	f1=$(ops $t FLUSH) r1=$(ops $t RELEASE)
	[ $((r1 - r0)) -ge 40 ] || rf_fail "$t: 40 closes, $((r1 - r0)) RELEASEs"
	[ $((f1 - f0)) = 0 ] || rf_fail "$t: 40 closes cost $((f1 - f0)) FLUSHes"
	rm -f "$T/$t.mnt"/f*
done

rf_log "passthrough: an O_DIRECT file (FOPEN_DIRECT_IO) is still mapped shared"
python3 - "$T/pt.mnt/dio" <<'PY' || rf_fail "mmap of an O_DIRECT file"
import mmap, os, sys
fd = os.open(sys.argv[1], os.O_CREAT | os.O_RDWR | os.O_DIRECT, 0o644)
os.ftruncate(fd, 8192)
m = mmap.mmap(fd, 8192, mmap.MAP_SHARED)
m[4096:4101] = b"hello"
m.flush()
m.close()
os.close(fd)
with open(sys.argv[1], "rb") as f:
    f.seek(4096)
    assert f.read(5) == b"hello", "the mapping's bytes did not reach the file"
PY
rm -f "$T/pt.mnt/dio"

rf_log "two workers, both fenced"
wm=$(rf_worker mem) wh=$(rf_worker hi)
[ "$wm" != "$wh" ] || rf_fail "tenants share a worker"
rf_assert_worker_fenced "$wm"
rf_assert_worker_fenced "$wh"
[ "$(rf_field mem transport)" = "$TRANSPORT" ] || rf_fail "memfs transport"
rf_stop

rf_log "a plugin built before RF_PLUGIN_KILLPRIV: refused under handle_killpriv, naming the key"
rf_policy_reset
rf_policy old "$ROOT/build/tests/plugins/legacy.so" "" "crash_limit = 1"
rf_policy ok "$ROOT/build/tests/plugins/legacy.so" "" "handle_killpriv = no"
rf_start ok
rf_wait_state old failed
grep -q "plugin .*legacy.so does not clear setuid and setgid bits itself (no RF_PLUGIN_KILLPRIV); set handle_killpriv = no" \
	"$T/broker.log" || rf_fail "the refusal does not name RF_PLUGIN_KILLPRIV and the key: $(grep -i legacy "$T/broker.log" | tail -3)"
rf_log "  and loaded without it (an older struct_size is still accepted)"
touch "$T/ok.mnt" && [ "$(stat -c %a "$T/ok.mnt")" = 755 ] || rf_fail "the legacy plugin does not serve"
rf_stop
