// SPDX-License-Identifier: MIT
/* The broker's table of what a worker may send in each phase. */
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
	{ RF_MSG_SECCOMP, { 0, 1, 1 } },
	{ RF_MSG_FAILED, { 0, 1, 0 } },
	{ RF_MSG_CONFIG, { 0, 0, 0 } },
	{ RF_MSG_RING, { 0, 0, 0 } },
	{ RF_MSG_SHUTDOWN, { 0, 0, 0 } },
	{ RF_MSG_PING, { 0, 0, 0 } },
	{ 0, { 0, 0, 0 } },
	{ 4242, { 0, 0, 0 } },
	/* clang-format on */
};

START_TEST(test_phase_table)
{
	static const bool hello[3] = { false, true, true }, ready[3] = { false, false, true };
	int ph;

	for (ph = 0; ph < 3; ph++) {
		const char *why = rf_worker_msg_refusal(cases[_i].type, hello[ph], ready[ph]);

		ck_assert_msg((why == NULL) == (cases[_i].allowed[ph] != 0),
			      "type %u in phase %d: %s", cases[_i].type, ph, why ? why : "allowed");
	}
}
END_TEST

START_TEST(test_refusals_say_why)
{
	ck_assert_str_eq(rf_worker_msg_refusal(RF_MSG_LOG, false, false), "message before HELLO");
	ck_assert_str_eq(rf_worker_msg_refusal(RF_MSG_HELLO, true, false),
			 "message allowed only once");
	ck_assert_str_eq(rf_worker_msg_refusal(RF_MSG_FAILED, true, true),
			 "message not allowed after READY");
	ck_assert_str_eq(rf_worker_msg_refusal(RF_MSG_CONFIG, true, true),
			 "message type not allowed from a worker");
}
END_TEST

static Suite *phase_suite(void)
{
	Suite *s = suite_create("phase");
	TCase *tc = tcase_create("worker messages");

	tcase_add_loop_test(tc, test_phase_table, 0, (int)(sizeof(cases) / sizeof(cases[0])));
	tcase_add_test(tc, test_refusals_say_why);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return rf_check_run(phase_suite());
}
