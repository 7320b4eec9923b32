#!/bin/bash
# Three tenants from one policy file (two passthrough under different
# users, one memfs), the control plane (status, stats, --json, restart,
# umount, permissions) and reloads that touch only what changed.
. "$(dirname "$0")/lib.sh"
rf_setup
rf_policy a passthrough "$T/src-a"
rf_policy b passthrough "$T/src-b" "user = daemon" "group = daemon"
rf_policy c memfs ""
chown 1:1 "$T/src-b"
sed -i "s|^control_socket = .*|&\ncontrol_group = nogroup|" "$T/policy"
rf_start a b c
CTLS="$CTL -s $T/ctl.sock"

rf_log "three tenants serve, each alone with its data"
echo alpha >"$T/a.mnt/fa" && echo beta >"$T/b.mnt/fb" && echo gamma >"$T/c.mnt/fc" ||
	rf_fail "a tenant does not serve"
[ "$(stat -c %u "$T/src-a/fa")" = "$(rf_uid a)" ] && [ "$(stat -c %u "$T/src-b/fb")" = 1 ] ||
	rf_fail "files not owned by their tenant's user"
WA=$(rf_worker a) WB=$(rf_worker b) WC=$(rf_worker c)
[ "$(ls /proc/"$WA"/root/source)" = fa ] && [ "$(ls /proc/"$WB"/root/source)" = fb ] ||
	rf_fail "a worker sees more than its own source"
for w in "$WA" "$WB" "$WC"; do
	# itself (PID 1 of its namespace) and its plugin host, by the host's
	# pid in that namespace
	h=$(awk '/^NSpid:/ { print $NF }' "/proc/$(rf_host "$w")/status")
	others=$(ls /proc/"$w"/root/proc | grep -E '^[0-9]+$' | grep -vx 1 | grep -vx "$h" | tr '\n' ' ')
	[ -n "$h" ] && [ -z "$others" ] || rf_fail "worker $w (host $h) sees processes $others"
done
grep -q '^Uid:[[:space:]]*1[[:space:]]' "/proc/$WB/status" || rf_fail "tenant b does not run as daemon"

rf_log "every tenant a user of its own: a and c dynamic, b the policy's daemon"
UA=$(rf_uid a) UC=$(rf_uid c)
for u in "$UA" "$UC"; do
	[ "$u" -ge 1879048192 ] && [ "$u" -le 1879113727 ] || rf_fail "dynamic uid $u outside user_range"
	getent passwd "$u" >/dev/null && rf_fail "dynamic uid $u is a host account"
done
[ "$UA" != "$UC" ] || rf_fail "tenants a and c share uid $UA"
[ "$(rf_field a gid)" = "$UA" ] || rf_fail "a's gid is not its uid"
[ "$(rf_field b user)" = daemon ] && [ "$(rf_uid b)" = 1 ] && [ "$(rf_field b gid)" = 1 ] ||
	rf_fail "b: $(rf_status b)"
[ "$(stat -c %u:%g "$T/src-a")" = "$UA:$UA" ] || rf_fail "a's empty source was not handed to its user"
grep -qx "a $UA" "$T/users" && grep -qx "c $UC" "$T/users" || rf_fail "users file: $(cat "$T/users")"
grep -q "^Uid:[[:space:]]*$UC[[:space:]]" "/proc/$WC/status" || rf_fail "c's worker runs as $(grep Uid "/proc/$WC/status")"
# two tenants on one named user: refused, unless both say so
printf '[mount x]\nmountpoint = /mnt/x\nplugin = hello\nuser = daemon\n\n[mount y]\nmountpoint = /mnt/y\nplugin = hello\nuser = daemon\n' >"$T/two.policy"
out=$("$RINGFENCED" --check "$T/two.policy" 2>&1) && rf_fail "two tenants on daemon were accepted"
echo "$out" | grep -q "two.policy:9: user: 'daemon' is also the user of \[mount x\] (line 1)" ||
	rf_fail "--check on two tenants of one user: $out"
sed -i 's/^user = daemon$/&\nshared_user = yes/' "$T/two.policy"
"$RINGFENCED" --check "$T/two.policy" >/dev/null || rf_fail "shared_user = yes in both was refused"

rf_log "status and stats, in text and JSON"
$CTLS status | grep -c '^tenant=' | grep -qx 3 || rf_fail "status lists $($CTLS status | wc -l) tenants"
$CTLS --json status | python3 -c '
import json, sys
d = json.load(sys.stdin)
names = sorted(t["tenant"] for t in d["tenants"])
assert names == ["a", "b", "c"], names
for t in d["tenants"]:
    assert t["state"] == "running" and t["worker"] > 0 and t["requests"] > 0, t
    assert set(t["latency_us"]) == {"p50", "p99", "max"}, t
