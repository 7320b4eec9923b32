// SPDX-License-Identifier: MIT
/*
 * What a successor does for a dead worker (worker/keeper/rescue.c): the seen
 * table and the ids it asks for; and, on a real io_uring that reaches no
 * FUSE connection, what it records and sends for each slot.
 */
#include "check_main.h"
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "log.h"
#include "host/host.h"
#include "keeper/keeper_i.h"
#include "uring_uapi.h"
#include "worker.h"

static struct rf_worker w;
static uint64_t table[RF_SEEN_IDS];

static void setup(void)
{
	memset(&w, 0, sizeof(w));
	memset(table, 0, sizeof(table));
	w.seen = table;
	w.geom.nslots = 17; /* 2 queues x 8 + the reader: 66 ids ahead */
	w.rescue_budget = -1; /* as a worker starts: no bound known */
	w.waiting_fd = -1;
}

static void teardown(void)
{
	free(w.rescue);
	free((void *)w.rescue_misses);
}

START_TEST(test_nothing_seen_nothing_asked)
{
	rf_rescue_plan(&w);
	ck_assert_uint_eq(w.nrescue, 0);
	ck_assert_ptr_null(w.rescue);
}
END_TEST

START_TEST(test_record_and_lookup)
{
	rf_seen_record(&w, 10);
	rf_seen_record(&w, 11); /* an interrupt's id: not recorded */
	ck_assert(rf_seen(&w, 10));
	ck_assert(!rf_seen(&w, 12));
	ck_assert(!rf_seen(&w, 11));
	/* a later lap replaces the entry */
	rf_seen_record(&w, 10 + 2 * RF_SEEN_IDS);
	ck_assert(!rf_seen(&w, 10));
	ck_assert(rf_seen(&w, 10 + 2 * RF_SEEN_IDS));
}
END_TEST

START_TEST(test_gaps_and_ids_ahead_newest_first)
{
	uint64_t id;
	uint32_t i;

	for (id = 100; id <= 400; id += 2)
		if (id != 250 && id != 252 && id != 398)
			rf_seen_record(&w, id);
	rf_rescue_plan(&w);
	/* 400 + 2 * (17 + 16) = 466 down to 402: 33 ids, then 398, 252, 250 */
	ck_assert_uint_eq(w.nrescue, 36);
	ck_assert_uint_eq(w.rescue[0], 466);
	ck_assert_uint_eq(w.rescue[32], 402);
	ck_assert_uint_eq(w.rescue[33], 398);
	ck_assert_uint_eq(w.rescue[34], 252);
	ck_assert_uint_eq(w.rescue[35], 250);
	ck_assert_uint_eq(w.rescue_hi, 400);
	for (i = 1; i < w.nrescue; i++)
		ck_assert_uint_gt(w.rescue[i - 1], w.rescue[i]);
}
END_TEST

START_TEST(test_range_is_one_table_wide)
{
	uint64_t id, top = 2ULL * 3 * RF_SEEN_IDS;

	/* ids from 2 to top, all seen: old laps are overwritten, so only the
	 * last RF_SEEN_IDS ids can be judged, and all of them were seen */
	for (id = 2; id <= top; id += 2)
		rf_seen_record(&w, id);
	rf_rescue_plan(&w);
	ck_assert_uint_eq(w.nrescue, 33);
	ck_assert_uint_eq(w.rescue[32], top + 2);
}
END_TEST

START_TEST(test_garbage_in_the_table_is_ignored)
{
	uint32_t i;

	table[5] = ~0ULL; /* a dead plugin scribbled here */
	table[6] = 13; /* odd */
	/* even, but past what a probe's user_data can carry (id << 3): t_chaos
	 * found a successor then counting every probe as a hit and stalling */
	table[7] = 3073595983623346078ULL;
	rf_seen_record(&w, 20);
	rf_rescue_plan(&w);
	ck_assert_uint_eq(w.rescue_hi, 20);
	ck_assert_uint_eq(w.nrescue, 33);
	for (i = 0; i < w.nrescue; i++)
		ck_assert_uint_eq((w.rescue[i] << 3) >> 3, w.rescue[i]);
}
END_TEST

/* A request recorded in a slot was received, seen table or not: a worker
 * killed between writing the slot and the table must not have its
 * successor ask for the id (and end twice what adoption answers). */
START_TEST(test_ids_recorded_in_slots_are_not_asked_for)
{
	static uint64_t pool[8192];
	struct rf_slot_state *ss;
	uint32_t i;

	w.pool = pool;
	w.geom.nqueues = 2;
	rf_seen_record(&w, 20);
	ss = rf_pool_slot_state(w.pool, &w.geom, 3);
	ss->commit_id = 24;
	__atomic_store_n(&ss->state, RF_SLOT_FETCHED, __ATOMIC_RELEASE);
	ss = rf_pool_slot_state(w.pool, &w.geom, 4);
	ss->commit_id = 26;
	__atomic_store_n(&ss->state, RF_SLOT_NONE, __ATOMIC_RELEASE); /* no request */
	rf_rescue_plan(&w);
	ck_assert_uint_eq(w.rescue_hi, 24);
	for (i = 0; i < w.nrescue; i++) {
		ck_assert_uint_ne(w.rescue[i], 24);
		ck_assert_uint_ne(w.rescue[i], 20);
	}
	ck_assert_uint_eq(w.rescue[w.nrescue - 1], 22); /* the gap is still asked for */
	memset(pool, 0, sizeof(pool));
	w.pool = NULL;
}
END_TEST

/* One queue of DEPTH slots on a plain SQE128 ring with no files: the
 * commands it sends fail with EBADF, which a probe takes as a miss. */
#define DEPTH 4
static struct rf_queue q;
static struct rf_req reqs[DEPTH];
static struct rf_slot_state slots[DEPTH];
static struct fuse_uring_req_header hdrs[DEPTH];
static struct rf_pool_ctl *ctl;
static char last_line[256];
static unsigned int nlines;

/* what the code under test logs: counted, the last line kept */
static void sink(int level, const char *line)
{
	(void)level;
	nlines++;
	snprintf(last_line, sizeof(last_line), "%s", line);
}

static struct rf_chan_view hv;

static void ring_setup(void)
{
	uint32_t e;

	setup();
	log_set_sink(sink);
	nlines = 0;
	memset(&q, 0, sizeof(q));
	memset(reqs, 0, sizeof(reqs));
	memset(slots, 0, sizeof(slots));
	memset(hdrs, 0, sizeof(hdrs));
	ctl = calloc(1, sizeof(*ctl) + sizeof(struct rf_queue_stats));
	ck_assert_ptr_nonnull(ctl);
	w.ctl = ctl;
	w.cfg.depth = DEPTH;
	w.nqueues = 1;
	w.queues = &q;
	w.side = &rf_keeper_side;
	q.w = &w;
	q.chan_phase = RF_CHP_SERVE;
	q.reqs = reqs;
	q.nreqs = DEPTH;
	q.stats = &ctl->q[0];
	ck_assert_int_eq(io_uring_queue_init(16, &q.ring, IORING_SETUP_SQE128), 0);
	/* the queue's rings, and the host's view of them */
	ck_assert_int_eq(rf_chan_rings_new(&q.chan, DEPTH), 0);
	hv = q.chan;
	ck_assert_int_eq(rf_chan_attach(&q.chan, RF_CHAN_KEEPER, -1, 1), 0);
	ck_assert_int_eq(rf_chan_attach(&hv, RF_CHAN_HOST, -1, 1), 0);
	for (e = 0; e < DEPTH; e++) {
		reqs[e].q = &q;
		reqs[e].idx = e;
		reqs[e].ss = &slots[e];
		reqs[e].hdr = (char *)&hdrs[e];
	}
}

