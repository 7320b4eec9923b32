// SPDX-License-Identifier: MIT
/* A tenant's states and the steps between them (broker/state.c): every
 * pair of states, the words status shows, and what the broker asks of a
 * state (ending, upgrading, settled enough to hand over). */
#include "check_main.h"
#include <stdio.h>
#include <string.h>

#include "broker.h"

#define N RF_TENANT_NSTATES

/* The steps a tenant takes, as its life goes (and nothing else). */
static const struct {
	enum rf_tenant_state from, to;
} steps[] = {
	/* start, the first READY, a start that fails */
	{ RF_TENANT_STOPPED, RF_TENANT_STARTING },
	{ RF_TENANT_STARTING, RF_TENANT_RUNNING },
	{ RF_TENANT_STARTING, RF_TENANT_FAILED },
	/* a worker's death: a successor due, the responder, or given up */
	{ RF_TENANT_STARTING, RF_TENANT_RESPAWN_DUE },
	{ RF_TENANT_STARTING, RF_TENANT_RESPONDER_STARTING },
	{ RF_TENANT_RUNNING, RF_TENANT_RESPAWN_DUE },
	{ RF_TENANT_RUNNING, RF_TENANT_RESPONDER_STARTING },
	{ RF_TENANT_RUNNING, RF_TENANT_FAILED },
	{ RF_TENANT_RESPAWN_DUE, RF_TENANT_STARTING },
	{ RF_TENANT_RESPAWN_DUE, RF_TENANT_RESPAWN_DUE },
	{ RF_TENANT_RESPAWN_DUE, RF_TENANT_RESPONDER_STARTING },
	{ RF_TENANT_RESPAWN_DUE, RF_TENANT_FAILED },
	{ RF_TENANT_RESPONDER_STARTING, RF_TENANT_RESPONDING },
	{ RF_TENANT_RESPONDER_STARTING, RF_TENANT_FAILED },
	{ RF_TENANT_RESPONDING, RF_TENANT_FAILED },
	/* host_restart: a plugin host's death, the next host, a loop of them,
	 * and the worker's own death meanwhile */
	{ RF_TENANT_RUNNING, RF_TENANT_HOST_DUE },
	{ RF_TENANT_RUNNING, RF_TENANT_HOST_LOOP },
	{ RF_TENANT_HOST_DUE, RF_TENANT_HOST_STARTING },
	{ RF_TENANT_HOST_DUE, RF_TENANT_RESPAWN_DUE },
	{ RF_TENANT_HOST_DUE, RF_TENANT_RESPONDER_STARTING },
	{ RF_TENANT_HOST_DUE, RF_TENANT_FAILED },
	{ RF_TENANT_HOST_STARTING, RF_TENANT_RUNNING },
	{ RF_TENANT_HOST_STARTING, RF_TENANT_HOST_DUE },
	{ RF_TENANT_HOST_STARTING, RF_TENANT_HOST_LOOP },
	{ RF_TENANT_HOST_STARTING, RF_TENANT_RESPAWN_DUE },
	{ RF_TENANT_HOST_STARTING, RF_TENANT_RESPONDER_STARTING },
	{ RF_TENANT_HOST_STARTING, RF_TENANT_FAILED },
	{ RF_TENANT_HOST_LOOP, RF_TENANT_RESPAWN_DUE },
	{ RF_TENANT_HOST_LOOP, RF_TENANT_RESPONDER_STARTING },
	{ RF_TENANT_HOST_LOOP, RF_TENANT_FAILED },
	/* an upgrade: the old one ends, the trial, the rollback, READY, and
	 * abandoned back to where its processes are */
	{ RF_TENANT_RUNNING, RF_TENANT_UPG_KILLED },
	{ RF_TENANT_UPG_KILLED, RF_TENANT_UPG_TRIAL },
	{ RF_TENANT_UPG_KILLED, RF_TENANT_RUNNING },
	{ RF_TENANT_UPG_TRIAL, RF_TENANT_RUNNING },
	{ RF_TENANT_UPG_TRIAL, RF_TENANT_UPG_ROLLBACK },
	{ RF_TENANT_UPG_TRIAL, RF_TENANT_STARTING },
	{ RF_TENANT_UPG_TRIAL, RF_TENANT_HOST_STARTING },
	{ RF_TENANT_UPG_ROLLBACK, RF_TENANT_RUNNING },
	{ RF_TENANT_UPG_ROLLBACK, RF_TENANT_STARTING },
	{ RF_TENANT_UPG_ROLLBACK, RF_TENANT_HOST_STARTING },
	/* a stop from any state but an upgrade's (abandoned first), and a
	 * failed tenant stopped stays failed */
	{ RF_TENANT_STARTING, RF_TENANT_STOPPING },
	{ RF_TENANT_RUNNING, RF_TENANT_STOPPING },
	{ RF_TENANT_RESPAWN_DUE, RF_TENANT_STOPPING },
	{ RF_TENANT_HOST_DUE, RF_TENANT_STOPPING },
	{ RF_TENANT_HOST_STARTING, RF_TENANT_STOPPING },
	{ RF_TENANT_HOST_LOOP, RF_TENANT_STOPPING },
	{ RF_TENANT_RESPONDER_STARTING, RF_TENANT_STOPPING },
	{ RF_TENANT_RESPONDING, RF_TENANT_STOPPING },
	{ RF_TENANT_STOPPING, RF_TENANT_STOPPED },
	{ RF_TENANT_STOPPING, RF_TENANT_FAILED },
	/* a stopped tenant a broker upgrade could not take over; restart and
	 * unmount of a failed one */
	{ RF_TENANT_STOPPED, RF_TENANT_FAILED },
	{ RF_TENANT_FAILED, RF_TENANT_STARTING },
	{ RF_TENANT_FAILED, RF_TENANT_STOPPED },
};

