// SPDX-License-Identifier: MIT
/* The restore table (worker/plugin/nodetab.c): records that outlive their writer,
 * whatever instruction it was killed at, and memory nobody can trust. */
#include "check_main.h"
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "msg.h"

/* the table's code itself, with a point of death between its stores:
 * in the writer (dying), the Nth ends the process when step_limit is N */
static int steps, step_limit, dying;
#define RF_NODETAB_STEP()                           \
	do {                                        \
		if (dying && ++steps == step_limit) \
			_exit(0);                   \
	} while (0)
#include "../../worker/plugin/nodetab.c"

#define AREA (64 * 1024)
#define KEYMAX 40

static uint64_t area[AREA / 8];

static void setup(void)
{
	memset(area, 0, sizeof(area));
}

START_TEST(test_put_get_del)
{
	struct rf_nodetab t;
	char key[KEYMAX];
	uint32_t kind, len;

	ck_assert_int_eq(rf_nodetab_open(&t, area, sizeof(area), KEYMAX), 1);
	ck_assert_int_eq(rf_nodetab_put(&t, 42, 1, "a/b", 3), 0);
	ck_assert_int_eq(rf_nodetab_put(&t, 43, 2, "c", 1), 0);
	ck_assert_int_eq(rf_nodetab_get(&t, 42, &kind, key, sizeof(key), &len, NULL), 0);
	ck_assert_uint_eq(kind, 1);
	ck_assert_uint_eq(len, 3);
	ck_assert_mem_eq(key, "a/b", 3);
	/* a new key for the same id: the other buffer, then the flip */
	ck_assert_int_eq(rf_nodetab_put(&t, 42, 3, "a/renamed", 9), 0);
	ck_assert_int_eq(rf_nodetab_get(&t, 42, &kind, key, sizeof(key), &len, NULL), 0);
	ck_assert_uint_eq(kind, 3);
	ck_assert_mem_eq(key, "a/renamed", 9);
	ck_assert_uint_eq(rf_nodetab_count(&t), 2);
	ck_assert_int_eq(rf_nodetab_get(&t, 42, &kind, key, 4, &len, NULL), -ERANGE);
	ck_assert_int_eq(rf_nodetab_del(&t, 42), 0);
	ck_assert_int_eq(rf_nodetab_del(&t, 42), -ENOENT);
	ck_assert_int_eq(rf_nodetab_get(&t, 42, &kind, key, sizeof(key), &len, NULL), -ENOENT);
	ck_assert_int_eq(rf_nodetab_get(&t, 43, &kind, key, sizeof(key), &len, NULL), 0);
	ck_assert_int_eq(rf_nodetab_put(&t, RF_NODETAB_FREE, 0, "x", 1), -EINVAL);
	ck_assert_int_eq(rf_nodetab_put(&t, 7, 0, key, KEYMAX + 1), -EINVAL);
	rf_nodetab_close(&t);
	/* the next generation finds it as it was */
	ck_assert_int_eq(rf_nodetab_open(&t, area, sizeof(area), KEYMAX), 0);
	ck_assert_uint_eq(rf_nodetab_count(&t), 1);
	ck_assert_int_eq(rf_nodetab_get(&t, 43, &kind, key, sizeof(key), &len, NULL), 0);
	ck_assert_mem_eq(key, "c", 1);
	rf_nodetab_close(&t);
	/* another geometry is not this table: formatted */
	ck_assert_int_eq(rf_nodetab_open(&t, area, sizeof(area), KEYMAX + 8), 1);
	ck_assert_uint_eq(rf_nodetab_count(&t), 0);
	rf_nodetab_close(&t);
	ck_assert_int_eq(rf_nodetab_open(&t, area, 16, KEYMAX), -EINVAL);
}
END_TEST

/* full: ENOSPC; a removed record's slot takes a new one */
START_TEST(test_full)
{
	static uint64_t small[1024 / 8];
	struct rf_nodetab t;
	uint64_t id, n = 0;

	ck_assert_int_eq(rf_nodetab_open(&t, small, sizeof(small), KEYMAX), 1);
	for (id = 1; rf_nodetab_put(&t, id, 0, "k", 1) == 0; id++)
		n++;
	ck_assert_uint_eq(n, t.nslots);
	ck_assert_int_eq(rf_nodetab_put(&t, id, 0, "k", 1), -ENOSPC);
	ck_assert_int_eq(rf_nodetab_del(&t, 3), 0);
	ck_assert_int_eq(rf_nodetab_put(&t, id, 0, "k", 1), 0);
	ck_assert_uint_eq(rf_nodetab_count(&t), n);
	rf_nodetab_close(&t);
}
END_TEST