static void ring_teardown(void)
{
	rf_chan_detach(&q.chan);
	io_uring_queue_exit(&q.ring);
	free(ctl);
	teardown();
}

/* slot @e as the kernel and a dead worker left it: request @id (@op) in
 * its header, recorded @state */
static void slot(uint32_t e, uint64_t id, uint32_t op, uint32_t state)
{
	struct fuse_in_header in = { .len = sizeof(in), .opcode = op, .unique = id };

	memcpy(hdrs[e].in_out, &in, sizeof(in));
	hdrs[e].ring_ent_in_out.commit_id = id;
	slots[e].commit_id = id;
	slots[e].opcode = op;
	slots[e].state = state;
}

static struct fuse_out_header answer_in(uint32_t e)
{
	struct fuse_out_header oh;

	memcpy(&oh, hdrs[e].in_out, sizeof(oh));
	return oh;
}

/* the last command queued on the ring */
static const struct fuse_uring_cmd_req *queued(uint32_t *cmd_op)
{
	const struct io_uring_sqe *sqe =
		&q.ring.sq.sqes[((q.ring.sq.sqe_tail - 1) & q.ring.sq.ring_mask) << 1];

	ck_assert_int_eq(sqe->opcode, IORING_OP_URING_CMD);
	*cmd_op = sqe->cmd_op;
	return (const void *)((const char *)sqe + RF_SQE_CMD_OFFSET);
}

START_TEST(test_adopt_eio_is_recorded_answered_before_it_is_sent)
{
	uint32_t op;
	const struct fuse_uring_cmd_req *cmd;

	/* a WRITE cannot be run again: it is answered EIO, and its record
	 * says so before the commit goes out, for the commit may fetch the
	 * next request into the slot and a successor of ours must know */
	slot(0, 40, FUSE_WRITE, RF_SLOT_FETCHED);
	rf_adopt(&reqs[0]);
	ck_assert_uint_eq(slots[0].state, RF_SLOT_ANSWERED);
	ck_assert_int_eq(answer_in(0).error, -EIO);
	ck_assert_uint_eq(answer_in(0).unique, 40);
	ck_assert_uint_eq(hdrs[0].ring_ent_in_out.payload_sz, 0);
	cmd = queued(&op);
	ck_assert_uint_eq(op, FUSE_IO_URING_CMD_COMMIT_AND_FETCH);
	ck_assert_uint_eq(cmd->commit_id, 40);
	ck_assert_int_eq(reqs[0].state, RQ_WAIT);
	ck_assert(reqs[0].adopting);
}
END_TEST

START_TEST(test_adopt_sends_a_complete_answer_as_it_is)
{
	struct fuse_out_header oh = { .len = sizeof(oh) + 8, .error = 0, .unique = 44 };
	uint32_t op;

	slot(1, 44, FUSE_WRITE, RF_SLOT_ANSWERED);
	memcpy(hdrs[1].in_out, &oh, sizeof(oh));
	hdrs[1].ring_ent_in_out.payload_sz = 8;
	reqs[1].payload_cap = 4096;
	rf_adopt(&reqs[1]);
	ck_assert_int_eq(answer_in(1).error, 0);
	ck_assert_uint_eq(hdrs[1].ring_ent_in_out.payload_sz, 8);
	ck_assert_uint_eq(queued(&op)->commit_id, 44);
	ck_assert_uint_eq(ctl->adopted_answered, 1);
}
END_TEST

START_TEST(test_rescue_doubts_every_slot_whose_entry_may_have_moved_on)
{
	struct fuse_out_header marker;

	rf_seen_record(&w, 40);
	rf_seen_record(&w, 44);
	rf_seen_record(&w, 48);
	rf_rescue_plan(&w);
	ck_assert_uint_gt(w.nrescue, 0);
	slot(0, 40, FUSE_WRITE, RF_SLOT_FETCHED); /* its entry holds 40 */
	/* recorded as holding 44, but the kernel wrote 52 there: a commit
	 * for 44 went out, and its entry fetched again */
	slot(1, 52, FUSE_READ, RF_SLOT_FETCHED);
	slots[1].commit_id = 44;
	slots[1].opcode = FUSE_WRITE;
	slot(2, 48, FUSE_WRITE, RF_SLOT_ANSWERED);
	rf_rescue(&q, rf_queue_reap);
	ck_assert(!reqs[0].candidate);
	ck_assert(reqs[1].candidate);
	ck_assert(reqs[2].candidate);
	ck_assert(reqs[3].candidate); /* never used: a fresh entry's */
	/* every probe missed (EBADF): nothing inherited, and each id is
	 * taken as seen, so that the next successor does not ask again */
	ck_assert_int_eq(q.floating, 0);
	ck_assert_uint_eq(ctl->rescued, 0);
	ck_assert_uint_eq(w.rescue[w.nrescue - 1], 42);
	ck_assert(rf_seen(&w, 42));
	/* with nothing inherited, what adoption reads is back; the unused
	 * slot keeps the marker */
	ck_assert_uint_eq(hdrs[1].ring_ent_in_out.commit_id, 52);
	ck_assert_uint_eq(hdrs[2].ring_ent_in_out.commit_id, 48);
	memcpy(&marker, hdrs[3].in_out, sizeof(marker));
	ck_assert_int_eq(marker.error, -EIO);
	ck_assert_uint_eq(hdrs[3].ring_ent_in_out.commit_id, 0);
	/* one line per failed ask, and the summary */
	ck_assert_uint_eq(nlines, w.nrescue + 1);
	ck_assert_ptr_nonnull(
		strstr(last_line, "asked for 35 request ids no worker received: 0 found"));
}
END_TEST

/*
 * A rescue that inherited an entry (as if a probe had hit: the commands of
 * this ring miss, so floating is set beforehand): slot 0 holds 40 for
 * certain; slot 1 is unused; slot 2's record says the dead worker answered
 * 48, its answer in the header; slot 3 was answered too (56). The
 * inherited entry is on slot 1, 2 or 3, and may fetch at any moment.
 */
static struct fuse_uring_req_header armed[DEPTH];

/* the kernel: the inherited entry fetched request @id into slot @e (a
 * kick's STATFS, which the framework answers without a plugin) */
static void kernel_fetches(uint32_t e, uint64_t id)
{
	struct fuse_in_header in = { .len = sizeof(in),
				     .opcode = FUSE_STATFS,
				     .unique = id,
				     .uid = RF_KICK_UID,
				     .gid = RF_KICK_GID };

	memcpy(hdrs[e].in_out, &in, sizeof(in));
	hdrs[e].ring_ent_in_out.commit_id = id;
	hdrs[e].ring_ent_in_out.payload_sz = 0;
}

