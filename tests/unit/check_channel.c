// SPDX-License-Identifier: MIT
/* The channel between the keeper and its plugin host (worker/channel.c):
 * which side may send which record in which phase and on which half, a
 * queue's rings between two views of one shared mapping (order, wake-ups,
 * a ring the other side does not empty, hostile indices, what a dead
 * host never took), and a file over a real socket pair. */
#include "check_main.h"
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "channel.h"
#include "worker.h"

static char why[200];

static int check_via(enum rf_chan_side from, enum rf_chan_phase phase, enum rf_chan_via via,
		     uint32_t qid, uint8_t kind)
{
	struct rf_chan_rec r = { .kind = kind };

	why[0] = 0;
	return rf_chan_check(from, phase, via, qid, &r, why, sizeof(why));
}

/* on the half each kind travels on */
static int check(enum rf_chan_side from, enum rf_chan_phase phase, uint32_t qid, uint8_t kind)
{
	bool socket = kind == RF_CH_PING || kind == RF_CH_STOP || kind == RF_CH_COUNT ||
		      kind == RF_CH_READY;

	return check_via(from, phase, socket ? RF_CHV_SOCKET : RF_CHV_RING, qid, kind);
}

/* in SERVE the host answers; in INIT it may only count and say READY */
START_TEST(test_host_phases)
{
	static const uint8_t serve[] = { RF_CH_REPLY, RF_CH_DONE, RF_CH_PONG };
	unsigned int i;

	ck_assert_int_eq(check(RF_CHAN_HOST, RF_CHP_INIT, 2, RF_CH_REPLY), -EPROTO);
	ck_assert_str_eq(why, "sent REPLY on queue 2 before READY");
	for (i = 0; i < sizeof(serve); i++) {
		ck_assert_int_eq(check(RF_CHAN_HOST, RF_CHP_SERVE, 1, serve[i]), 0);
		ck_assert_int_eq(check(RF_CHAN_HOST, RF_CHP_INIT, 1, serve[i]), -EPROTO);
		ck_assert_ptr_nonnull(strstr(why, "before READY"));
		ck_assert_ptr_nonnull(strstr(why, rf_chan_kind_name(serve[i])));
	}
	ck_assert_int_eq(check(RF_CHAN_HOST, RF_CHP_INIT, 0, RF_CH_READY), 0);
	ck_assert_int_eq(check(RF_CHAN_HOST, RF_CHP_INIT, 3, RF_CH_READY), 0);
	ck_assert_int_eq(check(RF_CHAN_HOST, RF_CHP_SERVE, 0, RF_CH_READY), -EPROTO);
	ck_assert_str_eq(why, "sent READY on queue 0 after READY");
}
END_TEST

/* COUNT goes on queue 0's channel, in either phase, and on no other */
START_TEST(test_count_queue0)
{
	ck_assert_int_eq(check(RF_CHAN_HOST, RF_CHP_INIT, 0, RF_CH_COUNT), 0);
	ck_assert_int_eq(check(RF_CHAN_HOST, RF_CHP_SERVE, 0, RF_CH_COUNT), 0);
	ck_assert_int_eq(check(RF_CHAN_HOST, RF_CHP_SERVE, 1, RF_CH_COUNT), -EPROTO);
	ck_assert_str_eq(why, "sent COUNT on queue 1, not 0");
}
END_TEST

