#!/bin/bash
# ringfence-plugin-check: the shipped plugins pass its checks; a plugin
# that makes a call seccomp refuses has each death reported with that call;
# --learn prints a policy that then lets passthrough pass, where
# worker.policy alone does not; the same for a program (--program) over
# program.policy; the tool leaves no mount and no scratch directory behind.
. "$(dirname "$0")/lib.sh"
rf_setup
CHECK=$BUILD/ringfence-plugin-check
host_fusectl=0
rf_is_mounted /sys/fs/fuse/connections && host_fusectl=1

run_check() { # OUTFILE ARGS...: the tool's status in $rc
	local out=$1
	shift
	rc=0
	"$CHECK" "$@" >"$out" 2>"$out.err" || rc=$?
}
leftovers() {
	grep -q " /tmp/ringfence-plugin-check\." /proc/self/mountinfo && rf_fail "a mount of the tool is left"
	ls -d /tmp/ringfence-plugin-check.* 2>/dev/null | grep -q . && rf_fail "a scratch directory is left"
	[ $host_fusectl = 1 ] || ! rf_is_mounted /sys/fs/fuse/connections || rf_fail "fusectl left mounted"
	return 0
}
# scratch directories of an earlier run would fail leftovers wrongly
ls -d /tmp/ringfence-plugin-check.* 2>/dev/null | grep -q . && rf_fail "scratch directories from before: $(ls -d /tmp/ringfence-plugin-check.*)"

rf_log "passthrough: every check but chown to root passes, on the $TRANSPORT transport"
run_check "$T/pt" "$BUILD/plugins/passthrough.so"
[ $rc = 0 ] || { cat "$T/pt" "$T/pt.err" >&2; rf_fail "exit $rc"; }
grep -q "^mounted on .*: $TRANSPORT transport" "$T/pt" || rf_fail "transport: $(head -2 "$T/pt")"
grep -qx "summary: 30 ok, 0 not implemented, 1 other errors, 0 worker deaths, 0 wrong results" "$T/pt" ||
	{ cat "$T/pt" >&2; rf_fail "summary"; }
grep -q "^  setattr (owner) *EPERM" "$T/pt" || rf_fail "chown to root should be refused: $(grep owner "$T/pt")"
leftovers

rf_log "memfs passes, as a user none of the host's tenants has; hello reports what it does not implement"
# a production tenant called "check" (the scratch tenant's name) holds
# the uid the scratch tenant just had: the next run takes another
uid=$(sed -n 's/^mounted on .*, uid \([0-9]*\)$/\1/p' "$T/pt")
[ -n "$uid" ] || rf_fail "no uid in: $(grep "^mounted on" "$T/pt")"
printf '# the host'"'"'s\ncheck %s\nother 4242\n' "$uid" >"$T/hostusers"
cp "$T/hostusers" "$T/hostusers.0"
run_check "$T/mem" --users-file "$T/hostusers" "$BUILD/plugins/memfs.so"
[ $rc = 0 ] || { cat "$T/mem" >&2; rf_fail "memfs: exit $rc"; }
grep -q "0 worker deaths, 0 wrong results" "$T/mem" || rf_fail "memfs: $(tail -1 "$T/mem")"
uid2=$(sed -n 's/^mounted on .*, uid \([0-9]*\)$/\1/p' "$T/mem")
[ -n "$uid2" ] && [ "$uid2" != "$uid" ] || rf_fail "the scratch tenant ran as the host's tenant check's uid $uid"
cmp -s "$T/hostusers" "$T/hostusers.0" || rf_fail "--users-file was written: $(cat "$T/hostusers")"
rf_log "  uid $uid2, not the host's tenant check's $uid"
run_check "$T/hello" -v "$BUILD/plugins/hello.so"
[ $rc = 0 ] || { cat "$T/hello" >&2; rf_fail "hello: exit $rc"; }
grep -q "^  mkdir *not implemented (the plugin answered ENOSYS; the caller got ENOSYS)  \[.*MKDIR" "$T/hello" ||
	{ cat "$T/hello" >&2; rf_fail "hello's mkdir"; }
grep -q "^  getattr *ok" "$T/hello" || rf_fail "hello's getattr"
leftovers

rf_log "hello, read-only: every check of what it shows passes"
run_check "$T/hello-ro" --read-only "$BUILD/plugins/hello.so"
[ $rc = 0 ] || { cat "$T/hello-ro" "$T/hello-ro.err" >&2; rf_fail "hello --read-only: exit $rc"; }
grep -q "^  open+read hello *ok" "$T/hello-ro" || { cat "$T/hello-ro" >&2; rf_fail "hello --read-only: no read of hello"; }
grep -qE "^summary: [0-9]+ ok, [0-9]+ not implemented, 0 other errors, 0 worker deaths, 0 wrong results" "$T/hello-ro" ||
	{ cat "$T/hello-ro" >&2; rf_fail "hello --read-only: $(tail -1 "$T/hello-ro")"; }
run_check "$T/hello-path" --read-only --path hello --path nothere "$BUILD/plugins/hello.so"
[ $rc = 0 ] && grep -q "^  open+read hello *ok" "$T/hello-path" && grep -q "^  lookup nothere *ENOENT" "$T/hello-path" ||
	{ cat "$T/hello-path" >&2; rf_fail "hello --read-only --path"; }
leftovers
rf_log "  $(tail -1 "$T/hello-ro")"

rf_log "a file that is no plugin: the dynamic linker's words on the terminal"
head -c 4096 /dev/zero | tr '\0' x >"$T/notelf.so"
run_check "$T/notelf" "$T/notelf.so"
[ $rc = 1 ] || rf_fail "notelf: exit $rc"
grep -qE "^ringfence-plugin-check: the tenant did not start: .*load plugin $T/notelf.so: .*invalid ELF header" "$T/notelf.err" ||
	rf_fail "notelf: $(cat "$T/notelf.err")"
