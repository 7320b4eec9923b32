// SPDX-License-Identifier: MIT
/* The broker's reading of the pool a worker can write: rf_pool_verify(),
 * and rf_pool_clean() before a successor starts. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "broker.h"
#include "check_main.h"

#define GEN 3
#define HB 7
#define NOW (100ULL * 1000000000ULL)

static struct rf_tenant t;
static char why[128];

/* a control area of exactly the size the geometry gives (ASan sees any
 * read past it), its header written as the broker writes it */
static void setup(void)
{
	memset(&t, 0, sizeof(t));
	ck_assert_int_eq(rf_pool_geom_init(&t.geom, 2, 8, 1 << 20, 0), 0);
	t.pool = calloc(1, t.geom.ctl_size);
	ck_assert_ptr_nonnull(t.pool);
	t.conn.transport = RF_TRANSPORT_URING;
	rf_pool_write_header(&t);
}

static void teardown(void)
{
	free(t.pool);
}

static const char *verify(void)
{
	return rf_pool_verify(t.pool, &t.geom, RF_TRANSPORT_URING, GEN, HB, NOW, why, sizeof(why));
}

START_TEST(test_clean)
{
	struct rf_slot_state *ss = rf_pool_slot_state(t.pool, &t.geom, 4);

	ck_assert_ptr_null(verify());
	/* what a worker playing by the rules writes */
	rf_pool_stats(t.pool, 1)->heartbeat = HB;
	rf_pool_stats(t.pool, 0)->requests = UINT64_MAX;
	ss->state = RF_SLOT_FETCHED;
	ss->generation = GEN;
	ss->fetched_ns = NOW;
	ss->opcode = 0xffffffff;
	ss->commit_id = UINT64_MAX;
	rf_pool_slot_state(t.pool, &t.geom, t.geom.nslots - 1)->state = RF_SLOT_ANSWERED;
	/* an older generation's record may say anything of its time */
	ss = rf_pool_slot_state(t.pool, &t.geom, 0);
	ss->state = RF_SLOT_FETCHED;
	ss->generation = GEN - 1;
	ss->fetched_ns = UINT64_MAX;
	rf_pool_seen(t.pool, &t.geom)[RF_SEEN_IDS - 1] = UINT64_MAX;
	ck_assert_ptr_null(verify());
}
END_TEST

/* every field of the header, changed by one */
static const size_t header_fields[] = {
	offsetof(struct rf_pool_ctl, magic),	  offsetof(struct rf_pool_ctl, version),
	offsetof(struct rf_pool_ctl, nqueues),	  offsetof(struct rf_pool_ctl, depth),
	offsetof(struct rf_pool_ctl, nslots),	  offsetof(struct rf_pool_ctl, payload_size),
	offsetof(struct rf_pool_ctl, slot_size),  offsetof(struct rf_pool_ctl, ctl_size),
	offsetof(struct rf_pool_ctl, total_size), offsetof(struct rf_pool_ctl, transport),
	offsetof(struct rf_pool_ctl, qpool_size),
};

START_TEST(test_header_changed)
{
	((unsigned char *)t.pool)[header_fields[_i]] ^= 1;
	ck_assert_ptr_nonnull(verify());
	ck_assert_str_eq(why, "pool: the header the broker wrote was changed");
}
END_TEST

START_TEST(test_heartbeat_never_sent)
{
	rf_pool_stats(t.pool, 1)->heartbeat = HB + 1;
	ck_assert_ptr_nonnull(verify());
	ck_assert_str_eq(why, "pool: queue 1 answered heartbeat 8, never sent");
}
END_TEST

START_TEST(test_slot_impossible)
{
	struct rf_slot_state *ss = rf_pool_slot_state(t.pool, &t.geom, t.geom.nslots - 1);

	ss->state = RF_SLOT_ANSWERED + 1;
	ck_assert_ptr_nonnull(verify());
	ck_assert_str_eq(why, "pool: slot 16 has state 3 of generation 0");
	ss->state = RF_SLOT_NONE;
	ss->generation = GEN + 1;
	ck_assert_ptr_nonnull(verify());
	ss->generation = GEN;
	ss->state = RF_SLOT_FETCHED;
	ss->fetched_ns = NOW + 2000000000ULL;
	ck_assert_ptr_nonnull(verify());
	ck_assert_str_eq(why, "pool: slot 16 was fetched in the future");
	ss->fetched_ns = NOW + 500000000ULL; /* a write racing the broker's clock */
	ck_assert_ptr_null(verify());
}
END_TEST

