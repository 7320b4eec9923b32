// SPDX-License-Identifier: MIT
/* The broker's state handed to its next image (broker/handover.c): what
 * is written is read back field for field, and a state no broker could
 * have written, or one this build cannot serve on, is refused with the
 * line at fault. */
#include "check_main.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker.h"
#include "msg.h"

static const char policy_text[] = "[global]\ncontrol_socket = /run/x/ctl.sock\n\n"
				  "[mount a]\nmountpoint = /mnt/a\nplugin = passthrough\n"
				  "source = /srv/a\nrestore_nodes = 64\n\n"
				  "[mount b]\nmountpoint = /mnt/b\nplugin = memfs\n";

static struct rf_broker b;
static struct rf_tenant ta, tb;
static struct rf_tenant *tenants[2] = { &ta, &tb };
static int some_event; /* stands for a struct event: only its being set counts */

static void setup(void)
{
	char err[1024];
	struct rf_policy *p;
	unsigned int i;

	ck_assert_int_eq(rf_policy_parse("/etc/x.policy", policy_text, strlen(policy_text), &p, err,
					 sizeof(err)),
			 0);
	p->text = strdup(policy_text);
	p->text_len = strlen(policy_text);
	memset(&b, 0, sizeof(b));
	b.policy = p;
	b.config = "/etc/x.policy";
	b.pid = 4242;
	b.nqueues = 2;
	b.foreground = 1;
	b.debug = 1;
	b.bench = 5;
	b.ctl_fd = 7;
	b.handovers = 2;
	b.tenants = tenants;
	b.ntenants = 2;

	memset(&ta, 0, sizeof(ta));
	ta.pol = p->mounts[0];
	snprintf(ta.pol.plugin, sizeof(ta.pol.plugin), "/opt/new passthrough.so");
	ta.index = 0;
	ta.state = RF_TENANT_RUNNING;
	snprintf(ta.fail_reason, sizeof(ta.fail_reason), " two\nlines \\ and \x01 é ");
	ta.uid = 1879048192;
	ta.gid = 1879048193;
	ta.fuse_fd = 10;
	ta.mounted = true;
	ta.conn_id = 77;
	ta.conn.minor = 45;
	ta.conn.max_write = 1 << 20;
	ta.conn.max_pages = 256;
	ta.conn.payload_size = 1 << 20;
	ta.conn.flags = 0x8000000100000001ULL;
	ta.conn.transport = RF_TRANSPORT_URING;
	ta.conn.bufpool_offered = true;
	ta.conn.zero_copy = false;
	snprintf(ta.conn.why, sizeof(ta.conn.why), "io-uring (enable_uring)");
	ta.cg.ngroups = 2;
	snprintf(ta.cg.dir[0], sizeof(ta.cg.dir[0]), "/sys/fs/cgroup/memory/rf/a");
	snprintf(ta.cg.dir[1], sizeof(ta.cg.dir[1]), "/sys/fs/cgroup/pids/rf/a");
	snprintf(ta.cg.procs[0], sizeof(ta.cg.procs[0]), "/sys/fs/cgroup/memory/rf/a/cgroup.procs");
	snprintf(ta.cg.mechanism, sizeof(ta.cg.mechanism), "cgroup1(memory,pids)");
	ta.cg.pids = true;
	snprintf(ta.disk_mechanism, sizeof(ta.disk_mechanism), "prjquota(ext4)");
	ta.pool_fd = 11;
	ta.state_fd = 12;
	ck_assert_int_eq(rf_pool_geom_init(&ta.geom, 2, 8, 1 << 20, 0), 0);
	ta.worker_pid = 5000;
	ta.worker_start = 123456789012ULL;
	ta.ipc_fd = 13;
	ta.ipc_ev = (struct event *)&some_event;
	ta.msgs_seen = 0x1f;
	ta.started = 1764700000;
	ta.restarts = 3;
	ta.crashes = 9;
	ta.generation = 12;
	ta.watchdog_kills = 1;
	ta.heartbeat_kills = 2;
	ta.outside_kills = 4;
	ta.proc.sigkilled = true;
	ta.hb_seq = 99;
	ta.hb_sent_seq = 98;
	ta.hb_sent_ns = 18446744073709551000ULL;
	for (i = 0; i < RF_CRASH_LIMIT_MAX; i++)
		ta.deaths[i] = 1764700000 + i;
	ta.log_dropped = 1ULL << 40;
	ta.log_dropped_told = 5;

	memset(&tb, 0, sizeof(tb));
	tb.pol = p->mounts[1];
	tb.index = 3;
	tb.state = RF_TENANT_RESPONDING;
	tb.fuse_fd = tb.pool_fd = tb.state_fd = -1;
	/* given up: no pool, the geometry it had kept for its status */
	ck_assert_int_eq(rf_pool_geom_init(&tb.geom, 2, 4, 8192, 0), 0);
	tb.ipc_fd = 14; /* no event watches it: not handed over */
}

