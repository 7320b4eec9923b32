#!/bin/bash
# Unmodified libfuse 3 programs as tenants (program = in
# ringfence.policy(5)), linked with Debian's libfuse3 and run with
# ringfence's: hello_ll, the project's own low-level program, serves its
# files (contents, modes, a symbolic link, a directory of 3000 entries)
# with the arguments the policy gives it, parsed by its own
# fuse_opt_parse, and a call its policy refuses ends it and is logged by
# name, as is a function the library lacks (needs_fd); a program that
# floods its standard error is cut to its share by the keeper, which
# counts what it drops (the broker drops none of its lines); hello_hl, written against the high-level API alone
# (fuse_main), serves and keeps what it is given; Debian's squashfuse_ll
# serves an image made here the
# same as the tree it was made from. Programs built against libfuse 3.17
# on (Debian unstable's libfuse3-dev, linked with its libfuse3.so.4, from
# tools/libfuse4.sh) run with ringfence's libfuse3.so.4: hello_ll and
# hello_hl built so, whose configuration is read at libfuse 3.17's
# offsets, and libfuse 3.18's own passthrough_hp, whose files' data
# ringfence moves itself (fuse_passthrough_open). Each process holds no /dev/fuse,
# runs as the tenant's uid under the deny list and the tenant's seccomp
# policy, and a SIGKILL of it leaves the mount up: the next one serves, and
# a file a client held open across the death answers ESTALE.
. "$(dirname "$0")/lib.sh"
rf_setup
P=$BUILD/tests/programs/hello_ll M=$T/hello.mnt
command -v mksquashfs >/dev/null && [ -x /usr/bin/squashfuse_ll ] ||
	rf_fail "squashfs-tools and squashfuse are not installed (make deps)"
# libfuse 3.17's headers and library, and passthrough_hp built with them
L4=${RF_LIBFUSE4_DIR:-$("$ROOT/tools/libfuse4.sh")} || rf_fail "no libfuse 3.17 (tools/libfuse4.sh said why)"
for p in hello_ll hello_hl; do
	gcc -O2 -std=gnu11 -D_GNU_SOURCE -I"$L4/root/usr/include/fuse3" -o "$T/${p}4" "$ROOT/tests/programs/$p.c" \
		-L"$L4/root/usr/lib/$(gcc -dumpmachine)" -l:libfuse3.so.4 -Wl,--allow-shlib-undefined ||
		rf_fail "$p does not build against libfuse 3.17's headers"
done

# the image's tree: files of several sizes and modes, symbolic links, an
# empty file, a directory of 3000 entries
tree=$T/tree
mkdir -p "$tree/sub/deeper" "$tree/big" "$T/images"
echo hello >"$tree/a"
head -c 300000 /dev/urandom >"$tree/sub/random"
: >"$tree/empty"
chmod 640 "$tree/a"
chmod 711 "$tree/sub"
chmod 4755 "$tree/sub/random"
ln -s a "$tree/link"
ln -s ../a "$tree/sub/deeper/up"
(cd "$tree/big" && seq -f 'e%.0f' 1 3000 | xargs touch)
mksquashfs "$tree" "$T/images/tree.sqfs" -noappend -quiet >/dev/null || rf_fail "mksquashfs failed"
# what find says of a tree: each entry's path, type, mode and target
listing() { (cd "$1" && find . -printf '%p %y %m %l\n' | sort); }

rf_log "hello_ll -o greeting=hi -o files=3000 serves its files"
rf_policy hello - "" "program = $P" "program_args = -o greeting=hi -o files=3000"
# beside it, one its own option parser refuses: what it says is logged
rf_policy bad - "" "program = $P" "program_args = -o bogus" "crash_limit = 1"
rf_policy sq - "$T/images" "program = /usr/bin/squashfuse_ll" "read_only = yes" \
	"program_args = /source/tree.sqfs {mountpoint}"