static void rescue_with_an_entry_inherited(void)
{
	struct fuse_out_header oh48 = { .len = sizeof(oh48) + 8, .error = 0, .unique = 48 };
	struct fuse_out_header oh56 = { .len = sizeof(oh56), .error = 0, .unique = 56 };
	static char payload[DEPTH][8192];
	uint32_t e;

	rf_seen_record(&w, 40);
	rf_seen_record(&w, 48);
	rf_seen_record(&w, 56);
	rf_rescue_plan(&w);
	slot(0, 40, FUSE_WRITE, RF_SLOT_FETCHED);
	slot(2, 48, FUSE_WRITE, RF_SLOT_ANSWERED);
	memcpy(hdrs[2].in_out, &oh48, sizeof(oh48));
	hdrs[2].ring_ent_in_out.payload_sz = 8;
	slot(3, 56, FUSE_WRITE, RF_SLOT_ANSWERED);
	memcpy(hdrs[3].in_out, &oh56, sizeof(oh56));
	for (e = 0; e < DEPTH; e++) {
		reqs[e].payload = payload[e];
		reqs[e].payload_cap = sizeof(payload[e]);
	}
	q.floating = 1;
	rf_rescue(&q, rf_queue_reap);
	ck_assert_int_eq(q.floating, 1);
	ck_assert(!reqs[0].candidate);
	ck_assert(reqs[1].candidate && reqs[2].candidate && reqs[3].candidate);
	memcpy(armed, hdrs, sizeof(armed));
}

/* what a probe commits is in every candidate slot, written before the
 * first ask, and nothing is put back while the entry is unplaced */
START_TEST(test_rescue_writes_no_slot_an_inherited_entry_may_fetch_into)
{
	struct fuse_out_header oh;
	uint32_t e;

	rescue_with_an_entry_inherited();
	for (e = 1; e < DEPTH; e++) {
		memcpy(&oh, hdrs[e].in_out, sizeof(oh));
		ck_assert_int_eq(oh.error, -EIO);
		ck_assert_uint_ne(oh.unique, 0);
		ck_assert_uint_eq(hdrs[e].ring_ent_in_out.commit_id, 0);
		ck_assert_uint_eq(hdrs[e].ring_ent_in_out.payload_sz, 0);
	}
	/* the slot held for certain is not touched */
	ck_assert_uint_eq(hdrs[0].ring_ent_in_out.commit_id, 40);
}
END_TEST

/* adoption of a candidate slot writes nothing into it: the commit of its
 * record sends the EIO answer the slot holds; once the entry has shown
 * itself elsewhere, the slots held back take fresh entries */
START_TEST(test_adoption_while_an_entry_is_unplaced_writes_nothing)
{
	unsigned int before;
	uint32_t op;

	rescue_with_an_entry_inherited();
	before = io_uring_sq_ready(&q.ring);
	rf_adopt(&reqs[2]);
	ck_assert(reqs[2].adopting);
	ck_assert_int_eq(reqs[2].state, RQ_WAIT);
	ck_assert_uint_eq(slots[2].state, RF_SLOT_ANSWERED);
	ck_assert_uint_eq(queued(&op)->commit_id, 48);
	ck_assert_uint_eq(op, FUSE_IO_URING_CMD_COMMIT_AND_FETCH);
	rf_register_or_reserve(&reqs[1]);
	ck_assert_int_eq(reqs[1].state, RQ_RESERVED);
	ck_assert_uint_eq(io_uring_sq_ready(&q.ring), before + 1);
	ck_assert_int_eq(memcmp(armed, hdrs, sizeof(armed)), 0);
	/* the kernel: the entry fetched into slot 3 */
	kernel_fetches(3, 60);
	rf_probe_done(&q, 777, 0);
	ck_assert_int_eq(q.floating, 0);
	ck_assert(!reqs[3].candidate);
	ck_assert_uint_eq(slots[3].commit_id, 60); /* recorded as ours */
	ck_assert_uint_eq(reqs[3].in.unique, 60);
	/* slot 1 registered; slot 2's commit ended the request it held */
	ck_assert_int_eq(reqs[1].state, RQ_WAIT);
	ck_assert(!reqs[1].candidate);
	ck_assert_uint_eq(queued(&op)->commit_id, 0);
	ck_assert_uint_eq(op, FUSE_IO_URING_CMD_REGISTER);
	ck_assert(rf_adopt_done(&reqs[2], 0));
	ck_assert_uint_eq(ctl->adopted, 1);
	ck_assert_uint_eq(ctl->adopted_answered, 0);
}
END_TEST

/* the entry fetches into the adopted slot, after the adoption's commit was
 * queued: the slot serves what it fetched, and the commit (which named a
 * request the entry had already answered, so the kernel says ENOENT) is
 * dropped */
START_TEST(test_inherited_entry_fetches_into_an_adopted_slot)
{
	rescue_with_an_entry_inherited();
	rf_adopt(&reqs[2]);
	ck_assert(reqs[2].adopting);
	kernel_fetches(2, 60);
	rf_probe_done(&q, 777, 0);
	ck_assert_int_eq(q.floating, 0);
	ck_assert(!reqs[2].candidate);
	ck_assert(!reqs[2].adopting);
	ck_assert(reqs[2].adopt_stale);
	ck_assert_uint_eq(slots[2].commit_id, 60); /* recorded as ours */
	ck_assert_uint_eq(reqs[2].in.unique, 60);
	ck_assert_uint_eq(reqs[2].in.opcode, FUSE_STATFS);
	ck_assert(rf_adopt_done(&reqs[2], -ENOENT));
	ck_assert(!reqs[2].adopt_stale);
	ck_assert_uint_eq(slots[2].commit_id, 60);
	ck_assert_uint_eq(ctl->adopted, 0);
}
END_TEST

/*
 * The kernel's count of its requests bounds what a successor asks for.
 * Slot 0 holds 40 for certain (FETCHED, and the header shows it); slot 1
 * is in doubt (ANSWERED 44: its commit may or may not have gone out); slot
 * 2 was recorded FETCHED with 40 too (a spoiled record: counted once).
 */
static void budget_slots(void)
{
	rf_seen_record(&w, 40);
	rf_seen_record(&w, 44);
	rf_rescue_plan(&w);
	ck_assert_uint_gt(w.nrescue, 0);
	slot(0, 40, FUSE_WRITE, RF_SLOT_FETCHED);
	slot(1, 44, FUSE_WRITE, RF_SLOT_ANSWERED);
	slot(2, 40, FUSE_WRITE, RF_SLOT_FETCHED);
}

/* a quiet mount: the kernel has nothing but what the slots hold, so
 * nothing is asked for, and a slot in doubt gets a fresh entry with no
 * commit for the kernel to refuse (and log) */
START_TEST(test_no_request_unaccounted_nothing_asked)
{
	uint32_t op;

	budget_slots();
	rf_rescue_budget(&w, 1);
	ck_assert_int_eq(w.rescue_budget, 0);
	ck_assert_uint_eq(w.nrescue, 0);
	ck_assert_ptr_nonnull(strstr(last_line, "all in slots"));
	rf_rescue(&q, rf_queue_reap);
	ck_assert_uint_eq(io_uring_sq_ready(&q.ring), 0);
	rf_adopt(&reqs[1]);
	ck_assert(!reqs[1].adopting);
	ck_assert_uint_eq(slots[1].state, RF_SLOT_NONE);
	queued(&op);
	ck_assert_uint_eq(op, FUSE_IO_URING_CMD_REGISTER);
	/* the request the slot holds for certain is adopted as ever */
	rf_adopt(&reqs[0]);
	ck_assert(reqs[0].adopting);
	ck_assert_uint_eq(queued(&op)->commit_id, 40);
	ck_assert_uint_eq(op, FUSE_IO_URING_CMD_COMMIT_AND_FETCH);
}
END_TEST

