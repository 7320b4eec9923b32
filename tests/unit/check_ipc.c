// SPDX-License-Identifier: MIT
/* IPC framing: every message type round-trips; every malformation is refused. */
#include "check_main.h"
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "log.h"
#include "msg.h"

static int sv[2];

static void setup(void)
{
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
}

static void teardown(void)
{
	close(sv[0]);
	close(sv[1]);
}

static int open_fds(void)
{
	int n = 0, fd;

	for (fd = 0; fd < 1024; fd++)
		if (fcntl(fd, F_GETFD) >= 0)
			n++;
	return n;
}

/* Send raw bytes (and fds) as one datagram, bypassing the checks. */
static void raw(const void *buf, size_t len, const int *fds, int nfds)
{
	ck_assert_int_eq(rf_fdpass_send(sv[1], buf, len, fds, nfds), 0);
}

START_TEST(test_hello_roundtrip)
{
	struct rf_msg_hello h = { .version = RF_IPC_VERSION, .pid = 1234 }, got;
	struct rf_msg m;

	ck_assert_int_eq(rf_msg_send(sv[1], RF_MSG_HELLO, 7, &h, sizeof(h), NULL, 0), 0);
	ck_assert_int_eq(rf_msg_recv(sv[0], &m), 0);
	ck_assert_uint_eq(m.hdr.type, RF_MSG_HELLO);
	ck_assert_uint_eq(m.hdr.id, 7);
	ck_assert_uint_eq(m.hdr.len, sizeof(h));
	ck_assert_int_eq(m.nfds, 0);
	memcpy(&got, m.payload, sizeof(got));
	ck_assert_uint_eq(got.pid, 1234);
	ck_assert_str_eq(rf_msg_name(RF_MSG_HELLO), "HELLO");
	ck_assert_str_eq(rf_msg_name(999), "UNKNOWN");
}
END_TEST

START_TEST(test_config_passes_fd)
{
	struct rf_msg_config c;
	struct rf_msg m;
	char buf[8] = { 0 };
	int fd = memfd_create("t", MFD_CLOEXEC);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, "pool", 4), 4);
	memset(&c, 0, sizeof(c));
	strcpy(c.name, "x");
	ck_assert_int_eq(rf_msg_send(sv[1], RF_MSG_CONFIG, 0, &c, sizeof(c), &fd, 1), 0);
	close(fd);
	ck_assert_int_eq(rf_msg_recv(sv[0], &m), 0);
	ck_assert_int_eq(m.nfds, 1);
	ck_assert_int_eq(pread(m.fds[0], buf, 4, 0), 4);
	ck_assert_str_eq(buf, "pool");
	ck_assert(fcntl(m.fds[0], F_GETFD) & FD_CLOEXEC);
	rf_msg_close_fds(&m);
	ck_assert_int_eq(m.nfds, 0);
}
END_TEST

START_TEST(test_log_string)
{
	char buf[sizeof(struct rf_msg_log) + 6];
	struct rf_msg_log *l = (struct rf_msg_log *)buf;
	struct rf_msg m;

	l->level = 6;
	memcpy(l->line, "hello", 6);
	ck_assert_int_eq(rf_msg_send(sv[1], RF_MSG_LOG, 0, l, sizeof(buf), NULL, 0), 0);
	ck_assert_int_eq(rf_msg_recv(sv[0], &m), 0);
	ck_assert_str_eq(((struct rf_msg_log *)m.payload)->line, "hello");
}
END_TEST

/* A worker's lines at the broker, a program's at the keeper: a burst,
 * then the rate, never more than a full bucket at once. */
static int takes(struct log_rate *r, uint64_t now_ms, uint32_t burst, uint32_t rate)
{
	int n = 0;

	while (n < 1000 && log_rate_take(r, now_ms, burst, rate))
		n++;
	return n;
}

START_TEST(test_log_rate)
{
	struct log_rate none = { 0 }, r = { 0 };

	/* no rate: the burst, then nothing, whatever the time */
	ck_assert_int_eq(takes(&none, 0, 3, 0), 3);
	ck_assert_int_eq(takes(&none, 100000, 3, 0), 0);
	/* 5 at once, then 10 a second: one per 100 ms, the part of a
	 * token carried over, a full bucket at most */
	ck_assert_int_eq(takes(&r, 5000, 5, 10), 5);
	ck_assert_int_eq(takes(&r, 5099, 5, 10), 0);
	ck_assert_int_eq(takes(&r, 5100, 5, 10), 1);
	ck_assert_int_eq(takes(&r, 5250, 5, 10), 1);
	ck_assert_int_eq(takes(&r, 5300, 5, 10), 1);
	ck_assert_int_eq(takes(&r, 9000, 5, 10), 5);
	/* a clock that goes back gives nothing */
	ck_assert_int_eq(takes(&r, 8000, 5, 10), 0);
	ck_assert_int_eq(takes(&r, 9100, 5, 10), 1);
	/* a smaller burst than the bucket holds: cut to it */
	ck_assert(log_rate_take(&r, 20000, 5, 10));
	ck_assert_int_eq(takes(&r, 20000, 2, 10), 2);
}
END_TEST

