// SPDX-License-Identifier: MIT
/*
 * The control socket: a unix stream socket answering one command per
 * connection with text or JSON. Peers must be root or in the policy's
 * control_group (SO_PEERCRED, supplementary groups included).
 *
 *   status [TENANT] [json]     one line (object) per tenant
 *   stats [TENANT] [json]      counters: by opcode, by errno, latency
 *   reload                     re-read the policy file, apply the difference
 *   restart TENANT             stop and start (also leaves "failed")
 *   umount TENANT              stop and unmount; "restart" brings it back
 *   upgrade TENANT [PLUGIN]    a new worker generation (of PLUGIN) keeping the
 *                              mount, its node ids and open files; answered
 *                              when it serves, or when it was rolled back
 *   upgrade-broker             re-execute the broker's binary keeping every
 *                              mount and worker; answered by the new image
 *
 * A connection is read and answered through the event loop, never by
 * blocking in it: a peer that connects and says nothing holds only its own
 * connection, for RF_CONTROL_TIMEOUT seconds, and at most
 * RF_CONTROL_CONNS connections are open at once (more wait to be accepted).
 */
#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <fcntl.h>
#include <grp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "broker.h"
#include "fuse_uapi.h"
#include "log.h"

/* An answer being written: it grows as needed; a failed allocation ends
 * it with an error line rather than cutting it unnoticed. */
#define RF_CONTROL_ANSWER_MAX (16U << 20)

struct out {
	char *buf;
	size_t len, used;
	bool failed;
};