rf_policy hl - "" "program = $BUILD/tests/programs/hello_hl" "program_args = -d"
# the same two built against libfuse 3.17, and its passthrough_hp (the
# three calls beyond program.policy it makes at start)
rf_policy h4 - "" "program = $T/hello_ll4" "program_args = -o greeting=four -o files=3000"
rf_policy hl4 - "" "program = $T/hello_hl4" "program_args = -d"
printf '@include %s/program.policy\nreadlink: 1\nprlimit64: arg0 == 0\numask: 1\n' "$ROOT" >"$T/hp.policy"
# its source on a file system of its own: passthrough_hp hides what is not
# on its source's device, and on an overlay (the 7.3 guest's /tmp) a new
# file's st_dev is the upper layer's
mkdir -p "$T/p4src"
mount -t tmpfs -o size=64M,mode=0755 rf-test-p4 "$T/p4src" || rf_fail "mount a tmpfs for p4"
EXTRA_MOUNTS+=("$T/p4src")
rf_policy p4 - "$T/p4src" "program = $L4/bin/passthrough_hp" "seccomp_policy = $T/hp.policy" \
	"program_args = /source {mountpoint} --foreground --debug"
# one whose every read of hello writes 20000 lines to its standard error
rf_policy chat - "" "program = $P" "program_args = -o chatter=20000"
# and one whose policy refuses a call it makes (fuse_daemonize's chdir)
printf '@include %s/program.policy\nchdir: arg0 == 0\n' "$ROOT" >"$T/nochdir.policy"
rf_policy trap - "" "program = $P" "seccomp_policy = $T/nochdir.policy" "crash_limit = 1"
# and one that calls a function ringfence's libfuse3.so.3 does not have
NF=$BUILD/tests/programs/needs_fd
rf_policy nf - "" "program = $NF" "crash_limit = 1"
rf_start hello sq hl chat h4 hl4 p4
[ "$(rf_field hello program)" = "$P" ] || rf_fail "status names program '$(rf_field hello program)'"
[ "$(cat "$M/hello")" = hi ] || rf_fail "hello holds '$(cat "$M/hello")'"
[ "$(stat -c %F:%a "$M/hello")" = "regular file:444" ] || rf_fail "hello is $(stat -c %F:%a "$M/hello")"
[ "$(readlink "$M/link")" = hello ] || rf_fail "link points to '$(readlink "$M/link")'"
[ "$(cat "$M/link")" = hi ] || rf_fail "link does not lead to hello"
[ "$(stat -c %F:%a "$M/dir")" = "directory:755" ] || rf_fail "dir is $(stat -c %F:%a "$M/dir")"
n=$(ls "$M/dir" | wc -l)
[ "$n" = 3000 ] || rf_fail "dir lists $n entries, not 3000"
[ "$(ls "$M/dir" | sort | md5sum)" = "$(seq -f 'f%.0f' 0 2999 | sort | md5sum)" ] ||
	rf_fail "dir's names are not f0 .. f2999"
[ "$(cat "$M/dir/f2999")" = f2999 ] || rf_fail "dir/f2999 holds '$(cat "$M/dir/f2999")'"
out=$(sh -c "echo x >'$M/hello'" 2>&1) && rf_fail "a write to a read-only file succeeded"

rf_log "  a program's standard error is the broker's log"
rf_wait_log "bad: worker: program: fuse: unknown option(s): \`-o bogus'" \
	"the program's complaint is not in the log"

rf_log "  a flood on its standard error: the keeper passes its share and counts the rest"
[ "$(cat "$T/chat.mnt/hello")" = "hello, world" ] || rf_fail "chat's hello holds '$(cat "$T/chat.mnt/hello")'"
# each of the 20000 lines is in the log or counted as dropped
rf_wait_log "chat: worker: the program's output: " "no count of chat's dropped lines"
for _ in $(seq 50); do
	passed=$(grep -c "chat: worker: program: chatter " "$T/broker.log" || true)
	dropped=$(sed -n "s/.*chat: worker: the program's output: \([0-9]*\) lines dropped.*/\1/p" \
		"$T/broker.log" | awk '{ n += $1 } END { print n + 0 }')
	[ $((passed + dropped)) = 20000 ] && break
	sleep 0.1
