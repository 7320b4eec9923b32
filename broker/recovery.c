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
 * fast, until ringfencectl restart.
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
	rf_recovery_cancel(t);
	if (t->stopping)
		return;
	t->generation++;
	t->fail_reason[0] = '\0';
	log_info("%s: starting worker generation %u", t->pol.name, t->generation);
	if (rf_worker_spawn(t) < 0) {
		log_warnx("%s: cannot start a successor", t->pol.name);
		rf_tenant_give_up(t);
	}
}

bool rf_recovery_plan(struct rf_tenant *t, bool conn_gone)
{
	time_t now = time(NULL);
	struct timeval tv;
	unsigned int recent = 0, i;
	long ms;

	if (conn_gone) {
		log_warnx("%s: the FUSE connection has ended; nothing to recover", t->pol.name);
		return false;
	}
	if (t->responder) {
		log_warnx("%s: the EIO responder died; giving the tenant up", t->pol.name);
		return false;
	}
	t->deaths[(t->crashes - 1) % t->pol.crash_limit] = now;
	for (i = 0; i < t->pol.crash_limit && i < t->crashes; i++)
		if (now - t->deaths[i] < (time_t)t->pol.crash_window)
			recent++;
	if (recent >= t->pol.crash_limit) {
		size_t n = strlen(t->fail_reason);

		snprintf(t->fail_reason + n, sizeof(t->fail_reason) - n,
			 "; %u deaths within %u s: answering EIO until restarted", recent,
			 t->pol.crash_window);
		log_warnx("%s: %s", t->pol.name, t->fail_reason);
		t->responder = true;
		t->generation++;
		if (rf_worker_spawn(t) < 0)
			return false;
		return true;
	}
	/* 100 ms, 200 ms, 400 ms, ... for deaths close together, at most 3.2 s */
	ms = 100L << (recent > 6 ? 5 : recent > 1 ? recent - 1 : 0);
	tv.tv_sec = ms / 1000;
	tv.tv_usec = (ms % 1000) * 1000;
	t->state = RF_TENANT_STARTING;
	t->respawn_ev = evtimer_new(t->b->base, respawn_cb, t);
	if (!t->respawn_ev || evtimer_add(t->respawn_ev, &tv) < 0)
		fatalx("evtimer_new");
	log_warnx("%s: a new worker in %ld ms (death %u)", t->pol.name, ms, t->crashes);
	return true;
}

void rf_recovery_cancel(struct rf_tenant *t)
{
	if (t->respawn_ev) {
		event_free(t->respawn_ev);
		t->respawn_ev = NULL;
	}
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

	if (t->conn.transport != RF_XPORT_URING)
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
			if (k->owed && t->state == RF_TENANT_RUNNING && !t->stopping)
				kick(t, q);
			return true;
		}
	}
	return false;
}

/* Kickers past their deadline get SIGKILL (once; one already inside its
 * request goes when the request ends). */
static void kick_deadline(struct rf_tenant *t)
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

/*
 * The watchdog: once a second, any request a worker has held longer than
 * its tenant's request_timeout gets that worker killed; the successor
 * answers the request EIO and serves on. The slot records are written by
 * the worker, found from the broker's own geometry, checked by pool_sane()
 * first, and only ever used to decide to kill that same worker.
 */
static void watchdog_tenant(struct rf_tenant *t, uint64_t now_ns)
{
	uint64_t limit = (uint64_t)t->pol.request_timeout * 1000000000ULL;
	uint32_t i;

	if (!limit || !t->pool || t->state != RF_TENANT_RUNNING || t->worker_pid <= 0)
		return;
	for (i = 0; i < t->geom.nslots; i++) {
		struct rf_slot_state *ss = rf_pool_slot_state(t->pool, &t->geom, i);
		uint64_t since = __atomic_load_n(&ss->fetched_ns, __ATOMIC_RELAXED);

		if (__atomic_load_n(&ss->state, __ATOMIC_ACQUIRE) != RF_SLOT_FETCHED ||
		    ss->generation != t->generation || now_ns < since || now_ns - since <= limit)
			continue;
		snprintf(t->fail_reason, sizeof(t->fail_reason),
			 "watchdog: request %llu (opcode %u) held for more than request_timeout = "
			 "%u s",
			 (unsigned long long)ss->commit_id, ss->opcode, t->pol.request_timeout);
		log_warnx("%s: %s; killing worker %d", t->pol.name, t->fail_reason,
			  (int)t->worker_pid);
		t->watchdog_kills++;
		kill(t->worker_pid, SIGKILL);
		return;
	}
}

