// SPDX-License-Identifier: MIT
/* The channel between the keeper and its plugin host (worker/channel.c):
 * which side may send which record in which phase, and a queue's
 * outgoing batch over a real socket pair. */
#include "check_main.h"
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "channel.h"
#include "worker.h"

static char why[200];

static int check(enum rf_chan_side from, enum rf_chan_phase phase, uint32_t qid, uint8_t kind)
{
	struct rf_chan_rec r = { .kind = kind };

	why[0] = 0;
	return rf_chan_check(from, phase, qid, &r, why, sizeof(why));
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
static int peer;

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
	broken = 0;
	broken_n = 0;
}

static void pair_teardown(void)
{
	close(q.chan_fd);
	if (peer >= 0)
		close(peer);
}

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

/* records go as one message on flush, a full batch first on its own, and
 * each comes zeroed */
START_TEST(test_batches)
{
	struct rf_chan_rec got[RF_CHAN_BATCH + 1], *r;
	unsigned int i;
	int fd;

	for (i = 0; i < RF_CHAN_BATCH + 3; i++) {
		r = rf_chan_next(&q);
		ck_assert_uint_eq(r->kind | r->idx | r->len | r->a, 0);
		r->kind = RF_CH_REPLY;
		r->idx = i;
	}
	rf_chan_flush(&q);
	rf_chan_flush(&q); /* nothing left: no empty message */
	ck_assert_int_eq(take(got, RF_CHAN_BATCH + 1, &fd), RF_CHAN_BATCH);
	ck_assert_uint_eq(got[RF_CHAN_BATCH - 1].idx, RF_CHAN_BATCH - 1);
	ck_assert_int_eq(take(got, RF_CHAN_BATCH + 1, &fd), 3);
	ck_assert_uint_eq(got[0].idx, RF_CHAN_BATCH);
	ck_assert_int_eq(take(got, 1, &fd), -1);
	ck_assert_int_eq(errno, EAGAIN);
	ck_assert_uint_eq(broken, 0);
}
END_TEST

/* a file goes after what was queued before it, in a message of its own;
 * a descriptor that is none is told apart from a channel that failed */
START_TEST(test_send_file)
{
	struct rf_chan_rec got[4], rec = { .kind = RF_CH_REPLY, .idx = 7 };
	int fd, devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);

	ck_assert_int_ge(devnull, 0);
	rf_chan_next(&q)->idx = 6;
	ck_assert_int_eq(rf_chan_send_file(&q, &rec, devnull), 0);
	ck_assert_int_eq(take(got, 4, &fd), 1);
	ck_assert_uint_eq(got[0].idx, 6);
	ck_assert_int_eq(fd, -1);
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
	rf_chan_next(&q);
	rf_chan_next(&q);
	rf_chan_flush(&q);
	ck_assert_uint_eq(broken, 2);
	ck_assert_uint_eq(broken_n, 2);
	ck_assert_uint_eq(q.ntx, 0);
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
	suite_add_tcase(s, tc);
	tcase_add_checked_fixture(tp, pair_setup, pair_teardown);
	tcase_add_test(tp, test_batches);
	tcase_add_test(tp, test_send_file);
	suite_add_tcase(s, tp);
	return s;
}

int main(void)
{
	return rf_check_run(channel_suite());
}