/* What the broker does to a worker's log line before it logs it. */
START_TEST(test_log_escape)
{
	static const struct {
		const char *in, *out;
	} c[] = {
		{ "plain words: 42%", "plain words: 42%" },
		{ "one\nringfenced[1]: forged", "one\\x0aringfenced[1]: forged" },
		{ "\x1b[2J\r\t", "\\x1b[2J\\x0d\\x09" },
		{ "back\\slash \x7f", "back\\x5cslash \\x7f" },
		{ "caf\xc3\xa9 \xf0\x9f\x98\x80",
		  "caf\xc3\xa9 \xf0\x9f\x98\x80" }, /* UTF-8 stays */
		{ "\xff\xc0\xaf", "\\xff\\xc0\\xaf" }, /* not UTF-8; overlong '/' */
		{ "\xc2\x9b[J", "\\xc2\\x9b[J" }, /* C1 CSI */
		{ "\xed\xa0\x80", "\\xed\\xa0\\x80" }, /* a surrogate */
		{ "\xf4\x90\x80\x80", "\\xf4\\x90\\x80\\x80" }, /* past U+10FFFF */
		{ "cut \xe2\x82", "cut \\xe2\\x82" }, /* a sequence cut short */
		{ "", "" },
	};
	char out[64];
	size_t i;

	for (i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		log_escape(c[i].in, out, sizeof(out));
		ck_assert_str_eq(out, c[i].out);
	}
	/* cut whole: never half an escape, always terminated */
	log_escape("abc\ndef", out, 6);
	ck_assert_str_eq(out, "abc");
	log_escape("abc\ndef", out, 8);
	ck_assert_str_eq(out, "abc\\x0a");
	log_escape("ab\xc3\xa9", out, 4); /* a character is not split either */
	ck_assert_str_eq(out, "ab");
	log_escape("abc", out, 1);
	ck_assert_str_eq(out, "");
}
END_TEST

START_TEST(test_ping_roundtrip)
{
	struct rf_msg_ping p = { .seq = 0x123456789ULL }, got;
	struct rf_msg m;

	ck_assert_int_eq(rf_msg_send(sv[1], RF_MSG_PING, 0, &p, sizeof(p), NULL, 0), 0);
	ck_assert_int_eq(rf_msg_recv(sv[0], &m), 0);
	ck_assert_uint_eq(m.hdr.type, RF_MSG_PING);
	memcpy(&got, m.payload, sizeof(got));
	ck_assert_uint_eq(got.seq, 0x123456789ULL);
	ck_assert_int_eq(rf_msg_send(sv[1], RF_MSG_PING, 0, &p, sizeof(p) - 1, NULL, 0), -EMSGSIZE);
}
END_TEST

START_TEST(test_send_refuses_bad_sizes)
{
	struct rf_msg_hello h = { 0 };
	char nonul[sizeof(struct rf_msg_log) + 3] = { 0 };
	int fd = 0;

	ck_assert_int_eq(rf_msg_send(sv[1], RF_MSG_HELLO, 0, &h, sizeof(h) - 1, NULL, 0),
			 -EMSGSIZE);
	ck_assert_int_eq(rf_msg_send(sv[1], RF_MSG_SHUTDOWN, 0, &h, 1, NULL, 0), -EMSGSIZE);
	ck_assert_int_eq(rf_msg_send(sv[1], 0, 0, NULL, 0, NULL, 0), -EINVAL);
	ck_assert_int_eq(rf_msg_send(sv[1], RF_MSG_TYPE_MAX, 0, NULL, 0, NULL, 0), -EINVAL);
	memset(nonul + sizeof(struct rf_msg_log), 'a', 3);
	ck_assert_int_eq(rf_msg_send(sv[1], RF_MSG_LOG, 0, nonul, sizeof(nonul), NULL, 0), -EINVAL);
	/* a HELLO may not carry descriptors */
	ck_assert_int_eq(rf_msg_send(sv[1], RF_MSG_HELLO, 0, &h, sizeof(h), &fd, 1), -EINVAL);
}
END_TEST

START_TEST(test_recv_short_header)
{
	struct rf_msg m;

	raw("abc", 3, NULL, 0);
	ck_assert_int_eq(rf_msg_recv(sv[0], &m), -EBADMSG);
}
END_TEST