static void put(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void put(struct out *o, const char *fmt, ...)
{
	va_list ap;
	int n;

	for (;;) {
		if (o->failed)
			return;
		va_start(ap, fmt);
		n = vsnprintf(o->buf ? o->buf + o->used : NULL, o->len - o->used, fmt, ap);
		va_end(ap);
		if (n < 0)
			return;
		if (o->used + (size_t)n < o->len) {
			o->used += (size_t)n;
			return;
		}
		size_t len = (o->len ? o->len : 16384) * 2;
		char *nb = len <= RF_CONTROL_ANSWER_MAX ? realloc(o->buf, len) : NULL;

		if (!nb) {
			static const char cut[] = "\nerror: answer too large\n";

			o->failed = true;
			if (o->len - o->used > sizeof(cut)) {
				memcpy(o->buf + o->used, cut, sizeof(cut));
				o->used += sizeof(cut) - 1;
			}
			return;
		}
		o->buf = nb;
		o->len = len;
	}
}

/* JSON string: only what names and paths can hold needs escaping. */
static void put_jstr(struct out *o, const char *s)
{
	put(o, "\"");
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			put(o, "\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			put(o, "\\u%04x", (unsigned char)*s);
		else
			put(o, "%c", *s);
	}
	put(o, "\"");
}

/* The worker's counters summed over the broker's count of queues: shown,
 * never trusted (any value is a possible count; sums wrap, harmlessly). */
static void sum_stats(const struct rf_tenant *t, struct rf_queue_stats *s)
{
	uint32_t q, i;

	memset(s, 0, sizeof(*s));
	if (!t->pool)
		return;
	for (q = 0; q < t->geom.nqueues; q++) {
		const volatile struct rf_queue_stats *x = rf_pool_stats(t->pool, q);

		s->requests += x->requests;
		s->uring_requests += x->uring_requests;
		s->classic_requests += x->classic_requests;
		s->errors += x->errors;
		s->read_fixed_ops += x->read_fixed_ops;
		s->read_fixed_bytes += x->read_fixed_bytes;
		s->write_fixed_ops += x->write_fixed_ops;
		s->write_fixed_bytes += x->write_fixed_bytes;
		s->inline_ops += x->inline_ops;
		s->inline_bytes += x->inline_bytes;
		s->zero_copy_ops += x->zero_copy_ops;
		s->zero_copy_bytes += x->zero_copy_bytes;
		s->spliced_ops += x->spliced_ops;
		s->spliced_bytes += x->spliced_bytes;
		s->restored_nodes += x->restored_nodes;
		s->restored_files += x->restored_files;
		s->restore_failed += x->restore_failed;
		s->restore_full += x->restore_full;
		for (i = 0; i < RF_STATS_SIZE_BUCKETS; i++) {
			s->read_size_log2[i] += x->read_size_log2[i];
			s->write_size_log2[i] += x->write_size_log2[i];
		}
		s->forgets += x->forgets;
		s->interrupts += x->interrupts;
		s->bytes_read += x->bytes_read;
		s->bytes_written += x->bytes_written;
		if (x->latency_max_ns > s->latency_max_ns)
			s->latency_max_ns = x->latency_max_ns;
		for (i = 0; i < RF_STATS_OPCODES; i++)
			s->by_opcode[i] += x->by_opcode[i];
		for (i = 0; i < RF_STATS_ERRNOS; i++)
			s->by_errno[i] += x->by_errno[i];
		for (i = 0; i < RF_STATS_LAT_BUCKETS; i++)
			s->latency_us_log2[i] += x->latency_us_log2[i];
	}
}

/* Upper bound in microseconds of the bucket holding quantile @q. */
static unsigned long long percentile_us(const struct rf_queue_stats *s, double q)
{
	uint64_t total = 0, seen = 0;
	unsigned int b;

	for (b = 0; b < RF_STATS_LAT_BUCKETS; b++)
		total += s->latency_us_log2[b];
	if (!total)
		return 0;
	for (b = 0; b < RF_STATS_LAT_BUCKETS; b++) {
		seen += s->latency_us_log2[b];
		if ((double)seen >= q * (double)total)
			return 1ULL << b;
	}
	return 1ULL << (RF_STATS_LAT_BUCKETS - 1);
}

static const char *opcode_name(unsigned int op)
{
	static const char *const names[] = {
		[FUSE_LOOKUP] = "LOOKUP",
		[FUSE_FORGET] = "FORGET",
		[FUSE_GETATTR] = "GETATTR",
		[FUSE_SETATTR] = "SETATTR",
		[FUSE_READLINK] = "READLINK",
		[FUSE_SYMLINK] = "SYMLINK",
		[FUSE_MKNOD] = "MKNOD",
		[FUSE_MKDIR] = "MKDIR",
		[FUSE_UNLINK] = "UNLINK",
		[FUSE_RMDIR] = "RMDIR",
		[FUSE_RENAME] = "RENAME",
		[FUSE_LINK] = "LINK",
		[FUSE_OPEN] = "OPEN",
		[FUSE_READ] = "READ",
		[FUSE_WRITE] = "WRITE",
		[FUSE_STATFS] = "STATFS",
		[FUSE_RELEASE] = "RELEASE",
		[FUSE_FSYNC] = "FSYNC",
		[FUSE_SETXATTR] = "SETXATTR",
		[FUSE_GETXATTR] = "GETXATTR",
		[FUSE_LISTXATTR] = "LISTXATTR",
		[FUSE_REMOVEXATTR] = "REMOVEXATTR",
		[FUSE_FLUSH] = "FLUSH",
		[FUSE_OPENDIR] = "OPENDIR",
		[FUSE_READDIR] = "READDIR",
		[FUSE_RELEASEDIR] = "RELEASEDIR",
		[FUSE_FSYNCDIR] = "FSYNCDIR",
		[FUSE_ACCESS] = "ACCESS",
		[FUSE_CREATE] = "CREATE",
		[FUSE_FALLOCATE] = "FALLOCATE",
		[FUSE_READDIRPLUS] = "READDIRPLUS",
		[FUSE_RENAME2] = "RENAME2",
		[FUSE_LSEEK] = "LSEEK",
	};

	return op < sizeof(names) / sizeof(names[0]) && names[op] ? names[op] : NULL;
}

/* The transport INIT settled, "none" before it has */
static const char *conn_transport(const struct rf_tenant *t)
{
	return t->conn.transport == RF_TRANSPORT_AUTO ? "none"
						      : rf_transport_name(t->conn.transport);
}

/* The counters status shows, in order, as key=value or "key":value. */
static size_t status_counters(const struct rf_tenant *t, const struct rf_queue_stats *s,
			      long long up, const char **keys, unsigned long long *vals)
{
	const struct rf_pool_ctl *ctl = t->pool;
	size_t n = 0;

#define C(k, v)                                      \
	do {                                         \
		keys[n] = k;                         \
		vals[n++] = (unsigned long long)(v); \
	} while (0)
	C("uptime", up);
	C("restarts", t->restarts);
	C("crashes", t->crashes);
	C("generation", t->generation);
	C("restore_nodes", t->state_fd >= 0 ? t->pol.restore_nodes : 0);
	C("adopted", ctl ? ctl->adopted : 0);
	C("adopted_rerun", ctl ? ctl->adopted_rerun : 0);
	C("adopted_answered", ctl ? ctl->adopted_answered : 0);
	C("rescued", ctl ? ctl->rescued : 0);
	C("watchdog_kills", t->watchdog_kills);
	C("heartbeat_kills", t->heartbeat_kills);
	C("outside_kills", t->outside_kills);
	C("log_dropped", t->log_dropped);
	C("ipc_waits", t->ipc_waits);
	C("requests", s->requests);
	C("uring_requests", s->uring_requests);
	C("classic_requests", s->classic_requests);
	C("errors", s->errors);
	C("read_fixed_ops", s->read_fixed_ops);
	C("read_fixed_bytes", s->read_fixed_bytes);
	C("write_fixed_ops", s->write_fixed_ops);
	C("write_fixed_bytes", s->write_fixed_bytes);
	C("inline_ops", s->inline_ops);
	C("inline_bytes", s->inline_bytes);
	C("zero_copy_ops", s->zero_copy_ops);
	C("zero_copy_bytes", s->zero_copy_bytes);
	C("spliced_ops", s->spliced_ops);
	C("spliced_bytes", s->spliced_bytes);
	C("bytes_read", s->bytes_read);
	C("bytes_written", s->bytes_written);
	C("forgets", s->forgets);
	C("interrupts", s->interrupts);
	C("restored_nodes", s->restored_nodes);
	C("restored_files", s->restored_files);
	C("restore_failed", s->restore_failed);
	C("restore_full", s->restore_full);
#undef C
	return n;
}

static void put_status(struct out *o, const struct rf_tenant *t, int json)
{
	const char *limits = t->cg.mechanism[0] ? t->cg.mechanism : "rlimits";
	enum rf_tenant_state shown = rf_tenant_state_shown(t->state);
	long long up = t->started && shown == RF_TENANT_RUNNING ? time(NULL) - t->started : 0;
	/* the kernel's buffer pools, or a payload buffer per entry; and the
	 * bytes the pool pins (registered with every ring) */
	const char *buffers = t->geom.qpool_size ? "pool" : "entries";
	const char *zero_copy = t->conn.zero_copy ? "on" : "off";
	unsigned long long pinned = t->pool ? (unsigned long long)t->geom.total_size : 0;
	/* the plugin's state, kept across worker deaths */
	unsigned long long state = t->state_fd >= 0 ? (unsigned long long)t->pol.state_size : 0;
	/* the worker's scheduling policy (cgroup.c) */
	const char *sched = t->cg.sched_idle ? "idle" : "normal";
	/* a plugin's death replaces its host alone, or the whole worker */
	const char *host_restart = t->pol.host_restart ? "yes" : "no";
	const char *keys[48];
	unsigned long long vals[48], p50, p99, max;
	struct rf_queue_stats s;
	size_t i, n;

	sum_stats(t, &s);
	n = status_counters(t, &s, up, keys, vals);
	p50 = percentile_us(&s, 0.5);
	p99 = percentile_us(&s, 0.99);
	max = (unsigned long long)(s.latency_max_ns / 1000);
	if (!json) {
		put(o,
		    "tenant=%s state=%s transport=%s queues=%u depth=%u max_write=%u buffers=%s "
		    "zero_copy=%s pinned=%llu state_size=%llu worker=%d mountpoint=%s plugin=%s "
		    "program=%s user=%s uid=%u gid=%u",
		    t->pol.name, rf_tenant_state_name(shown), conn_transport(t), t->geom.nqueues,
		    t->geom.depth, t->conn.max_write, buffers, zero_copy, pinned, state,
		    (int)t->worker_pid, t->pol.mountpoint, t->pol.plugin, t->pol.program,
		    t->pol.user, (unsigned int)t->uid, (unsigned int)t->gid);
		for (i = 0; i < n; i++)
			put(o, " %s=%llu", keys[i], vals[i]);
		put(o,
		    " p50_us=%llu p99_us=%llu max_us=%llu limits=%s sched=%s host_restart=%s "
		    "debug=%s disk=%s%s%s\n",
		    p50, p99, max, limits, sched, host_restart, t->pol.debug ? "yes" : "no",
		    t->disk_mechanism[0] ? t->disk_mechanism : "none",
		    t->fail_reason[0] ? " reason=" : "", t->fail_reason);
		return;
	}
	put(o, "{\"tenant\":");
	put_jstr(o, t->pol.name);
	put(o,
	    ",\"state\":\"%s\",\"transport\":\"%s\",\"queues\":%u,\"depth\":%u,"
	    "\"max_write\":%u,\"buffers\":\"%s\",\"zero_copy\":\"%s\",\"pinned\":%llu,"
	    "\"state_size\":%llu,\"worker\":%d,\"mountpoint\":",
	    rf_tenant_state_name(shown), conn_transport(t), t->geom.nqueues, t->geom.depth,
	    t->conn.max_write, buffers, zero_copy, pinned, state, (int)t->worker_pid);
	put_jstr(o, t->pol.mountpoint);
	put(o, ",\"plugin\":");
	put_jstr(o, t->pol.plugin);
	put(o, ",\"program\":");
	put_jstr(o, t->pol.program);
	put(o, ",\"user\":");
	put_jstr(o, t->pol.user);
	put(o, ",\"uid\":%u,\"gid\":%u", (unsigned int)t->uid, (unsigned int)t->gid);
	for (i = 0; i < n; i++)
		put(o, ",\"%s\":%llu", keys[i], vals[i]);
	put(o, ",\"latency_us\":{\"p50\":%llu,\"p99\":%llu,\"max\":%llu},\"limits\":", p50, p99,
	    max);
	put_jstr(o, limits);
	put(o, ",\"sched\":\"%s\",\"host_restart\":\"%s\",\"debug\":\"%s\",\"disk\":", sched,
	    host_restart, t->pol.debug ? "yes" : "no");
	put_jstr(o, t->disk_mechanism[0] ? t->disk_mechanism : "none");
	put(o, ",\"reason\":");
	put_jstr(o, t->fail_reason);
	put(o, "}");
}

/* A size bucket's label: "<=4K", "<=1M", and ">4M" for the last. */
static const char *size_label(unsigned int b, char *buf, size_t len)
{
	unsigned int last = RF_STATS_SIZE_BUCKETS - 1, e = b == last ? b - 1 : b;
	unsigned int shift = e >= 20 ? 20 : e >= 10 ? 10 : 0;

	snprintf(buf, len, "%s%u%s", b == last ? ">" : "<=", 1u << (e - shift),
		 shift == 20   ? "M"
		 : shift == 10 ? "K"
			       : "");
	return buf;
}

/* READ and WRITE requests by size: "  read <=1M 12" lines, or two JSON
 * members "read_sizes" and "write_sizes". */
static void put_sizes(struct out *o, const struct rf_queue_stats *s, int json)
{
	const uint64_t *h[2] = { s->read_size_log2, s->write_size_log2 };
	static const char *const name[2] = { "read", "write" };
	unsigned int k, b;
	char label[16];
	int first;

	for (k = 0; k < 2; k++) {
		if (json)
			put(o, ",\"%s_sizes\":{", name[k]);
		for (b = 0, first = 1; b < RF_STATS_SIZE_BUCKETS; b++) {
			if (!h[k][b])
				continue;
			size_label(b, label, sizeof(label));
			if (json)
				put(o, "%s\"%s\":%llu", first ? "" : ",", label,
				    (unsigned long long)h[k][b]);
			else
				put(o, "  %-5s %-9s %llu\n", name[k], label,
				    (unsigned long long)h[k][b]);
			first = 0;
		}
		if (json)
			put(o, "}");
	}
}

/* stats: status plus the per-opcode and per-errno tables, and the sizes of
 * READ and WRITE requests. */
static void put_stats(struct out *o, const struct rf_tenant *t, int json)
{
	struct rf_queue_stats s;
	unsigned int i;
	int first;

	sum_stats(t, &s);
	if (!json) {
		put_status(o, t, 0);
		for (i = 0; i < RF_STATS_OPCODES; i++)
			if (s.by_opcode[i])
				put(o, "  op %-12s %llu\n",
				    opcode_name(i) ? opcode_name(i) : "OTHER",
				    (unsigned long long)s.by_opcode[i]);
		for (i = 0; i < RF_STATS_ERRNOS; i++)
			if (s.by_errno[i]) {
				const char *n = i ? strerrorname_np((int)i) : NULL;

				put(o, "  errno %-9s %llu\n", n ? n : "OTHER",
				    (unsigned long long)s.by_errno[i]);
			}
		put_sizes(o, &s, 0);
		return;
	}
	/* the status object, then four more members */
	put_status(o, t, 1);
	o->used--; /* reopen the object */
	put(o, ",\"by_opcode\":{");
	for (i = 0, first = 1; i < RF_STATS_OPCODES; i++)
		if (s.by_opcode[i]) {
			put(o, "%s\"%s\":%llu", first ? "" : ",",
			    opcode_name(i) ? opcode_name(i) : "OTHER",
			    (unsigned long long)s.by_opcode[i]);
			first = 0;
		}
	put(o, "},\"by_errno\":{");
	for (i = 0, first = 1; i < RF_STATS_ERRNOS; i++)
		if (s.by_errno[i]) {
			const char *n = i ? strerrorname_np((int)i) : NULL;

			put(o, "%s\"%s\":%llu", first ? "" : ",", n ? n : "OTHER",
			    (unsigned long long)s.by_errno[i]);
			first = 0;
		}
	put(o, "}");
	put_sizes(o, &s, 1);
	put(o, "}");
}

/* Run one command line; the answer goes to @o, or comes later for the
 * tenant left in *@wait (an upgrade), or from the broker's next image
 * (*@hov set). */
static void run_command(struct rf_broker *b, char *line, struct out *o, struct rf_tenant **wait,
			bool *hov)
{
	char *argv[4] = { 0 };
	int argc = 0, json = 0;
	char *tok, *save = NULL;
	size_t i;

	for (tok = strtok_r(line, " \t", &save); tok && argc < 4;
	     tok = strtok_r(NULL, " \t", &save))
		argv[argc++] = tok;
	if (argc && !strcmp(argv[argc - 1], "json")) {
		json = 1;
		argv[--argc] = NULL;
	}
	if (!argc) {
		put(o, "error: empty command\n");
		return;
	}
	if (!strcmp(argv[0], "status") || !strcmp(argv[0], "stats")) {
		int stats = !strcmp(argv[0], "stats");
		int n = 0;

		if (argc > 2 || (argc == 2 && !rf_tenant_find(b, argv[1]))) {
			put(o, "error: no tenant '%s'\n", argc == 2 ? argv[1] : "");
			return;
		}
		if (json)
			put(o, "{\"tenants\":[");
		for (i = 0; i < b->ntenants; i++) {
			if (argc == 2 && strcmp(argv[1], b->tenants[i]->pol.name))
				continue;
			if (json && n++)
				put(o, ",");
			if (stats)
				put_stats(o, b->tenants[i], json);
			else
				put_status(o, b->tenants[i], json);
		}
		if (json)
			put(o, "]}\n");
		return;
	}
	if (!strcmp(argv[0], "reload") && argc == 1) {
		char msg[8192];

		rf_tenant_reload(b, msg, sizeof(msg));
		put(o, "%s", msg);
		return;
	}
	if ((!strcmp(argv[0], "restart") || !strcmp(argv[0], "umount")) && argc == 2) {
		struct rf_tenant *t = rf_tenant_find(b, argv[1]);

		if (!t) {
			put(o, "error: no tenant '%s'\n", argv[1]);
			return;
		}
		if (argv[0][0] == 'r') {
			int r = rf_tenant_restart(t);

			if (r < 0)
				put(o, "error: %s did not start: %s\n", t->pol.name,
				    t->fail_reason);
			else
				put(o, "%s restarted\n", t->pol.name);
		} else {
			rf_tenant_stop(t);
			rf_tenant_enter(t, RF_TENANT_STOPPED);
			t->fail_reason[0] = '\0';
			put(o, "%s unmounted\n", t->pol.name);
		}
		return;
	}
	if (!strcmp(argv[0], "upgrade") && (argc == 2 || argc == 3)) {
		struct rf_tenant *t = rf_tenant_find(b, argv[1]);
		char why[512];

		if (!t) {
			put(o, "error: no tenant '%s'\n", argv[1]);
			return;
		}
		if (rf_upgrade_start(t, argc == 3 ? argv[2] : NULL, why, sizeof(why)) < 0) {
			put(o, "error: %s\n", why);
			return;
		}
		*wait = t;
		return;
	}
	if (!strcmp(argv[0], "upgrade-broker") && argc == 1) {
		char why[512];

		if (b->reexec_request(b, why, sizeof(why)) < 0) {
			put(o, "error: %s\n", why);
			return;
		}
		*hov = true;
		return;
	}
	put(o,
	    "error: unknown command '%.64s' (status, stats, reload, restart, umount, upgrade, "
	    "upgrade-broker)\n",
	    argv[0]);
}

#ifndef SO_PEERGROUPS
#define SO_PEERGROUPS 59 /* Linux 4.13 */
#endif

/* Root, or a member of the policy's control_group: the peer's groups as
 * the kernel took them at connect(), from SO_PEERGROUPS, whole however
 * many there are (NGROUPS_MAX is 65536). */
static int peer_allowed(const struct rf_broker *b, int fd, const struct ucred *cred)
{
	gid_t some[64], *groups = some;
	socklen_t len = sizeof(some);
	const struct group *gr;
	int ok = 0;
	size_t i;

	if (cred->uid == 0)
		return 1;
	if (!b->policy->control_group[0] || !(gr = getgrnam(b->policy->control_group)))
		return 0;
	if (cred->gid == gr->gr_gid)
		return 1;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len) < 0) {
		/* ERANGE: len now says how much it takes */
		if (errno != ERANGE || !(groups = malloc(len)))
			return 0;
		if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len) < 0)
			len = 0;
	}
	for (i = 0; i < len / sizeof(gid_t); i++)
		if (groups[i] == gr->gr_gid)
			ok = 1;
	if (groups != some)
		free(groups);
	return ok;
}

