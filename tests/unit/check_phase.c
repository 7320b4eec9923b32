// SPDX-License-Identifier: MIT
/* The broker's tables of what a worker may send in each phase, and its
 * plugin host on its own channel. */
#include <string.h>

#include "broker.h"
#include "check_main.h"
#include "msg.h"

/* phases: before HELLO, after HELLO, after READY */
static const struct {
	uint32_t type;
	int allowed[3];
} cases[] = {
	/* clang-format off */
	{ RF_MSG_HELLO, { 1, 0, 0 } },
	{ RF_MSG_READY, { 0, 1, 0 } },
	{ RF_MSG_LOG, { 0, 1, 1 } },
	{ RF_MSG_SECCOMP, { 0, 1, 1 } }, /* once: test_once */
	{ RF_MSG_FAILED, { 0, 1, 0 } },
	{ RF_MSG_CONFIG, { 0, 0, 0 } },
	{ RF_MSG_RING, { 0, 0, 0 } },
	{ RF_MSG_SHUTDOWN, { 0, 0, 0 } },
	{ RF_MSG_PING, { 0, 0, 0 } },
	/* the broker holds it to the tenant's state (spawn.c) */
	{ RF_MSG_HOST_DIED, { 0, 1, 1 } },
	{ RF_MSG_HOST_START, { 0, 0, 0 } },
	{ RF_MSG_HOST_REPLACE, { 0, 0, 0 } },
	{ 0, { 0, 0, 0 } },
	{ 4242, { 0, 0, 0 } },
	/* clang-format on */
};

START_TEST(test_phase_table)
{
	static const uint32_t seen[3] = { 0, RF_MSG_BIT(RF_MSG_HELLO),
					  RF_MSG_BIT(RF_MSG_HELLO) | RF_MSG_BIT(RF_MSG_READY) };
	int ph;

	for (ph = 0; ph < 3; ph++) {
		const char *why = rf_worker_msg_refusal(cases[_i].type, seen[ph]);

		ck_assert_msg((why == NULL) == (cases[_i].allowed[ph] != 0),
			      "type %u in phase %d: %s", cases[_i].type, ph, why ? why : "allowed");
	}
}
END_TEST

START_TEST(test_refusals_say_why)
{
	const uint32_t hello = RF_MSG_BIT(RF_MSG_HELLO), ready = RF_MSG_BIT(RF_MSG_READY);

	ck_assert_str_eq(rf_worker_msg_refusal(RF_MSG_LOG, 0), "message before HELLO");
	ck_assert_str_eq(rf_worker_msg_refusal(RF_MSG_HELLO, hello), "message allowed only once");
	ck_assert_str_eq(rf_worker_msg_refusal(RF_MSG_FAILED, hello | ready),
			 "message not allowed after READY");
	ck_assert_str_eq(rf_worker_msg_refusal(RF_MSG_CONFIG, hello | ready),
			 "message type not allowed from a worker");
}
END_TEST

/* A worker dies after SECCOMP or FAILED, so it has no business sending
 * either twice (each writes a line in the broker's log); LOG may repeat. */
START_TEST(test_once)
{
	const uint32_t hello = RF_MSG_BIT(RF_MSG_HELLO), ready = RF_MSG_BIT(RF_MSG_READY);

	ck_assert_str_eq(rf_worker_msg_refusal(RF_MSG_SECCOMP,
					       hello | ready | RF_MSG_BIT(RF_MSG_SECCOMP)),
			 "message allowed only once");
	ck_assert_str_eq(rf_worker_msg_refusal(RF_MSG_FAILED, hello | RF_MSG_BIT(RF_MSG_FAILED)),
			 "message allowed only once");
	ck_assert_str_eq(rf_worker_msg_refusal(RF_MSG_READY, hello | ready),
			 "message allowed only once");
	ck_assert_ptr_null(
		rf_worker_msg_refusal(RF_MSG_LOG, hello | ready | RF_MSG_BIT(RF_MSG_LOG)));
	ck_assert_ptr_null(
		rf_worker_msg_refusal(RF_MSG_SECCOMP, hello | RF_MSG_BIT(RF_MSG_FAILED)));
	/* one per plugin host that dies (host_restart) */
	ck_assert_ptr_null(rf_worker_msg_refusal(RF_MSG_HOST_DIED,
						 hello | ready | RF_MSG_BIT(RF_MSG_HOST_DIED)));
}
END_TEST

/* A plugin host's channel takes its log, its trapped call and its
 * start-up failure, the last two once per host, and nothing of the
 * keeper's: whatever it has sent before. */
