// SPDX-License-Identifier: MIT
/*
 * What a queue thread of either process has: a mailbox for replies the
 * plugin made on another thread, the eventfd that wakes the thread for
 * them, and a place on the CPU its queue's requests come from.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "worker.h"

static void wake(struct rf_queue *q, int evfd)
{
	uint64_t one = 1;

	if (write(evfd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		log_warn("queue %u: wake", q->qid);
}

void rf_queue_wake(struct rf_queue *q)
{
	wake(q, q->evfd);
}

void rf_mbox_put(struct rf_req *req, int evfd)
{
	struct rf_queue *q = req->q;

	pthread_mutex_lock(&q->mbox_lock);
	req->mbox_next = q->mbox;
	q->mbox = req;
	pthread_mutex_unlock(&q->mbox_lock);
	wake(q, evfd);
}

struct rf_req *rf_mbox_take(struct rf_queue *q)
{
	struct rf_req *list;

	pthread_mutex_lock(&q->mbox_lock);
	list = q->mbox;
	q->mbox = NULL;
	pthread_mutex_unlock(&q->mbox_lock);
	return list;
}

/*
 * The kernel queues a request on the queue of the CPU its client runs on.
 * Served by a thread on that same CPU, the request needs no wake-up of
 * another CPU, either way: the client sleeps, the queue thread runs in its
 * place, answers, and the client runs again.
 */
void rf_queue_pin(struct rf_queue *q)
{
	if (!(q->w->cfg.bench & RF_BENCH_NO_PIN))
		rf_queue_pin_to(q, q->qid);
}

void rf_queue_pin_to(struct rf_queue *q, uint32_t cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set) < 0)
		log_debug("queue %u: cannot run on CPU %u only: %s", q->qid, cpu, strerror(errno));
}