#define RF_CONTROL_TIMEOUT 5 /* seconds to send a command and to take the answer */
#define RF_CONTROL_CONNS 32
#define RF_CONTROL_CMD_MAX 1279

static void control_free(struct bufferevent *bev, struct rf_broker *b)
{
	bufferevent_free(bev);
	/* below the cap again: take the connections waiting in the backlog */
	if (--b->ctl_conns < RF_CONTROL_CONNS && b->ctl_ev && !b->ctl_paused)
		event_add(b->ctl_ev, NULL); /* a no-op when it was not paused */
}

void rf_control_pause(struct rf_broker *b, bool pause)
{
	b->ctl_paused = pause;
	if (!b->ctl_ev)
		return;
	if (pause)
		event_del(b->ctl_ev);
	else if (b->ctl_conns < RF_CONTROL_CONNS)
		event_add(b->ctl_ev, NULL);
}

/* The answer has left. */
static void control_sent(struct bufferevent *bev, void *arg)
{
	control_free(bev, arg);
}

/* The peer went away, or was too slow to take the answer. */
static void control_gone(struct bufferevent *bev, short what, void *arg)
{
	struct rf_broker *b = arg;
	size_t i;

	(void)what;
	/* one waiting on an upgrade is forgotten; the upgrade goes on */
	for (i = 0; i < b->ntenants; i++)
		if (b->tenants[i]->upg_conn == bev)
			b->tenants[i]->upg_conn = NULL;
	if (b->hov_conn == bev)
		b->hov_conn = NULL;
	control_free(bev, b);
}