/* room for one: the rescue asks until one is found, adoption commits for
 * the slot in doubt until then, and a request it ends counts */
START_TEST(test_asking_stops_once_the_count_is_found)
{
	uint32_t op;

	budget_slots();
	rf_rescue_budget(&w, 2);
	ck_assert_int_eq(w.rescue_budget, 1);
	ck_assert_uint_gt(w.nrescue, 0);
	rf_adopt(&reqs[1]);
	ck_assert(reqs[1].adopting);
	ck_assert(reqs[1].adopt_doubt);
	ck_assert_uint_eq(queued(&op)->commit_id, 44);
	kernel_fetches(1, 60); /* the kernel took it, and fetched the next */
	ck_assert(rf_adopt_done(&reqs[1], 0));
	ck_assert_uint_eq(atomic_load(&w.rescue_found), 1);
	nlines = 0;
	rf_rescue(&q, rf_queue_reap);
	ck_assert_uint_eq(nlines, 1);
	ck_assert_ptr_nonnull(strstr(last_line, "asked for 0 request ids"));
}
END_TEST

/* ids past the newest received (44) only as far as the count leaves room
 * for requests made before the dead worker's entries were torn down: room
 * for 2, plus the slack of 8, up to 64; the gap below 44 still */
START_TEST(test_ids_past_the_count_are_not_asked)
{
	uint32_t i;

	budget_slots();
	ck_assert_uint_eq(w.rescue[0], 44 + 2 * (17 + 16));
	rf_rescue_budget(&w, 3);
	ck_assert_int_eq(w.rescue_budget, 2);
	ck_assert_uint_eq(w.nrescue, 11);
	ck_assert_uint_eq(w.rescue[0], 64);
	for (i = 1; i < 10; i++)
		ck_assert_uint_eq(w.rescue[i], 64 - 2 * i);
	ck_assert_uint_eq(w.rescue[10], 42);
	ck_assert_ptr_nonnull(strstr(last_line, "asking for 11 ids, until 2 are found"));
}
END_TEST

/* no count, or one the slots contradict: every id is asked for */
START_TEST(test_no_bound_without_a_sane_count)
{
	budget_slots();
	rf_rescue_budget(&w, -1);
	ck_assert_int_eq(w.rescue_budget, -1);
	rf_rescue_budget(&w, 0); /* below the one request the slots hold */
	ck_assert_int_eq(w.rescue_budget, -1);
	ck_assert_ptr_nonnull(strstr(last_line, "asking for every id"));
	nlines = 0;
	rf_rescue(&q, rf_queue_reap);
	ck_assert_uint_eq(nlines, w.nrescue + 1); /* each ask missed (EBADF), and the summary */
}
END_TEST

/* the count as fusectl's file gives it, read once and closed */
START_TEST(test_bound_read_from_the_waiting_file)
{
	char path[] = "/tmp/check_rescue.XXXXXX";
	int fd = mkstemp(path);

	ck_assert_int_ge(fd, 0);
	unlink(path);
	ck_assert_int_eq(pwrite(fd, "3\n", 2, 0), 2);
	budget_slots();
	w.waiting_fd = fd;
	rf_rescue_bound(&w);
	ck_assert_int_eq(w.rescue_budget, 2);
	ck_assert_int_eq(w.waiting_fd, -1);
	ck_assert_int_lt(fcntl(fd, F_GETFD), 0);
	/* a file that says something else bounds nothing */
	strcpy(path, "/tmp/check_rescue.XXXXXX");
	fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	unlink(path);
	ck_assert_int_eq(pwrite(fd, "3x\n", 3, 0), 3);
	w.waiting_fd = fd;
	rf_rescue_bound(&w);
	ck_assert_int_eq(w.rescue_budget, -1);
}
END_TEST

/* a commit's reply header names the command's request (the keeper
 * writes it; the plugin host has the header areas read-only) */
START_TEST(test_commit_stamps_the_header)
{
	uint32_t op;

	slot(1, 50, FUSE_LOOKUP, RF_SLOT_FETCHED);
	memcpy(&reqs[1].in, hdrs[1].in_out, sizeof(reqs[1].in));
	reqs[1].state = RQ_PLUGIN;
	rf_queue_commit(&reqs[1]);
	ck_assert_uint_eq(queued(&op)->commit_id, 50);
	ck_assert_uint_eq(answer_in(1).unique, 50);
}
END_TEST

/* both records spoiled: the id the kernel delivered into the slot */
START_TEST(test_reply_under_the_delivered_id)
{
	uint32_t op;

	slot(2, 62, FUSE_LOOKUP, RF_SLOT_FETCHED);
	memcpy(&reqs[2].in, hdrs[2].in_out, sizeof(reqs[2].in));
	reqs[2].state = RQ_PLUGIN;
	reqs[2].in.unique = 63;
	slots[2].commit_id = 65;
	rf_queue_commit(&reqs[2]);
	ck_assert_uint_eq(queued(&op)->commit_id, 62);
	ck_assert_uint_eq(answer_in(2).unique, 62);
	ck_assert_uint_eq(slots[2].commit_id, 62); /* what a successor adopts */
	ck_assert_ptr_nonnull(strstr(last_line, "the kernel delivered"));
}
END_TEST

/* a successor adopts what the kernel delivered where the record is odd,
 * and nothing where the slot shows no request either */
START_TEST(test_adopt_a_spoiled_record)
{
	uint32_t op;

	slot(0, 80, FUSE_WRITE, RF_SLOT_FETCHED);
	slots[0].commit_id = 81;
	rf_adopt(&reqs[0]);
	ck_assert_uint_eq(queued(&op)->commit_id, 80);
	ck_assert_uint_eq(answer_in(0).unique, 80);
	ck_assert_int_eq(answer_in(0).error, -EIO);
	slot(1, 0, FUSE_WRITE, RF_SLOT_ANSWERED);
	slots[1].commit_id = 91;
	rf_adopt(&reqs[1]);
	ck_assert(!reqs[1].adopting);
	ck_assert_uint_eq(slots[1].state, RF_SLOT_NONE);
	ck_assert_ptr_nonnull(strstr(last_line, "not adopted"));
}
END_TEST

/* the same for a classic reply's header */
START_TEST(test_classic_reply_header)
{
	static char buf[4096];
	struct fuse_out_header *oh = (struct fuse_out_header *)(void *)buf;

	slot(3, 70, FUSE_LOOKUP, RF_SLOT_FETCHED);
	memcpy(&reqs[3].in, hdrs[3].in_out, sizeof(reqs[3].in));
	reqs[3].classic = true;
	reqs[3].payload = buf + sizeof(*oh);
	reqs[3].state = RQ_PLUGIN;
	rf_queue_commit(&reqs[3]);
	ck_assert_uint_eq(oh->unique, 70);
	ck_assert_uint_eq(oh->len, sizeof(*oh));
}
END_TEST

