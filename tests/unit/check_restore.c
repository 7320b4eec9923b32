// SPDX-License-Identifier: MIT
/*
 * Node ids and open files across worker generations (worker/plugin/restore.c):
 * what one generation records, the next restores through the plugin's
 * hooks, parents first, with the open flags less O_TRUNC; names follow
 * renames; whatever a table holds, the hooks see only what the table could
 * have been given (one-component names, parents restored before), and a
 * strict restore (an upgrade) fails without touching the tables.
 */
#include "check_main.h"
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "worker.h"

#define NODES 64
static char mem[8 << 20] __attribute__((aligned(4096)));
static struct rf_worker w;
static struct rf_queue q;
static struct rf_queue_stats stats;

/* what the hooks were asked, in order */
static struct call {
	uint64_t parent;
	char name[NAME_MAX + 1];
	ino_t ino;
	uint64_t nlookup;
	uint64_t pid; /* given back */
} calls[4096];
static int ncalls, nreopen, fail_names;
static uint64_t reopened[64][3]; /* ino, flags, dir */

static int h_restore(void *ud, const struct rf_restore_node *r, uint64_t *ino)
{
	struct call *c = &calls[ncalls];
	size_t len = strlen(r->name);
	int i, parent_known = r->parent == RF_ROOT_ID;

	(void)ud;
	/* only what a table could have been given */
	ck_assert(len <= NAME_MAX && !strchr(r->name, '/'));
	ck_assert(strcmp(r->name, ".") && strcmp(r->name, ".."));
	for (i = 0; i < ncalls; i++)
		parent_known |= calls[i].pid == r->parent;
	ck_assert_msg(parent_known, "a parent not restored before");
	ck_assert_uint_gt(r->nlookup, 0);
	if (fail_names && !strcmp(r->name, "fails"))
		return ENOENT;
	c->parent = r->parent;
	snprintf(c->name, sizeof(c->name), "%s", r->name);
	c->ino = r->ino;
	c->nlookup = r->nlookup;
	c->pid = 0x5000 + (uint64_t)ncalls;
	*ino = c->pid;
	ncalls++;
	return 0;
}

static int h_reopen(void *ud, uint64_t ino, int flags, int dir, uint64_t *fh)
{
	(void)ud;
	reopened[nreopen][0] = ino;
	reopened[nreopen][1] = (uint64_t)flags;
	reopened[nreopen][2] = (uint64_t)dir;
	*fh = 0x900 + (uint64_t)nreopen++;
	return 0;
}

static struct rf_plugin plugin = { RF_PLUGIN_INIT, .name = "fake", .restore_node = h_restore,
				   .reopen = h_reopen };

/* the keeper's counters (keeper/answer.c), which the host reaches by COUNT */
static void count(struct rf_worker *cw, uint32_t which, uint64_t a, uint32_t len, int32_t error)
{
	ck_assert_ptr_eq(cw, &w);
	if (which == RF_CNT_RESTORED) {
		stats.restored_nodes += a;
		stats.restored_files += len;
		stats.restore_failed += (uint32_t)error;
	} else {
		ck_assert_uint_eq(which, RF_CNT_RESTORE_FULL);
		stats.restore_full += a;
	}
}

static const struct rf_side side = { .name = "test", .count = count };

/* A worker of generation @gen over the same memory. */
static void worker(uint32_t gen, int strict)
{
	rf_restore_stop(&w); /* the last generation's */
	memset(&w, 0, sizeof(w));
	memset(&q, 0, sizeof(q));
	q.w = &w;
	q.stats = &stats;
	w.queues = &q;
	w.nqueues = 1;
	w.plugin = &plugin;
	w.side = &side;
	w.cfg.generation = gen;
	w.cfg.restore_nodes = NODES;
	w.cfg.restore_size = rf_restore_bytes(NODES);
	w.cfg.restore_strict = (uint32_t)strict;
	w.tag = rf_gen_tag(gen);
	w.restore_mem = mem;
	ncalls = nreopen = 0;
}

static int start(void)
{
	char why[256];

	return rf_restore_start(&w, why, sizeof(why));
}

