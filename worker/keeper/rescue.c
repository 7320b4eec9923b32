// SPDX-License-Identifier: MIT
/*
 * What a successor finishes for a dead predecessor, on each queue before
 * it registers fresh entries: the requests recorded in the slots are
 * adopted (rf_adopt: answered as the dead worker had, run again, or EIO),
 * and those the kernel handed over but never delivered are found and ended
 * (rf_rescue). The list of ids to ask for is pure (rf_rescue_plan, over
 * the seen table of ring.c), and so is its bound (rf_rescue_budget, over
 * the kernel's count of its requests): the unit tests drive them.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "keeper_i.h"
#include "uring_uapi.h"

/* How many ids past the newest received the plan asks for, without the
 * kernel's count: at most one lost request per entry, behind the requests
 * that were queued when the worker died. */
static uint64_t ids_ahead(const struct rf_worker *w)
{
	return (uint64_t)w->geom.nslots + 16;
}

void rf_rescue_plan(struct rf_worker *w)
{
	uint64_t hi = 0, lo = UINT64_MAX, ahead, id;
	uint32_t i, n = 0;

	/* a request a dead worker recorded in a slot was received (the slot
	 * is written before the table): adoption answers it, and asking for
	 * it too would end it twice */
	for (i = 0; w->pool && i < w->geom.nslots; i++) {
		const struct rf_slot_state *ss = rf_pool_slot_state(w->pool, &w->geom, i);
		uint32_t st = __atomic_load_n(&ss->state, __ATOMIC_ACQUIRE);

		id = ss->commit_id;
		if ((st == RF_SLOT_FETCHED || st == RF_SLOT_ANSWERED) && id && !(id & 1) &&
		    id <= RF_SEEN_ID_MAX && w->seen[(id >> 1) % RF_SEEN_IDS] < id)
			rf_seen_record(w, id);
	}
	/* the table is in memory a dead plugin could write: take only even
	 * ids in a sane range, so that nothing below can overflow */
	for (i = 0; i < RF_SEEN_IDS; i++) {
		id = w->seen[i];
		if (!id || (id & 1) || id > RF_SEEN_ID_MAX)
			continue;
		if (id > hi)
			hi = id;
		if (id < lo)
			lo = id;
	}
	if (!hi)
		return;
	if (hi - lo > 2ULL * (RF_SEEN_IDS - 1))
		lo = hi - 2ULL * (RF_SEEN_IDS - 1);
	ahead = 2 * ids_ahead(w);
	w->rescue = calloc((hi + ahead - lo) / 2 + 1, sizeof(*w->rescue));
	w->rescue_misses = calloc((hi + ahead - lo) / 2 + 1, sizeof(*w->rescue_misses));
	if (!w->rescue || !w->rescue_misses)
		fatal("calloc");
	w->rescue_hi = hi;
	for (id = hi + ahead; id >= lo; id -= 2)
		if (!rf_seen(w, id))
			w->rescue[n++] = id;
	w->nrescue = n;
}

static bool slot_in_doubt(const struct rf_req *req);
static bool budget_spent(struct rf_worker *w);

bool rf_rerunnable(uint32_t op)
{
	switch (op) {
	case FUSE_GETATTR:
	case FUSE_READ:
	case FUSE_READDIR:
	case FUSE_READDIRPLUS:
	case FUSE_STATFS:
	case FUSE_LISTXATTR:
	case FUSE_ACCESS:
	case FUSE_READLINK:
		return true;
	default:
		return false;
	}
}

/*
 * Adoption of a slot an inherited entry may be on, and fetch into at any
 * moment (rf_rescue): nothing is read from the slot or written into it.
 * It holds the EIO answer every probe commits, and the commit of the
 * recorded id sends that. Where the slot's dead entry still holds that
 * request, its entry was no idle one, so no inherited entry is on this
 * slot, and the request ends EIO (a complete answer of the dead worker's
 * in the slot is not sent: the one case where adoption sends EIO for
 * one). Where the entry had answered it, the commit finds nothing.
 */
