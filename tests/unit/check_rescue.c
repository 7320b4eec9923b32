// SPDX-License-Identifier: MIT
/* The seen table and the ids a successor asks for (worker/rescue.c). */
#include "check_main.h"
#include <stdlib.h>
#include <string.h>

#include "worker.h"

static struct rf_worker w;
static uint64_t table[RF_SEEN_IDS];

static void setup(void)
{
	memset(&w, 0, sizeof(w));
	memset(table, 0, sizeof(table));
	w.seen = table;
	w.geom.nslots = 17; /* 2 queues x 8 + the reader: 66 ids ahead */
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
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return rf_check_run(rescue_suite());
}