done
[ $((passed + dropped)) = 20000 ] || rf_fail "chat: $passed lines logged and $dropped dropped, not 20000"
[ "$passed" -ge 200 ] && [ "$passed" -le 1000 ] || rf_fail "chat: $passed of its lines logged"
[ "$(rf_field chat log_dropped)" = 0 ] || rf_fail "the broker dropped $(rf_field chat log_dropped) of chat's lines"
[ "$(cat "$T/chat.mnt/dir/f2")" = f2 ] || rf_fail "chat does not serve after its flood"

rf_log "  a call its policy refuses ends the program, and the log names it"
rf_wait_log "trap: program $P: seccomp: chdir(" "no report of the refused chdir"

rf_log "  a function the library lacks: the loader's word, naming it, is logged"
rf_wait_log "nf: worker: program: $NF: symbol lookup error: $NF: undefined symbol: fuse_session_fd" \
	"no word of the missing fuse_session_fd"
grep -qF "nf: worker exited with status 127" "$T/broker.log" || rf_fail "needs_fd did not end with the loader's 127"

rf_log "  the program's process: no /dev/fuse, the tenant's uid, the deny list and the policy"
keeper=$(rf_worker hello)
host=$(rf_host "$keeper")
[ -n "$host" ] || rf_fail "no plugin host"
rf_assert_worker_fenced "$keeper"
uid=$(rf_uid hello)
grep -qE "^Uid:[[:space:]]+$uid[[:space:]]" "/proc/$host/status" || rf_fail "the program does not run as uid $uid"
# its own deny list and the tenant's policy (a first host is forked
# before its keeper's deny list; the next inherits that one too)
filters() { sed -n 's/^Seccomp_filters:[[:space:]]*//p' "/proc/$1/status"; }
[ "$(filters "$host")" = 2 ] || rf_fail "the program has $(filters "$host") seccomp filters, not 2"
# what the program runs is the host's own process: its libraries are
# ringfence's libfuse3 and the system's, from the sandbox's read-only view
grep -q ' /ringfence/libfuse3.so.3$' "/proc/$host/maps" || rf_fail "the program did not load ringfence's libfuse3.so.3"
grep -q 'x86_64-linux-gnu/libfuse3.so' "/proc/$host/maps" && rf_fail "the program loaded Debian's libfuse3"