/* a side never sends the other's kinds, nor kinds nobody defined */
START_TEST(test_wrong_side)
{
	static const uint8_t keeper[] = { RF_CH_REQ, RF_CH_NOREPLY, RF_CH_PING, RF_CH_STOP };
	static const uint8_t host[] = { RF_CH_REPLY, RF_CH_DONE, RF_CH_PONG, RF_CH_COUNT };
	unsigned int i;

	for (i = 0; i < sizeof(keeper); i++) {
		ck_assert_int_eq(check(RF_CHAN_KEEPER, RF_CHP_SERVE, 0, keeper[i]), 0);
		ck_assert_int_eq(check(RF_CHAN_HOST, RF_CHP_SERVE, 0, keeper[i]), -EPROTO);
		ck_assert_ptr_nonnull(strstr(why, "the plugin host never sends"));
	}
	for (i = 0; i < sizeof(host); i++) {
		ck_assert_int_eq(check(RF_CHAN_KEEPER, RF_CHP_SERVE, 0, host[i]), -EPROTO);
		ck_assert_ptr_nonnull(strstr(why, "the keeper never sends"));
	}
	/* the gaps in the numbering, 0 and past the end */
	ck_assert_int_eq(check(RF_CHAN_HOST, RF_CHP_SERVE, 0, 0), -EPROTO);
	ck_assert_int_eq(check(RF_CHAN_KEEPER, RF_CHP_SERVE, 0, 3), -EPROTO);
	ck_assert_int_eq(check(RF_CHAN_HOST, RF_CHP_SERVE, 0, RF_CH_KINDS), -EPROTO);
	ck_assert_int_eq(check(RF_CHAN_HOST, RF_CHP_SERVE, 0, 255), -EPROTO);
	ck_assert_str_eq(why, "sent record kind 255, which the plugin host never sends");
	ck_assert_str_eq(rf_chan_kind_name(255), "unknown");
	ck_assert_str_eq(rf_chan_kind_name(3), "unknown");
}
END_TEST

/* the hot records on the ring, the rare ones and files on the socket */
START_TEST(test_halves)
{
	ck_assert_int_eq(check_via(RF_CHAN_KEEPER, RF_CHP_SERVE, RF_CHV_SOCKET, 0, RF_CH_REQ),
			 -EPROTO);
	ck_assert_str_eq(why, "sent REQ on the socket");
	ck_assert_int_eq(check_via(RF_CHAN_KEEPER, RF_CHP_SERVE, RF_CHV_RING, 0, RF_CH_PING),
			 -EPROTO);
	ck_assert_str_eq(why, "sent PING on the ring");
	ck_assert_int_eq(check_via(RF_CHAN_HOST, RF_CHP_INIT, RF_CHV_RING, 0, RF_CH_READY),
			 -EPROTO);
	ck_assert_str_eq(why, "sent READY on the ring");
	ck_assert_int_eq(check_via(RF_CHAN_HOST, RF_CHP_SERVE, RF_CHV_RING, 1, RF_CH_COUNT),
			 -EPROTO);
	ck_assert_int_eq(check_via(RF_CHAN_HOST, RF_CHP_SERVE, RF_CHV_SOCKET, 0, RF_CH_DONE),
			 -EPROTO);
	/* an answer may hand over a file: either half */
	ck_assert_int_eq(check_via(RF_CHAN_HOST, RF_CHP_SERVE, RF_CHV_RING, 0, RF_CH_REPLY), 0);
	ck_assert_int_eq(check_via(RF_CHAN_HOST, RF_CHP_SERVE, RF_CHV_SOCKET, 0, RF_CH_REPLY), 0);
}
END_TEST

/* READY is what moves a channel from INIT to SERVE; nothing else moves it */
START_TEST(test_ready_moves)
{
	uint8_t k;

	ck_assert_int_eq(rf_chan_after(RF_CHP_INIT, RF_CH_READY), RF_CHP_SERVE);
	for (k = 0; k < RF_CH_KINDS + 2; k++) {
		if (k == RF_CH_READY)
			continue;
		ck_assert_int_eq(rf_chan_after(RF_CHP_INIT, k), RF_CHP_INIT);
		ck_assert_int_eq(rf_chan_after(RF_CHP_SERVE, k), RF_CHP_SERVE);
	}
}
END_TEST

/* a queue's batch over a real socket pair, told apart from a failed send */
static unsigned int broken;
static uint32_t broken_n;

static void test_finish(struct rf_req *req)
{
	(void)req;
}

static void test_broken(struct rf_queue *q, const struct rf_chan_rec *r, uint32_t n)
{
	(void)q;
	(void)r;
	broken++;
	broken_n = n;
}

static void test_count(struct rf_worker *w, uint32_t which, uint64_t a, uint32_t len, int32_t error)
{
	(void)w;
	(void)which;
	(void)a;
	(void)len;
	(void)error;
}

static const struct rf_side test_side = {
	.name = "test", .finish = test_finish, .chan_broken = test_broken, .count = test_count
};

static struct rf_worker w;
static struct rf_queue q;
static struct rf_chan_view hv; /* the host's view of q's rings */
static int peer, kevfd, hevfd;

/* how many times @fd was written to since last read (0: never) */
static uint64_t woken(int fd)
{
	uint64_t v = 0;

	return read(fd, &v, sizeof(v)) == sizeof(v) ? v : 0;
}

