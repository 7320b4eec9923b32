// SPDX-License-Identifier: MIT
/* How soon a dead worker's successor starts, and when a plugin has died
 * too often (broker/backoff.c). */
#include "check_main.h"
#include <string.h>

#include "broker.h"

#define LIMIT 5
#define WINDOW 60

static time_t deaths[LIMIT];
static unsigned int crashes;

static void setup(void)
{
	memset(deaths, 0, sizeof(deaths));
	crashes = 0;
}

static struct rf_backoff die(time_t now)
{
	return rf_backoff_after_death(deaths, LIMIT, WINDOW, ++crashes, now);
}

/* deaths close together: the first at once, then 100 ms and twice as long
 * each time, until the fifth within the window ends in the responder */
START_TEST(test_close_together)
{
	static const long want[] = { 0, 100, 200, 400 };
	struct rf_backoff b;
	int i;

	for (i = 0; i < 4; i++) {
		b = die(1000 + i);
		ck_assert_uint_eq(b.recent, (unsigned int)i + 1);
		ck_assert_int_eq(b.delay_ms, want[i]);
		ck_assert(!b.crash_loop);
	}
	b = die(1004);
	ck_assert_uint_eq(b.recent, LIMIT);
	ck_assert(b.crash_loop);
}
END_TEST

/* deaths a window apart never add up */
START_TEST(test_far_apart)
{
	struct rf_backoff b;
	int i;

	for (i = 0; i < 20; i++) {
		b = die(1000 + (time_t)i * WINDOW);
		ck_assert_uint_eq(b.recent, 1);
		ck_assert_int_eq(b.delay_ms, 0);
	}
}
END_TEST

/* the ring keeps the last LIMIT deaths only: old ones fall out of it, and
 * ones older than the window do not count */
START_TEST(test_window_slides)
{
	struct rf_backoff b;

	die(1000);
	die(1030);
	die(1031);
	b = die(1032);
	ck_assert_uint_eq(b.recent, 4);
	/* 1000 is a window old now: four recent, not five */
	b = die(1000 + WINDOW);
	ck_assert_uint_eq(b.recent, 4);
	ck_assert_int_eq(b.delay_ms, 400);
	/* death 6 overwrites death 1 in the ring: five within the window */
	b = die(1000 + WINDOW + 1);
	ck_assert_uint_eq(b.recent, LIMIT);
	ck_assert(b.crash_loop);
}
END_TEST

/* a generous limit: the delay stops growing at 3.2 s */
START_TEST(test_delay_capped)
{
	time_t many[32] = { 0 };
	struct rf_backoff b = { 0, 0, false };
	unsigned int i;

	for (i = 1; i <= 20; i++)
		b = rf_backoff_after_death(many, 32, 1000, i, 5000);
	ck_assert_uint_eq(b.recent, 20);
	ck_assert_int_eq(b.delay_ms, 3200);
}
END_TEST

static Suite *backoff_suite(void)
{
	Suite *s = suite_create("backoff");
	TCase *tc = tcase_create("deaths");

	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_add_test(tc, test_close_together);
	tcase_add_test(tc, test_far_apart);
	tcase_add_test(tc, test_window_slides);
	tcase_add_test(tc, test_delay_capped);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return rf_check_run(backoff_suite());
}