/* an entry reply for plugin node @pid found as @name in @dir (kernel id) */
static uint64_t entry(uint64_t dir, const char *name, uint64_t pid, ino_t ino, mode_t mode)
{
	struct rf_req r = { .q = &q, .kid = dir };
	struct stat st = { .st_ino = ino, .st_mode = mode };

	r.in.opcode = FUSE_LOOKUP;
	r.name = name;
	return rf_restore_entry(&r, pid, name, &st);
}

static void opened(uint64_t kid, uint64_t kfh, uint32_t flags, int dir)
{
	struct fuse_open_in oi = { .flags = flags };
	struct rf_req r = { .q = &q, .kid = kid, .arg0 = (const char *)&oi };

	r.in.opcode = dir ? FUSE_OPENDIR : FUSE_OPEN;
	rf_restore_opened(&r, kid, kfh);
}

static void setup(void)
{
	memset(mem, 0, sizeof(mem));
	memset(&stats, 0, sizeof(stats));
}

static void teardown(void)
{
	rf_restore_stop(&w);
}

START_TEST(test_round_trip)
{
	uint64_t a, f, pid, fh;

	worker(0, 0);
	ck_assert_int_eq(start(), 0);
	a = entry(RF_ROOT_ID, "a", 0x100, 11, S_IFDIR);
	ck_assert_uint_eq(a, w.tag | 0x100);
	f = entry(a, "f", 0x200, 12, S_IFREG);
	ck_assert_uint_eq(entry(a, "f", 0x200, 12, S_IFREG), f); /* a second lookup */
	opened(f, w.tag | 7, O_RDWR | O_TRUNC | O_APPEND, 0);
	opened(a, w.tag | 8, O_RDONLY | O_DIRECTORY, 1);
	/* the worker dies; the next restores */
	worker(1, 0);
	ck_assert_int_eq(start(), 0);
	ck_assert_int_eq(ncalls, 2);
	ck_assert_str_eq(calls[0].name, "a");
	ck_assert_uint_eq(calls[0].parent, RF_ROOT_ID);
	ck_assert_uint_eq(calls[0].nlookup, 1);
	ck_assert_str_eq(calls[1].name, "f");
	ck_assert_uint_eq(calls[1].parent, calls[0].pid);
	ck_assert_uint_eq(calls[1].ino, 12);
	ck_assert_uint_eq(calls[1].nlookup, 2);
	ck_assert_int_eq(nreopen, 2);
	ck_assert(rf_restore_id_in(&w, f, &pid));
	ck_assert_uint_eq(pid, calls[1].pid);
	ck_assert(rf_restore_fh_in(&w, (rf_gen_tag(0)) | 7, &fh));
	ck_assert_uint_eq(stats.restored_nodes, 2);
	ck_assert_uint_eq(stats.restored_files, 2);
	/* O_TRUNC never comes back */
	for (int i = 0; i < 2; i++)
		if (!reopened[i][2])
			ck_assert_uint_eq(reopened[i][1], O_RDWR | O_APPEND);
	/* the restored node keeps its old id in entry replies */
	ck_assert_uint_eq(entry(a, "f", calls[1].pid, 12, S_IFREG), f);
	/* forgetting all its lookups: the plugin's id, then no more */
	ck_assert_uint_eq(rf_restore_forget(&w, f, 3), calls[1].pid);
	ck_assert(!rf_restore_id_in(&w, f, &pid));
	rf_restore_release(&w, rf_gen_tag(0) | 7);
	ck_assert(!rf_restore_fh_in(&w, rf_gen_tag(0) | 7, &fh));
}
END_TEST

