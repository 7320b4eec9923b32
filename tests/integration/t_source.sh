#!/bin/bash
# A source the tenant's user cannot write (not read_only): ringfenced
# --check and the start-up log name it and the fix before a client's
# write fails; a source that is fine, read_only, or empty (a dynamic
# user is handed it) draws no warning.
. "$(dirname "$0")/lib.sh"
rf_setup
S=$T/src M=$T/pt.mnt

# the warning --check gives for the tenant on line $1 running as $2
warning() {
	printf '%s:%s: [mount pt]: warning: source %s (owner 0:0, mode 0755): the tenant'"'"'s user (uid %s, gid %s) cannot write it, so every client write will fail with EACCES; hand it over (chown -R %s:%s %s) or set read_only = yes' \
		"$T/policy" "$1" "$S" "$2" "$2" "$2" "$2" "$S"
}
section_line() { grep -n '^\[mount pt\]' "$T/policy" | cut -d: -f1; }

rf_log "--check: user = nobody on a source of root's, 0755: warned, with the fix; status 0"
mkdir -p "$S"
echo hello >"$S/f"
rf_policy pt passthrough "$S" "user = nobody"
nobody=$(id -u nobody)
out=$("$RINGFENCED" --check "$T/policy" 2>&1) || rf_fail "--check failed: $out"
echo "$out" | grep -qxF "$(warning "$(section_line)" "$nobody")" || rf_fail "--check said: $out"
echo "$out" | grep -qxF "$T/policy: ok, 1 warning" || rf_fail "--check said: $out"

rf_log "  the start-up log says the same, and it is true: a client's write fails"
rf_start pt
grep -qF "pt: source $S (owner 0:0, mode 0755): the tenant's user (uid $nobody, gid $nobody) cannot write it" \
	"$T/broker.log" || rf_fail "no warning in the broker's log"
[ "$(cat "$M/f")" = hello ] || rf_fail "the file cannot be read"
out=$(sh -c "echo x >'$M/new'" 2>&1) && rf_fail "a write into a source nobody cannot write succeeded"
echo "$out" | grep -q "Permission denied" || rf_fail "the write failed otherwise: $out"
rf_stop

rf_log "  read_only = yes: no warning"
rf_policy_reset
rf_policy pt passthrough "$S" "user = nobody" "read_only = yes"
out=$("$RINGFENCED" --check "$T/policy" 2>&1) || rf_fail "--check failed: $out"
[ "$out" = "$T/policy: ok" ] || rf_fail "--check said: $out"

rf_log "  handed over (chown -R): no warning"
rf_policy_reset
rf_policy pt passthrough "$S" "user = nobody"
chown -R nobody: "$S"
out=$("$RINGFENCED" --check "$T/policy" 2>&1) || rf_fail "--check failed: $out"
[ "$out" = "$T/policy: ok" ] || rf_fail "--check said: $out"
chown -R root:root "$S"

rf_log "a dynamic user on a source of root's that holds files: warned with the uid it then gets"
rf_policy_reset
rf_policy pt passthrough "$S"
out=$("$RINGFENCED" --check "$T/policy" 2>&1) || rf_fail "--check failed: $out"
[ ! -e "$T/users" ] || rf_fail "--check wrote the users file"
uid=$(echo "$out" | sed -n 's/.*the tenant.s user (uid \([0-9]*\),.*/\1/p')
[ -n "$uid" ] || rf_fail "--check said: $out"
echo "$out" | grep -qxF "$(warning "$(section_line)" "$uid")" || rf_fail "--check said: $out"
rf_start pt
grep -qx "pt $uid" "$T/users" || rf_fail "the tenant got another uid than --check named: $(cat "$T/users")"
grep -qF "pt: source $S (owner 0:0, mode 0755): the tenant's user (uid $uid, gid $uid) cannot write it" \
	"$T/broker.log" || rf_fail "no warning in the broker's log"
rf_stop

rf_log "  an empty source, which the dynamic user is handed at start: no warning"
rf_policy_reset
rf_policy pt passthrough "$T/empty"
out=$("$RINGFENCED" --check "$T/policy" 2>&1) || rf_fail "--check failed: $out"
[ "$out" = "$T/policy: ok" ] || rf_fail "--check said: $out"
rf_start pt
[ "$(stat -c %u "$T/empty")" = "$uid" ] || rf_fail "the empty source was not handed over"
grep -q "cannot write it" "$T/broker.log" && rf_fail "a warning for a source that was handed over"
echo x >"$T/pt.mnt/new" || rf_fail "a write into the handed-over source failed"
rf_stop

rf_log "a source that does not exist: warned"
rf_policy_reset
rf_policy pt passthrough
printf 'source = %s/none\n' "$T" >>"$T/policy"
out=$("$RINGFENCED" --check "$T/policy" 2>&1) || rf_fail "--check failed: $out"
echo "$out" | grep -qF "[mount pt]: warning: source $T/none: No such file or directory: the tenant cannot start" ||
	rf_fail "--check said: $out"