/* a reply under a changed id goes out under the recorded one */
START_TEST(test_reply_under_the_recorded_id)
{
	uint32_t op;

	slot(2, 60, FUSE_LOOKUP, RF_SLOT_FETCHED);
	memcpy(&reqs[2].in, hdrs[2].in_out, sizeof(reqs[2].in));
	reqs[2].state = RQ_PLUGIN;
	reqs[2].in.unique = 61;
	rf_queue_commit(&reqs[2]);
	ck_assert_uint_eq(queued(&op)->commit_id, 60);
	ck_assert_uint_eq(answer_in(2).unique, 60);
	ck_assert_ptr_nonnull(strstr(last_line, "changed request 60's ids to 61 and 60"));
}
END_TEST

/* ---- the plugin host's answers, as the keeper takes them ---- */

/* slot @e holds request @id (@op), handed to the host */
static void with_host(uint32_t e, uint64_t id, uint32_t op)
{
	static char payload[DEPTH][4096];

	slot(e, id, op, RF_SLOT_FETCHED);
	memcpy(&reqs[e].in, hdrs[e].in_out, sizeof(reqs[e].in));
	reqs[e].state = RQ_PLUGIN;
	reqs[e].payload = payload[e];
	reqs[e].payload_cap = sizeof(payload[e]);
	reqs[e].arg0 = (const char *)hdrs[e].op_in;
	reqs[e].fd = -1;
	w.host_pid = 1;
}

/* the last FUSE command queued on the ring (the keeper queues its next
 * RECVMSG of the channel after it) */
static const struct fuse_uring_cmd_req *queued_cmd(uint32_t *cmd_op)
{
	unsigned int i;

	for (i = q.ring.sq.sqe_tail; i != q.ring.sq.sqe_head; i--) {
		const struct io_uring_sqe *sqe =
			&q.ring.sq.sqes[((i - 1) & q.ring.sq.ring_mask) << 1];

		if (sqe->opcode == IORING_OP_URING_CMD) {
			*cmd_op = sqe->cmd_op;
			return (const void *)((const char *)sqe + RF_SQE_CMD_OFFSET);
		}
	}
	ck_abort_msg("no FUSE command queued");
	return NULL;
}

/* the host writes records @r on the queue's ring */
static void host_writes(const struct rf_chan_rec *r, uint32_t n)
{
	struct rf_queue hq = { .w = &w, .chan = hv };
	const struct rf_side *keeper = w.side;

	w.side = &rf_host_side;
	for (uint32_t i = 0; i < n; i++)
		*rf_chan_next(&hq) = r[i];
	rf_chan_flush(&hq);
	hv = hq.chan;
	w.side = keeper;
}

/* the keeper writes records @r on the queue's ring */
static void keeper_writes(const struct rf_chan_rec *r, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		*rf_chan_next(&q) = r[i];
	rf_chan_flush(&q);
}

/* the host's records @r, written on the queue's ring, as the keeper
 * takes them */
static void from_host(const struct rf_chan_rec *r, uint32_t n)
{
	host_writes(r, n);
	rf_queue_host_ring(&q);
}

/* the same, as one message on the socket */
static void from_host_socket(const struct rf_chan_rec *r, uint32_t n)
{
	memcpy(q.rx, r, n * sizeof(*r));
	memset(&q.rx_cmsg, 0, sizeof(q.rx_cmsg));
	rf_queue_host_message(&q, (int)(n * sizeof(*r)));
}

START_TEST(test_host_answer_goes_out_as_the_keeper_records)
{
	struct rf_chan_rec r = { .kind = RF_CH_REPLY, .idx = 1, .len = 16, .error = 0 };
	uint32_t op;

	with_host(1, 100, FUSE_GETATTR);
	from_host(&r, 1);
	ck_assert_uint_eq(queued_cmd(&op)->commit_id, 100);
	ck_assert_uint_eq(op, FUSE_IO_URING_CMD_COMMIT_AND_FETCH);
	ck_assert_uint_eq(answer_in(1).unique, 100);
	ck_assert_uint_eq(answer_in(1).len, sizeof(struct fuse_out_header) + 16);
	ck_assert_int_eq(answer_in(1).error, 0);
	ck_assert_uint_eq(hdrs[1].ring_ent_in_out.payload_sz, 16);
	ck_assert_uint_eq(slots[1].state, RF_SLOT_ANSWERED);
	ck_assert_int_eq(reqs[1].state, RQ_WAIT);
}
END_TEST

START_TEST(test_host_answer_the_kernel_would_refuse_is_eio)
{
	struct rf_chan_rec r[3] = {
		{ .kind = RF_CH_REPLY, .idx = 0, .error = 600 }, /* no errno */
		{ .kind = RF_CH_REPLY, .idx = 1, .len = 5000 }, /* past the payload */
		{ .kind = RF_CH_REPLY, .idx = 2, .error = -3 },
	};
	uint32_t e;

	for (e = 0; e < 3; e++)
		with_host(e, 200 + 2 * e, FUSE_LOOKUP);
	from_host(r, 3);
	for (e = 0; e < 3; e++) {
		ck_assert_int_eq(answer_in(e).error, -EIO);
		ck_assert_uint_eq(answer_in(e).len, sizeof(struct fuse_out_header));
		ck_assert_uint_eq(answer_in(e).unique, 200 + 2 * e);
	}
}
END_TEST

START_TEST(test_host_answer_for_no_waiting_slot_is_ignored)
{
	struct rf_chan_rec r[3] = {
		{ .kind = RF_CH_REPLY, .idx = DEPTH }, /* no such slot */
		{ .kind = RF_CH_REPLY, .idx = 3 }, /* idle */
		{ .kind = RF_CH_DONE, .idx = 1 }, /* no FORGET there */
	};
	struct rf_chan_rec again = { .kind = RF_CH_REPLY, .idx = 1, .error = ENOENT };
	unsigned int before;

	with_host(1, 300, FUSE_LOOKUP);
	from_host(r, 3);
	ck_assert_int_eq(reqs[1].state, RQ_PLUGIN); /* still waits for its own */
	ck_assert_int_eq(reqs[3].state, RQ_IDLE);
	ck_assert_ptr_nonnull(strstr(last_line, "which it was not given"));
	from_host(&again, 1);
	ck_assert_int_eq(answer_in(1).error, -ENOENT);
	before = nlines;
	from_host(&again, 1); /* twice */
	ck_assert_uint_eq(nlines, before + 1);
	ck_assert_ptr_nonnull(strstr(last_line, "waits for no answer"));
}
END_TEST

START_TEST(test_host_file_without_a_zero_copy_is_eio)
{
	struct rf_chan_rec r = {
		.kind = RF_CH_REPLY, .idx = 0, .flags = RF_CHF_FD_READ, .len = 4096
	};

	with_host(0, 400, FUSE_READ);
	from_host(&r, 1); /* not zero-copied, and no file came */
	ck_assert_int_eq(answer_in(0).error, -EIO);
	ck_assert_ptr_nonnull(strstr(last_line, "passed a file"));
}
END_TEST