static void pair_setup(void)
{
	int sv[2];

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
	memset(&w, 0, sizeof(w));
	memset(&q, 0, sizeof(q));
	w.side = &test_side;
	q.w = &w;
	q.chan_fd = sv[0];
	peer = sv[1];
	kevfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	hevfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	ck_assert_int_ge(kevfd, 0);
	ck_assert_int_ge(hevfd, 0);
	ck_assert_int_eq(rf_chan_rings_new(&q.chan, 16), 0);
	hv = q.chan;
	ck_assert_int_eq(rf_chan_attach(&q.chan, RF_CHAN_KEEPER, hevfd, 1), 0);
	ck_assert_int_eq(rf_chan_attach(&hv, RF_CHAN_HOST, kevfd, 1), 0);
	/* the keeper's attach woke the host whose rings they now are */
	ck_assert_uint_eq(woken(hevfd), 1);
	broken = 0;
	broken_n = 0;
}

static void pair_teardown(void)
{
	rf_chan_detach(&q.chan);
	close(q.chan_fd);
	close(kevfd);
	close(hevfd);
	if (peer >= 0)
		close(peer);
}

/* the keeper's records reach the host in order, a full batch going
 * first, each zeroed; the host takes at most what it asks for */
START_TEST(test_ring_order)
{
	struct rf_chan_rec got[RF_CHAN_BATCH + 1], *r;
	unsigned int i;

	for (i = 0; i < RF_CHAN_BATCH + 3; i++) {
		r = rf_chan_next(&q);
		ck_assert_uint_eq(r->kind | r->idx | r->len | r->a, 0);
		r->kind = RF_CH_REQ;
		r->idx = i;
	}
	rf_chan_flush(&q);
	rf_chan_flush(&q); /* nothing left */
	ck_assert(rf_chan_pending(&hv));
	ck_assert_int_eq(rf_chan_take(&hv, got, RF_CHAN_BATCH), RF_CHAN_BATCH);
	ck_assert_uint_eq(got[0].idx, 0);
	ck_assert_uint_eq(got[RF_CHAN_BATCH - 1].idx, RF_CHAN_BATCH - 1);
	ck_assert_int_eq(rf_chan_take(&hv, got, RF_CHAN_BATCH + 1), 3);
	ck_assert_uint_eq(got[0].idx, RF_CHAN_BATCH);
	ck_assert_uint_eq(got[2].kind, RF_CH_REQ);
	ck_assert_int_eq(rf_chan_take(&hv, got, 1), 0);
	ck_assert(!rf_chan_pending(&hv));
	ck_assert_uint_eq(broken, 0);
	/* nobody said it sleeps: nobody was woken */
	ck_assert_uint_eq(woken(hevfd), 0);
}
END_TEST

/* a side that says it sleeps is woken once, by the next write; one with
 * records waiting is told to take them instead */
START_TEST(test_ring_wake)
{
	struct rf_chan_rec got[4];

	ck_assert(rf_chan_sleep(&hv));
	rf_chan_next(&q)->idx = 1;
	rf_chan_flush(&q);
	ck_assert_uint_eq(woken(hevfd), 1);
	/* woken: the next write wakes no one */
	rf_chan_next(&q)->idx = 2;
	rf_chan_flush(&q);
	ck_assert_uint_eq(woken(hevfd), 0);
	/* records wait: no sleep */
	ck_assert(!rf_chan_sleep(&hv));
	ck_assert_int_eq(rf_chan_take(&hv, got, 4), 2);
	ck_assert(rf_chan_sleep(&hv));
	rf_chan_awake(&hv);
	rf_chan_next(&q)->idx = 3;
	rf_chan_flush(&q);
	ck_assert_uint_eq(woken(hevfd), 0);
	/* the other way */
	ck_assert(rf_chan_sleep(&q.chan));
	{
		struct rf_chan_rec r = { .kind = RF_CH_REPLY };
		struct rf_queue hq = { .w = &w, .chan = hv };

		*rf_chan_next(&hq) = r;
		rf_chan_flush(&hq);
		hv = hq.chan;
	}
	ck_assert_uint_eq(woken(kevfd), 1);
	ck_assert_int_eq(rf_chan_take(&q.chan, got, 4), 1);
	ck_assert_uint_eq(got[0].kind, RF_CH_REPLY);
}
END_TEST

