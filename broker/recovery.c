// SPDX-License-Identifier: MIT
/*
 * A dead worker is replaced, not mourned: the mount, the FUSE connection
 * and the pool stay; a new generation of worker gets new rings, answers
 * what its predecessor had fetched and not answered (EIO), registers fresh
 * entries, and the broker then "kicks" every queue so that requests which
 * queued while no worker existed are delivered (the kernel sends them only
 * on the next COMMIT_AND_FETCH of their queue).
 *
 * Deaths back off exponentially. crash_limit deaths within crash_window
 * seconds put the tenant in "failed": a worker with no plugin at all, the
 * built-in responder, then answers every request EIO so that clients fail
 * fast, until ringfencectl restart. How soon a successor starts is
 * backoff.c's to say; the watchdog and the heartbeat, which kill workers
 * that hold a request too long or stop answering, are in watchdog.c.
 */
#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/prctl.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "broker.h"
#include "log.h"
#include "msg.h"

static void respawn_cb(int fd, short what, void *arg)
{
	struct rf_tenant *t = arg;

	(void)fd;
	(void)what;
	rf_respawn_cancel(t);
	if (t->state != RF_TENANT_RESPAWN_DUE)
		return;
	rf_tenant_enter(t, RF_TENANT_STARTING);
	t->generation++;
	t->fail_reason[0] = '\0';
	log_info("%s: starting worker generation %u", t->pol.name, t->generation);
	if (rf_worker_spawn(t) < 0) {
		log_warnx("%s: cannot start a successor", t->pol.name);
		t->b->events->lost(t);
	}
}

bool rf_recovery_plan(struct rf_tenant *t, bool conn_gone)
{
	struct rf_backoff bo;
	struct timeval tv;

	if (conn_gone) {
		snprintf(t->fail_reason, sizeof(t->fail_reason),
			 "the FUSE connection has ended (%san abort through "
			 "/sys/fs/fuse/connections/%u/abort, or an unmount)",
			 t->conn.kernel_timeout ? "the kernel's request timeout, " : "",
			 t->conn_id);
		log_warnx("%s: %s; nothing to recover", t->pol.name, t->fail_reason);
		return false;
	}
	if (rf_tenant_responder(t)) {
		log_warnx("%s: the EIO responder died; giving the tenant up", t->pol.name);
		return false;
	}
	bo = rf_backoff_after_death(t->deaths, t->pol.crash_limit, t->pol.crash_window, t->crashes,
				    time(NULL));
	if (bo.crash_loop) {
		size_t n = strlen(t->fail_reason);

		snprintf(t->fail_reason + n, sizeof(t->fail_reason) - n,
			 "; %u deaths within %u s: answering EIO until restarted", bo.recent,
			 t->pol.crash_window);
		n = strlen(t->fail_reason);
		if (t->outside_kills)
			snprintf(t->fail_reason + n, sizeof(t->fail_reason) - n,
				 " (%u deaths so far by signals the broker did not send)",
				 t->outside_kills);
		log_warnx("%s: %s", t->pol.name, t->fail_reason);
		rf_tenant_enter(t, RF_TENANT_RESPONDER_STARTING);
		t->generation++;
		if (rf_worker_spawn(t) < 0)
			return false;
		return true;
	}
	tv.tv_sec = bo.delay_ms / 1000;
	tv.tv_usec = (bo.delay_ms % 1000) * 1000;
	rf_tenant_enter(t, RF_TENANT_RESPAWN_DUE);
	if (t->respawn_ev) {
		/* one successor at a time: a second death report for one
		 * worker must not leave a timer no one frees */
		log_warnx("%s: a successor was already on its way", t->pol.name);
		return true;
	}
	t->respawn_ev = evtimer_new(t->b->base, respawn_cb, t);
	if (!t->respawn_ev || evtimer_add(t->respawn_ev, &tv) < 0)
		fatalx("evtimer_new");
	log_warnx("%s: a new worker in %ld ms (death %u)", t->pol.name, bo.delay_ms, t->crashes);
	return true;
}