START_TEST(test_host_counters_and_heartbeat)
{
	struct rf_chan_rec r[3] = {
		{ .kind = RF_CH_COUNT, .idx = RF_CNT_RESTORED, .a = 5, .len = 3, .error = 2 },
		{ .kind = RF_CH_COUNT, .idx = RF_CNT_RESTORE_FULL, .a = 1 },
		{ .kind = RF_CH_PONG, .a = 77 },
	};

	w.host_pid = 1;
	w.cfg.restore_nodes = 64;
	atomic_store(&w.host_seq, 1);
	atomic_store(&w.ping_seq, 77);
	from_host_socket(r, 2);
	from_host(&r[2], 1);
	ck_assert_uint_eq(q.stats->restored_nodes, 5);
	ck_assert_uint_eq(q.stats->restored_files, 3);
	ck_assert_uint_eq(q.stats->restore_failed, 2);
	ck_assert_uint_eq(q.stats->restore_full, 1);
	ck_assert_uint_eq(q.stats->heartbeat, 77);
}
END_TEST

/* counts and PONGs a host makes up: a restore of more than the tables
 * hold, a second restore by the same host, a full table of more than one
 * record, a PONG for a PING never sent: none is counted; the next host's
 * restore is */
START_TEST(test_host_counts_are_held_to_the_keepers_records)
{
	uint32_t files = rf_restore_files(64);
	struct rf_chan_rec r[] = {
		{ .kind = RF_CH_COUNT, .idx = RF_CNT_RESTORED, .a = 65 },
		{ .kind = RF_CH_COUNT, .idx = RF_CNT_RESTORED, .len = files + 1 },
		{ .kind = RF_CH_COUNT, .idx = RF_CNT_RESTORED, .error = -1 },
		{ .kind = RF_CH_COUNT, .idx = RF_CNT_RESTORED, .error = (int32_t)(64 + files + 1) },
		{ .kind = RF_CH_COUNT, .idx = RF_CNT_RESTORE_FULL, .a = 1000 },
		{ .kind = RF_CH_COUNT, .idx = 99, .a = 1 },
		{ .kind = RF_CH_COUNT, .idx = RF_CNT_RESTORED, .a = 64, .len = files, .error = 3 },
		{ .kind = RF_CH_COUNT, .idx = RF_CNT_RESTORED, .a = 7 },
	};
	struct rf_chan_rec pong[2] = { { .kind = RF_CH_PONG, .a = 78 },
				       { .kind = RF_CH_PONG, .a = 1ULL << 40 } };

	w.host_pid = 1;
	w.cfg.restore_nodes = 64;
	atomic_store(&w.host_seq, 1);
	atomic_store(&w.ping_seq, 77);
	q.stats->heartbeat = 76;
	from_host_socket(r, sizeof(r) / sizeof(r[0]));
	from_host(pong, 2);
	ck_assert_uint_eq(q.stats->restored_nodes, 64);
	ck_assert_uint_eq(q.stats->restored_files, files);
	ck_assert_uint_eq(q.stats->restore_failed, 3);
	ck_assert_uint_eq(q.stats->restore_full, 0);
	ck_assert_uint_eq(q.stats->heartbeat, 76);
	/* the next host restores again */
	atomic_store(&w.host_seq, 2);
	from_host_socket(&r[7], 1);
	ck_assert_uint_eq(q.stats->restored_nodes, 71);
}
END_TEST

/* a message that is no whole number of records: the host is ended (none
 * here) and the keeper exits with its status */
START_TEST(test_host_message_of_no_whole_record_ends_the_worker)
{
	w.host_pid = 1;
	memset(q.rx, 0, sizeof(q.rx));
	rf_queue_host_message(&q, (int)sizeof(struct rf_chan_rec) + 3);
}
END_TEST

/* Until a host queue thread says READY its channel carries only counts:
 * an answer on the socket before it ends the host (none here), and the
 * keeper with it */
START_TEST(test_host_answer_before_ready_ends_the_worker)
{
	struct rf_chan_rec r = { .kind = RF_CH_REPLY, .idx = 1, .len = 16 };

	with_host(1, 100, FUSE_GETATTR);
	w.host_pid = 1;
	q.chan_phase = RF_CHP_INIT;
	from_host_socket(&r, 1);
}
END_TEST

/* READY opens the channel: the ring is read from then on (what the host
 * wrote there before is checked then, as anything on it), and a second
 * READY ends the host */
START_TEST(test_host_ready_opens_its_channel)
{
	struct rf_chan_rec ready = { .kind = RF_CH_READY }, pong = { .kind = RF_CH_PONG, .a = 91 };

	w.host_pid = 1;
	q.qid = 1;
	q.chan_phase = RF_CHP_INIT;
	from_host(&pong, 1);
	ck_assert_uint_eq(q.stats->heartbeat, 0); /* not read before READY */
	from_host_socket(&ready, 1);
	ck_assert_int_eq(q.chan_phase, RF_CHP_SERVE);
	ck_assert_uint_eq(q.stats->heartbeat, 91);
	pong.a = 92;
	from_host(&pong, 1);
	ck_assert_uint_eq(q.stats->heartbeat, 92);
	from_host_socket(&ready, 1);
}
END_TEST

/* each record on its own half: an answer on the ring, a count on the
 * socket; a DONE on the socket ends the host (none here), and the keeper */
START_TEST(test_host_record_on_the_wrong_half_ends_the_worker)
{
	struct rf_chan_rec r = { .kind = RF_CH_DONE, .idx = 1 };

	w.host_pid = 1;
	from_host_socket(&r, 1);
}
END_TEST

/* a ring whose tail the host moved further than a ring holds ends the
 * host (none here), and the keeper */
START_TEST(test_host_ring_tail_out_of_bounds_ends_the_worker)
{
	w.host_pid = 1;
	hv.out->tail = q.chan.cap + 1;
	rf_queue_host_ring(&q);
}
END_TEST

/* COUNT comes on queue 0's channel only */
START_TEST(test_host_count_on_another_queue_ends_the_worker)
{
	struct rf_chan_rec r = { .kind = RF_CH_COUNT, .idx = RF_CNT_RESTORED, .a = 5 };

	w.host_pid = 1;
	q.qid = 1;
	from_host_socket(&r, 1);
}
END_TEST

/* ---- host_restart: the keeper outlives its plugin host ---- */

/* What the dead host held is settled as a successor settles a dead
 * worker's requests: run again once where that is safe, else EIO. */
START_TEST(test_host_death_settles_what_it_held)
{
	with_host(0, 600, FUSE_GETATTR); /* safe to repeat: waits for the next host */
	with_host(1, 602, FUSE_WRITE); /* may be half done: EIO */
	with_host(2, 604, FUSE_READ);
	slots[2].reruns = 1; /* run again once already: EIO */
	rf_queue_host_gone(&q);
	ck_assert(q.host_down);
	ck_assert(reqs[0].host_park);
	ck_assert_int_eq(reqs[0].state, RQ_PLUGIN);
	ck_assert_uint_eq(slots[0].reruns, 1);
	ck_assert_int_eq(answer_in(1).error, -EIO);
	ck_assert_uint_eq(answer_in(1).unique, 602);
	ck_assert_int_eq(reqs[1].state, RQ_WAIT);
	ck_assert_int_eq(answer_in(2).error, -EIO);
	ck_assert(!reqs[2].host_park);
	ck_assert_int_eq(reqs[3].state, RQ_IDLE);
	ck_assert_uint_eq(ctl->adopted, 3);
	ck_assert_uint_eq(ctl->adopted_rerun, 1);
}
END_TEST