static void sum(uint64_t id, uint32_t kind, uint64_t count, const void *key, uint32_t len,
		void *arg)
{
	uint64_t *acc = arg;

	(void)key;
	acc[0] += id;
	acc[1] += kind;
	acc[2] += count;
	acc[3] += len;
}

/* counts: one store each, never below 0, kept across a new key and the
 * next open; every record visited once */
START_TEST(test_count_each)
{
	struct rf_nodetab t;
	uint64_t now, acc[4] = { 0 }, count;
	char key[KEYMAX];
	uint32_t kind, len;

	ck_assert_int_eq(rf_nodetab_open(&t, area, sizeof(area), KEYMAX), 1);
	ck_assert_int_eq(rf_nodetab_count_add(&t, 9, 1, &now), -ENOENT);
	ck_assert_int_eq(rf_nodetab_put(&t, 9, 1, "nine", 4), 0);
	ck_assert_int_eq(rf_nodetab_count_add(&t, 9, 3, &now), 0);
	ck_assert_uint_eq(now, 3);
	ck_assert_int_eq(rf_nodetab_count_add(&t, 9, -5, &now), 0);
	ck_assert_uint_eq(now, 0);
	ck_assert_int_eq(rf_nodetab_count_add(&t, 9, 2, NULL), 0);
	ck_assert_int_eq(rf_nodetab_put(&t, 9, 1, "NINE", 4), 0);
	ck_assert_int_eq(rf_nodetab_put(&t, 10, 2, "ten", 3), 0);
	rf_nodetab_close(&t);
	ck_assert_int_eq(rf_nodetab_open(&t, area, sizeof(area), KEYMAX), 0);
	ck_assert_int_eq(rf_nodetab_get(&t, 9, &kind, key, sizeof(key), &len, &count), 0);
	ck_assert_uint_eq(count, 2);
	ck_assert_mem_eq(key, "NINE", 4);
	rf_nodetab_each(&t, sum, acc);
	ck_assert_uint_eq(acc[0], 19);
	ck_assert_uint_eq(acc[1], 3);
	ck_assert_uint_eq(acc[2], 2);
	ck_assert_uint_eq(acc[3], 7);
	rf_nodetab_close(&t);
}
END_TEST

/* memory a hostile predecessor wrote: any bytes, with or without a header
 * that matches; nothing read out of bounds, no garbage record returned */
START_TEST(test_hostile)
{
	struct rf_nodetab t;
	char key[KEYMAX];
	uint32_t kind, len, i, round;
	unsigned int seed = 1;

	for (round = 0; round < 200; round++) {
		unsigned char *b = (unsigned char *)area;

		for (i = 0; i < sizeof(area); i++)
			b[i] = (unsigned char)rand_r(&seed);
		if (round & 1) {
			/* a header this build wrote, records of noise */
			ck_assert_int_eq(rf_nodetab_open(&t, area, sizeof(area), KEYMAX), 1);
			rf_nodetab_close(&t);
			for (i = 64; i < sizeof(area); i++)
				b[i] = (unsigned char)rand_r(&seed);
			ck_assert_int_eq(rf_nodetab_open(&t, area, sizeof(area), KEYMAX), 0);
		} else {
			ck_assert_int_eq(rf_nodetab_open(&t, area, sizeof(area), KEYMAX), 1);
			ck_assert_uint_eq(rf_nodetab_count(&t), 0);
		}
		for (i = 0; i < 64; i++) {
			uint64_t id = (uint64_t)rand_r(&seed) << 32 | (uint64_t)rand_r(&seed);
			int r = rf_nodetab_get(&t, id, &kind, key, sizeof(key), &len, NULL);

			ck_assert(r == 0 || r == -ENOENT || r == -ERANGE);
			if (r == 0)
				ck_assert_uint_le(len, KEYMAX);
		}
		(void)rf_nodetab_count(&t);
		{
			uint64_t acc[4] = { 0 };

			rf_nodetab_each(&t, sum, acc);
			ck_assert_uint_le(acc[3], (uint64_t)rf_nodetab_count(&t) * KEYMAX);
		}
		rf_nodetab_put(&t, 5, 0, "five", 4);
		ck_assert_int_eq(rf_nodetab_get(&t, 5, &kind, key, sizeof(key), &len, NULL), 0);
		ck_assert_mem_eq(key, "five", 4);
		rf_nodetab_close(&t);
	}
}
END_TEST

