// SPDX-License-Identifier: MIT
/*
 * Once a second, for every tenant: what its worker wrote in the pool is
 * checked (pool_sane), a request held past request_timeout gets the worker
 * killed (the watchdog), a PING left unanswered past heartbeat_timeout
 * too (the heartbeat), kickers past their deadline are killed, and
 * dropped log lines are reported. A killed worker is replaced like any
 * that died (recovery.c).
 */
#include <errno.h>
#include <event2/event.h>
#include <signal.h>
#include <stdio.h>
#include <sys/time.h>

#include "broker.h"
#include "log.h"
#include "msg.h"

/*
 * The watchdog: once a second, any request a worker has held longer than
 * its tenant's request_timeout gets that worker killed; the successor
 * answers the request EIO and serves on. The slot records are written by
 * the worker, found from the broker's own geometry, checked by pool_sane()
 * first, and only ever used to decide to kill that same worker.
 * With host_restart the plugin host alone is ended (rf_host_end). While no
 * host serves (its successor due or starting) the keeper holds requests
 * by the broker's own doing: the start timer, not the watchdog, judges.
 */
static void watchdog_tenant(struct rf_tenant *t, uint64_t now_ns)
{
	uint64_t limit = (uint64_t)t->pol.request_timeout * 1000000000ULL;
	uint32_t i;

	if (!limit || t->pol.debug || !t->pool ||
	    rf_tenant_state_shown(t->state) != RF_TENANT_RUNNING || t->worker_pid <= 0)
		return;
	for (i = 0; i < t->geom.nslots; i++) {
		struct rf_slot_state *ss = rf_pool_slot_state(t->pool, &t->geom, i);
		uint64_t since = __atomic_load_n(&ss->fetched_ns, __ATOMIC_RELAXED);

		if (__atomic_load_n(&ss->state, __ATOMIC_ACQUIRE) != RF_SLOT_FETCHED ||
		    ss->generation != t->generation || now_ns < since || now_ns - since <= limit)
			continue;
		if (t->proc.host_killed) {
			log_warnx("%s: watchdog: worker %d did not end its plugin host; killing it",
				  t->pol.name, (int)t->worker_pid);
			rf_worker_sigkill(t);
			return;
		}
		snprintf(t->fail_reason, sizeof(t->fail_reason),
			 "watchdog: request %llu (opcode %u) held for more than request_timeout = "
			 "%u s",
			 (unsigned long long)ss->commit_id, ss->opcode, t->pol.request_timeout);
		t->watchdog_kills++;
		if (rf_host_end(t)) {
			log_warnx("%s: %s; ending the plugin host of worker %d", t->pol.name,
				  t->fail_reason, (int)t->worker_pid);
			return;
		}
		log_warnx("%s: %s; killing worker %d", t->pol.name, t->fail_reason,
			  (int)t->worker_pid);
		rf_worker_sigkill(t);
		return;
	}
}

/*
 * The heartbeat: the broker sends PING, the worker's main thread passes it
 * to every queue thread (through its plugin host's queue threads, where
 * it has one), and each copies it into its queue's stats in the pool. A
 * worker that leaves a PING unanswered for heartbeat_timeout is killed
 * like one the watchdog catches (with host_restart its plugin host first,
 * rf_host_end) - unless the silent queue holds a
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

	if (!limit || t->pol.debug || !t->pool || t->state == RF_TENANT_STOPPED ||
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
			t->heartbeat_kills++;
			if (rf_host_end(t)) {
				log_warnx("%s: %s; ending the plugin host of worker %d",
					  t->pol.name, t->fail_reason, (int)t->worker_pid);
				t->proc.hb_host_ended = true;
				t->hb_sent_seq = 0;
				return;
			}
			log_warnx("%s: %s; killing worker %d", t->pol.name, t->fail_reason,
				  (int)t->worker_pid);
			rf_worker_sigkill(t);
			return;
		}
		t->proc.hb_host_ended = false;
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
		rf_worker_ipc_tick(b->tenants[i]);
		rf_recovery_kick_deadline(b->tenants[i]);
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
