// SPDX-License-Identifier: MIT
/*
 * The control socket: a unix stream socket that answers one command per
 * connection ("status" or "status NAME") with text lines. Only root may
 * connect (SO_PEERCRED).
 */
#include <errno.h>
#include <event2/event.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "broker.h"
#include "log.h"

const char *rf_tenant_state_name(enum rf_tenant_state s)
{
	switch (s) {
	case RF_TENANT_STOPPED:
		return "stopped";
	case RF_TENANT_STARTING:
		return "starting";
	case RF_TENANT_RUNNING:
		return "running";
	case RF_TENANT_FAILED:
		return "failed";
	}
	return "?";
}

const char *rf_transport_kind_name(int k)
{
	switch (k) {
	case RF_XPORT_URING:
		return "uring";
	case RF_XPORT_CLASSIC:
		return "classic";
	}
	return "none";
}

size_t rf_control_status(struct rf_broker *b, const char *only, char *buf, size_t len)
{
	size_t used = 0, i;

	buf[0] = '\0';
	for (i = 0; i < b->ntenants; i++) {
		struct rf_tenant *t = &b->tenants[i];
		struct rf_queue_stats sum;
		uint32_t q;
		int n;

		if (only && strcmp(only, t->pol.name))
			continue;
		memset(&sum, 0, sizeof(sum));
		if (t->pool) {
			/* counters written by the worker: shown, never trusted */
			const struct rf_pool_ctl *ctl = t->pool;

			for (q = 0; q < t->geom.nqueues; q++) {
				const volatile struct rf_queue_stats *s = &ctl->q[q];

				sum.requests += s->requests;
				sum.uring_requests += s->uring_requests;
				sum.classic_requests += s->classic_requests;
				sum.errors += s->errors;
				sum.read_fixed_ops += s->read_fixed_ops;
				sum.read_fixed_bytes += s->read_fixed_bytes;
				sum.write_fixed_ops += s->write_fixed_ops;
				sum.write_fixed_bytes += s->write_fixed_bytes;
				sum.forgets += s->forgets;
				sum.interrupts += s->interrupts;
			}
		}
		n = snprintf(buf + used, len - used,
			     "tenant=%s state=%s transport=%s queues=%u depth=%u max_write=%u "
			     "worker=%d mountpoint=%s plugin=%s uptime=%lld requests=%llu "
			     "uring_requests=%llu classic_requests=%llu errors=%llu "
			     "read_fixed_ops=%llu read_fixed_bytes=%llu write_fixed_ops=%llu "
			     "write_fixed_bytes=%llu forgets=%llu interrupts=%llu limits=%s%s%s\n",
			     t->pol.name, rf_tenant_state_name(t->state),
			     rf_transport_kind_name(t->conn.transport), t->geom.nqueues,
			     t->geom.depth, t->conn.max_write, (int)t->worker_pid,
			     t->pol.mountpoint, t->pol.plugin,
			     t->started ? (long long)(time(NULL) - t->started) : 0LL,
			     (unsigned long long)sum.requests,
			     (unsigned long long)sum.uring_requests,
			     (unsigned long long)sum.classic_requests,
			     (unsigned long long)sum.errors, (unsigned long long)sum.read_fixed_ops,
			     (unsigned long long)sum.read_fixed_bytes,
			     (unsigned long long)sum.write_fixed_ops,
			     (unsigned long long)sum.write_fixed_bytes,
			     (unsigned long long)sum.forgets, (unsigned long long)sum.interrupts,
			     t->cg.mechanism[0] ? t->cg.mechanism : "rlimits",
			     t->fail_reason[0] ? " reason=" : "", t->fail_reason);
		if (n < 0 || (size_t)n >= len - used)
			break;
		used += (size_t)n;
	}
	return used;
}

static void control_accept(int fd, short what, void *arg)
{
	struct rf_broker *b = arg;
	struct timeval tv = { .tv_sec = 1 };
	struct ucred cred;
	socklen_t clen = sizeof(cred);
	char cmd[256], out[65536];
	ssize_t n;
	size_t len;
	int c;

	(void)what;
	c = accept4(fd, NULL, NULL, SOCK_CLOEXEC);
	if (c < 0)
		return;
	if (getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cred, &clen) < 0 || cred.uid != 0) {
		const char msg[] = "error: permission denied (root only)\n";

		if (write(c, msg, sizeof(msg) - 1) < 0)
			log_debug("control: refusal not delivered");
		close(c);
		return;
	}
	/* A slow peer cannot stall the loop for more than a second. */
	setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(c, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	n = read(c, cmd, sizeof(cmd) - 1);
	if (n <= 0) {
		close(c);
		return;
	}
	cmd[n] = '\0';
	cmd[strcspn(cmd, "\r\n")] = '\0';
	if (!strcmp(cmd, "status"))
		len = rf_control_status(b, NULL, out, sizeof(out));
	else if (!strncmp(cmd, "status ", 7))
		len = rf_control_status(b, cmd + 7, out, sizeof(out));
	else
		len = (size_t)snprintf(out, sizeof(out), "error: unknown command '%.64s'\n", cmd);
	if (len == 0)
		len = (size_t)snprintf(out, sizeof(out), "error: no such tenant\n");
	if (write(c, out, len) < 0)
		log_debug("control: reply not delivered");
	close(c);
}

int rf_control_open(struct rf_broker *b)
{
	const char *path = b->policy->control_socket;
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	char dir[sizeof(sun.sun_path)];
	char *slash;
	int fd, r;

	if (strlen(path) >= sizeof(sun.sun_path)) {
		log_warnx("control_socket %s: path too long", path);
		return -ENAMETOOLONG;
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
	if (bind(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0 || chmod(path, 0600) < 0 ||
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