/* a rename moves the name; a directory's children follow it untouched */
START_TEST(test_rename)
{
	struct rf_req r = { .q = &q };
	uint64_t a, x;

	worker(0, 0);
	ck_assert_int_eq(start(), 0);
	a = entry(RF_ROOT_ID, "a", 0x100, 11, S_IFDIR);
	x = entry(a, "x", 0x200, 12, S_IFREG);
	(void)x;
	r.in.opcode = FUSE_RENAME2;
	r.kid = RF_ROOT_ID;
	r.name = "a";
	r.kid2 = RF_ROOT_ID;
	r.name2 = "b";
	rf_restore_moved(&r);
	worker(1, 0);
	ck_assert_int_eq(start(), 0);
	ck_assert_int_eq(ncalls, 2);
	ck_assert_str_eq(calls[0].name, "b");
	ck_assert_str_eq(calls[1].name, "x");
}
END_TEST

/* a file whose node the kernel forgot cannot be open: its record (a
 * RELEASE a dead worker took and never ran) is dropped, not failed */
START_TEST(test_stale_file)
{
	uint64_t f;

	worker(0, 0);
	ck_assert_int_eq(start(), 0);
	f = entry(RF_ROOT_ID, "f", 0x200, 12, S_IFREG);
	opened(f, w.tag | 7, O_RDONLY, 0);
	ck_assert_uint_eq(rf_restore_forget(&w, f, 1), 0x200);
	worker(1, 0);
	ck_assert_int_eq(start(), 0);
	ck_assert_int_eq(nreopen, 0);
	ck_assert_uint_eq(stats.restore_failed, 0);
	worker(2, 1); /* and an upgrade does not fail for it */
	ck_assert_int_eq(start(), 0);
}
END_TEST

/* parents that point at each other, or nowhere: nothing restored */
START_TEST(test_cycle)
{
	uint64_t a, b;

	worker(0, 0);
	ck_assert_int_eq(start(), 0);
	a = entry(RF_ROOT_ID + 0x77, "a", 0x100, 11, S_IFDIR);
	b = entry(a, "b", 0x200, 12, S_IFDIR);
	(void)entry(b, "a", 0x100, 11, S_IFDIR); /* a's key now says: in b */
	(void)entry(rf_gen_tag(0) | 0x999, "orphan", 0x300, 13, S_IFREG);
	worker(1, 0);
	ck_assert_int_eq(start(), 0);
	ck_assert_int_eq(ncalls, 0);
	ck_assert_uint_eq(stats.restore_failed, 3);
}
END_TEST

/* an upgrade's restore fails whole and leaves the tables as they were */
START_TEST(test_strict)
{
	uint64_t a;

	worker(0, 0);
	ck_assert_int_eq(start(), 0);
	a = entry(RF_ROOT_ID, "a", 0x100, 11, S_IFDIR);
	(void)entry(a, "fails", 0x200, 12, S_IFREG);
	fail_names = 1;
	worker(1, 1);
	ck_assert_int_eq(start(), -ESTALE);
	fail_names = 0;
	worker(2, 0);
	ck_assert_int_eq(start(), 0);
	ck_assert_int_eq(ncalls, 2);
}
END_TEST

/* tables of noise behind headers this build wrote: the hooks see only
 * what they could have been given (they check), and nothing reads out of
 * bounds (run under ASan by make check-san) */
START_TEST(test_hostile)
{
	unsigned int seed = 7, round, i;

	for (round = 0; round < 40; round++) {
		worker(0, 0);
		ck_assert_int_eq(start(), 0);
		for (i = 0; i < 20; i++)
			(void)entry(i ? rf_gen_tag(0) | (0x100 + i - 1) : RF_ROOT_ID, "n",
				    0x100 + i, i, S_IFDIR);
		/* noise over the records, the headers kept (the first page) */
		for (i = 4096; i < rf_restore_bytes(NODES); i++)
			if (rand_r(&seed) % 8 == 0)
				mem[i] = (char)rand_r(&seed);
		worker(1, 0);
		ck_assert_int_eq(start(), 0);
	}
}
END_TEST

static Suite *restore_suite(void)
{
	Suite *s = suite_create("restore");
	TCase *tc = tcase_create("tables");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_round_trip);
	tcase_add_test(tc, test_rename);
	tcase_add_test(tc, test_cycle);
	tcase_add_test(tc, test_stale_file);
	tcase_add_test(tc, test_strict);
	tcase_add_test(tc, test_hostile);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return rf_check_run(restore_suite());
}