static bool listed(enum rf_tenant_state from, enum rf_tenant_state to)
{
	size_t i;

	for (i = 0; i < sizeof(steps) / sizeof(steps[0]); i++)
		if (steps[i].from == from && steps[i].to == to)
			return true;
	return false;
}

/* every pair: a step the list has, staying put, and nothing else */
START_TEST(test_every_pair)
{
	int from, to;

	for (from = 0; from < N; from++)
		for (to = 0; to < N; to++)
			ck_assert_msg(rf_tenant_state_may(from, to) ==
					      (from == to || listed(from, to)),
				      "%s -> %s: the table says %d", rf_tenant_state_name(from),
				      rf_tenant_state_name(to), rf_tenant_state_may(from, to));
}
END_TEST

/* outside the enum: no step either way, no name, shown as failed */
START_TEST(test_out_of_range)
{
	ck_assert(!rf_tenant_state_may(N, RF_TENANT_STOPPED));
	ck_assert(!rf_tenant_state_may(RF_TENANT_STOPPED, N));
	ck_assert(!rf_tenant_state_may(N, N));
	ck_assert(!rf_tenant_state_may((enum rf_tenant_state) - 1, RF_TENANT_RUNNING));
	ck_assert_str_eq(rf_tenant_state_name(N), "?");
	ck_assert_int_eq(rf_tenant_state_shown(N), RF_TENANT_FAILED);
	ck_assert(!rf_tenant_settled(N));
}
END_TEST

/* from STOPPED every state can be reached, and from every state a tenant
 * can come to rest again (stopped or failed): no state is a trap */
START_TEST(test_reach)
{
	bool from_stopped[N] = { [RF_TENANT_STOPPED] = true }, to_rest[N] = { false };
	bool more = true;
	int a, b;

	to_rest[RF_TENANT_STOPPED] = to_rest[RF_TENANT_FAILED] = true;
	while (more) {
		more = false;
		for (a = 0; a < N; a++)
			for (b = 0; b < N; b++) {
				if (!rf_tenant_state_may(a, b))
					continue;
				if (from_stopped[a] && !from_stopped[b])
					more = from_stopped[b] = true;
				if (to_rest[b] && !to_rest[a])
					more = to_rest[a] = true;
			}
	}
	for (a = 0; a < N; a++) {
		ck_assert_msg(from_stopped[a], "%s cannot be reached", rf_tenant_state_name(a));
		ck_assert_msg(to_rest[a], "%s never ends", rf_tenant_state_name(a));
	}
}
END_TEST

/* status shows one of four words; a broker is handed over only with every
 * tenant in a state that shows what it is, with no process between two */