/*
 * The heartbeat: the broker sends PING, the worker's main thread passes it
 * to every queue thread, and each copies it into its queue's stats in the
 * pool. A worker that leaves a PING unanswered for heartbeat_timeout is
 * killed like one the watchdog catches - unless the silent queue holds a
 * request, for then it may be inside a slow plugin call and request_timeout
 * is the judge. The answers live in memory the worker writes: a worker can
 * fake them, which only spares itself, never harms another.
 */
static bool queue_serving(const struct rf_tenant *t, uint32_t q)
{
	uint32_t e;

	for (e = 0; e < t->geom.depth; e++) {
		uint32_t slot = rf_pool_slot_index(&t->geom, q, e);
		struct rf_slot_state *ss = rf_pool_slot_state(t->pool, &t->geom, slot);

		if (__atomic_load_n(&ss->state, __ATOMIC_ACQUIRE) == RF_SLOT_FETCHED &&
		    ss->generation == t->generation)
			return true;
	}
	return false;
}

static void heartbeat_tenant(struct rf_tenant *t, uint64_t now_ns)
{
	uint64_t limit = (uint64_t)t->pol.heartbeat_timeout * 1000000000ULL;
	struct rf_msg_ping ping;
	uint32_t q;
	int r;

	if (!limit || !t->pool || t->state == RF_TENANT_STOPPED ||
	    !(t->msgs_seen & RF_MSG_BIT(RF_MSG_READY)) || t->worker_pid <= 0 || t->ipc_fd < 0)
		return;
	if (t->hb_sent_seq) {
		for (q = 0; q < t->geom.nqueues; q++)
			if (__atomic_load_n(&rf_pool_stats(t->pool, q)->heartbeat,
					    __ATOMIC_RELAXED) != t->hb_sent_seq &&
			    !queue_serving(t, q))
				break;
		if (q < t->geom.nqueues) {
			if (now_ns - t->hb_sent_ns <= limit)
				return;
			snprintf(t->fail_reason, sizeof(t->fail_reason),
				 "heartbeat: queue %u did not answer for heartbeat_timeout = %u s",
				 q, t->pol.heartbeat_timeout);
			log_warnx("%s: %s; killing worker %d", t->pol.name, t->fail_reason,
				  (int)t->worker_pid);
			t->heartbeat_kills++;
			kill(t->worker_pid, SIGKILL);
			return;
		}
		/* answered: the next PING after half the timeout */
		if (now_ns - t->hb_sent_ns < limit / 2)
			return;
	}
	ping.seq = ++t->hb_seq;
	r = rf_msg_send(t->ipc_fd, RF_MSG_PING, 0, &ping, sizeof(ping), NULL, 0);
	if (r < 0 && r != -EAGAIN) {
		t->hb_sent_seq = 0;
		return; /* the worker is going; SIGCHLD follows */
	}
	/* EAGAIN: the worker does not read; the PING counts as unanswered */
	t->hb_sent_seq = ping.seq;
	t->hb_sent_ns = now_ns;
}

/*
 * Everything a worker can write in the pool is checked once a second
 * before the watchdog and the heartbeat act on it: an impossible value
 * there (a header changed, a slot state that does not exist, an answer to
 * a PING never sent) is the worker's doing, and it is killed for it.
 * Returns whether the tenant's worker may go on.
 */
static bool pool_sane(struct rf_tenant *t, uint64_t now_ns)
{
	char why[128];

	if (!t->pool || t->worker_pid <= 0 || t->state == RF_TENANT_STOPPED)
		return true;
	if (!rf_pool_verify(t->pool, &t->geom, (uint32_t)t->conn.transport, t->generation,
			    t->hb_seq, now_ns, why, sizeof(why)))
		return true;
	rf_worker_kill(t, why);
	return false;
}

static void watchdog_cb(int fd, short what, void *arg)
{
	struct rf_broker *b = arg;
	uint64_t now_ns = rf_now_ns();
	size_t i;

	(void)fd;
	(void)what;
	for (i = 0; i < b->ntenants; i++) {
		rf_worker_log_dropped(b->tenants[i]);
		kick_deadline(b->tenants[i]);
		if (!pool_sane(b->tenants[i], now_ns))
			continue;
		watchdog_tenant(b->tenants[i], now_ns);
		heartbeat_tenant(b->tenants[i], now_ns);
	}
}

void rf_watchdog_start(struct rf_broker *b)
{
	struct timeval tv = { .tv_sec = 1 };

	b->watchdog_ev = event_new(b->base, -1, EV_PERSIST, watchdog_cb, b);
	if (!b->watchdog_ev || event_add(b->watchdog_ev, &tv) < 0)
		fatalx("event_new");
}