static void adopt_unwritten(struct rf_req *req)
{
	struct rf_queue *q = req->q;
	struct io_uring_sqe *sqe;

	req->adopt_doubt = true;
	if (!rf_request_id(req->ss->commit_id) || budget_spent(q->w)) {
		__atomic_store_n(&req->ss->state, RF_SLOT_NONE, __ATOMIC_RELEASE);
		rf_register_or_reserve(req);
		return;
	}
	req->adopting = true;
	req->in.unique = req->ss->commit_id;
	__atomic_store_n(&req->ss->state, RF_SLOT_ANSWERED, __ATOMIC_RELEASE);
	sqe = rf_queue_cmd(q, FUSE_IO_URING_CMD_COMMIT_AND_FETCH, req->ss->commit_id);
	rf_sqe_tag(sqe, req, RF_TAG_CMD);
	req->state = RQ_WAIT;
}

/*
 * Finish, on our own ring, the request a dead predecessor left in this
 * slot: commit the answer it had queued, run it again if it is safe to, or
 * answer EIO. The kernel finds the request by id; the entry is ours from
 * then on and fetches its next request into the same slot.
 */
void rf_adopt(struct rf_req *req)
{
	struct rf_queue *q = req->q;
	struct fuse_uring_req_header *h = (void *)req->hdr;
	uint32_t state;
	struct fuse_out_header oh_old;
	struct fuse_in_header in;
	struct io_uring_sqe *sqe;

	if (req->candidate && q->floating > 0) {
		adopt_unwritten(req);
		return;
	}
	/* a record no worker playing by the rules leaves (an odd or zero
	 * id: a commit under it would trip a kernel WARN, or find nothing):
	 * the request the kernel delivered into the slot stands in, if the
	 * slot still shows one, else nothing is adopted */
	state = __atomic_load_n(&req->ss->state, __ATOMIC_ACQUIRE);
	memcpy(&in, h->in_out, sizeof(in));
	if (!rf_request_id(req->ss->commit_id)) {
		if (state != RF_SLOT_FETCHED || !rf_request_id(in.unique)) {
			log_warnx("queue %u slot %u: its record names request %llu, no request's "
				  "id: not adopted",
				  q->qid, req->idx, (unsigned long long)req->ss->commit_id);
			__atomic_store_n(&req->ss->state, RF_SLOT_NONE, __ATOMIC_RELEASE);
			rf_register_or_reserve(req);
			return;
		}
		log_warnx("queue %u slot %u: its record names request %llu: adopting request %llu, "
			  "which the kernel delivered there",
			  q->qid, req->idx, (unsigned long long)req->ss->commit_id,
			  (unsigned long long)in.unique);
		req->ss->commit_id = in.unique;
	}
	/* a slot in doubt holds a request only where the kernel's count has
	 * room for one no slot holds for certain (rf_rescue_budget): once
	 * every such request is found, its commit could only miss */
	req->adopt_doubt = slot_in_doubt(req);
	if (req->adopt_doubt && budget_spent(q->w)) {
		__atomic_store_n(&req->ss->state, RF_SLOT_NONE, __ATOMIC_RELEASE);
		rf_register_or_reserve(req);
		return;
	}
	req->adopting = true;
	req->in.unique = req->ss->commit_id;
	/* not a zero-copied READ: its client pages were registered in the
	 * dead worker's ring, which went with it; and once only: a request
	 * that killed the worker that ran it again may kill every worker
	 * (with deaths spaced wider than crash_window, for good) */
	if (state == RF_SLOT_FETCHED && rf_rerunnable(req->ss->opcode) && !req->ss->reruns &&
	    in.unique == req->ss->commit_id && in.opcode == req->ss->opcode &&
	    !(h->ring_ent_in_out.flags & FUSE_URING_ENT_ZERO_COPY)) {
		__atomic_fetch_add(&q->w->ctl->adopted_rerun, 1, __ATOMIC_RELAXED);
		log_info("queue %u: running request %llu (%s) of a dead worker again", q->qid,
			 (unsigned long long)in.unique, rf_op_name(in.opcode));
		req->rerun = true;
		rf_queue_fetched(req);
		return;
	}
	memcpy(&oh_old, h->in_out, sizeof(oh_old));
	if (state == RF_SLOT_ANSWERED && oh_old.unique == req->ss->commit_id && oh_old.error <= 0 &&
	    oh_old.error > -512 && h->ring_ent_in_out.payload_sz <= req->payload_cap) {
		/* its answer is complete in the slot: send it as it is */
		__atomic_fetch_add(&q->w->ctl->adopted_answered, 1, __ATOMIC_RELAXED);
	} else {
		struct fuse_out_header oh = { .len = sizeof(oh),
					      .error = -EIO,
					      .unique = req->ss->commit_id };

		memcpy(h->in_out, &oh, sizeof(oh));
		h->ring_ent_in_out.payload_sz = 0;
		/* as for any answer: once the commit may have gone out, the
		 * entry may fetch its next request into this slot, and a
		 * successor of ours must take the slot as one in doubt */
		__atomic_store_n(&req->ss->state, RF_SLOT_ANSWERED, __ATOMIC_RELEASE);
	}
	sqe = rf_queue_cmd(q, FUSE_IO_URING_CMD_COMMIT_AND_FETCH, req->ss->commit_id);
	rf_sqe_tag(sqe, req, RF_TAG_CMD);
	req->state = RQ_WAIT;
}