/* random words over the control area from byte @from on, as
 * tests/plugins/hostile.c writes them */
static void scribble(unsigned int *seed, size_t from)
{
	uint64_t *w = t.pool;
	size_t i, n = t.geom.ctl_size / sizeof(*w);

	for (i = (from + sizeof(*w) - 1) / sizeof(*w); i < n; i++)
		w[i] = (uint64_t)rand_r(seed) << 33 ^ (uint64_t)rand_r(seed);
}

/* random bytes over the whole control area, as tests/plugins/hostile.c
 * writes them: never a read outside it (ASan in make check-san), and a
 * changed header is always caught */
START_TEST(test_random)
{
	unsigned int seed = 1, round;

	for (round = 0; round < 2000; round++) {
		scribble(&seed, 0);
		ck_assert_ptr_nonnull(verify());
	}
	/* and only the header left as it was: the records are still checked */
	for (round = 0; round < 200; round++) {
		rf_pool_write_header(&t);
		scribble(&seed, sizeof(struct rf_pool_ctl));
		ck_assert_ptr_nonnull(verify());
	}
}
END_TEST

/* A dead worker's impossible writes are cleared before generation GEN
 * starts, and only those: the successor adopts what earlier generations'
 * records name, and rf_pool_verify() then holds nothing against it. */
START_TEST(test_clean_for_successor)
{
	struct rf_slot_state *held = rf_pool_slot_state(t.pool, &t.geom, 2);
	struct rf_slot_state *ss;

	held->state = RF_SLOT_FETCHED;
	held->generation = GEN - 1;
	held->commit_id = 42;
	held->opcode = 15;
	held->fetched_ns = UINT64_MAX; /* its time, not the successor's */
	rf_pool_stats(t.pool, 0)->heartbeat = UINT64_MAX;
	rf_pool_stats(t.pool, 1)->heartbeat = HB;
	rf_pool_slot_state(t.pool, &t.geom, 0)->state = 7;
	ss = rf_pool_slot_state(t.pool, &t.geom, 5);
	ss->state = RF_SLOT_FETCHED;
	ss->generation = GEN; /* not started yet: nobody's request */
	ss->commit_id = 44;
	ck_assert_ptr_nonnull(verify());

	ck_assert_uint_eq(rf_pool_clean(t.pool, &t.geom, GEN, HB), 3);
	ck_assert_ptr_null(verify());
	ck_assert_uint_eq(rf_pool_stats(t.pool, 0)->heartbeat, 0);
	ck_assert_uint_eq(rf_pool_stats(t.pool, 1)->heartbeat, HB);
	ck_assert_uint_eq(ss->state, RF_SLOT_NONE);
	ck_assert_uint_eq(ss->commit_id, 0);
	ck_assert_uint_eq(held->state, RF_SLOT_FETCHED);
	ck_assert_uint_eq(held->commit_id, 42);
	ck_assert_uint_eq(held->opcode, 15);
	/* nothing left to clear */
	ck_assert_uint_eq(rf_pool_clean(t.pool, &t.geom, GEN, HB), 0);
}
END_TEST

/* whatever a worker wrote, the header rewritten and the pool cleaned leave
 * nothing a successor could be killed for */
START_TEST(test_clean_random)
{
	unsigned int seed = 2, round;

	for (round = 0; round < 2000; round++) {
		scribble(&seed, 0);
		rf_pool_write_header(&t);
		rf_pool_clean(t.pool, &t.geom, GEN, HB);
		ck_assert_msg(verify() == NULL, "round %u: %s", round, why);
	}
}
END_TEST

static Suite *pool_suite(void)
{
	Suite *s = suite_create("pool");
	TCase *tc = tcase_create("verify");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_clean);
	tcase_add_loop_test(tc, test_header_changed, 0,
			    (int)(sizeof(header_fields) / sizeof(header_fields[0])));
	tcase_add_test(tc, test_heartbeat_never_sent);
	tcase_add_test(tc, test_slot_impossible);
	tcase_add_test(tc, test_random);
	tcase_add_test(tc, test_clean_for_successor);
	tcase_add_test(tc, test_clean_random);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return rf_check_run(pool_suite());
}