START_TEST(test_recv_length_mismatch)
{
	struct {
		struct rf_msg_hdr h;
		struct rf_msg_hello b;
	} msg = { { RF_MSG_HELLO, sizeof(struct rf_msg_hello) + 4, 0, 0 }, { 1, 1 } };
	struct rf_msg m;

	raw(&msg, sizeof(msg), NULL, 0);
	ck_assert_int_eq(rf_msg_recv(sv[0], &m), -EBADMSG);
}
END_TEST

START_TEST(test_recv_unknown_type)
{
	struct rf_msg_hdr h = { 4242, 0, 0, 0 };
	struct rf_msg m;

	raw(&h, sizeof(h), NULL, 0);
	ck_assert_int_eq(rf_msg_recv(sv[0], &m), -EBADMSG);
}
END_TEST

START_TEST(test_recv_wrong_size_for_type)
{
	struct {
		struct rf_msg_hdr h;
		char b[3];
	} msg = { { RF_MSG_READY, 3, 0, 0 }, { 0 } };
	struct rf_msg m;

	raw(&msg, sizeof(msg), NULL, 0);
	ck_assert_int_eq(rf_msg_recv(sv[0], &m), -EBADMSG);
}
END_TEST

START_TEST(test_recv_flags_must_be_zero)
{
	struct rf_msg_hdr h = { RF_MSG_SHUTDOWN, 0, 1, 0 };
	struct rf_msg m;

	raw(&h, sizeof(h), NULL, 0);
	ck_assert_int_eq(rf_msg_recv(sv[0], &m), -EBADMSG);
}
END_TEST

START_TEST(test_recv_unterminated_string)
{
	struct {
		struct rf_msg_hdr h;
		uint32_t level;
		char s[4];
	} msg = { { RF_MSG_LOG, 8, 0, 0 }, 6, { 'a', 'b', 'c', 'd' } };
	struct rf_msg m;

	raw(&msg, sizeof(msg), NULL, 0);
	ck_assert_int_eq(rf_msg_recv(sv[0], &m), -EBADMSG);
}
END_TEST

START_TEST(test_recv_fds_not_allowed_are_closed)
{
	struct {
		struct rf_msg_hdr h;
		struct rf_msg_hello b;
	} msg = { { RF_MSG_HELLO, sizeof(struct rf_msg_hello), 0, 0 }, { 1, 1 } };
	struct rf_msg m;
	int fd = memfd_create("x", MFD_CLOEXEC), before;

	raw(&msg, sizeof(msg), &fd, 1);
	close(fd);
	before = open_fds();
	ck_assert_int_eq(rf_msg_recv(sv[0], &m), -EBADMSG);
	ck_assert_int_eq(open_fds(), before); /* nothing leaked */
}
END_TEST

START_TEST(test_recv_oversize_datagram)
{
	size_t len = sizeof(struct rf_msg_hdr) + RF_IPC_MAX_PAYLOAD + 100;
	char *big = calloc(1, len);
	struct rf_msg_hdr h = { RF_MSG_LOG, (uint32_t)(len - sizeof(h)), 0, 0 };
	struct rf_msg m;

	memcpy(big, &h, sizeof(h));
	raw(big, len, NULL, 0);
	ck_assert_int_eq(rf_msg_recv(sv[0], &m), -EBADMSG);
	free(big);
}
END_TEST

START_TEST(test_recv_eof)
{
	struct rf_msg m;

	close(sv[1]);
	sv[1] = open("/dev/null", O_RDONLY);
	ck_assert_int_eq(rf_msg_recv(sv[0], &m), -ECONNRESET);
}
END_TEST

static Suite *ipc_suite(void)
{
	Suite *s = suite_create("ipc");
	TCase *tc = tcase_create("framing");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_hello_roundtrip);
	tcase_add_test(tc, test_ping_roundtrip);
	tcase_add_test(tc, test_config_passes_fd);
	tcase_add_test(tc, test_log_string);
	tcase_add_test(tc, test_send_refuses_bad_sizes);
	tcase_add_test(tc, test_recv_short_header);
	tcase_add_test(tc, test_recv_length_mismatch);
	tcase_add_test(tc, test_recv_unknown_type);
	tcase_add_test(tc, test_recv_wrong_size_for_type);
	tcase_add_test(tc, test_recv_flags_must_be_zero);
	tcase_add_test(tc, test_recv_unterminated_string);
	tcase_add_test(tc, test_recv_fds_not_allowed_are_closed);
	tcase_add_test(tc, test_recv_oversize_datagram);
	tcase_add_test(tc, test_recv_eof);
	tcase_add_test(tc, test_log_escape);
	tcase_add_test(tc, test_log_rate);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return rf_check_run(ipc_suite());
}