bool rf_adopt_done(struct rf_req *req, int res)
{
	struct rf_queue *q = req->q;

	if (req->adopt_stale) {
		/* the commit named a request its entry had already answered
		 * (the entry went on to fetch into this slot, which now serves
		 * that): the kernel can only have said ENOENT */
		req->adopt_stale = false;
		if (res != -ENOENT)
			fatalx("queue %u slot %u: a commit for a dead worker ended %d after its "
			       "entry had moved on",
			       q->qid, req->idx, res);
		return true;
	}
	if (!req->adopting)
		return false;
	req->adopting = false;
	if (res == 0) {
		req->candidate = false;
		if (req->adopt_doubt)
			atomic_fetch_add(&q->w->rescue_found, 1);
		__atomic_fetch_add(&q->w->ctl->adopted, 1, __ATOMIC_RELAXED);
		log_info("queue %u: finished request %llu (%s) of a dead worker", q->qid,
			 (unsigned long long)req->in.unique, rf_op_name(req->ss->opcode));
		rf_queue_fetched(req);
		return true;
	}
	if (res == -ENOENT) {
		/* it had been answered after all: a fresh entry */
		__atomic_store_n(&req->ss->state, RF_SLOT_NONE, __ATOMIC_RELEASE);
		rf_register_or_reserve(req);
		return true;
	}
	return false; /* the entry ended: as for any */
}

/* What of a slot's header the EIO answer covers, as the dead worker left it. */
struct saved_header {
	char oh[sizeof(struct fuse_out_header)];
	struct fuse_uring_ent_in_out eio;
};

/*
 * Requests no worker received. The kernel gives a request to an idle entry
 * and finishes the hand-over in the task that owns the entry's ring; if that
 * task dies first, the request stays with the dead entry, its client waits
 * for good, and no header in the pool names it. Its id, though, is one that
 * no worker received (the seen table). So a successor asks each queue for
 * every such id, newest first, with COMMIT_AND_FETCH and an EIO answer
 * placed in every slot the dead entry may have used: a miss costs an ENOENT
 * (and a line in the kernel log), a hit ends the lost request with EIO.
 *
 * A hit leaves us the dead entry, which fetches its next request into the
 * dead entry's slot: one of the candidates, we do not know which. Its first
 * fetch overwrites the commit id 0 we left in that slot's header, which
 * tells us. Until every such entry has shown itself, candidate slots get
 * no fresh entry (RQ_RESERVED), and adoption writes nothing into them
 * (adopt_unwritten); the broker's kick after a respawn usually makes them
 * show at once. Newest first keeps probes off requests that arrive for an
 * inherited entry meanwhile: those are newer than every id still to ask
 * for.
 *
 * Nothing is written into a candidate slot while such an entry is
 * unplaced. Its fetch runs in task work of this thread, which the kernel
 * runs at the thread's next return to user space: from a system call, but
 * from an interrupt or a page fault too, so between any two of our
 * instructions. A write into the slot it fetched into would spoil the
 * request (the 7.3 guest saw it: the worker found the fetch in no slot and
 * died). Hence one EIO answer, written before the first ask, serves every
 * ask: the kernel ends the request a commit finds with the answer's error
 * before it compares the answer's id, which only an answer without an
 * error must carry (docs/kernel-facts.md).
 */
