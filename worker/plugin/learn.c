// SPDX-License-Identifier: MIT
/*
 * ringfenced --learn-seccomp, for ringfence-plugin-check --learn: the
 * tenant's seccomp policy is loaded with "send to a listener" in place of
 * its default action, and a thread of the worker answers each call so
 * sent by letting it run (SECCOMP_USER_NOTIF_FLAG_CONTINUE), logging it
 * once per system call and FUSE operation as
 *
 *     learn: SYSCALL during OPERATION
 *
 * OPERATION is that of the request the calling queue thread last handed
 * to the plugin ("-" for another thread). A program's host passes its
 * listener to its keeper, whose thread answers instead (no thread of the
 * host's outlives the program's start), and the operation is then "-". The kernel's own log action
 * (@default log) cannot do this: its records go through the audit printk
 * path, which keeps 10 in 5 s and drops the rest (1004 logged calls left
 * 10 records on this project's host), so calls would go unseen.
 *
 * Every call is let through: a learning worker has no allowlist. Never in
 * production; the broker says so at start.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <seccomp.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "seccomp_policy.h"
#include "worker.h"

#define SEEN_MAX 1024

static struct {
	struct rf_worker *w;
	pthread_mutex_t lock; /* of the table: a successor's learner beside a dying one */
	uint32_t nseen;
	struct {
		int nr;
		uint32_t op;
	} seen[SEEN_MAX];
} L = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* one listener and its buffers; @hangup: watched for its end (the
 * keeper's, with poll(2), which a filter of its own process would send
 * it itself) */
struct learner {
	int fd;
	bool hangup;
	struct seccomp_notif *req;
	struct seccomp_notif_resp *resp;
};

/* the operation the calling thread serves, or 0 */
static uint32_t op_of(pid_t tid)
{
	uint32_t q;

	for (q = 0; q < L.w->nqueues; q++)
		if (L.w->queues[q].tid == tid)
			return __atomic_load_n(&L.w->queues[q].learn_op, __ATOMIC_RELAXED);
	return 0;
}

static void note(int nr, uint32_t op)
{
	char *name;
	uint32_t i;

	pthread_mutex_lock(&L.lock);
	for (i = 0; i < L.nseen; i++)
		if (L.seen[i].nr == nr && L.seen[i].op == op) {
			pthread_mutex_unlock(&L.lock);
			return;
		}
	if (L.nseen < SEEN_MAX) {
		L.seen[L.nseen].nr = nr;
		L.seen[L.nseen++].op = op;
	}
	pthread_mutex_unlock(&L.lock);
	name = seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, nr);
	if (name)
		log_info("learn: %s during %s", name, op ? rf_op_name(op) : "-");
	else
		log_info("learn: syscall %d during %s", nr, op ? rf_op_name(op) : "-");
	free(name);
}

/* until no process is left under the filter (the listener hangs up), if
 * watched */
static void *supervise(void *arg)
{
	struct learner *l = arg;
	struct pollfd p = { .fd = l->fd, .events = POLLIN };

	for (;;) {
		if (l->hangup && poll(&p, 1, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (l->hangup && !(p.revents & POLLIN))
			break; /* POLLHUP: the filter's last task is gone */
		memset(l->req, 0, sizeof(*l->req));
		if (seccomp_notify_receive(l->fd, l->req) < 0) {
			if (errno == EINTR || errno == ENOENT)
				continue;
			log_warnx("learn: receive: %s", strerror(errno));
			break;
		}
		note(l->req->data.nr, op_of((pid_t)l->req->pid));
		memset(l->resp, 0, sizeof(*l->resp));
		l->resp->id = l->req->id;
		l->resp->flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
		/* ENOENT: the caller was interrupted meanwhile */
		if (seccomp_notify_respond(l->fd, l->resp) < 0 && errno != ENOENT)
			log_warnx("learn: respond: %s", strerror(errno));
	}
	close(l->fd);
	seccomp_notify_free(l->req, l->resp);
	free(l);
	return NULL;
}

/* A learner for @w, its buffers allocated (before any filter: their sizes
 * come from seccomp(2), which the tenant's policy refuses); NULL if none. */
static struct learner *learner_new(struct rf_worker *w)
{
	struct learner *l = calloc(1, sizeof(*l));

	L.w = w;
	if (!l)
		return NULL;
	if (seccomp_notify_alloc(&l->req, &l->resp) < 0) {
		free(l);
		return NULL;
	}
	return l;
}

static int learner_run(struct learner *l, int fd)
{
	pthread_t t;
	int r;

	l->fd = fd;
	r = pthread_create(&t, NULL, supervise, l);
	if (r) {
		close(fd);
		seccomp_notify_free(l->req, l->resp);
		free(l);
		return -r;
	}
	pthread_detach(t);
	return 0;
}

int rf_learn_start(struct rf_worker *w, const struct rf_sc_policy *p)
{
	struct learner *l = learner_new(w);
	int fd;

	if (!l)
		return -ENOMEM;
	fd = rf_sc_policy_load_learning(p);
	if (fd < 0) {
		seccomp_notify_free(l->req, l->resp);
		free(l);
		return fd;
	}
	log_warnx("learning: every system call the seccomp policy refuses is allowed and logged");
	return learner_run(l, fd);
}

int rf_learn_adopt(struct rf_worker *w, int fd)
{
	struct learner *l = learner_new(w);

	if (!l) {
		close(fd);
		return -ENOMEM;
	}
	l->hangup = true;
	return learner_run(l, fd);
}
