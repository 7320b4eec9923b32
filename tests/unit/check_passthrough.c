// SPDX-License-Identifier: MIT
/*
 * The passthrough plugin and symlinks in its backing directory. A symlink
 * can appear in a name between the kernel's LOOKUP and the CREATE that
 * follows it (another client, a process on the host); the plugin must then
 * neither follow it nor leave its source. Here the symlinks are planted
 * before each request, so that what a race hits rarely is hit every time.
 * Real requests go through the framework's dispatch into the real
 * build/plugins/passthrough.so; the queue's rf_req_finish() is a recorder.
 */
#include "check_main.h"
#include "check_tmp.h"
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "worker.h"

static struct rf_worker w;
static struct rf_queue q;
static struct rf_queue_stats stats;
static struct rf_req req;
static char slot[4096 + 65536];
static char dir[96], src[128], outside[128];
static void *handle;

static void record_finish(struct rf_req *r)
{
	r->state = RQ_WAIT;
}

static const struct rf_side test_side = { .name = "test", .finish = record_finish };

static void at(char *buf, size_t len, const char *base, const char *name)
{
	snprintf(buf, len, "%s/%s", base, name);
}

static void put(const char *base, const char *name, const char *text)
{
	char p[160];
	FILE *f;

	at(p, sizeof(p), base, name);
	f = fopen(p, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
}

static void plant(const char *name, const char *target)
{
	char p[160];

	at(p, sizeof(p), src, name);
	ck_assert_int_eq(symlink(target, p), 0);
}

static void setup(void)
{
	const struct rf_plugin *plugin;
	struct rf_init_args ia;
	int fd;

	/* one directory per test, below one the parent removes whatever
	 * happens (a failed test's forked child runs no teardown) */
	snprintf(dir, sizeof(dir), "%s/%d", rf_check_top, (int)getpid());
	ck_assert_int_eq(mkdir(dir, 0755), 0);
	at(src, sizeof(src), dir, "src");
	at(outside, sizeof(outside), dir, "outside");
	ck_assert_int_eq(mkdir(src, 0755), 0);
	ck_assert_int_eq(mkdir(outside, 0755), 0);
	put(outside, "existing", "keep");
	plant("to-new", "../outside/victim");
	plant("to-existing", "../outside/existing");
	plant("to-dir", "../outside");

	handle = dlopen(RF_PLUGIN_DIR "/passthrough.so", RTLD_NOW);
	ck_assert_msg(handle != NULL, "%s", dlerror());
	plugin = dlsym(handle, "ringfence_plugin");
	ck_assert_ptr_nonnull(plugin);
	fd = open(src, O_PATH | O_DIRECTORY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	memset(&ia, 0, sizeof(ia));
	ia.name = "t";
	ia.source_fd = fd;
	ia.source = src;
	ia.options = "";
	ia.max_write = 65536;
	ck_assert_int_eq(plugin->init(&ia, &w.userdata), 0);
	w.plugin = plugin;
	w.tag = rf_gen_tag(0);
	w.nqueues = 1;
	w.queues = &q;
	w.side = &test_side;
	q.w = &w;
	q.stats = &stats;
	q.reqs = &req;
	q.nreqs = 1;
}

static void case_setup(void)
{
	rf_check_tmp_make("pt");
}

/* one request as the io-uring transport lays it out; returns its errno */
static int run(uint32_t opcode, const void *arg0, size_t a0len, const void *rest, size_t rlen)
{
	struct fuse_uring_req_header *h = (void *)slot;

	memset(&req, 0, sizeof(req));
	memset(slot, 0, sizeof(slot));
	req.q = &q;
	req.hdr = slot;
	req.payload = slot + 4096;
	req.payload_cap = 65536;
	req.in.opcode = opcode;
	req.in.unique = 2;
	req.in.nodeid = FUSE_ROOT_ID;
	memcpy(h->op_in, arg0, a0len);
	memcpy(req.payload, rest, rlen);
	req.arg0 = h->op_in;
	req.rest = req.payload;
	req.rest_len = (uint32_t)rlen;
	rf_dispatch(&req);
	ck_assert_int_eq(req.state, RQ_WAIT); /* answered */
	return req.error;
}

static int create(const char *name, uint32_t flags)
{
	struct fuse_create_in ci = { .flags = flags, .mode = S_IFREG | 0644 };

	return run(FUSE_CREATE, &ci, sizeof(ci), name, strlen(name) + 1);
}

static void nothing_outside(void)
{
	char p[160], buf[16] = { 0 };
	int fd;

	at(p, sizeof(p), outside, "victim");
	ck_assert_msg(access(p, F_OK) < 0, "a file was made through a symlink: %s", p);
	at(p, sizeof(p), outside, "existing");
	fd = open(p, O_RDONLY);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(read(fd, buf, sizeof(buf) - 1), 4);
	close(fd);
	ck_assert_str_eq(buf, "keep");
}

START_TEST(test_create_follows_no_symlink)
{
	ck_assert_int_eq(create("to-new", O_WRONLY | O_CREAT), ELOOP);
	ck_assert_int_eq(create("to-existing", O_WRONLY | O_CREAT | O_TRUNC), ELOOP);
	ck_assert_int_eq(create("to-existing", O_RDWR | O_CREAT | O_APPEND), ELOOP);
	ck_assert_int_eq(create("to-new", O_WRONLY | O_CREAT | O_EXCL), EEXIST);
	nothing_outside();
	/* and a plain name still works */
	ck_assert_int_eq(create("plain", O_WRONLY | O_CREAT), 0);
}
END_TEST

START_TEST(test_lookup_sees_the_symlink)
{
	const struct fuse_entry_out *o = (const void *)(slot + 4096);

	ck_assert_int_eq(run(FUSE_LOOKUP, "", 0, "to-dir", 7), 0);
	ck_assert_uint_eq(o->attr.mode & S_IFMT, S_IFLNK);
	ck_assert_int_eq(run(FUSE_LOOKUP, "", 0, "to-existing", 12), 0);
	ck_assert_uint_eq(o->attr.mode & S_IFMT, S_IFLNK);
	ck_assert_uint_eq(o->attr.size, strlen("../outside/existing"));
}
END_TEST

START_TEST(test_names_made_over_a_symlink)
{
	struct fuse_mkdir_in mi = { .mode = 0755 };
	struct fuse_mknod_in ni = { .mode = S_IFIFO | 0644 };

	ck_assert_int_eq(run(FUSE_MKDIR, &mi, sizeof(mi), "to-new", 7), EEXIST);
	ck_assert_int_eq(run(FUSE_MKNOD, &ni, sizeof(ni), "to-new", 7), EEXIST);
	ck_assert_int_eq(run(FUSE_SYMLINK, "", 0, "to-new\0x", 9), EEXIST);
	nothing_outside();
}
END_TEST

static Suite *passthrough_suite(void)
{
	Suite *s = suite_create("passthrough");
	TCase *tc = tcase_create("planted symlinks");

	tcase_add_unchecked_fixture(tc, case_setup, rf_check_tmp_remove);
	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_add_test(tc, test_create_follows_no_symlink);
	tcase_add_test(tc, test_lookup_sees_the_symlink);
	tcase_add_test(tc, test_names_made_over_a_symlink);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return rf_check_run(passthrough_suite());
}