static void arm_candidates(struct rf_queue *q, uint64_t id, struct saved_header *sv)
{
	struct fuse_out_header oh = { .len = sizeof(oh), .error = -EIO, .unique = id };
	uint32_t e;

	for (e = 0; e < q->w->cfg.depth; e++) {
		struct rf_req *req = &q->reqs[e];
		struct fuse_uring_req_header *h = (void *)req->hdr;

		if (!req->candidate)
			continue;
		memcpy(sv[e].oh, h->in_out, sizeof(sv[e].oh));
		memcpy(&sv[e].eio, &h->ring_ent_in_out, sizeof(sv[e].eio));
		memcpy(h->in_out, &oh, sizeof(oh));
		h->ring_ent_in_out.payload_sz = 0;
		h->ring_ent_in_out.commit_id = 0;
	}
}

/* Put back what adoption reads into a candidate slot the dead worker used
 * (one never used keeps the marker): only where no entry may fetch into
 * it. */
static void restore_slot(struct rf_req *req, const struct saved_header *sv)
{
	struct fuse_uring_req_header *h = (void *)req->hdr;

	if (__atomic_load_n(&req->ss->state, __ATOMIC_ACQUIRE) == RF_SLOT_NONE)
		return;
	memcpy(h->in_out, sv->oh, sizeof(sv->oh));
	memcpy(&h->ring_ent_in_out, &sv->eio, sizeof(sv->eio));
}

/* Every inherited entry has shown its slot: the candidates held back
 * take fresh entries. */
static void register_reserved(struct rf_queue *q)
{
	uint32_t e;

	for (e = 0; e < q->w->cfg.depth; e++)
		if (q->reqs[e].state == RQ_RESERVED) {
			q->reqs[e].candidate = false;
			rf_queue_register(&q->reqs[e]);
		}
}

/* A fresh entry for @req's slot, unless an inherited entry may be on it. */
void rf_register_or_reserve(struct rf_req *req)
{
	if (req->candidate && req->q->floating > 0) {
		req->state = RQ_RESERVED;
		return;
	}
	req->candidate = false;
	rf_queue_register(req);
}

/* An inherited entry fetched a request: find the slot it wrote. */
static void inherited_fetched(struct rf_queue *q)
{
	uint32_t e;

	for (e = 0; e < q->w->cfg.depth; e++) {
		struct rf_req *req = &q->reqs[e];
		const struct fuse_uring_req_header *h = (const void *)req->hdr;

		/* an adopted slot too: the adoption's commit named the
		 * request the dead entry had answered before it fetched a
		 * lost one, so it ends ENOENT (rf_adopt_done drops it) */
		if (!req->candidate ||
		    (req->state != RQ_IDLE && req->state != RQ_RESERVED &&
		     !(req->state == RQ_WAIT && req->adopting)) ||
		    !__atomic_load_n(&h->ring_ent_in_out.commit_id, __ATOMIC_RELAXED))
			continue;
		if (req->adopting) {
			req->adopting = false;
			req->adopt_stale = true;
		}
		req->candidate = false;
		q->floating--;
		log_debug("queue %u: the entry of a lost request fetched into slot %u", q->qid, e);
		rf_queue_fetched(req);
		if (q->floating <= 0)
			register_reserved(q);
		return;
	}
	/* a request in a slot we cannot find would wait for good: die, and
	 * let the next worker end it; say what each slot looked like */
	for (e = 0; e < q->w->cfg.depth; e++) {
		const struct rf_req *req = &q->reqs[e];
		const struct fuse_uring_req_header *h = (const void *)req->hdr;

		log_warnx("queue %u slot %u: %s, state %d, record %u, commit id %llu", q->qid, e,
			  req->candidate ? "in doubt" : "placed", (int)req->state,
			  (unsigned int)__atomic_load_n(&req->ss->state, __ATOMIC_RELAXED),
			  (unsigned long long)h->ring_ent_in_out.commit_id);
	}
	fatalx("queue %u: an inherited entry fetched into no slot we know", q->qid);
}