/* A request fetched while no host exists waits in its slot, sent nowhere. */
START_TEST(test_requests_wait_while_no_host)
{
	with_host(0, 700, FUSE_LOOKUP);
	reqs[0].state = RQ_WAIT;
	hdrs[0].ring_ent_in_out.payload_sz = 2;
	q.host_down = true;
	rf_queue_fetched(&reqs[0]);
	ck_assert(reqs[0].host_park);
	ck_assert_int_eq(reqs[0].state, RQ_PLUGIN);
	ck_assert_uint_eq(q.ntx, 0);
	ck_assert_uint_eq(slots[0].state, RF_SLOT_FETCHED);
}
END_TEST

/* The reaper's word that the host died: what it answered on its ring is
 * taken; what it never took from the keeper's comes back from the
 * keeper's own copy (whatever the host wrote over it) and waits for the
 * next host; what it took and did not answer is settled once its last
 * answers are in (the end of the channel), not before. */
START_TEST(test_host_death_takes_back_what_it_never_read)
{
	struct rf_chan_rec got[4], answer = { .kind = RF_CH_REPLY, .idx = 2 };
	struct rf_chan_rec taken[2] = { { .kind = RF_CH_REQ, .idx = 0 },
					{ .kind = RF_CH_REQ, .idx = 2 } };
	struct rf_chan_rec untaken = { .kind = RF_CH_REQ, .idx = 1 };
	char c;
	int sv[2];

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv), 0);
	with_host(0, 900, FUSE_WRITE); /* taken by the host before it died */
	with_host(1, 902, FUSE_WRITE); /* written after: never taken */
	with_host(2, 904, FUSE_GETATTR); /* answered before it died */
	keeper_writes(taken, 2);
	ck_assert_int_eq(rf_chan_take(&hv, got, 4), 2);
	host_writes(&answer, 1);
	keeper_writes(&untaken, 1);
	hv.in_rec[2].idx = 0; /* the dead host's scribble */
	w.cfg.host_restart = 1;
	w.host_ready = true;
	q.host_end = sv[1];
	q.host_seq = 1;
	q.chan_armed = true;
	atomic_store(&q.dead_seq, 1);
	rf_queue_host_notice(&q);
	ck_assert(q.host_down);
	ck_assert(q.host_draining);
	ck_assert_int_eq(q.host_end, -1);
	ck_assert(reqs[1].host_park);
	ck_assert(!reqs[0].host_park);
	ck_assert(!reqs[2].host_park);
	ck_assert_int_eq(reqs[2].state, RQ_WAIT); /* its answer went out */
	ck_assert_int_eq(reqs[0].state, RQ_PLUGIN); /* its answer may still come */
	/* the end of the channel: the rest is settled */
	q.chan_armed = false;
	rf_queue_host_message(&q, 0);
	ck_assert(!q.host_draining);
	ck_assert_int_eq(answer_in(0).error, -EIO);
	ck_assert(reqs[1].host_park);
	ck_assert_int_eq(reqs[1].state, RQ_PLUGIN);
	/* the keeper's own end: shut down with the host's */
	ck_assert_int_eq(recv(sv[0], &c, 1, MSG_DONTWAIT), 0);
	close(sv[0]);
}
END_TEST

/* ---- backing files (worker/keeper/backing.c): the keeper serves their data ---- */

/* the host's record @r with the file @fd, as one message */
static void from_host_with_file(const struct rf_chan_rec *r, int fd)
{
	struct cmsghdr *cm = (struct cmsghdr *)(void *)q.rx_cmsg.buf;

	memcpy(q.rx, r, sizeof(*r));
	memset(&q.rx_cmsg, 0, sizeof(q.rx_cmsg));
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fd, sizeof(fd));
	rf_queue_host_message(&q, (int)sizeof(*r));
}

/* a message that carries two files: the keeper keeps neither */
START_TEST(test_host_files_not_asked_for_are_closed)
{
	struct rf_chan_rec r = { .kind = RF_CH_COUNT, .idx = 99 };
	struct cmsghdr *cm = (struct cmsghdr *)(void *)q.rx_cmsg.buf;
	int fds[2] = { open("/", O_PATH), open("/", O_PATH) };

	ck_assert_uint_eq(sizeof(q.rx_cmsg.buf), CMSG_LEN(sizeof(fds)));
	w.host_pid = 1;
	memcpy(q.rx, &r, sizeof(r));
	memset(&q.rx_cmsg, 0, sizeof(q.rx_cmsg));
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(fds));
	memcpy(CMSG_DATA(cm), fds, sizeof(fds));
	rf_queue_host_message(&q, (int)sizeof(r));
	ck_assert_int_lt(fcntl(fds[0], F_GETFD), 0);
	ck_assert_int_lt(fcntl(fds[1], F_GETFD), 0);
	/* and the count of a header longer than the buffer: as many as fit */
	fds[0] = open("/", O_PATH);
	fds[1] = open("/", O_PATH);
	memset(&q.rx_cmsg, 0, sizeof(q.rx_cmsg));
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(3 * sizeof(int));
	memcpy(CMSG_DATA(cm), fds, sizeof(fds));
	rf_queue_host_message(&q, (int)sizeof(r));
	ck_assert_int_lt(fcntl(fds[0], F_GETFD), 0);
	ck_assert_int_lt(fcntl(fds[1], F_GETFD), 0);
}
END_TEST

/* a regular file holding "backing bytes" */
static int backing_file(void)
{
	char path[] = "/tmp/check_rescue.XXXXXX";
	int fd = mkstemp(path);

	ck_assert_int_ge(fd, 0);
	unlink(path);
	ck_assert_int_eq(pwrite(fd, "backing bytes", 13, 0), 13);
	return fd;
}

/* slot @e holds a READ (or WRITE of @len bytes) of handle @fh */
static void data_request(uint32_t e, uint64_t id, uint32_t op, uint64_t fh, uint32_t len)
{
	struct fuse_read_in ri = { .fh = fh, .offset = 0, .size = len };
	struct fuse_write_in wi = { .fh = fh, .offset = 0, .size = len };

	with_host(e, id, op);
	if (op == FUSE_READ)
		memcpy(hdrs[e].op_in, &ri, sizeof(ri));
	else
		memcpy(hdrs[e].op_in, &wi, sizeof(wi));
	reqs[e].rest = reqs[e].payload;
	reqs[e].rest_len = op == FUSE_WRITE ? len : 0;
	reqs[e].backing_ref = -1;
}

/* an open answered with a backing file for handle 0x77 */
static void open_backed(int fd)
{
	struct fuse_open_out o = { .fh = 0x77 };
	struct rf_chan_rec r = {
		.kind = RF_CH_REPLY, .idx = 0, .len = sizeof(o), .flags = RF_CHF_BACKING
	};

	with_host(0, 500, FUSE_OPEN);
	memcpy(reqs[0].payload, &o, sizeof(o));
	from_host_with_file(&r, fd);
	ck_assert_int_eq(answer_in(0).error, 0);
	ck_assert_uint_eq(answer_in(0).len, sizeof(struct fuse_out_header) + sizeof(o));
}