void rf_control_reply(struct rf_broker *b, struct bufferevent **conn, const char *text)
{
	struct bufferevent *bev = *conn;

	if (!bev)
		return;
	*conn = NULL;
	bufferevent_setcb(bev, NULL, control_sent, control_gone, b);
	if (bufferevent_write(bev, text, strlen(text)) < 0)
		control_free(bev, b);
}

static void control_answer(struct bufferevent *bev, struct rf_broker *b)
{
	struct evbuffer *in = bufferevent_get_input(bev);
	struct out o = { 0 };
	struct ucred cred = { .uid = (uid_t)-1 };
	socklen_t clen = sizeof(cred);
	char cmd[RF_CONTROL_CMD_MAX + 1];
	struct rf_tenant *wait = NULL;
	bool hov = false;
	ev_ssize_t n;

	n = evbuffer_copyout(in, cmd, RF_CONTROL_CMD_MAX);
	cmd[n > 0 ? n : 0] = '\0';
	if (getsockopt(bufferevent_getfd(bev), SOL_SOCKET, SO_PEERCRED, &cred, &clen) < 0 ||
	    !peer_allowed(b, bufferevent_getfd(bev), &cred)) {
		log_info("control: refused uid %d", (int)cred.uid);
		put(&o, "error: permission denied (root or control_group only)\n");
	} else if (!memchr(cmd, '\n', (size_t)(n > 0 ? n : 0)) &&
		   evbuffer_get_length(in) > RF_CONTROL_CMD_MAX) {
		put(&o, "error: command longer than %d bytes\n", RF_CONTROL_CMD_MAX);
	} else {
		cmd[strcspn(cmd, "\r\n")] = '\0';
		run_command(b, cmd, &o, &wait, &hov);
	}
	bufferevent_disable(bev, EV_READ);
	if (wait || hov) {
		/* answered by rf_control_reply (a peer that hung up meanwhile
		 * is found when it is written to), or by the broker's next
		 * image; no time-out: an upgrade ends, at the latest, at a
		 * worker's start_timeout, and a broker upgrade within
		 * RF_REEXEC_WAIT seconds */
		if (wait)
			wait->upg_conn = bev;
		else
			b->hov_conn = bev;
		bufferevent_setcb(bev, NULL, NULL, control_gone, b);
		bufferevent_set_timeouts(bev, NULL, NULL);
		free(o.buf);
		return;
	}
	bufferevent_setcb(bev, NULL, control_sent, control_gone, b);
	if (!o.used || bufferevent_write(bev, o.buf, o.used) < 0)
		control_free(bev, b);
	free(o.buf);
}

