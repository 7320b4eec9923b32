// SPDX-License-Identifier: MIT
/*
 * ringfence's libfuse3.so.3 (libfuse/): the option parser, the command
 * line every libfuse program hands it and the directory entries it builds,
 * as the libfuse3-dev headers describe them. check_libfuse runs against the library in the build tree
 * (its run path), which the first test makes sure of; check_libfuse_debian
 * (RF_AGAINST_DEBIAN) runs the same tests against Debian's libfuse3-3,
 * but for what ringfence's does differently on purpose, so that the
 * expectations are libfuse's own.
 */
#include "check_main.h"
#include <dlfcn.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuse_uapi.h"
#include "libfuse.h"

int fuse_parse_cmdline_30(struct fuse_args *args, struct fuse_cmdline_opts *opts);

START_TEST(test_the_library_is_the_one_meant)
{
	Dl_info info;

	ck_assert(dladdr((void *)fuse_opt_parse, &info));
#ifdef RF_AGAINST_DEBIAN
	ck_assert_ptr_null(strstr(info.dli_fname, "/libfuse/libfuse3.so.3"));
#else
	ck_assert_ptr_nonnull(strstr(info.dli_fname, "/libfuse/libfuse3.so.3"));
#endif
}
END_TEST

struct conf {
	int x, foo, debug, keep_seen;
	char *name;
	unsigned int size, n;
	char seen[8][32]; /* what the function was called with, "KEY:arg" */
	int nseen;
};

enum {
	KEY_P = 100
};

#define C(t, f, v)                             \
	{                                      \
		t, offsetof(struct conf, f), v \
	}
static const struct fuse_opt conf_opts[] = { C("-x", x, 1),
					     C("--foo", foo, 7),
					     C("name=%s", name, 0),
					     C("size=%u", size, 0),
					     C("-n %u", n, 0),
					     FUSE_OPT_KEY("-p ", KEY_P),
					     FUSE_OPT_KEY("bar", FUSE_OPT_KEY_DISCARD),
					     FUSE_OPT_KEY("keepme", FUSE_OPT_KEY_KEEP),
					     C("-d", debug, 1),
					     FUSE_OPT_KEY("-d", FUSE_OPT_KEY_KEEP),
					     FUSE_OPT_END };

/* records each call; keeps all but KEY_P's */
static int proc(void *data, const char *arg, int key, struct fuse_args *out)
{
	struct conf *c = data;

	(void)out;
	if (c->nseen < 8)
		snprintf(c->seen[c->nseen++], sizeof(c->seen[0]), "%d:%s", key, arg);
	return key == KEY_P ? 0 : 1;
}

static void argv_is(const struct fuse_args *a, const char *const *want)
{
	int i;

	for (i = 0; want[i]; i++) {
		ck_assert_int_gt(a->argc, i);
		ck_assert_str_eq(a->argv[i], want[i]);
	}
	ck_assert_int_eq(a->argc, i);
	ck_assert_ptr_null(a->argv[i]);
}

START_TEST(test_templates_act_and_the_rest_is_kept)
{
	char *argv[] = { "prog",  "-x", "-o",	"name=abc,size=42,other=1,bar,keepme",
			 "--foo", "-n", "7",	"-pval",
			 "mnt",	  "-p", "next", "-d",
			 "--",	  "-z", NULL };
	struct fuse_args args = FUSE_ARGS_INIT(14, argv);
	struct conf c = { 0 };
	static const char *const want[] = { "prog", "-o", "other=1,keepme", "mnt", "-d", "--",
					    "-z",   NULL };

	ck_assert_int_eq(fuse_opt_parse(&args, &c, conf_opts, proc), 0);
	ck_assert_int_eq(c.x, 1);
	ck_assert_int_eq(c.foo, 7);
	ck_assert_str_eq(c.name, "abc");
	ck_assert_uint_eq(c.size, 42);
	ck_assert_uint_eq(c.n, 7);
	ck_assert_int_eq(c.debug, 1);
	ck_assert_int_eq(c.nseen, 5);
	ck_assert_str_eq(c.seen[0], "-1:other=1");
	ck_assert_str_eq(c.seen[1], "100:-pval");
	ck_assert_str_eq(c.seen[2], "-2:mnt");
	ck_assert_str_eq(c.seen[3], "100:-pnext");
	ck_assert_str_eq(c.seen[4], "-2:-z");
	argv_is(&args, want);
	ck_assert(args.allocated);
	fuse_opt_free_args(&args);
	ck_assert_ptr_null(args.argv);
	free(c.name);
}
END_TEST