void rf_probe_done(struct rf_queue *q, uint64_t id, int res)
{
	if (res == 0) {
		inherited_fetched(q);
		return;
	}
	if (id == q->probe_id) {
		q->probe_missed = true;
		if (res != -ENOENT)
			log_warnx("queue %u: asking for request %llu: %s", q->qid,
				  (unsigned long long)id, strerror(-res));
		return;
	}
	/* an inherited entry ended before fetching anything */
	q->floating--;
	if (q->floating <= 0)
		register_reserved(q);
}

/*
 * May the dead entry of this slot have moved on to a request we do not
 * know of? Not while the slot is recorded FETCHED and still shows that
 * request: no commit for it went out (every answer is recorded ANSWERED
 * first), so its entry holds it. Anything else is in doubt, a FETCHED slot
 * that shows another request included (only the kernel writes one there).
 */
static bool slot_in_doubt(const struct rf_req *req)
{
	struct fuse_in_header in;

	if (__atomic_load_n(&req->ss->state, __ATOMIC_ACQUIRE) != RF_SLOT_FETCHED)
		return true;
	memcpy(&in, ((const struct fuse_uring_req_header *)(const void *)req->hdr)->in_out,
	       sizeof(in));
	return in.unique != req->ss->commit_id;
}

/* ids past the newest received asked for beyond the kernel's count */
#define RF_RESCUE_SLACK 8