START_TEST(test_backing_file_serves_its_handle)
{
	int fd = backing_file();

	w.memory_source = true; /* by pread/pwrite, on this thread */
	open_backed(fd);
	data_request(1, 502, FUSE_READ, 0x77, 64);
	ck_assert(rf_backing_serve(&reqs[1]));
	ck_assert_int_eq(answer_in(1).error, 0);
	ck_assert_uint_eq(answer_in(1).unique, 502);
	ck_assert_uint_eq(answer_in(1).len, sizeof(struct fuse_out_header) + 13);
	ck_assert_int_eq(memcmp(reqs[1].payload, "backing bytes", 13), 0);
	/* a write of the handle lands in the file, and is counted */
	data_request(2, 504, FUSE_WRITE, 0x77, 7);
	memcpy(reqs[2].payload, "written", 7);
	ck_assert(rf_backing_serve(&reqs[2]));
	ck_assert_int_eq(answer_in(2).error, 0);
	ck_assert_uint_eq(((const struct fuse_write_out *)(void *)reqs[2].payload)->size, 7);
	ck_assert_uint_eq(q.stats->inline_bytes, 13 + 7);
	/* other handles, and this one once released, are the plugin's */
	data_request(3, 506, FUSE_READ, 0x78, 64);
	ck_assert(!rf_backing_serve(&reqs[3]));
	rf_backing_release(0x77);
	data_request(3, 508, FUSE_READ, 0x77, 64);
	ck_assert(!rf_backing_serve(&reqs[3]));
	ck_assert_int_eq(reqs[3].state, RQ_PLUGIN);
}
END_TEST

START_TEST(test_backing_file_that_must_clear_suid_is_the_plugins)
{
	struct fuse_write_in wi = { .fh = 0x77, .size = 7, .write_flags = FUSE_WRITE_KILL_SUIDGID };

	w.memory_source = true;
	open_backed(backing_file());
	data_request(1, 502, FUSE_WRITE, 0x77, 7);
	memcpy(hdrs[1].op_in, &wi, sizeof(wi));
	ck_assert(!rf_backing_serve(&reqs[1]));
}
END_TEST

START_TEST(test_backing_file_that_is_no_regular_file_is_refused)
{
	int dir = open("/", O_RDONLY | O_DIRECTORY);

	ck_assert_int_ge(dir, 0);
	open_backed(dir);
	ck_assert_ptr_nonnull(strstr(last_line, "no regular file"));
	data_request(1, 502, FUSE_READ, 0x77, 64);
	ck_assert(!rf_backing_serve(&reqs[1]));
}
END_TEST

START_TEST(test_backing_file_with_no_open_is_ignored)
{
	struct rf_chan_rec r = { .kind = RF_CH_REPLY, .idx = 0, .len = 16, .flags = RF_CHF_BACKING };
	struct fuse_open_out o = { .fh = 0x77 };

	with_host(0, 600, FUSE_GETATTR);
	memcpy(reqs[0].payload, &o, sizeof(o));
	from_host_with_file(&r, backing_file());
	ck_assert_ptr_nonnull(strstr(last_line, "no open or create"));
	ck_assert_int_eq(answer_in(0).error, 0); /* the answer itself stands */
	data_request(1, 602, FUSE_READ, 0x77, 64);
	ck_assert(!rf_backing_serve(&reqs[1]));
}
END_TEST

static Suite *rescue_suite(void)
{
	Suite *s = suite_create("rescue");
	TCase *tc = tcase_create("seen table");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_nothing_seen_nothing_asked);
	tcase_add_test(tc, test_record_and_lookup);
	tcase_add_test(tc, test_gaps_and_ids_ahead_newest_first);
	tcase_add_test(tc, test_range_is_one_table_wide);
	tcase_add_test(tc, test_garbage_in_the_table_is_ignored);
	tcase_add_test(tc, test_ids_recorded_in_slots_are_not_asked_for);
	suite_add_tcase(s, tc);
	tc = tcase_create("adoption");
	tcase_add_checked_fixture(tc, ring_setup, ring_teardown);
	tcase_add_test(tc, test_adopt_eio_is_recorded_answered_before_it_is_sent);
	tcase_add_test(tc, test_adopt_sends_a_complete_answer_as_it_is);
	tcase_add_test(tc, test_rescue_doubts_every_slot_whose_entry_may_have_moved_on);
	tcase_add_test(tc, test_rescue_writes_no_slot_an_inherited_entry_may_fetch_into);
	tcase_add_test(tc, test_adoption_while_an_entry_is_unplaced_writes_nothing);
	tcase_add_test(tc, test_inherited_entry_fetches_into_an_adopted_slot);
	tcase_add_test(tc, test_commit_stamps_the_header);
	tcase_add_test(tc, test_classic_reply_header);
	tcase_add_test(tc, test_reply_under_the_delivered_id);
	tcase_add_test(tc, test_adopt_a_spoiled_record);
	tcase_add_test(tc, test_reply_under_the_recorded_id);
	tcase_add_test(tc, test_no_request_unaccounted_nothing_asked);
	tcase_add_test(tc, test_asking_stops_once_the_count_is_found);
	tcase_add_test(tc, test_ids_past_the_count_are_not_asked);
	tcase_add_test(tc, test_no_bound_without_a_sane_count);
	tcase_add_test(tc, test_bound_read_from_the_waiting_file);
	suite_add_tcase(s, tc);
	tc = tcase_create("the plugin host's answers");
	tcase_add_checked_fixture(tc, ring_setup, ring_teardown);
	tcase_add_test(tc, test_host_answer_goes_out_as_the_keeper_records);
	tcase_add_test(tc, test_host_answer_the_kernel_would_refuse_is_eio);
	tcase_add_test(tc, test_host_answer_for_no_waiting_slot_is_ignored);
	tcase_add_test(tc, test_host_file_without_a_zero_copy_is_eio);
	tcase_add_test(tc, test_host_counters_and_heartbeat);
	tcase_add_test(tc, test_host_counts_are_held_to_the_keepers_records);
	tcase_add_test(tc, test_host_files_not_asked_for_are_closed);
	tcase_add_exit_test(tc, test_host_message_of_no_whole_record_ends_the_worker, 1);
	tcase_add_exit_test(tc, test_host_answer_before_ready_ends_the_worker, 1);
	tcase_add_exit_test(tc, test_host_ready_opens_its_channel, 1);
	tcase_add_exit_test(tc, test_host_count_on_another_queue_ends_the_worker, 1);
	tcase_add_exit_test(tc, test_host_record_on_the_wrong_half_ends_the_worker, 1);
	tcase_add_exit_test(tc, test_host_ring_tail_out_of_bounds_ends_the_worker, 1);
	tcase_add_test(tc, test_host_death_settles_what_it_held);
	tcase_add_test(tc, test_requests_wait_while_no_host);
	tcase_add_test(tc, test_host_death_takes_back_what_it_never_read);
	tcase_add_test(tc, test_backing_file_serves_its_handle);
	tcase_add_test(tc, test_backing_file_that_must_clear_suid_is_the_plugins);
	tcase_add_test(tc, test_backing_file_that_is_no_regular_file_is_refused);
	tcase_add_test(tc, test_backing_file_with_no_open_is_ignored);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return rf_check_run(rescue_suite());
}