/* "%s" frees what the field held; the last one given wins */
START_TEST(test_string_option_replaces)
{
	char *argv[] = { "prog", "-oname=a", "-o", "name=b", NULL };
	struct fuse_args args = FUSE_ARGS_INIT(4, argv);
	struct conf c = { 0 };

	ck_assert_int_eq(fuse_opt_parse(&args, &c, conf_opts, NULL), 0);
	ck_assert_str_eq(c.name, "b");
	ck_assert_int_eq(args.argc, 1);
	free(c.name);
	fuse_opt_free_args(&args);
}
END_TEST

/* a backslash keeps a comma in an option; a kept one goes out escaped */
START_TEST(test_escaped_commas)
{
	char *argv[] = { "prog", "-oa\\,b,c\\\\d", NULL };
	struct fuse_args args = FUSE_ARGS_INIT(2, argv);
	struct conf c = { 0 };
	static const char *const want[] = { "prog", "-o", "a\\,b,c\\\\d", NULL };

	ck_assert_int_eq(fuse_opt_parse(&args, &c, conf_opts, proc), 0);
	ck_assert_int_eq(c.nseen, 2);
	ck_assert_str_eq(c.seen[0], "-1:a,b");
	ck_assert_str_eq(c.seen[1], "-1:c\\d");
	argv_is(&args, want);
	fuse_opt_free_args(&args);
}
END_TEST

/* no function: everything no template takes is kept as it was; a "--"
 * with nothing after it goes, but where "-o" options were kept (as
 * libfuse does: checked against Debian's libfuse3-3 3.14) */
START_TEST(test_no_function_keeps_all)
{
	char *a1[] = { "prog", "-q", "-ofoo", "mnt", "--", NULL };
	char *a2[] = { "prog", "mnt", "--", NULL };
	struct fuse_args args = FUSE_ARGS_INIT(5, a1);
	struct conf c = { 0 };
	static const char *const want1[] = { "prog", "-o", "foo", "-q", "mnt", "--", NULL };
	static const char *const want2[] = { "prog", "mnt", NULL };

	ck_assert_int_eq(fuse_opt_parse(&args, &c, conf_opts, NULL), 0);
	argv_is(&args, want1);
	fuse_opt_free_args(&args);
	args = (struct fuse_args)FUSE_ARGS_INIT(3, a2);
	ck_assert_int_eq(fuse_opt_parse(&args, &c, conf_opts, NULL), 0);
	argv_is(&args, want2);
	fuse_opt_free_args(&args);
}
END_TEST

static int refuse(void *data, const char *arg, int key, struct fuse_args *out)
{
	(void)data;
	(void)out;
	(void)key;
	return strcmp(arg, "bad") == 0 ? -1 : 1;
}

/* errors: the arguments are left as they were */
START_TEST(test_errors)
{
	char *a1[] = { "prog", "-o", NULL };
	char *a2[] = { "prog", "-osize=lots", NULL };
	char *a3[] = { "prog", "-n", NULL };
	char *a4[] = { "prog", "ok", "bad", NULL };
	struct fuse_args args = FUSE_ARGS_INIT(2, a1);
	struct conf c = { 0 };

	ck_assert_int_eq(fuse_opt_parse(&args, &c, conf_opts, NULL), -1);
	ck_assert_ptr_eq(args.argv, a1);
	args = (struct fuse_args)FUSE_ARGS_INIT(2, a2);
	ck_assert_int_eq(fuse_opt_parse(&args, &c, conf_opts, NULL), -1);
	args = (struct fuse_args)FUSE_ARGS_INIT(2, a3);
	ck_assert_int_eq(fuse_opt_parse(&args, &c, conf_opts, NULL), -1);
	args = (struct fuse_args)FUSE_ARGS_INIT(3, a4);
	ck_assert_int_eq(fuse_opt_parse(&args, &c, conf_opts, refuse), -1);
	ck_assert_int_eq(args.argc, 3);
	ck_assert_ptr_eq(args.argv, a4);
}
END_TEST