START_TEST(test_shown_and_settled)
{
	static const char *const shown[N] = {
		[RF_TENANT_STOPPED] = "stopped",	[RF_TENANT_STARTING] = "starting",
		[RF_TENANT_RUNNING] = "running",	[RF_TENANT_FAILED] = "failed",
		[RF_TENANT_RESPONDING] = "failed",	[RF_TENANT_RESPONDER_STARTING] = "starting",
		[RF_TENANT_RESPAWN_DUE] = "starting",	[RF_TENANT_HOST_DUE] = "starting",
		[RF_TENANT_HOST_STARTING] = "starting", [RF_TENANT_HOST_LOOP] = "starting",
		[RF_TENANT_UPG_KILLED] = "running",	[RF_TENANT_UPG_TRIAL] = "starting",
		[RF_TENANT_UPG_ROLLBACK] = "starting",	[RF_TENANT_STOPPING] = "stopped",
	};
	int s, o;

	for (s = 0; s < N; s++) {
		enum rf_tenant_state w = rf_tenant_state_shown(s);

		ck_assert_int_le(w, RF_TENANT_FAILED);
		ck_assert_str_eq(rf_tenant_state_name(w), shown[s]);
		ck_assert_int_eq(rf_tenant_state_shown(w), w);
		ck_assert_int_eq(rf_tenant_settled(s),
				 s == RF_TENANT_STOPPED || s == RF_TENANT_RUNNING ||
					 s == RF_TENANT_RESPONDING || s == RF_TENANT_FAILED);
		/* every name its own */
		for (o = 0; o < s; o++)
			ck_assert_str_ne(rf_tenant_state_name(o), rf_tenant_state_name(s));
	}
}
END_TEST

/* ending: no successor comes (a death is no crash); upgrading: the three
 * phases of ringfencectl upgrade; responder: the EIO responder's worker */
START_TEST(test_ending_upgrading)
{
	struct rf_tenant t;
	int s;

	memset(&t, 0, sizeof(t));
	for (s = 0; s < N; s++) {
		t.state = s;
		ck_assert_int_eq(rf_tenant_ending(&t), s == RF_TENANT_STOPPING ||
							       s == RF_TENANT_STOPPED ||
							       s == RF_TENANT_FAILED);
		ck_assert_int_eq(rf_tenant_upgrading(&t), s == RF_TENANT_UPG_KILLED ||
								  s == RF_TENANT_UPG_TRIAL ||
								  s == RF_TENANT_UPG_ROLLBACK);
		ck_assert_int_eq(rf_tenant_responder(&t),
				 s == RF_TENANT_RESPONDER_STARTING || s == RF_TENANT_RESPONDING);
		/* an upgrade ends only in READY or abandoned: never straight
		 * to an end of the tenant's */
		if (rf_tenant_upgrading(&t)) {
			ck_assert(!rf_tenant_state_may(s, RF_TENANT_STOPPING));
			ck_assert(!rf_tenant_state_may(s, RF_TENANT_FAILED));
		}
	}
}
END_TEST

/* a step the table lacks is still taken (and logged as the broker's bug) */
START_TEST(test_enter)
{
	struct rf_tenant t;

	memset(&t, 0, sizeof(t));
	snprintf(t.pol.name, sizeof(t.pol.name), "a");
	rf_tenant_enter(&t, RF_TENANT_STARTING);
	ck_assert_int_eq(t.state, RF_TENANT_STARTING);
	rf_tenant_enter(&t, RF_TENANT_STARTING);
	ck_assert_int_eq(t.state, RF_TENANT_STARTING);
	ck_assert(!rf_tenant_state_may(RF_TENANT_STARTING, RF_TENANT_UPG_TRIAL));
	rf_tenant_enter(&t, RF_TENANT_UPG_TRIAL);
	ck_assert_int_eq(t.state, RF_TENANT_UPG_TRIAL);
}
END_TEST

static Suite *state_suite(void)
{
	Suite *s = suite_create("state");
	TCase *tc = tcase_create("steps");

	tcase_add_test(tc, test_every_pair);
	tcase_add_test(tc, test_out_of_range);
	tcase_add_test(tc, test_reach);
	tcase_add_test(tc, test_shown_and_settled);
	tcase_add_test(tc, test_ending_upgrading);
	tcase_add_test(tc, test_enter);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return rf_check_run(state_suite());
}