' || rf_fail "--json status does not parse or says the wrong thing"
$CTLS --json stats a | python3 -c '
import json, sys
t = json.load(sys.stdin)["tenants"][0]
assert t["by_opcode"].get("CREATE", 0) >= 1 and t["by_opcode"].get("WRITE", 0) >= 1, t
assert t["bytes_written"] >= 6, t
' || rf_fail "--json stats"
$CTLS stats a | grep -qE '^  op WRITE +[0-9]+' || rf_fail "text stats lack opcodes"
$CTLS status nope 2>/dev/null && rf_fail "status of an unknown tenant succeeded"

rf_log "the control socket: root and control_group only"
setpriv --reuid=65534 --regid=65534 --clear-groups "$CTL" -s "$T/ctl.sock" status >/dev/null ||
	rf_fail "a member of control_group was refused"
setpriv --reuid=1 --regid=1 --clear-groups "$CTL" -s "$T/ctl.sock" status >/dev/null 2>&1 &&
	rf_fail "a stranger got in"
# even with the file opened to all, the broker checks the peer itself
chmod 0666 "$T/ctl.sock"
out=$(setpriv --reuid=1 --regid=1 --clear-groups "$CTL" -s "$T/ctl.sock" status 2>&1) &&
	rf_fail "SO_PEERCRED let a stranger in"