START_TEST(test_building_argument_lists)
{
	struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
	static const char *const want[] = { "a", "x", "b", "c", NULL };
	char *argv[] = { "p", "q", NULL };
	char *o = NULL;

	ck_assert_int_eq(fuse_opt_add_arg(&args, "a"), 0);
	ck_assert_int_eq(fuse_opt_add_arg(&args, "b"), 0);
	ck_assert_int_eq(fuse_opt_add_arg(&args, "c"), 0);
	ck_assert_int_eq(fuse_opt_insert_arg(&args, 1, "x"), 0);
	argv_is(&args, want);
	fuse_opt_free_args(&args);
#ifndef RF_AGAINST_DEBIAN
	/* a vector the program owns is copied, not freed (libfuse's
	 * assert(3) ends the program) */
	args = (struct fuse_args)FUSE_ARGS_INIT(2, argv);
	ck_assert_int_eq(fuse_opt_add_arg(&args, "r"), 0);
	ck_assert_ptr_ne(args.argv, argv);
	ck_assert_str_eq(args.argv[2], "r");
	ck_assert_str_eq(argv[1], "q");
	fuse_opt_free_args(&args);
#else
	(void)argv;
#endif
	ck_assert_int_eq(fuse_opt_add_opt(&o, "ro"), 0);
	ck_assert_int_eq(fuse_opt_add_opt_escaped(&o, "a,b\\c"), 0);
	ck_assert_int_eq(fuse_opt_add_opt(&o, "x=1"), 0);
	ck_assert_str_eq(o, "ro,a\\,b\\\\c,x=1");
	free(o);
}
END_TEST

START_TEST(test_match)
{
	ck_assert_int_eq(fuse_opt_match(conf_opts, "size=3"), 1);
	ck_assert_int_eq(fuse_opt_match(conf_opts, "keepme"), 1);
	ck_assert_int_eq(fuse_opt_match(conf_opts, "-pfoo"), 1);
	ck_assert_int_eq(fuse_opt_match(conf_opts, "siz"), 0);
	ck_assert_int_eq(fuse_opt_match(conf_opts, "-xy"), 0);
	ck_assert_int_eq(fuse_opt_match(NULL, "size=3"), 0);
}
END_TEST

/* the options every program takes */
START_TEST(test_cmdline)
{
	char *argv[] = { "/usr/bin/squashfuse_ll",
			 "-d",
			 "-o",
			 "max_threads=4,allow_other",
			 "/tmp",
			 "image.sqfs",
			 NULL };
	struct fuse_args args = FUSE_ARGS_INIT(6, argv);
	struct fuse_cmdline_opts o;
	static const char *const want[] = { "/usr/bin/squashfuse_ll",  "-o", "allow_other", "-d",
					    "-osubtype=squashfuse_ll", NULL };

	/* a second non-option is no mount point: an error */
	ck_assert_int_eq(fuse_parse_cmdline(&args, &o), -1);
	free(o.mountpoint);
	args = (struct fuse_args)FUSE_ARGS_INIT(5, argv);
	ck_assert_int_eq(fuse_parse_cmdline(&args, &o), 0);
	ck_assert_int_eq(o.debug, 1);
	ck_assert_int_eq(o.foreground, 1);
	ck_assert_int_eq(o.singlethread, 0);
	ck_assert_uint_eq(o.max_threads, 4);
	ck_assert_uint_eq(o.max_idle_threads, ~0U);
	ck_assert_str_eq(o.mountpoint, "/tmp");
	argv_is(&args, want);
	free(o.mountpoint);
	fuse_opt_free_args(&args);
}
END_TEST

/* subtype= (or fsname=) given: no default subtype; -h and -V are taken
 * out (checked against Debian's libfuse3-3 3.14) */