leftovers
rf_log "  $(sed 's/^ringfence-plugin-check: //' "$T/notelf.err")"

rf_log "hostile.so, a denied call at every lookup: each death reported with the call"
run_check "$T/hostile" --options every_lookup=socket "$BUILD/tests/plugins/hostile.so"
[ $rc = 1 ] || { cat "$T/hostile" >&2; rf_fail "hostile: exit $rc"; }
grep -q "^  mkdir *WORKER DIED: seccomp: socket(0x2, 0x1, 0x0, .*) denied" "$T/hostile" ||
	{ cat "$T/hostile" >&2; rf_fail "no denial reported"; }
grep -q "^  getattr *ok" "$T/hostile" || rf_fail "getattr of the root makes no lookup"
leftovers

rf_log "--learn: a policy for passthrough, each call with its operations, that then passes"
run_check "$T/learned.policy" --learn "$BUILD/plugins/passthrough.so"
[ $rc = 0 ] || { cat "$T/learned.policy.err" >&2; rf_fail "--learn: exit $rc"; }
grep -qx "@include $ROOT/worker.policy" "$T/learned.policy" || rf_fail "no @include of worker.policy"
grep -q "^# .*LOOKUP" "$T/learned.policy" || rf_fail "no LOOKUP comment"
for sc in openat2 mkdirat unlinkat renameat2 getdents64 fsync setxattr; do
	grep -qx "$sc: 1" "$T/learned.policy" || { cat "$T/learned.policy" >&2; rf_fail "$sc not learned"; }
done
grep -q "summary: 30 ok" "$T/learned.policy.err" || rf_fail "the report: $(tail -1 "$T/learned.policy.err")"
"$RINGFENCED" --check-seccomp "$T/learned.policy" >/dev/null || rf_fail "the learned policy is not valid"
run_check "$T/relearn" --seccomp-policy "$T/learned.policy" "$BUILD/plugins/passthrough.so"
[ $rc = 0 ] || { cat "$T/relearn" >&2; rf_fail "the learned policy: exit $rc"; }
grep -q "0 worker deaths" "$T/relearn" || rf_fail "the learned policy: $(tail -1 "$T/relearn")"
printf '@default trap\n@include %s/worker.policy\n' "$ROOT" >"$T/base.policy"
run_check "$T/base" --seccomp-policy "$T/base.policy" "$BUILD/plugins/passthrough.so"
[ $rc = 1 ] || rf_fail "worker.policy alone: exit $rc"
grep -q "^  getattr *WORKER DIED: seccomp: newfstatat(" "$T/base" || rf_fail "worker.policy alone: $(cat "$T/base")"
run_check "$T/memlearn" --learn "$BUILD/plugins/memfs.so"
[ $rc = 0 ] || rf_fail "memfs --learn: exit $rc"
grep -q ": 1$" "$T/memlearn" && rf_fail "memfs needs nothing beyond worker.policy: $(cat "$T/memlearn")"
leftovers

rf_log "a program (--program): Debian's squashfuse_ll passes, read-only; --learn finds hello_ll's sysinfo"
mkdir -p "$T/sq"
mksquashfs "$ROOT/docs" "$T/sq/docs.sqfs" -noappend -quiet >/dev/null || rf_fail "mksquashfs"
run_check "$T/sq.out" --program --program-args "/source/docs.sqfs {mountpoint}" --source "$T/sq" \
	--read-only /usr/bin/squashfuse_ll
[ $rc = 0 ] || { cat "$T/sq.out" "$T/sq.out.err" >&2; rf_fail "squashfuse_ll: exit $rc"; }
grep -q "0 worker deaths, 0 wrong results" "$T/sq.out" || rf_fail "squashfuse_ll: $(tail -1 "$T/sq.out")"
LL=$BUILD/tests/programs/hello_ll
run_check "$T/ll.policy" --learn --program "$LL"
[ $rc = 0 ] || { cat "$T/ll.policy.err" >&2; rf_fail "hello_ll --learn: exit $rc"; }
grep -qx "@include $ROOT/program.policy" "$T/ll.policy" || rf_fail "no @include of program.policy"
grep -qx "sysinfo: 1" "$T/ll.policy" || { cat "$T/ll.policy" >&2; rf_fail "sysinfo not learned"; }
run_check "$T/ll.relearn" --seccomp-policy "$T/ll.policy" --program "$LL"
grep -q "0 worker deaths" "$T/ll.relearn" || rf_fail "the learned policy: $(tail -1 "$T/ll.relearn")"
run_check "$T/ll.base" --program "$LL"
[ $rc = 1 ] || rf_fail "hello_ll under program.policy: exit $rc"
grep -q "^  statfs *WORKER DIED: seccomp: sysinfo(" "$T/ll.base" || rf_fail "program.policy alone: $(cat "$T/ll.base")"
leftovers

rf_log "usage errors"
run_check "$T/u"
[ $rc = 2 ] || rf_fail "no plugin: exit $rc"
run_check "$T/u" --learn --seccomp-policy "$ROOT/seccomp.policy" "$BUILD/plugins/memfs.so"
[ $rc = 2 ] || rf_fail "--learn with --seccomp-policy: exit $rc"
run_check "$T/u" --program-args x "$BUILD/plugins/memfs.so"
[ $rc = 2 ] || rf_fail "--program-args without --program: exit $rc"
"$CHECK" --help | grep -q "^usage: ringfence-plugin-check" || rf_fail "--help"