static void teardown(void)
{
	rf_policy_free(b.policy);
}

/* @b's state as text (malloc'd). */
static char *written(void)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(rf_handover_write(&b, 9, f), 0);
	fclose(f);
	return text;
}

/* @text with the first @from replaced by @to (malloc'd). */
static char *edited(const char *text, const char *from, const char *to)
{
	const char *at = strstr(text, from);
	size_t n;
	char *out;

	ck_assert_msg(at, "no '%s' in the state", from);
	n = strlen(text) - strlen(from) + strlen(to) + 1;
	out = malloc(n);
	ck_assert_ptr_nonnull(out);
	snprintf(out, n, "%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
	return out;
}

static int parse(const char *text, struct rf_handover *h, char *err, size_t len)
{
	err[0] = '\0';
	return rf_handover_parse(text, strlen(text), h, err, len);
}

/* a refused state: -EINVAL, and @want in the reason */
static void refused(const char *text, const char *want)
{
	struct rf_handover h;
	char err[4096];

	ck_assert_int_eq(parse(text, &h, err, sizeof(err)), -EINVAL);
	ck_assert_msg(strstr(err, want), "reason '%s' lacks '%s'", err, want);
	ck_assert_ptr_null(h.policy);
	ck_assert_ptr_null(h.tenants);
}

#define SAME(f) ck_assert_msg(!memcmp(&x->f, &y->f, sizeof(x->f)), "%s differs", #f)

START_TEST(test_round_trip)
{
	char *text = written(), err[1024];
	const struct rf_tenant *x, *y;
	struct rf_handover h;
	unsigned int k;

	ck_assert_int_eq(parse(text, &h, err, sizeof(err)), 0);
	ck_assert_int_eq(h.pid, 4242);
	ck_assert_uint_eq(h.nqueues, 2);
	ck_assert_int_eq(h.foreground, 1);
	ck_assert_int_eq(h.debug, 1);
	ck_assert_uint_eq(h.bench, 5);
	ck_assert_int_eq(h.ctl_fd, 7);
	ck_assert_int_eq(h.reply_fd, 9);
	ck_assert_uint_eq(h.handovers, 3); /* this one counted */
	ck_assert_str_eq(h.writer, RF_VERSION);
	ck_assert_str_eq(h.config, "/etc/x.policy");
	ck_assert_uint_eq(h.policy->text_len, strlen(policy_text));
	ck_assert(!memcmp(h.policy->text, policy_text, strlen(policy_text)));
	ck_assert_uint_eq(h.policy->nmounts, 2);
	ck_assert_uint_eq(h.ntenants, 2);
	for (k = 0; k < 2; k++) {
		x = tenants[k];
		y = &h.tenants[k];
		SAME(pol.name);
		SAME(pol.mountpoint);
		SAME(pol.source);
		SAME(pol.restore_nodes);
		ck_assert_str_eq(x->pol.plugin, y->pol.plugin);
		SAME(index);
		SAME(state);
		ck_assert_str_eq(x->fail_reason, y->fail_reason);
		SAME(uid);
		SAME(gid);
		SAME(fuse_fd);
		SAME(mounted);
		SAME(conn_id);
		SAME(conn.minor);
		SAME(conn.max_write);
		SAME(conn.max_pages);
		SAME(conn.payload_size);
		SAME(conn.flags);
		SAME(conn.transport);
		SAME(conn.bufpool_offered);
		SAME(conn.bufpool);
		SAME(conn.zero_copy);
		ck_assert_str_eq(x->conn.why, y->conn.why);
		SAME(cg.ngroups);
		ck_assert_str_eq(x->cg.dir[0], y->cg.dir[0]);
		ck_assert_str_eq(x->cg.dir[1], y->cg.dir[1]);
		ck_assert_str_eq(x->cg.procs[0], y->cg.procs[0]);
		ck_assert_str_eq(x->cg.mechanism, y->cg.mechanism);
		SAME(cg.pids);
		SAME(cg.sched_idle);
		ck_assert_str_eq(x->disk_mechanism, y->disk_mechanism);
		SAME(pool_fd);
		SAME(state_fd);
		SAME(geom); /* recomputed from the four numbers handed over */
		SAME(worker_pid);
		SAME(worker_start);
		SAME(msgs_seen);
		SAME(started);
		SAME(restarts);
		SAME(crashes);
		SAME(generation);
		SAME(watchdog_kills);
		SAME(heartbeat_kills);
		SAME(outside_kills);
		SAME(proc.sigkilled);
		SAME(hb_seq);
		SAME(hb_sent_seq);
		SAME(hb_sent_ns);
		SAME(deaths);
		SAME(log_dropped);
		SAME(log_dropped_told);
		/* the new image makes its own events, maps its own pools */
		ck_assert_ptr_null(y->ipc_ev);
		ck_assert_ptr_null(y->pool);
		ck_assert_ptr_null(y->kicks);
	}
	ck_assert_int_eq(h.tenants[0].ipc_fd, 13);
	ck_assert_int_eq(h.tenants[1].ipc_fd, -1); /* no event watched it */
	rf_handover_free(&h);
	free(text);
}
END_TEST

/* an older writer that lacks a field: it reads as zero */
START_TEST(test_missing_field_is_zero)
{
	char *text = written(), *t2 = edited(text, "heartbeat_kills 2\n", ""), err[1024];
	struct rf_handover h;

	ck_assert_int_eq(parse(t2, &h, err, sizeof(err)), 0);
	ck_assert_uint_eq(h.tenants[0].heartbeat_kills, 0);
	ck_assert_uint_eq(h.tenants[0].watchdog_kills, 1);
	rf_handover_free(&h);
	free(t2);
	free(text);
}
END_TEST

/* format 1, as the last build before format 2 wrote it: four states,
 * the responder and a stopping tenant as flags */
static char *format1(const char *text, const char *b_state)
{
	char *t1 = edited(text, "ringfence-broker-state 2", "ringfence-broker-state 1");
	char *t2 = edited(t1, "\nstate 2\n", "\nstate 2\nstopping 0\nresponder 0\n");
	char *t3 = edited(t2, "\nstate 4\n", b_state);

	free(t1);
	free(t2);
	return t3;
}

START_TEST(test_format_1)
{
	char *text = written(), *t1, err[1024];
	struct rf_handover h;

	/* a failed tenant whose worker is the responder */
	t1 = format1(text, "\nstate 3\nstopping 0\nresponder 1\n");
	ck_assert_msg(parse(t1, &h, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(h.tenants[0].state, RF_TENANT_RUNNING);
	ck_assert_int_eq(h.tenants[1].state, RF_TENANT_RESPONDING);
	rf_handover_free(&h);
	free(t1);
	/* failed, and stopped */
	t1 = format1(text, "\nstate 3\nstopping 1\nresponder 0\n");
	ck_assert_msg(parse(t1, &h, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(h.tenants[1].state, RF_TENANT_FAILED);
	rf_handover_free(&h);
	free(t1);
	/* a responder that is running, a state format 1 never had, a bad flag */
	t1 = format1(text, "\nstate 2\nresponder 1\n");
	refused(t1, "tenant b: the responder, state 2");
	free(t1);
	t1 = format1(text, "\nstate 4\n");
	refused(t1, "tenant b: state 4 in format 1");
	free(t1);
	t1 = format1(text, "\nstate 3\nresponder 2\n");
	refused(t1, "responder: bad value '2'");
	free(t1);
	free(text);
}
END_TEST

static const struct {
	const char *from, *to, *why;
} bad[] = {
	{ "ringfence-broker-state 2", "ringfence-broker-state 3", "format 3; this ringfenced" },
	{ "ringfence-broker-state 2", "some-other-state 2", "not a ringfence broker state" },
	{ "bench 5\n", "bench 5\nshiny 1\n", "shiny: unknown field (written by a newer" },
	{ "heartbeat_kills 2\n", "heartbeat_kills 2\nwarp 1\n", "warp: unknown field of tenant a" },
	{ "ipc_version ", "ipc_version 9", "speak IPC version 9" },
	{ "pool_version ", "pool_version 9", "pool layout 9" },
	{ "\nend\n", "\n", "the state ends early" },
	{ "\nend\n", "\nend\nmore\n", "text after \"end\"" },
	{ "tenant b\n", "tenant c\n", "tenant c: not in the policy" },
	{ "tenant b\n", "tenant a\n", "tenant a twice" },
	{ "index 3\n", "index 0\n", "pool index 0 is a's too" },
	{ "index 3\n", "index 5000\n", "pool index 5000" },
	{ "\nstate 2\n", "\nstate 1\n", "state 1 (starting) cannot be handed over" },
	{ "\nstate 2\n", "\nstate 10\n", "state 10 (upgrade: old ends) cannot be handed over" },
	{ "\nstate 2\n", "\nstate 99\n", "state 99 (?) cannot be handed over" },
	/* format 1's flags are not format 2's */
	{ "state 4\n", "state 4\nresponder 1\n", "responder: unknown field of tenant b" },
	{ "\nstate 2\n", "\nstate 2\nstopping 0\n", "stopping: unknown field of tenant a" },
	{ "geom.depth 8\n", "geom.depth 0\n", "no possible geometry" },
	{ "geom.nqueues 2\n", "geom.nqueues 3\n", "no possible geometry" },
	{ "conn.transport 1\n", "conn.transport 7\n", "transport 7" },
	{ "cg.ngroups 2\n", "cg.ngroups 5\n", "5 cgroups" },
	{ "deaths.31 ", "deaths.32 ", "deaths.32: unknown field" },
	{ "deaths.31 ", "deaths.3x ", "deaths.3x: unknown field" },
	{ "restarts 3\n", "restarts -3\n", "restarts: bad value '-3'" },
	{ "restarts 3\n", "restarts 4294967296\n", "restarts: bad value" },
	{ "fuse_fd 10\n", "fuse_fd 2147483648\n", "fuse_fd: bad value" },
	{ "mounted 1\n", "mounted 2\n", "mounted: bad value '2'" },
	{ "disk_mechanism prjquota(ext4)", "disk_mechanism a\\x00b", "bad value" },
	{ "disk_mechanism prjquota(ext4)",
	  "disk_mechanism 0123456789012345678901234567890123456789", "bad value" },
	{ "worker_pid 5000\n", "worker_pid -2\n", "below -1" },
	{ "worker_pid 5000\n", "worker_pid 0\n", "a worker socket without a worker" },
	{ "policy ", "policy 9", "does not fit the state" },
	{ "tenant a\n", "tenant a\nstate\n", "a key and a value expected" },
	{ "pid 4242\n", "", "no policy, pid or nqueues" },
};

START_TEST(test_refused)
{
	char *text = written(), *t2 = edited(text, bad[_i].from, bad[_i].to);

	refused(t2, bad[_i].why);
	free(t2);
	free(text);
}
END_TEST

/* every prefix of a good state is refused, none read past its end (ASan) */
START_TEST(test_truncated)
{
	char *text = written(), err[1024];
	size_t n, len = strlen(text);
	struct rf_handover h;

	for (n = 0; n < len; n++) {
		char *cut = malloc(n ? n : 1);

		memcpy(cut, text, n);
		ck_assert_int_eq(rf_handover_parse(cut, n, &h, err, sizeof(err)), -EINVAL);
		free(cut);
	}
	free(text);
}
END_TEST

/* the policy is parsed by the reader: a text with errors is refused */
START_TEST(test_bad_policy)
{
	char *text = written(),
	     *t2 = edited(text, "plugin = memfs\n", "plugin = memfs\nbogus = 1\n");
	char old[32], len[32], *t3;

	snprintf(old, sizeof(old), "policy %zu\n", strlen(policy_text));
	snprintf(len, sizeof(len), "policy %zu\n", strlen(policy_text) + strlen("bogus = 1\n"));
	t3 = edited(t2, old, len);
	refused(t3, "the policy handed over does not parse");
	free(t3);
	free(t2);
	free(text);
}
END_TEST

static Suite *handover_suite(void)
{
	Suite *s = suite_create("handover");
	TCase *tc = tcase_create("state");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_round_trip);
	tcase_add_test(tc, test_missing_field_is_zero);
	tcase_add_test(tc, test_format_1);
	tcase_add_loop_test(tc, test_refused, 0, (int)(sizeof(bad) / sizeof(bad[0])));
	tcase_add_test(tc, test_truncated);
	tcase_add_test(tc, test_bad_policy);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return rf_check_run(handover_suite());
}