static int cmp_id(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * How many requests at most neither a slot record nor a queue of the kernel
 * holds for us to see: the kernel's count of the connection's requests not
 * yet ended (fusectl's "waiting": every request from its making to its end,
 * queued, in a slot, or lost with a dead entry) less those the slots hold
 * for certain, recorded FETCHED and still showing that request (no commit
 * for it went out, so the kernel still has it). Each request the rescue
 * finds, and each answer adoption sends for a slot in doubt that the
 * kernel takes, is one of them; once that many are found, asking for more
 * can only miss, each miss a kernel log line. With none left (a quiet
 * mount, or one whose only requests are those the dead worker held), the
 * successor asks for nothing.
 *
 * The count also takes in requests queued for the next entry, which no
 * ask finds: under load the bound is loose, and the rescue asks as it
 * would without it. A count below what the slots hold (a record the dead
 * worker spoiled) bounds nothing.
 */
void rf_rescue_budget(struct rf_worker *w, int64_t waiting)
{
	uint64_t *ids = calloc((size_t)w->nqueues * w->cfg.depth + 1, sizeof(*ids));
	uint32_t q, e, n = 0, known = 0, i;

	if (!ids)
		fatal("calloc");
	for (q = 0; q < w->nqueues; q++)
		for (e = 0; e < w->cfg.depth; e++) {
			const struct rf_req *req = &w->queues[q].reqs[e];

			if (!req->classic && !slot_in_doubt(req))
				ids[n++] = req->ss->commit_id;
		}
	qsort(ids, n, sizeof(*ids), cmp_id);
	for (i = 0; i < n; i++)
		if (!i || ids[i] != ids[i - 1])
			known++;
	free(ids);
	w->rescue_budget = -1;
	atomic_store(&w->rescue_found, 0);
	if (waiting < 0)
		return;
	if (waiting < known) {
		log_warnx("the kernel counts %lld requests, the slots hold %u: asking for every id",
			  (long long)waiting, known);
		return;
	}
	w->rescue_budget = waiting - known;
	if (!w->rescue_budget) {
		w->nrescue = 0;
		log_info("the kernel's %lld requests are all in slots: no request was lost",
			 (long long)waiting);
		return;
	}
	/* Past the newest id received, every id up to a lost one's went to
	 * a request made before the dead worker's entries were torn down:
	 * one no worker received, so one the count takes in, unless it ended
	 * unseen (its client killed while it was queued), for which a few
	 * ids more are asked for. Ids past that were not given out yet, or
	 * to requests made since, which queue and are not lost. */
	if (w->rescue_hi && (uint64_t)w->rescue_budget + RF_RESCUE_SLACK < ids_ahead(w)) {
		uint64_t top = w->rescue_hi + 2 * ((uint64_t)w->rescue_budget + RF_RESCUE_SLACK);

		for (i = 0; i < w->nrescue && w->rescue[i] > top; i++)
			;
		memmove(w->rescue, w->rescue + i, (w->nrescue - i) * sizeof(*w->rescue));
		w->nrescue -= i;
	}
	log_info("the kernel counts %lld requests, %u of them in slots: asking for %u ids, "
		 "until %lld are found",
		 (long long)waiting, known, w->nrescue, (long long)w->rescue_budget);
}

/* Has the rescue found every request the kernel's count leaves room for? */
static bool budget_spent(struct rf_worker *w)
{
	return w->rescue_budget >= 0 && atomic_load(&w->rescue_found) >= (uint64_t)w->rescue_budget;
}

void rf_rescue_bound(struct rf_worker *w)
{
	char buf[32];
	ssize_t n = -1;
	long long v = -1;
	char *end;

	if (w->waiting_fd < 0) {
		rf_rescue_budget(w, -1);
		return;
	}
	n = read(w->waiting_fd, buf, sizeof(buf) - 1); /* once: fusectl has no pread */
	if (n < 0)
		log_warn("read the kernel's count of waiting requests");
	close(w->waiting_fd);
	w->waiting_fd = -1;
	if (n > 0) {
		buf[n] = '\0';
		errno = 0;
		v = strtoll(buf, &end, 10);
		if (errno || end == buf || (*end && *end != '\n') || v < 0) {
			log_warnx("the kernel's count of waiting requests reads \"%.*s\"",
				  (int)strcspn(buf, "\n"), buf);
			v = -1;
		}
	}
	rf_rescue_budget(w, v);
}

void rf_rescue(struct rf_queue *q, void (*reap)(struct rf_queue *q))
{
	struct rf_worker *w = q->w;
	struct saved_header *sv;
	uint32_t e, i, hits = 0, asked = 0;
	int r;

	if (!w->nrescue)
		return;
	sv = calloc(w->cfg.depth, sizeof(*sv));
	if (!sv)
		fatal("calloc");
	for (e = 0; e < w->cfg.depth; e++)
		q->reqs[e].candidate = slot_in_doubt(&q->reqs[e]);
	arm_candidates(q, w->rescue[0], sv);
	for (i = 0; i < w->nrescue && !atomic_load(&w->conn_gone); i++) {
		uint64_t id = w->rescue[i];
		struct io_uring_sqe *sqe;

		if (budget_spent(w))
			break;
		if (rf_seen(w, id))
			continue;
		q->probe_id = id;
		q->probe_missed = false;
		sqe = rf_queue_cmd(q, FUSE_IO_URING_CMD_COMMIT_AND_FETCH, id);
		rf_sqe_tag_probe(sqe, id);
		/* submit, and run the task work of whatever the kernel did */
		r = io_uring_submit_and_get_events(&q->ring);
		if (r < 0 && r != -EINTR && r != -EAGAIN && r != -EBUSY)
			fatalx("queue %u: io_uring_enter: %s", q->qid, strerror(-r));
		reap(q);
		asked++;
		if (q->probe_missed) {
			/* no queue has it: it was answered some other way (or
			 * its client gave up first); do not ask again */
			if (atomic_fetch_add(&w->rescue_misses[i], 1) + 1 == w->nqueues &&
			    id <= w->rescue_hi)
				rf_seen_record(w, id);
			continue;
		}
		rf_seen_record(w, id);
		atomic_fetch_add(&w->rescue_found, 1);
		hits++;
		q->floating++;
		__atomic_fetch_add(&w->ctl->rescued, 1, __ATOMIC_RELAXED);
		log_warnx("queue %u: request %llu never reached a worker: ended it with EIO",
			  q->qid, (unsigned long long)id);
	}
	q->probe_id = 0;
	/* with no entry inherited, what adoption reads goes back; else the
	 * slots keep the EIO answer, which adoption sends (adopt_unwritten) */
	for (e = 0; e < w->cfg.depth && q->floating <= 0; e++)
		if (q->reqs[e].candidate)
			restore_slot(&q->reqs[e], &sv[e]);
	free(sv);
	log_info("queue %u: asked for %u request ids no worker received: %u found", q->qid, asked,
		 hits);
}
