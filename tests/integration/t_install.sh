#!/bin/bash
# make install / make uninstall: the layout, an installed broker that finds
# its worker, plugins, seccomp policy and deployment policy without being
# told, and a plugin built outside the tree against the installed SDK only
# (the installed copy of examples/sdk), served by that broker.
. "$(dirname "$0")/lib.sh"
rf_setup
P=$T/prefix
MAKEVARS=(BUILD="$T/build" PREFIX="$P" sysconfdir="$T/etc")
# make in the tree, a job per CPU (not the jobserver of a make this test
# may run under, whose descriptors it does not have)
mk() { MAKEFLAGS='' make -s -j"$(nproc)" -C "$ROOT" "$@"; }

installed() { # DIR: every file and symlink under DIR, relative, sorted
	(cd "$1" && find . ! -type d | sed 's|^\./||' | LC_ALL=C sort)
}
expected() { # the layout make install gives under PREFIX=$1 (sysconfdir apart)
	local docs d
	docs=$(cd "$ROOT" && for d in README.md docs/*.md; do echo "share/doc/ringfence/${d##*/}"; done)
	{
		printf '%s\n' include/ringfence/plugin.h lib/pkgconfig/ringfence-plugin.pc \
			lib/ringfence/libringfence-plugin.so lib/ringfence/plugins/hello.so lib/ringfence/plugins/memfs.so \
			lib/ringfence/libfuse/libfuse3.so.3 lib/ringfence/libfuse/libfuse3.so.4 \
			lib/ringfence/libfuse/libringfence-plugin.so.1 \
			lib/ringfence/plugins/passthrough.so lib/systemd/system/ringfenced.service \
			libexec/ringfence/ringfence-worker sbin/ringfence-fsck sbin/ringfence-plugin-check sbin/ringfencectl \
			sbin/ringfenced share/doc/ringfence/examples/ringfence.policy \
			share/doc/ringfence/examples/sdk/Makefile share/doc/ringfence/examples/sdk/motd.c \
			share/man/man3/ringfence-plugin.3 \
			share/man/man5/ringfence.policy.5 share/man/man5/ringfence-seccomp.policy.5 \
			share/man/man8/ringfenced.8 share/man/man8/ringfencectl.8 share/man/man8/ringfence-fsck.8 \
			share/man/man8/ringfence-plugin-check.8
		echo "$docs"
	} | LC_ALL=C sort
}

rf_log "make install PREFIX=... sysconfdir=...: the layout"
mk "${MAKEVARS[@]}" install >"$T/install.log" 2>&1 || { cat "$T/install.log" >&2; rf_fail "make install"; }
diff <(expected) <(installed "$P") >"$T/diff" || { cat "$T/diff" >&2; rf_fail "installed files differ"; }
[ "$(installed "$T/etc" | tr '\n' ' ')" = "ringfence/program.policy ringfence/seccomp.policy ringfence/worker.policy " ] ||
	rf_fail "in sysconfdir: $(installed "$T/etc")"
cmp -s "$ROOT/seccomp.policy" "$T/etc/ringfence/seccomp.policy" || rf_fail "seccomp.policy differs"
[ "$(stat -c %a "$P/sbin/ringfenced")" = 755 ] || rf_fail "ringfenced mode"
[ "$(stat -c %a "$P/lib/ringfence/plugins/passthrough.so")" = 644 ] || rf_fail "plugin mode"
grep -qx "ExecStart=$P/sbin/ringfenced -f -c $T/etc/ringfence/ringfence.policy" \
	"$P/lib/systemd/system/ringfenced.service" || rf_fail "the unit's ExecStart"