START_TEST(test_cmdline_subtype_and_help)
{
	char *a1[] = { "prog", "-osubtype=mine", "-f", "-s", "/", NULL };
	char *a2[] = { "/", "-h", NULL };
	struct fuse_args args = FUSE_ARGS_INIT(5, a1);
	struct fuse_cmdline_opts o;
	static const char *const want1[] = { "prog", "-o", "subtype=mine", NULL };
	static const char *const want2[] = { "/", "-osubtype=/", NULL };

	ck_assert_int_eq(fuse_parse_cmdline(&args, &o), 0);
	ck_assert_int_eq(o.nodefault_subtype, 1);
	ck_assert_int_eq(o.foreground, 1);
	ck_assert_int_eq(o.singlethread, 1);
	argv_is(&args, want1);
	free(o.mountpoint);
	fuse_opt_free_args(&args);
	args = (struct fuse_args)FUSE_ARGS_INIT(2, a2);
	ck_assert_int_eq(fuse_parse_cmdline(&args, &o), 0);
	ck_assert_int_eq(o.show_help, 1);
	ck_assert_ptr_null(o.mountpoint);
	argv_is(&args, want2);
	fuse_opt_free_args(&args);
}
END_TEST

/* a program built before libfuse 3.12 has the structure without
 * max_threads: fuse_parse_cmdline@FUSE_3.0 writes nothing past it */
START_TEST(test_cmdline_30_fills_the_old_structure)
{
	char *argv[] = { "prog", "-o", "max_threads=4", "/", NULL };
	struct fuse_args args = FUSE_ARGS_INIT(4, argv);
	union {
		struct fuse_cmdline_opts o;
		unsigned char b[sizeof(struct fuse_cmdline_opts)];
	} u;
	size_t end = offsetof(struct fuse_cmdline_opts, max_threads), i;

	memset(&u, 0xa5, sizeof(u));
	ck_assert_int_eq(fuse_parse_cmdline_30(&args, &u.o), 0);
	ck_assert_str_eq(u.o.mountpoint, "/");
	ck_assert_uint_eq(u.o.max_idle_threads, ~0U);
	for (i = end; i < sizeof(u); i++)
		ck_assert_uint_eq(u.b[i], 0xa5);
	free(u.o.mountpoint);
	fuse_opt_free_args(&args);
}
END_TEST

#ifndef RF_AGAINST_DEBIAN
/* the mount point as given: the broker mounted it, and the program's root
 * need not have it (libfuse makes it absolute with realpath(3), and fails
 * where it does not exist) */
START_TEST(test_cmdline_mountpoint_as_given)
{
	char *argv[] = { "prog", "no/such/mountpoint", NULL };
	struct fuse_args args = FUSE_ARGS_INIT(2, argv);
	struct fuse_cmdline_opts o;

	ck_assert_int_eq(fuse_parse_cmdline(&args, &o), 0);
	ck_assert_str_eq(o.mountpoint, "no/such/mountpoint");
	free(o.mountpoint);
	fuse_opt_free_args(&args);
}
END_TEST
#endif

/* READDIR's entries in the kernel's format, each padded to 8 bytes; one
 * that does not fit is not written, and its size is said all the same */
START_TEST(test_direntry)
{
	struct stat st = { .st_ino = 77, .st_mode = S_IFDIR | 0755 };
	char buf[64];
	const struct fuse_dirent *d = (const void *)buf;
	size_t n;

	memset(buf, 0xee, sizeof(buf));
	n = fuse_add_direntry(NULL, buf, sizeof(buf), "hello", &st, 12);
	ck_assert_uint_eq(n, 32); /* 24 + 5, padded */
	ck_assert_uint_eq(d->ino, 77);
	ck_assert_uint_eq(d->off, 12);
	ck_assert_uint_eq(d->namelen, 5);
	ck_assert_uint_eq(d->type, S_IFDIR >> 12);
	ck_assert_int_eq(memcmp(d->name, "hello\0\0\0", 8), 0);
	ck_assert_uint_eq((unsigned char)buf[32], 0xee);
	/* too small, or no buffer: the size only */
	ck_assert_uint_eq(fuse_add_direntry(NULL, buf + 32, 31, "hello", &st, 13), 32);
	ck_assert_uint_eq((unsigned char)buf[32], 0xee);
	ck_assert_uint_eq(fuse_add_direntry(NULL, NULL, 0, "a-longer-name", &st, 1), 40);
}
END_TEST