START_TEST(test_host_channel)
{
	static const uint32_t seens[] = { 0, RF_MSG_BIT(RF_MSG_HELLO),
					  RF_MSG_BIT(RF_MSG_HELLO) | RF_MSG_BIT(RF_MSG_READY),
					  RF_MSG_BIT(RF_MSG_LOG) };
	uint32_t type;
	size_t i;

	for (i = 0; i < sizeof(seens) / sizeof(seens[0]); i++) {
		for (type = 0; type < RF_MSG_TYPE_MAX + 2; type++) {
			const char *why = rf_host_msg_refusal(type, seens[i]);
			bool ok = type == RF_MSG_LOG || type == RF_MSG_SECCOMP ||
				  type == RF_MSG_FAILED;

			if (ok)
				ck_assert_msg(why == NULL, "type %u after 0x%x: %s", type, seens[i],
					      why);
			else
				ck_assert_str_eq(why,
						 "message type not allowed from a plugin host");
		}
	}
	ck_assert_str_eq(rf_host_msg_refusal(RF_MSG_SECCOMP, RF_MSG_BIT(RF_MSG_SECCOMP)),
			 "message allowed only once");
	ck_assert_str_eq(rf_host_msg_refusal(RF_MSG_FAILED, RF_MSG_BIT(RF_MSG_FAILED)),
			 "message allowed only once");
	ck_assert_ptr_null(rf_host_msg_refusal(RF_MSG_LOG, RF_MSG_BIT(RF_MSG_LOG) |
								   RF_MSG_BIT(RF_MSG_SECCOMP) |
								   RF_MSG_BIT(RF_MSG_FAILED)));
}
END_TEST

/* rf_says_handle over a table of its own: the handler runs for what may
 * come, and sees nothing refused or dropped */
static unsigned int handled[RF_MSG_TYPE_MAX + 1];

static void count(struct rf_tenant *t, const struct rf_msg *m)
{
	(void)t;
	handled[m->hdr.type]++;
}

static const struct rf_says rules[] = {
	{ RF_MSG_HELLO, RF_SAYS_ONCE, count },
	{ RF_MSG_LOG, RF_SAYS_AFTER_HELLO | RF_SAYS_DEAD_TOO, count },
	{ RF_MSG_SECCOMP, RF_SAYS_ONCE | RF_SAYS_AFTER_HELLO, count },
};

static const char *says(uint32_t type, uint32_t *seen, bool dead)
{
	struct rf_msg m = { .hdr = { .type = type } };

	return rf_says_handle(rules, sizeof(rules) / sizeof(rules[0]), NULL, &m, seen, dead,
			      "none");
}

START_TEST(test_handle_by_the_table)
{
	uint32_t seen = 0;

	memset(handled, 0, sizeof(handled));
	ck_assert_str_eq(says(RF_MSG_LOG, &seen, false), "message before HELLO");
	ck_assert_uint_eq(seen, 0);
	ck_assert_ptr_null(says(RF_MSG_HELLO, &seen, false));
	ck_assert_uint_eq(seen, RF_MSG_BIT(RF_MSG_HELLO));
	ck_assert_ptr_null(says(RF_MSG_LOG, &seen, false));
	ck_assert_ptr_null(says(RF_MSG_LOG, &seen, false));
	ck_assert_ptr_null(says(RF_MSG_SECCOMP, &seen, false));
	ck_assert_str_eq(says(RF_MSG_SECCOMP, &seen, false), "message allowed only once");
	ck_assert_str_eq(says(RF_MSG_READY, &seen, false), "none");
	ck_assert_str_eq(says(4242, &seen, false), "none");
	ck_assert_uint_eq(handled[RF_MSG_HELLO], 1);
	ck_assert_uint_eq(handled[RF_MSG_LOG], 2);
	ck_assert_uint_eq(handled[RF_MSG_SECCOMP], 1);
	/* from a dead process: its last words (LOG) still count; anything
	 * else, refused or not, is dropped without a verdict */
	ck_assert_ptr_null(says(RF_MSG_LOG, &seen, true));
	ck_assert_ptr_null(says(RF_MSG_SECCOMP, &seen, true));
	ck_assert_ptr_null(says(RF_MSG_READY, &seen, true));
	ck_assert_uint_eq(handled[RF_MSG_LOG], 3);
	ck_assert_uint_eq(handled[RF_MSG_SECCOMP], 1);
	ck_assert_uint_eq(handled[RF_MSG_READY], 0);
}
END_TEST

static Suite *phase_suite(void)
{
	Suite *s = suite_create("phase");
	TCase *tc = tcase_create("worker messages");

	tcase_add_loop_test(tc, test_phase_table, 0, (int)(sizeof(cases) / sizeof(cases[0])));
	tcase_add_test(tc, test_refusals_say_why);
	tcase_add_test(tc, test_once);
	tcase_add_test(tc, test_host_channel);
	tcase_add_test(tc, test_handle_by_the_table);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return rf_check_run(phase_suite());
}