echo "$out" | grep -q "permission denied (root or control_group only)" || rf_fail "refusal: $out"
# The peer's groups: once read from a 512-byte line of /proc/PID/status,
# so a Groups: line longer than that came in two pieces and a number cut
# at the end of the first could read as control_group's gid. 133 groups,
# none of them nogroup, with 655341 straddling byte 511 (the kernel lists
# them sorted, each followed by a space, after "Groups:\t").
ng=$(getent group nogroup | cut -d: -f3)
many=$(python3 - "$ng" <<'EOF'
import sys
g = sys.argv[1]
for five in range(0, 80):
    rest = 511 - len("Groups:\t") - len(g) - 6 * five
    if rest >= 0 and rest % 7 == 0:
        break
below = [10000 + i for i in range(five)] + [100000 + i for i in range(rest // 7)]
cut = int(g + "1")
above = [1000000 + i for i in range(60)]
assert below[-1] < cut < above[0] and int(g) not in below + above
print(",".join(str(x) for x in below + [cut] + above))
EOF
)
[ "$(echo "$many" | tr ',' '\n' | wc -l)" -gt 100 ] || rf_fail "the group list is too short"
out=$(setpriv --reuid=1 --regid=1 --groups="$many" "$CTL" -s "$T/ctl.sock" status 2>&1) &&
	rf_fail "a peer in $(echo "$many" | tr ',' '\n' | wc -l) groups, none of them control_group, got in"
echo "$out" | grep -q "permission denied" || rf_fail "refusal of a peer in many groups: $out"
setpriv --reuid=1 --regid=1 --groups="$many,$ng" "$CTL" -s "$T/ctl.sock" status >/dev/null ||
	rf_fail "a peer with control_group as its 134th group was refused"
rf_log "  SO_PEERGROUPS: 133 groups without control_group refused, with it as the 134th let in"
chmod 0660 "$T/ctl.sock"

rf_log "silent peers hold only their own connections; commands may come in pieces"
python3 - "$T/ctl.sock" "$CTL" <<'PY' || rf_fail "the control socket stalled or misread"
import socket, subprocess, sys, time
path, ctl = sys.argv[1], sys.argv[2]
def conn():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    return s
def answer(s):
    s.settimeout(10)
    out = b""
    while chunk := s.recv(65536):
        out += chunk
    return out.decode()
# 20 peers that say nothing: each used to stall the broker for a second
silent = [conn() for _ in range(20)]
r = subprocess.run(["timeout", "3", ctl, "-s", path, "status"], capture_output=True, text=True)
assert r.returncode == 0 and r.stdout.count("tenant=") == 3, ("stalled", r)
# a command in two pieces, and one ended by shutdown instead of a newline
s = conn(); s.send(b"sta"); time.sleep(0.3); s.send(b"tus c\n")
assert answer(s).startswith("tenant=c "), "split command"
s = conn(); s.send(b"status a"); s.shutdown(socket.SHUT_WR)
assert answer(s).startswith("tenant=a "), "command without newline"
s = conn(); s.send(b"x" * 1300)
assert "longer than 1279 bytes" in answer(s), "overlong command"
# at 32 open connections the broker stops accepting: the next peers wait
# in the backlog until silent ones time out (5 s), and are then answered
extra = [conn() for _ in range(12)]
r = subprocess.run(["timeout", "20", ctl, "-s", path, "status"], capture_output=True, text=True)
assert r.returncode == 0 and r.stdout.count("tenant=") == 3, ("ctl at the cap", r)
for x in silent + extra:
    x.close()
time.sleep(0.2)
r = subprocess.run(["timeout", "3", ctl, "-s", path, "status"], capture_output=True, text=True)
assert r.returncode == 0, ("after the flood", r)
# a broker that reads the command and hangs up: an error, not silence
mute = path + ".mute"
srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
srv.bind(mute)
srv.listen(1)
p = subprocess.Popen([ctl, "-s", mute, "status"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
c, _ = srv.accept()
c.recv(256)
c.close()
out, err = p.communicate(timeout=10)
assert p.returncode == 1 and "without an answer" in err, ("mute broker", p.returncode, out, err)
srv.close()
PY
grep -q "control: 32 connections open; new ones wait" "$T/broker.log" || rf_fail "the cap was not logged"

rf_log "restart and umount one tenant"
$CTLS restart c >/dev/null || rf_fail "restart c"
rf_wait_state c running
[ "$(rf_worker c)" != "$WC" ] && [ "$(rf_field c restarts)" = 1 ] || rf_fail "c did not restart"
[ "$(rf_worker a)" = "$WA" ] || rf_fail "restarting c touched a"
WC=$(rf_worker c)
$CTLS umount c >/dev/null || rf_fail "umount c"
[ "$(rf_field c state)" = stopped ] || rf_fail "c is $(rf_field c state)"
rf_is_mounted "$T/c.mnt" && rf_fail "c still mounted"
kill -0 "$WC" 2>/dev/null && rf_fail "c's worker outlived its umount"
$CTLS restart c >/dev/null || rf_fail "c did not come back"
rf_wait_state c running

rf_log "reload: b changes, c goes, d comes, a stays as it is"
WA=$(rf_worker a) WB=$(rf_worker b)
cp "$T/policy" "$T/policy.orig"
python3 - "$T/policy" "$T" <<'PY'
import re, sys
path, t = sys.argv[1], sys.argv[2]
s = open(path).read()
s = s.replace("[mount b]\n", "[mount b]\nqueue_depth = 4\n")
s = re.sub(r"\[mount c\]\n(.+\n)+", "", s)
s += "[mount d]\nmountpoint = %s/d.mnt\nplugin = hello\n" % t
open(path, "w").write(s)
PY
mkdir -p "$T/d.mnt"
MOUNTS+=("$T/d.mnt")
out=$($CTLS reload) || rf_fail "reload: $out"
echo "$out" | grep -q "1 added, 1 removed, 1 restarted, 1 unchanged" || rf_fail "reload said: $out"
rf_wait_state b running
rf_wait_state d running
[ "$(rf_worker a)" = "$WA" ] || rf_fail "reload restarted the unchanged tenant a"
[ "$(rf_worker b)" != "$WB" ] && [ "$(rf_field b depth)" = 4 ] || rf_fail "b did not follow the change"
$CTLS status c >/dev/null 2>&1 && rf_fail "c is still there"
rf_is_mounted "$T/c.mnt" && rf_fail "c still mounted after reload"
[ "$(cat "$T/d.mnt/hello")" != "" ] || rf_fail "d is not serving"
[ "$(cat "$T/a.mnt/fa")" = alpha ] || rf_fail "a lost its data across the reload"

rf_log "a bad file is refused whole; SIGHUP reloads too"
cp "$T/policy" "$T/policy.good"
printf '[mount e]\nmountpoint = %s/e.mnt\nplugin = hello\nqueue_depth = many\n' "$T" >>"$T/policy"
out=$($CTLS reload 2>&1) && rf_fail "a bad policy was applied"
echo "$out" | grep -q "queue_depth: expected a whole number" || rf_fail "reload error: $out"
[ "$(rf_worker a)" = "$WA" ] && rf_field d state | grep -qx running || rf_fail "a refused reload changed things"
cp "$T/policy.orig" "$T/policy"
kill -HUP "$BROKER_PID"
rf_wait_state c running
$CTLS status d >/dev/null 2>&1 && rf_fail "SIGHUP left d"
[ "$(rf_worker a)" = "$WA" ] || rf_fail "SIGHUP restarted a"
rf_stop
rf_log "a restarted broker gives each tenant the same user"
rf_start a b c
[ "$(rf_uid a)" = "$UA" ] && [ "$(rf_uid c)" = "$UC" ] ||
	rf_fail "uids moved across a restart: a $UA -> $(rf_uid a), c $UC -> $(rf_uid c)"
[ "$(cat "$T/a.mnt/fa")" = alpha ] && echo more >>"$T/a.mnt/fa" || rf_fail "a cannot write its own file after a restart"
rf_stop