/* A command is whole at its newline, at RF_CONTROL_CMD_MAX bytes, or when
 * the peer stops sending. */
static void control_read(struct bufferevent *bev, void *arg)
{
	struct evbuffer *in = bufferevent_get_input(bev);
	struct evbuffer_ptr nl = evbuffer_search_eol(in, NULL, NULL, EVBUFFER_EOL_LF);

	if (nl.pos >= 0 || evbuffer_get_length(in) > RF_CONTROL_CMD_MAX)
		control_answer(bev, arg);
}

static void control_event(struct bufferevent *bev, short what, void *arg)
{
	if ((what & BEV_EVENT_EOF) && evbuffer_get_length(bufferevent_get_input(bev)))
		control_answer(bev, arg);
	else
		control_gone(bev, what, arg); /* silent until the timeout, or gone */
}

static void control_accept(int fd, short what, void *arg)
{
	struct timeval tv = { .tv_sec = RF_CONTROL_TIMEOUT };
	struct rf_broker *b = arg;
	struct bufferevent *bev;
	int c;

	(void)what;
	c = accept4(fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (c < 0)
		return;
	bev = bufferevent_socket_new(b->base, c, BEV_OPT_CLOSE_ON_FREE);
	if (!bev) {
		close(c);
		return;
	}
	/* at the cap, stop accepting: further peers wait in the backlog until
	 * a connection ends (at the latest when its timeout strikes) */
	if (++b->ctl_conns >= RF_CONTROL_CONNS) {
		log_info("control: %d connections open; new ones wait", RF_CONTROL_CONNS);
		event_del(b->ctl_ev);
	}
	bufferevent_setcb(bev, control_read, NULL, control_event, b);
	bufferevent_set_timeouts(bev, &tv, &tv);
	if (bufferevent_enable(bev, EV_READ) < 0)
		control_free(bev, b);
}

int rf_control_open(struct rf_broker *b)
{
	const char *path = b->policy->control_socket;
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	char dir[sizeof(sun.sun_path)];
	const struct group *gr = NULL;
	char *slash;
	int fd, r;

	if (strlen(path) >= sizeof(sun.sun_path)) {
		log_warnx("control_socket %s: path too long", path);
		return -ENAMETOOLONG;
	}
	if (b->policy->control_group[0] && !(gr = getgrnam(b->policy->control_group))) {
		log_warnx("control_group '%s' does not exist", b->policy->control_group);
		return -ENOENT;
	}
	strcpy(sun.sun_path, path);
	strcpy(dir, path);
	slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = '\0';
		if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
			r = -errno;
			log_warn("mkdir %s", dir);
			return r;
		}
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	unlink(path);
	if (bind(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0 ||
	    (gr && chown(path, 0, gr->gr_gid) < 0) || chmod(path, gr ? 0660 : 0600) < 0 ||
	    listen(fd, 16) < 0) {
		r = -errno;
		log_warn("control socket %s", path);
		close(fd);
		return r;
	}
	b->ctl_fd = fd;
	b->ctl_ev = event_new(b->base, fd, EV_READ | EV_PERSIST, control_accept, b);
	if (!b->ctl_ev || event_add(b->ctl_ev, NULL) < 0)
		fatalx("event_new");
	return 0;
}

int rf_control_adopt(struct rf_broker *b, int fd, int reply_fd, const char *text)
{
	struct bufferevent *bev;
	struct stat st;

	if (fstat(fd, &st) < 0 || !S_ISSOCK(st.st_mode) || fcntl(fd, F_SETFD, FD_CLOEXEC) < 0)
		return -EBADF;
	b->ctl_fd = fd;
	b->ctl_ev = event_new(b->base, fd, EV_READ | EV_PERSIST, control_accept, b);
	if (!b->ctl_ev || event_add(b->ctl_ev, NULL) < 0)
		fatalx("event_new");
	if (reply_fd < 0)
		return 0;
	if (fstat(reply_fd, &st) < 0 || !S_ISSOCK(st.st_mode) ||
	    fcntl(reply_fd, F_SETFD, FD_CLOEXEC) < 0 ||
	    !(bev = bufferevent_socket_new(b->base, reply_fd, BEV_OPT_CLOSE_ON_FREE))) {
		log_warnx("upgrade-broker: the peer's connection (fd %d) was not handed over",
			  reply_fd);
		return 0;
	}
	b->ctl_conns++;
	bufferevent_set_timeouts(bev, NULL, &(struct timeval){ .tv_sec = RF_CONTROL_TIMEOUT });
	rf_control_reply(b, &bev, text);
	return 0;
}

void rf_control_close(struct rf_broker *b)
{
	if (b->ctl_ev) {
		event_free(b->ctl_ev);
		b->ctl_ev = NULL;
	}
	if (b->ctl_fd >= 0) {
		close(b->ctl_fd);
		b->ctl_fd = -1;
		unlink(b->policy->control_socket);
	}
}