/* The script a writer runs: inserts, new keys for the same ids ("renames")
 * and removals over a few ids, each key "ID:N" with kind N. */
static void script(struct rf_nodetab *t)
{
	unsigned int s = 3;
	char k[KEYMAX];
	uint32_t n;

	for (n = 1; n <= 80; n++) {
		uint64_t id = 1 + (uint64_t)(rand_r(&s) % 24);
		int len = snprintf(k, sizeof(k), "%llu:%u", (unsigned long long)id, n);

		if (rand_r(&s) % 4 == 0) {
			rf_nodetab_del(t, id);
		} else {
			rf_nodetab_put(t, id, n, k, (uint32_t)len);
			rf_nodetab_count_add(t, id, 1, NULL);
		}
	}
}

/* A writer killed between any two of its stores (RF_NODETAB_STEP, above,
 * ends it at the Nth, for every N the script reaches): every record the
 * next reader finds is one the writer wrote whole. */
START_TEST(test_killed_writer)
{
	uint64_t *shared =
		mmap(NULL, AREA, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	struct rf_nodetab t;
	int status, exits = 0;

	ck_assert_ptr_ne(shared, MAP_FAILED);
	for (step_limit = 1;; step_limit++) {
		pid_t pid;
		uint32_t i, found = 0;

		memset(shared, 0, AREA);
		pid = fork();
		ck_assert_int_ge(pid, 0);
		if (pid == 0) {
			dying = 1;
			/* a table with records of an earlier generation */
			rf_nodetab_open(&t, shared, AREA, KEYMAX);
			rf_nodetab_put(&t, 1000, 1000, "1000:1000", 9);
			steps = 0;
			script(&t);
			_exit(1); /* the script ran to its end */
		}
		ck_assert_int_eq(waitpid(pid, &status, 0), pid);
		ck_assert(WIFEXITED(status));
		ck_assert_int_ge(rf_nodetab_open(&t, shared, AREA, KEYMAX), 0);
		for (i = 1; i <= 1000; i++) {
			char key[KEYMAX + 1];
			unsigned long long id;
			uint32_t kind, len, n;

			uint64_t count;

			if (rf_nodetab_get(&t, i, &kind, key, KEYMAX, &len, &count) != 0)
				continue;
			ck_assert_uint_le(count, 80);
			key[len] = '\0';
			found++;
			ck_assert_int_eq(sscanf(key, "%llu:%u", &id, &n), 2);
			ck_assert_uint_eq(id, i);
			ck_assert_uint_eq(n, kind);
		}
		ck_assert_uint_eq(found, rf_nodetab_count(&t));
		rf_nodetab_close(&t);
		if (WEXITSTATUS(status) == 1)
			break;
		exits++;
	}
	/* every store of the script was a point of death */
	ck_assert_int_gt(exits, 200);
	munmap(shared, AREA);
}
END_TEST

/* the policy's restore_nodes is a promise: a table of the size the broker
 * makes for N records holds N, with the longest keys */
START_TEST(test_sized_as_promised)
{
	static const uint32_t ns[] = { 1, 7, 64, 1000 };
	struct rf_nodetab t;
	size_t i, size;
	void *mem;

	ck_assert_uint_le(rf_nodetab_rec_size(RF_RESTORE_KEY_MAX), RF_RESTORE_RECORD);
	for (i = 0; i < sizeof(ns) / sizeof(ns[0]); i++) {
		size = rf_restore_node_bytes(ns[i]);
		mem = calloc(1, size);
		ck_assert_ptr_nonnull(mem);
		ck_assert_int_eq(rf_nodetab_open(&t, mem, size, RF_RESTORE_KEY_MAX), 1);
		ck_assert_uint_ge(t.nslots, ns[i]);
		rf_nodetab_close(&t);
		free(mem);
	}
}
END_TEST

static Suite *nodetab_suite(void)
{
	Suite *s = suite_create("nodetab");
	TCase *tc = tcase_create("table");

	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_put_get_del);
	tcase_add_test(tc, test_full);
	tcase_add_test(tc, test_count_each);
	tcase_add_test(tc, test_hostile);
	tcase_add_test(tc, test_killed_writer);
	tcase_add_test(tc, test_sized_as_promised);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return rf_check_run(nodetab_suite());
}