grep -q "@[a-z]*@" "$P/lib/systemd/system/ringfenced.service" "$P/lib/pkgconfig/ringfence-plugin.pc" \
	"$P"/share/man/man*/* &&
	rf_fail "a placeholder left in a generated file"
grep -qF "$P/libexec/ringfence/ringfence\-worker" "$P/share/man/man8/ringfenced.8" ||
	rf_fail "ringfenced.8 does not name the installed worker"
want="ringfenced $(sed -n 's/^VERSION := //p' "$ROOT/Makefile")
policy $T/etc/ringfence/ringfence.policy
plugin_dir $P/lib/ringfence/plugins
seccomp_policy $T/etc/ringfence/seccomp.policy
worker $P/libexec/ringfence/ringfence-worker"
[ "$("$P/sbin/ringfenced" --version)" = "$want" ] || rf_fail "--version: $("$P/sbin/ringfenced" --version)"

rf_log "the SDK: a plugin built in a copy of the installed examples/sdk, against the installed header only"
cp -r "$P/share/doc/ringfence/examples/sdk" "$T/sdk"
PKG_CONFIG_PATH=$P/lib/pkgconfig make -s -C "$T/sdk" >"$T/sdk.log" 2>&1 || { cat "$T/sdk.log" >&2; rf_fail "the SDK example did not build"; }
flags=$(PKG_CONFIG_PATH=$P/lib/pkgconfig pkg-config --cflags --libs ringfence-plugin)
# shellcheck disable=SC2086 # words, not one
[ "$(echo $flags)" = "-I$P/include -L$P/lib/ringfence -lringfence-plugin -Wl,-z,defs" ] ||
	rf_fail "pkg-config --cflags --libs: $flags"
# the plugin needs the ABI library, which the worker (its soname) answers for
readelf -d "$T/sdk/motd.so" | grep -q "(NEEDED).*\[libringfence-plugin\.so\.1\]" ||
	rf_fail "motd.so does not need libringfence-plugin.so.1: $(readelf -d "$T/sdk/motd.so" | grep NEEDED)"
# a misspelt rf_* name fails at link time, naming it
sed 's/rf_reply_data(/rf_reply_dta(/' "$T/sdk/motd.c" >"$T/sdk/typo.c"
grep -q rf_reply_dta "$T/sdk/typo.c" || rf_fail "typo.c: motd.c no longer calls rf_reply_data"
# shellcheck disable=SC2086 # words, not one
cc -shared -fPIC -o "$T/sdk/typo.so" "$T/sdk/typo.c" $flags >"$T/typo.log" 2>&1 &&
	rf_fail "a plugin calling rf_reply_dta linked"
grep -q "undefined reference to .rf_reply_dta'" "$T/typo.log" || rf_fail "the link said: $(cat "$T/typo.log")"
[ "$(PKG_CONFIG_PATH=$P/lib/pkgconfig pkg-config --variable=plugindir ringfence-plugin)" = "$P/lib/ringfence/plugins" ] ||
	rf_fail "pkg-config plugindir"

rf_log "the installed broker, without options: its policy, worker, plugins and seccomp policy"
rf_policy pt passthrough "$T/src"
rf_policy motd "$T/sdk/motd.so" "" "options = Built outside the tree."
cp "$T/policy" "$T/etc/ringfence/ringfence.policy"
RINGFENCED=$P/sbin/ringfenced RF_DEFAULT_CONFIG=1 rf_start pt motd
W=$(rf_worker pt)
[ "$(readlink "/proc/$W/exe")" = "$P/libexec/ringfence/ringfence-worker" ] ||
	rf_fail "the worker is $(readlink "/proc/$W/exe")"
# the plugin is loaded in the worker's plugin host, and only there
grep -q " $P/lib/ringfence/plugins/passthrough.so$" "/proc/$(rf_host "$W")/maps" ||
	rf_fail "the worker's plugin host did not load the installed passthrough.so"
grep -q "passthrough.so" "/proc/$W/maps" && rf_fail "the keeper loaded the plugin"
echo data >"$T/pt.mnt/f" && [ "$(cat "$T/src/f")" = data ] || rf_fail "passthrough round trip"
[ "$(cat "$T/motd.mnt/motd")" = "Built outside the tree." ] || rf_fail "motd says: $(cat "$T/motd.mnt/motd")"
[ "$(ls "$T/motd.mnt")" = motd ] || rf_fail "motd lists: $(ls "$T/motd.mnt")"
rf_assert_worker_fenced "$(rf_worker motd)"
rf_stop
# the installed ringfence-plugin-check runs the installed broker beside it
"$P/sbin/ringfence-plugin-check" --learn "$P/lib/ringfence/plugins/passthrough.so" >"$T/learned" 2>"$T/learned.err" ||
	{ cat "$T/learned.err" >&2; rf_fail "the installed ringfence-plugin-check"; }
grep -qx "@include $T/etc/ringfence/worker.policy" "$T/learned" || rf_fail "learned: $(head -8 "$T/learned")"
grep -q "0 worker deaths" "$T/learned.err" || rf_fail "learned: $(tail -1 "$T/learned.err")"
# the installed seccomp policy is the one it reads: spoil it and --check says so
echo "bogus line" >>"$T/etc/ringfence/seccomp.policy"
out=$("$P/sbin/ringfenced" --check "$T/etc/ringfence/ringfence.policy" 2>&1) &&
	rf_fail "--check passed a spoilt installed seccomp policy"
echo "$out" | grep -q "^$T/etc/ringfence/seccomp.policy:" || rf_fail "--check said: $out"

rf_log "make uninstall: nothing left but the administrator's policy"
mk "${MAKEVARS[@]}" uninstall >"$T/uninstall.log" 2>&1 || { cat "$T/uninstall.log" >&2; rf_fail "make uninstall"; }
[ -z "$(installed "$P")" ] || rf_fail "left after uninstall: $(installed "$P")"
[ "$(installed "$T/etc")" = ringfence/ringfence.policy ] || rf_fail "in sysconfdir: $(installed "$T/etc")"

rf_log "make install DESTDIR=... PREFIX=/usr sysconfdir=/etc: the paths built in are the final ones"
mk BUILD="$T/build" DESTDIR="$T/dest" PREFIX=/usr sysconfdir=/etc install >"$T/install.log" 2>&1 ||
	{ cat "$T/install.log" >&2; rf_fail "make install DESTDIR"; }
diff <(expected) <(installed "$T/dest/usr") >"$T/diff" || { cat "$T/diff" >&2; rf_fail "installed files differ"; }
[ "$(installed "$T/dest/etc" | tr '\n' ' ')" = "ringfence/program.policy ringfence/seccomp.policy ringfence/worker.policy " ] ||
	rf_fail "in /etc: $(installed "$T/dest/etc")"
"$T/dest/usr/sbin/ringfenced" --version | grep -qx "plugin_dir /usr/lib/ringfence/plugins" ||
	rf_fail "--version: $("$T/dest/usr/sbin/ringfenced" --version)"
grep -qx "ExecStart=/usr/sbin/ringfenced -f -c /etc/ringfence/ringfence.policy" \
	"$T/dest/usr/lib/systemd/system/ringfenced.service" || rf_fail "the unit's ExecStart"
# (with a prefix as short as a distribution's: a long one makes lines that
# man cannot adjust)
"$ROOT/tests/check-man.sh" "$T"/dest/usr/share/man/man*/* >"$T/man.log" 2>&1 ||
	{ cat "$T/man.log" >&2; rf_fail "installed man pages"; }