/*
 * The kick. A request that queued while no worker existed is sent out only
 * by the next COMMIT_AND_FETCH on its queue, which needs a new request on
 * that queue: a STATFS from a process on that queue's CPU. The kicker is
 * root only as far as FUSE's check of the caller needs (uid 0: the mount's
 * user_id), with no capability and no_new_privs, and it carries a mark
 * (RF_KICK_UID/GID as fsuid/fsgid) that makes the worker's framework answer
 * it at once: the plugin never sees it, so no plugin can hold it. At most
 * one kicker per queue is alive at a time: a new generation's kick waits
 * until the last one is killed and reaped; one still alive after
 * RF_KICK_DEADLINE seconds is killed. The classic transport needs no kick:
 * a new worker's reads take whatever waits in /dev/fuse.
 */
#define RF_KICK_DEADLINE 5

static void __attribute__((noreturn)) kicker(const char *mountpoint, uint32_t q)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct none[2];
	struct statfs sf;
	cpu_set_t set;
	int fd;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	CPU_ZERO(&set);
	CPU_SET(q, &set);
	/* the path as root; opening it O_PATH makes no FUSE request */
	fd = open(mountpoint, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || sched_setaffinity(0, sizeof(set), &set) < 0)
		_exit(1);
	setfsgid(RF_KICK_GID);
	setfsuid(RF_KICK_UID);
	memset(none, 0, sizeof(none));
	if ((uid_t)setfsuid((uid_t)-1) != RF_KICK_UID ||
	    (gid_t)setfsgid((gid_t)-1) != RF_KICK_GID || syscall(SYS_capset, &h, none) < 0 ||
	    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		_exit(1);
	fstatfs(fd, &sf);
	_exit(0);
}

static void kick(struct rf_tenant *t, uint32_t q)
{
	pid_t pid = fork();

	if (pid < 0) {
		log_warn("%s: kick queue %u", t->pol.name, q);
		return;
	}
	if (pid == 0)
		kicker(t->pol.mountpoint, q);
	t->kicks[q].pid = pid;
	t->kicks[q].generation = t->generation;
	t->kicks[q].owed = false;
	log_debug("%s: kicker %d for queue %u, generation %u", t->pol.name, (int)pid, q,
		  t->generation);
}

void rf_recovery_kick(struct rf_tenant *t)
{
	uint32_t q;

	if (t->conn.transport != RF_TRANSPORT_URING)
		return;
	if (!t->kicks && !(t->kicks = calloc(t->geom.nqueues, sizeof(*t->kicks)))) {
		log_warnx("%s: kick: out of memory", t->pol.name);
		return;
	}
	t->kick_started = time(NULL);
	for (q = 0; q < t->geom.nqueues; q++) {
		struct rf_kick *k = &t->kicks[q];

		if (!k->pid) {
			kick(t, q);
		} else if (k->generation != t->generation) {
			/* one kicker per queue: the last one (queued behind what a
			 * dead worker held, most likely) goes first, and this
			 * generation's follows when it is reaped */
			kill(k->pid, SIGKILL);
			k->owed = true;
		}
	}
}

bool rf_recovery_reaped(struct rf_broker *b, pid_t pid)
{
	size_t i;
	uint32_t q;

	for (i = 0; i < b->ntenants; i++) {
		struct rf_tenant *t = b->tenants[i];

		for (q = 0; t->kicks && q < t->geom.nqueues; q++) {
			struct rf_kick *k = &t->kicks[q];

			if (k->pid != pid)
				continue;
			k->pid = 0;
			log_debug("%s: kicker %d of queue %u is done", t->pol.name, (int)pid, q);
			if (k->owed && t->state == RF_TENANT_RUNNING)
				kick(t, q);
			return true;
		}
	}
	return false;
}

void rf_recovery_kick_deadline(struct rf_tenant *t)
{
	uint32_t q;

	if (!t->kicks || !t->kick_started || time(NULL) - t->kick_started < RF_KICK_DEADLINE)
		return;
	for (q = 0; q < t->geom.nqueues; q++)
		if (t->kicks[q].pid > 0) {
			log_warnx("%s: the kick of queue %u is unanswered after %d s; killing it",
				  t->pol.name, q, RF_KICK_DEADLINE);
			kill(t->kicks[q].pid, SIGKILL);
		}
	t->kick_started = 0;
}