rf_log "hello_hl (fuse_main, path-based operations) serves and keeps what it is given"
H=$T/hl.mnt
[ "$(cat "$H/hello")" = "hello from the high-level API" ] || rf_fail "hl's hello holds '$(cat "$H/hello")'"
[ "$(cat "$H/dir/inner")" = inner ] || rf_fail "hl's dir/inner holds '$(cat "$H/dir/inner")'"
[ "$(ls "$H" | tr '\n' ' ')" = "dir hello notes " ] || rf_fail "hl lists $(ls "$H")"
echo "a note" >"$H/notes" && echo more >>"$H/notes" || rf_fail "hl's notes cannot be written"
[ "$(cat "$H/notes")" = "a note
more" ] || rf_fail "hl's notes hold '$(cat "$H/notes")'"
[ "$(stat -c %s "$H/notes")" = 12 ] || rf_fail "hl's notes are $(stat -c %s "$H/notes") bytes"

rf_log "programs of libfuse 3.17: ringfence's libfuse3.so.4"
M4=$T/h4.mnt
[ "$(cat "$M4/hello")" = four ] || rf_fail "h4's hello holds '$(cat "$M4/hello")'"
[ "$(ls "$M4/dir" | wc -l)" = 3000 ] || rf_fail "h4's dir lists $(ls "$M4/dir" | wc -l) entries"
[ "$(cat "$M4/dir/f2999")" = f2999 ] || rf_fail "h4's dir/f2999 holds '$(cat "$M4/dir/f2999")'"
grep -q ' /ringfence/libfuse3.so.4$' "/proc/$(rf_host "$(rf_worker h4)")/maps" ||
	rf_fail "hello_ll4 did not load ringfence's libfuse3.so.4"
[ "$(cat "$T/hl4.mnt/hello")" = "hello from the high-level API" ] || rf_fail "hl4's hello holds '$(cat "$T/hl4.mnt/hello")'"
# the configuration's debug field, where each library's programs have it
rf_wait_log "hl: worker: program: hello_hl: configuration: debug=1" "hello_hl did not see -d in its configuration"
rf_wait_log "hl4: worker: program: hello_hl: configuration: debug=1" "hello_hl4 did not see -d in its configuration"
P4=$T/p4.mnt
head -c 3000000 /dev/urandom >"$T/random"
cp "$T/random" "$P4/random" && cmp -s "$T/random" "$P4/random" || rf_fail "p4 does not keep what it is given"
cmp -s "$T/random" "$T/p4src/random" || rf_fail "p4's source file differs from what was written"
echo note >"$P4/note" && mkdir "$P4/d" && mv "$P4/note" "$P4/d/note" || rf_fail "p4 cannot create, mkdir and rename"
[ "$(cat "$P4/d/note")" = note ] || rf_fail "p4's d/note holds '$(cat "$P4/d/note")'"
# its reads and writes never reached it: ringfence moved the data of the
# files it opened with fuse_passthrough_open (its read would answer EIO)
rf_wait_log "p4: worker: program: DEBUG: setup shared backing file " "passthrough_hp set up no passthrough file"
grep -q "p4: worker: program: .*fuse_passthrough_open failed" "$T/broker.log" &&
	rf_fail "fuse_passthrough_open failed for passthrough_hp"
grep -q "p4: worker: program: ERROR: fuse_passthrough read failed" "$T/broker.log" &&
	rf_fail "a read of a passthrough file reached passthrough_hp"

rf_log "squashfuse_ll /source/tree.sqfs serves the tree it was made of"
S=$T/sq.mnt
[ "$(listing "$S")" = "$(listing "$tree")" ] || rf_fail "the image's listing differs: $(diff <(listing "$S") <(listing "$tree") | head -5)"
diff -r --no-dereference "$tree" "$S" >/dev/null || rf_fail "the image's contents differ: $(diff -rq --no-dereference "$tree" "$S" | head -3)"
[ "$(ls "$S/big" | wc -l)" = 3000 ] || rf_fail "big lists $(ls "$S/big" | wc -l) entries"
rf_assert_worker_fenced "$(rf_worker sq)"
sqhost=$(rf_host "$(rf_worker sq)")
grep -q '/squashfuse_ll$' "/proc/$sqhost/maps" || rf_fail "squashfuse_ll is not what the host runs"
kill -9 "$sqhost"
rf_wait_host_replaced sq "$(rf_worker sq)" "$sqhost"
[ "$(listing "$S")" = "$(listing "$tree")" ] || rf_fail "the image's listing differs after a SIGKILL"
cmp -s "$tree/sub/random" "$S/sub/random" || rf_fail "sub/random differs after a SIGKILL"

rf_log "  SIGKILL of hello_ll: the mount stays up, the next one serves, a file held open answers ESTALE"
exec 7<"$M/hello"
kill -9 "$host"
rf_wait_host_replaced hello "$keeper" "$host"
out=$(cat <&7 2>&1) && rf_fail "hello held open across the program's death read '$out'"
case $out in
*"Stale file handle"*) ;;
*) rf_fail "hello held open across the program's death: '$out', not ESTALE" ;;
esac
exec 7<&-
rf_is_mounted "$M" || rf_fail "the mount went away"
host=$(rf_host "$keeper")
[ "$(filters "$host")" = $(($(filters "$keeper") + 2)) ] ||
	rf_fail "the next program has $(filters "$host") seccomp filters, its keeper $(filters "$keeper")"
[ "$(cat "$M/hello")" = hi ] || rf_fail "hello holds '$(cat "$M/hello")' after the kill"
[ "$(ls "$M/dir" | wc -l)" = 3000 ] || rf_fail "dir lists other entries after the kill"
rf_stop