/* a ring the other side does not empty: what did not go is told to
 * chan_broken, and nothing is overwritten */
START_TEST(test_ring_full)
{
	struct rf_chan_rec got[2];
	uint32_t i;

	for (i = 0; i < q.chan.cap + 5; i++)
		rf_chan_next(&q)->idx = i;
	rf_chan_flush(&q);
	ck_assert_uint_eq(broken, 1);
	ck_assert_uint_ge(q.chan.cap, 16 + 64);
	ck_assert_uint_eq(broken_n,
			  5 + RF_CHAN_BATCH * ((q.chan.cap + 5) / RF_CHAN_BATCH) - q.chan.cap);
	ck_assert_int_eq(rf_chan_take(&hv, got, 2), 2);
	ck_assert_uint_eq(got[0].idx, 0);
	ck_assert_uint_eq(got[1].idx, 1);
	/* room again */
	rf_chan_next(&q)->idx = 9;
	rf_chan_flush(&q);
	ck_assert_uint_eq(broken, 1);
}
END_TEST

/* what the host writes in the mapping is held to the keeper's own: a
 * tail further ahead than a ring holds, a head beyond what the keeper
 * wrote, records overwritten after the keeper wrote them */
START_TEST(test_ring_hostile)
{
	struct rf_chan_rec got[8];
	uint32_t i;

	for (i = 0; i < 5; i++) {
		struct rf_chan_rec *r = rf_chan_next(&q);

		r->kind = RF_CH_REQ;
		r->idx = 10 + i;
	}
	rf_chan_flush(&q);
	ck_assert_int_eq(rf_chan_take(&hv, got, 2), 2);
	/* the host scribbles over what the keeper wrote */
	for (i = 0; i < 5; i++)
		hv.in_rec[i].idx = 999;
	ck_assert_uint_eq(rf_chan_unread(&q.chan, 0, got, 8), 3);
	ck_assert_uint_eq(got[0].idx, 12);
	ck_assert_uint_eq(got[2].idx, 14);
	ck_assert_uint_eq(rf_chan_unread(&q.chan, 2, got, 8), 1);
	ck_assert_uint_eq(got[0].idx, 14);
	ck_assert_uint_eq(rf_chan_unread(&q.chan, 0, got, 2), 2);
	ck_assert_uint_eq(rf_chan_unread(&q.chan, 3, got, 8), 0);
	/* a head past the tail: the keeper trusts only what it held */
	hv.in->head = 1000;
	ck_assert_uint_eq(rf_chan_unread(&q.chan, 0, got, 8), 5);
	ck_assert_uint_eq(got[0].idx, 10);
	/* a tail a ring cannot have */
	hv.out->tail = q.chan.cap + 1;
	ck_assert_int_eq(rf_chan_take(&q.chan, got, 8), -EPROTO);
	hv.out->tail = (uint32_t)-1;
	ck_assert_int_eq(rf_chan_take(&q.chan, got, 8), -EPROTO);
	hv.out->tail = 0;
	ck_assert_int_eq(rf_chan_take(&q.chan, got, 8), 0);
	/* a forged head does not make room that is not there */
	for (i = 5; i < q.chan.cap; i++)
		rf_chan_next(&q)->idx = i;
	rf_chan_flush(&q);
	ck_assert_uint_eq(broken, 0);
	hv.in->head = 1u << 30;
	rf_chan_next(&q)->idx = 7;
	rf_chan_flush(&q);
	ck_assert_uint_eq(broken, 1);
	ck_assert_uint_eq(broken_n, 1);
}
END_TEST

/* a host uses the rings only once the keeper made them its own: what a
 * dead host left, or a host that came too early, is nothing to it */
