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
 * to the plugin ("-" for another thread). The kernel's own log action
 * (@default log) cannot do this: its records go through the audit printk
 * path, which keeps 10 in 5 s and drops the rest (1004 logged calls left
 * 10 records on this project's host), so calls would go unseen.
 *
 * Every call is let through: a learning worker has no allowlist. Never in
 * production; the broker says so at start.
 */
#include <errno.h>
#include <pthread.h>
#include <seccomp.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "seccomp_policy.h"
#include "worker.h"

#define SEEN_MAX 1024

static struct {
	struct rf_worker *w;
	int fd;
	struct seccomp_notif *req;
	struct seccomp_notif_resp *resp;
	uint32_t nseen;
	struct {
		int nr;
		uint32_t op;
	} seen[SEEN_MAX];
} L;

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

	for (i = 0; i < L.nseen; i++)
		if (L.seen[i].nr == nr && L.seen[i].op == op)
			return;
	if (L.nseen < SEEN_MAX) {
		L.seen[L.nseen].nr = nr;
		L.seen[L.nseen++].op = op;
	}
	name = seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, nr);
	if (name)
		log_info("learn: %s during %s", name, op ? rf_op_name(op) : "-");
	else
		log_info("learn: syscall %d during %s", nr, op ? rf_op_name(op) : "-");
	free(name);
}

static void *supervise(void *arg)
{
	(void)arg;
	for (;;) {
		memset(L.req, 0, sizeof(*L.req));
		if (seccomp_notify_receive(L.fd, L.req) < 0) {
			if (errno == EINTR || errno == ENOENT)
				continue;
			log_warnx("learn: receive: %s", strerror(errno));
			return NULL;
		}
		note(L.req->data.nr, op_of((pid_t)L.req->pid));
		memset(L.resp, 0, sizeof(*L.resp));
		L.resp->id = L.req->id;
		L.resp->flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
		/* ENOENT: the caller was interrupted meanwhile */
		if (seccomp_notify_respond(L.fd, L.resp) < 0 && errno != ENOENT)
			log_warnx("learn: respond: %s", strerror(errno));
	}
}

int rf_learn_start(struct rf_worker *w, const struct rf_sc_policy *p)
{
	pthread_t t;
	int r;

	L.w = w;
	/* before the filter: seccomp_notify_alloc asks the kernel for the
	 * sizes with seccomp(2), which the filter then refuses */
	if (seccomp_notify_alloc(&L.req, &L.resp) < 0)
		return -ENOMEM;
	L.fd = rf_sc_policy_load_learning(p);
	if (L.fd < 0)
		return L.fd;
	r = pthread_create(&t, NULL, supervise, NULL);
	if (r)
		return -r;
	pthread_detach(t);
	log_warnx("learning: every system call the seccomp policy refuses is allowed and logged");
	return 0;
}