/* READDIRPLUS's: the entry's reply, then the entry; timeouts split as
 * libfuse splits them */
START_TEST(test_direntry_plus)
{
	struct fuse_entry_param e = {
		.ino = 99,
		.generation = 3,
		.attr = { .st_ino = 99,
			  .st_mode = S_IFREG | 0644,
			  .st_nlink = 1,
			  .st_uid = 1000,
			  .st_gid = 100,
			  .st_size = 4096,
			  .st_blocks = 8,
			  .st_blksize = 4096,
			  .st_mtim = { 1700000000, 5 } },
		.attr_timeout = 1.5,
		.entry_timeout = -2.0,
	};
	static char buf[256];
	const struct fuse_direntplus *dp = (const void *)buf;
	size_t n;

	n = fuse_add_direntry_plus(NULL, buf, sizeof(buf), "f", &e, 7);
	ck_assert_uint_eq(n, 160); /* 128 + 24 + 1, padded */
	ck_assert_uint_eq(dp->entry_out.nodeid, 99);
	ck_assert_uint_eq(dp->entry_out.generation, 3);
	ck_assert_uint_eq(dp->entry_out.entry_valid, 0);
	ck_assert_uint_eq(dp->entry_out.entry_valid_nsec, 0);
	ck_assert_uint_eq(dp->entry_out.attr_valid, 1);
	ck_assert_uint_eq(dp->entry_out.attr_valid_nsec, 500000000);
	ck_assert_uint_eq(dp->entry_out.attr.ino, 99);
	ck_assert_uint_eq(dp->entry_out.attr.size, 4096);
	ck_assert_uint_eq(dp->entry_out.attr.blocks, 8);
	ck_assert_uint_eq(dp->entry_out.attr.mode, S_IFREG | 0644);
	ck_assert_uint_eq(dp->entry_out.attr.uid, 1000);
	ck_assert_uint_eq(dp->entry_out.attr.mtime, 1700000000);
	ck_assert_uint_eq(dp->entry_out.attr.mtimensec, 5);
	ck_assert_uint_eq(dp->entry_out.attr.blksize, 4096);
	ck_assert_uint_eq(dp->entry_out.attr.flags, 0);
	ck_assert_uint_eq(dp->dirent.ino, 99);
	ck_assert_uint_eq(dp->dirent.off, 7);
	ck_assert_uint_eq(dp->dirent.namelen, 1);
	ck_assert_uint_eq(dp->dirent.type, S_IFREG >> 12);
	ck_assert_int_eq(memcmp(dp->dirent.name, "f\0\0\0\0\0\0", 7), 0);
	ck_assert_uint_eq(fuse_add_direntry_plus(NULL, buf, 159, "f", &e, 7), 160);
	/* a timeout past what fits is the most that does */
	e.attr_timeout = 1e30;
	fuse_add_direntry_plus(NULL, buf, sizeof(buf), "f", &e, 7);
	ck_assert_uint_eq(dp->entry_out.attr_valid, ULONG_MAX);
}
END_TEST

static Suite *opt_suite(void)
{
	Suite *s = suite_create("libfuse");
	TCase *tc = tcase_create("options");

	tcase_add_test(tc, test_the_library_is_the_one_meant);
	tcase_add_test(tc, test_templates_act_and_the_rest_is_kept);
	tcase_add_test(tc, test_string_option_replaces);
	tcase_add_test(tc, test_escaped_commas);
	tcase_add_test(tc, test_no_function_keeps_all);
	tcase_add_test(tc, test_errors);
	tcase_add_test(tc, test_building_argument_lists);
	tcase_add_test(tc, test_match);
	suite_add_tcase(s, tc);
	tc = tcase_create("command line");
	tcase_add_test(tc, test_cmdline);
	tcase_add_test(tc, test_cmdline_subtype_and_help);
	tcase_add_test(tc, test_cmdline_30_fills_the_old_structure);
#ifndef RF_AGAINST_DEBIAN
	tcase_add_test(tc, test_cmdline_mountpoint_as_given);
#endif
	suite_add_tcase(s, tc);
	tc = tcase_create("directory entries");
	tcase_add_test(tc, test_direntry);
	tcase_add_test(tc, test_direntry_plus);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return rf_check_run(opt_suite());
}