START_TEST(test_ring_next_host)
{
	struct rf_chan_rec got[4], pong = { .kind = RF_CH_PONG };
	struct rf_chan_view next = q.chan;
	struct rf_queue hq = { .w = &w };
	uint32_t i;

	for (i = 0; i < 3; i++)
		rf_chan_next(&q)->idx = i;
	rf_chan_flush(&q);
	/* host 2 starts before the keeper's queue thread took it */
	ck_assert_int_eq(rf_chan_attach(&next, RF_CHAN_HOST, kevfd, 2), 0);
	ck_assert(!rf_chan_pending(&next));
	ck_assert_int_eq(rf_chan_take(&next, got, 4), 0);
	ck_assert(rf_chan_sleep(&next));
	hq.chan = next;
	*rf_chan_next(&hq) = pong; /* goes nowhere */
	rf_chan_flush(&hq);
	next = hq.chan;
	ck_assert_uint_eq(broken, 0);
	ck_assert_int_eq(rf_chan_take(&q.chan, got, 4), 0);
	/* the keeper's word: empty rings, its, and a wake-up */
	ck_assert_int_eq(rf_chan_attach(&q.chan, RF_CHAN_KEEPER, hevfd, 2), 0);
	ck_assert_uint_eq(woken(hevfd), 1);
	ck_assert(!rf_chan_pending(&next));
	rf_chan_next(&q)->idx = 7;
	rf_chan_flush(&q);
	ck_assert_int_eq(rf_chan_take(&next, got, 4), 1);
	ck_assert_uint_eq(got[0].idx, 7);
	/* what host 2 took is not unread */
	ck_assert_uint_eq(rf_chan_unread(&q.chan, 0, got, 4), 0);
}
END_TEST

static ssize_t take(struct rf_chan_rec *r, size_t n, int *fd)
{
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(int))];
	} c;
	struct iovec iov = { .iov_base = r, .iov_len = n * sizeof(*r) };
	struct msghdr m = { .msg_iov = &iov,
			    .msg_iovlen = 1,
			    .msg_control = c.buf,
			    .msg_controllen = sizeof(c.buf) };
	struct cmsghdr *cm;
	ssize_t s = recvmsg(peer, &m, MSG_DONTWAIT);

	*fd = -1;
	cm = s >= 0 ? CMSG_FIRSTHDR(&m) : NULL;
	if (cm && cm->cmsg_type == SCM_RIGHTS)
		memcpy(fd, CMSG_DATA(cm), sizeof(int));
	return s < 0 ? s : s / (ssize_t)sizeof(*r);
}

/* a file goes on the socket, after what was queued before it went on the
 * ring; a descriptor that is none is told apart from a channel that
 * failed */
START_TEST(test_send_file)
{
	struct rf_chan_rec got[4], rec = { .kind = RF_CH_REPLY, .idx = 7 };
	int fd, devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);

	ck_assert_int_ge(devnull, 0);
	rf_chan_next(&q)->idx = 6;
	ck_assert_int_eq(rf_chan_send_file(&q, &rec, devnull), 0);
	ck_assert_int_eq(rf_chan_take(&hv, got, 4), 1);
	ck_assert_uint_eq(got[0].idx, 6);
	ck_assert_int_eq(take(got, 4, &fd), 1);
	ck_assert_uint_eq(got[0].idx, 7);
	ck_assert_int_ge(fd, 0);
	close(fd);

	close(devnull);
	ck_assert_int_eq(rf_chan_send_file(&q, &rec, devnull), -EBADF);
	ck_assert_uint_eq(broken, 0);
	ck_assert_int_eq(take(got, 4, &fd), -1);

	close(peer);
	peer = -1;
	devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
	ck_assert_int_eq(rf_chan_send_file(&q, &rec, devnull), -EPIPE);
	ck_assert_uint_eq(broken, 1);
	ck_assert_uint_eq(broken_n, 1);
	close(devnull);
}
END_TEST

static Suite *channel_suite(void)
{
	Suite *s = suite_create("channel");
	TCase *tc = tcase_create("table");
	TCase *tp = tcase_create("pair");

	tcase_add_test(tc, test_host_phases);
	tcase_add_test(tc, test_count_queue0);
	tcase_add_test(tc, test_wrong_side);
	tcase_add_test(tc, test_ready_moves);
	tcase_add_test(tc, test_halves);
	suite_add_tcase(s, tc);
	tcase_add_checked_fixture(tp, pair_setup, pair_teardown);
	tcase_add_test(tp, test_ring_order);
	tcase_add_test(tp, test_ring_wake);
	tcase_add_test(tp, test_ring_full);
	tcase_add_test(tp, test_ring_hostile);
	tcase_add_test(tp, test_ring_next_host);
	tcase_add_test(tp, test_send_file);
	suite_add_tcase(s, tp);
	return s;
}

int main(void)
{
	return rf_check_run(channel_suite());
}
