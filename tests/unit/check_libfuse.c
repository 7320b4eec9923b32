// SPDX-License-Identifier: MIT
/*
 * ringfence's libfuse3.so.3 (libfuse/): the option parser, the command
 * line every libfuse program hands it and the directory entries it builds,
 * as the libfuse3-dev headers describe them. check_libfuse runs against the library in the build tree
 * (its run path), which the first test makes sure of; check_libfuse_debian
 * (RF_AGAINST_DEBIAN) runs the same tests against Debian's libfuse3-3,
 * but for what ringfence's does differently on purpose, so that the
 * expectations are libfuse's own; check_libfuse4 (RF_LIBFUSE_ABI4) runs
 * them against ringfence's libfuse3.so.4, with what libfuse 3.17 adds.
 */
#include "check_main.h"
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <unistd.h>
#include <limits.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuse_uapi.h"
#include "libfuse_i.h"

int fuse_parse_cmdline_30(struct fuse_args *args, struct fuse_cmdline_opts *opts);

#ifdef RF_LIBFUSE_ABI4
/* what libfuse 3.17's headers make of these calls */
static struct libfuse_version v318 = { 3, 18, 0, 0 };
#define fuse_session_new(a, o, s, d) fuse_session_new_versioned(a, o, s, &v318, d)
#define fuse_new(a, o, s, d) _fuse_new_31(a, o, s, &v318, d)
#endif

START_TEST(test_the_library_is_the_one_meant)
{
	Dl_info info;

	ck_assert(dladdr((void *)fuse_opt_parse, &info));
#ifdef RF_AGAINST_DEBIAN
	ck_assert_ptr_null(strstr(info.dli_fname, "/libfuse/libfuse3.so.3"));
#elif defined(RF_LIBFUSE_ABI4)
	ck_assert_ptr_nonnull(strstr(info.dli_fname, "/libfuse/libfuse3.so.4"));
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
/* the last message libfuse logged, through the program's log function,
 * and how many: a message is a line, which libfuse may log in pieces */
static struct {
	char text[256];
	int level;
	int n;
} logged;

static void capture(enum fuse_log_level level, const char *fmt, va_list ap)
{
	size_t len = strlen(logged.text);

	if (len == 0 || logged.text[len - 1] == '\n') {
		len = 0;
		logged.n++;
	}
	vsnprintf(logged.text + len, sizeof(logged.text) - len, fmt, ap);
	logged.level = (int)level;
}

START_TEST(test_errors)
{
	char *a1[] = { "prog", "-o", NULL };
	char *a2[] = { "prog", "-osize=lots", NULL };
	char *a3[] = { "prog", "-n", NULL };
	char *a4[] = { "prog", "ok", "bad", NULL };
	struct fuse_args args = FUSE_ARGS_INIT(2, a1);
	struct conf c = { 0 };

	/* each complaint goes to the program's log function */
	fuse_set_log_func(capture);
	ck_assert_int_eq(fuse_opt_parse(&args, &c, conf_opts, NULL), -1);
	ck_assert_ptr_eq(args.argv, a1);
	ck_assert_str_eq(logged.text, "fuse: missing argument after `-o'\n");
	ck_assert_int_eq(logged.level, FUSE_LOG_ERR);
	args = (struct fuse_args)FUSE_ARGS_INIT(2, a2);
	ck_assert_int_eq(fuse_opt_parse(&args, &c, conf_opts, NULL), -1);
	ck_assert_str_eq(logged.text, "fuse: invalid parameter in option `size=lots'\n");
	args = (struct fuse_args)FUSE_ARGS_INIT(2, a3);
	ck_assert_int_eq(fuse_opt_parse(&args, &c, conf_opts, NULL), -1);
	ck_assert_str_eq(logged.text, "fuse: missing argument after `-n'\n");
	ck_assert_int_eq(logged.n, 3);
	fuse_log(FUSE_LOG_DEBUG, "%s %d\n", "the program's own", 4);
	ck_assert_str_eq(logged.text, "the program's own 4\n");
	ck_assert_int_eq(logged.level, FUSE_LOG_DEBUG);
	/* NULL: standard error again */
	fuse_set_log_func(NULL);
	args = (struct fuse_args)FUSE_ARGS_INIT(2, a3);
	ck_assert_int_eq(fuse_opt_parse(&args, &c, conf_opts, NULL), -1);
	ck_assert_int_eq(logged.n, 4);
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

/* ---- the process around the session ---- */

static const struct fuse_lowlevel_ops no_ops;

static struct fuse_session *bare_session(void)
{
	char *argv[] = { "prog", NULL };
	struct fuse_args args = FUSE_ARGS_INIT(1, argv);
	struct fuse_session *s = fuse_session_new(&args, &no_ops, sizeof(no_ops), NULL);

	ck_assert_ptr_nonnull(s);
	/* (libfuse's parse may have copied them) */
	fuse_opt_free_args(&args);
	return s;
}

static void (*handler_of(int sig))(int)
{
	struct sigaction sa;

	ck_assert_int_eq(sigaction(sig, NULL, &sa), 0);
	return sa.sa_handler;
}

/* SIGHUP, SIGINT, SIGTERM end the session's loop, SIGPIPE is nothing;
 * a signal whose action is not the default is left alone, and removing
 * puts back only what was set */
START_TEST(test_signal_handlers)
{
	struct fuse_session *s = bare_session();

	/* (Check's runner leaves its own dispositions to a test) */
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	signal(SIGPIPE, SIG_DFL);
	signal(SIGHUP, SIG_IGN);
	ck_assert_int_eq(fuse_set_signal_handlers(s), 0);
	ck_assert(handler_of(SIGHUP) == SIG_IGN);
	ck_assert(handler_of(SIGPIPE) != SIG_DFL);
	ck_assert(handler_of(SIGPIPE) != SIG_IGN);
	raise(SIGPIPE);
	ck_assert_int_eq(fuse_session_exited(s), 0);
	raise(SIGTERM);
	ck_assert_int_ne(fuse_session_exited(s), 0);
	fuse_session_reset(s);
	raise(SIGINT);
	ck_assert_int_ne(fuse_session_exited(s), 0);
	fuse_remove_signal_handlers(s);
	ck_assert(handler_of(SIGTERM) == SIG_DFL);
	ck_assert(handler_of(SIGINT) == SIG_DFL);
	ck_assert(handler_of(SIGPIPE) == SIG_DFL);
	ck_assert(handler_of(SIGHUP) == SIG_IGN);
	fuse_session_destroy(s);
}
END_TEST

/* in the foreground too, libfuse leaves the directory it was started in */
START_TEST(test_versions_and_foreground)
{
	char cwd[PATH_MAX];

	ck_assert_int_eq(fuse_version(), 314);
	ck_assert_int_eq(strncmp(fuse_pkgversion(), "3.14", 4), 0);
	ck_assert_int_eq(chdir("/tmp"), 0);
	ck_assert_int_eq(fuse_daemonize(1), 0);
	ck_assert_ptr_nonnull(getcwd(cwd, sizeof(cwd)));
	ck_assert_str_eq(cwd, "/");
}
END_TEST

/* the loop's configuration: libfuse's defaults, the setters, and the
 * pre-3.12 structure converted */
START_TEST(test_loop_config)
{
	struct fuse_loop_config *c = fuse_loop_cfg_create();
	struct fuse_loop_config_v1 v1 = { .clone_fd = 1, .max_idle_threads = 4 };

	ck_assert_ptr_nonnull(c);
#ifndef RF_AGAINST_DEBIAN
	ck_assert_uint_eq(c->max_threads, 10);
	ck_assert_uint_eq(c->max_idle_threads, UINT_MAX);
#endif
	fuse_loop_cfg_set_max_threads(c, 3);
	fuse_loop_cfg_set_idle_threads(c, 2);
	fuse_loop_cfg_set_clone_fd(c, 0);
#ifndef RF_AGAINST_DEBIAN
	ck_assert_uint_eq(c->max_threads, 3);
	ck_assert_uint_eq(c->max_idle_threads, 2);
#endif
	fuse_loop_cfg_convert(c, &v1);
#ifndef RF_AGAINST_DEBIAN
	ck_assert_uint_eq(c->max_idle_threads, 4);
	ck_assert_int_eq(c->clone_fd, 1);
	ck_assert_uint_eq(c->max_threads, 3);
#endif
	fuse_loop_cfg_destroy(c);
}
END_TEST

/* A session's options: libfuse's own and the mount's are taken, anything
 * else refused with libfuse's words; ringfence's library says that the
 * mount's are the policy's. */
START_TEST(test_session_options)
{
	static const struct fuse_lowlevel_ops ops = { 0 };
	char *bad[] = { "prog", "-o", "bogus,-x", NULL };
	char *mount[] = { "prog", "-o", "allow_other,fsname=img,ro", "-d", NULL };
	struct fuse_args a = FUSE_ARGS_INIT(3, bad);
	struct fuse_session *se;

	fuse_set_log_func(capture);
	ck_assert_ptr_null(fuse_session_new(&a, &ops, sizeof(ops), NULL));
	ck_assert_str_eq(logged.text, "fuse: unknown option(s): `-o bogus,-x'\n");
	ck_assert_int_eq(logged.level, FUSE_LOG_ERR);
	fuse_opt_free_args(&a);
	a = (struct fuse_args)FUSE_ARGS_INIT(4, mount);
	logged.n = 0;
	se = fuse_session_new(&a, &ops, sizeof(ops), NULL);
	ck_assert_ptr_nonnull(se);
#ifndef RF_AGAINST_DEBIAN
	ck_assert_int_eq(logged.n, 2); /* allow_other and ro; a name without a word */
	ck_assert_str_eq(logged.text, "fuse: mount option `ro' ignored: the tenant's policy says "
				      "how ringfence mounts (ringfence.policy(5))\n");
	ck_assert_int_eq(logged.level, FUSE_LOG_INFO);
#endif
	fuse_session_destroy(se);
	fuse_opt_free_args(&a);
	fuse_set_log_func(NULL);
}
END_TEST

#ifndef RF_AGAINST_DEBIAN
/* the plugin host stays the process the keeper started: no fork */
START_TEST(test_daemonize_stays)
{
	char cwd[PATH_MAX];
	pid_t me = getpid();

	ck_assert_int_eq(chdir("/tmp"), 0);
	ck_assert_int_eq(fuse_daemonize(0), 0);
	ck_assert_int_eq(getpid(), me);
	ck_assert_ptr_nonnull(getcwd(cwd, sizeof(cwd)));
	ck_assert_str_eq(cwd, "/");
}
END_TEST
#endif

#ifndef RF_AGAINST_DEBIAN
/* ---- the bridge: a program's operations and answers as a plugin's ----
 * This binary stands in for the plugin host: its rf_* (the plugin ABI,
 * under the soname libfuse3.so.3 asks for) record what they are told. */
struct rf_req {
	void *userdata;
};

static struct {
	char what[32];
	int err;
	uint64_t ino, fh, a;
	uint32_t flags;
	double timeout;
	struct stat st;
	char data[256];
	size_t len;
	int fd;
	int nadd;
	char names[4][16];
	uint64_t inos[4];
	off_t offs[4];
	mode_t modes[4];
	char log[256];
	int backing; /* rf_req_backing's, or 0 */
} got;

static void record(const char *what)
{
	snprintf(got.what, sizeof(got.what), "%s", what);
}

void rf_log(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(got.log, sizeof(got.log), fmt, ap);
	va_end(ap);
}

const struct rf_req_ctx *rf_req_ctx(const struct rf_req *req)
{
	static const struct rf_req_ctx c = { .uid = 1000, .gid = 100, .pid = 42, .umask = 022 };

	(void)req;
	return &c;
}

void *rf_req_userdata(const struct rf_req *req)
{
	return req->userdata;
}

int rf_req_interrupted(const struct rf_req *req)
{
	(void)req;
	return 1;
}

void rf_reply_err(struct rf_req *req, int err)
{
	(void)req;
	record("err");
	got.err = err;
}

void rf_reply_ok(struct rf_req *req)
{
	(void)req;
	record("ok");
}

void rf_reply_entry(struct rf_req *req, const struct rf_entry *e)
{
	(void)req;
	record("entry");
	got.ino = e->ino;
	got.st = e->attr;
	got.timeout = e->entry_timeout;
}

void rf_reply_create(struct rf_req *req, const struct rf_entry *e, uint64_t fh, uint32_t open_flags)
{
	(void)req;
	record("create");
	got.ino = e->ino;
	got.fh = fh;
	got.flags = open_flags;
}

void rf_reply_attr(struct rf_req *req, const struct stat *st, double timeout)
{
	(void)req;
	record("attr");
	got.st = *st;
	got.timeout = timeout;
}

void rf_req_backing(struct rf_req *req, int fd)
{
	(void)req;
	got.backing = fd;
}

void rf_reply_open(struct rf_req *req, uint64_t fh, uint32_t open_flags)
{
	(void)req;
	record("open");
	got.fh = fh;
	got.flags = open_flags;
}

void rf_reply_readlink(struct rf_req *req, const char *target)
{
	(void)req;
	record("readlink");
	snprintf(got.data, sizeof(got.data), "%s", target);
}

void rf_reply_statfs(struct rf_req *req, const struct statvfs *st)
{
	(void)req;
	record("statfs");
	got.a = st->f_bsize;
}

void rf_reply_data(struct rf_req *req, const void *buf, size_t len)
{
	(void)req;
	record("data");
	got.len = len < sizeof(got.data) ? len : sizeof(got.data);
	memcpy(got.data, buf, got.len);
}

void rf_reply_data_fd(struct rf_req *req, int fd, off_t off, size_t len)
{
	(void)req;
	record("data_fd");
	got.fd = fd;
	got.a = (uint64_t)off;
	got.len = len;
}

void rf_reply_write(struct rf_req *req, size_t written)
{
	(void)req;
	record("write");
	got.len = written;
}

void rf_reply_xattr_size(struct rf_req *req, size_t size)
{
	(void)req;
	record("xattr_size");
	got.len = size;
}

void rf_reply_lseek(struct rf_req *req, off_t off)
{
	(void)req;
	record("lseek");
	got.a = (uint64_t)off;
}

static void added(const char *name, uint64_t ino, mode_t mode, off_t next_off)
{
	if (got.nadd < 4) {
		snprintf(got.names[got.nadd], sizeof(got.names[0]), "%s", name);
		got.inos[got.nadd] = ino;
		got.modes[got.nadd] = mode;
		got.offs[got.nadd] = next_off;
	}
	got.nadd++;
}

int rf_dirbuf_add(struct rf_req *req, const char *name, const struct stat *st, off_t next_off)
{
	(void)req;
	added(name, st->st_ino, st->st_mode, next_off);
	return 0;
}

int rf_dirbuf_add_plus(struct rf_req *req, const char *name, const struct rf_entry *e,
		       off_t next_off)
{
	(void)req;
	added(name, e->ino, e->attr.st_mode, next_off);
	got.timeout = e->attr_timeout;
	got.st = e->attr;
	return 0;
}

void rf_reply_dirbuf(struct rf_req *req)
{
	(void)req;
	record("dirbuf");
}

/* ---- a program against <fuse_lowlevel.h> ---- */
static int program_data = 7;
static unsigned int init_max_write;
static uint64_t forgotten;

#ifdef RF_LIBFUSE_ABI4
static int init_passthrough; /* what fuse_set_feature_flag() said */
#endif

static void p_init(void *userdata, struct fuse_conn_info *conn)
{
	ck_assert_ptr_eq(userdata, &program_data);
	init_max_write = conn->max_write;
#ifdef RF_LIBFUSE_ABI4
	/* libfuse 3.17's flags: ringfence offers passthrough, nothing else */
	ck_assert(!fuse_set_feature_flag(conn, FUSE_CAP_WRITEBACK_CACHE));
	ck_assert(!fuse_get_feature_flag(conn, FUSE_CAP_WRITEBACK_CACHE));
	init_passthrough = fuse_set_feature_flag(conn, LL_CAP_PASSTHROUGH);
	ck_assert(fuse_get_feature_flag(conn, LL_CAP_PASSTHROUGH));
	fuse_unset_feature_flag(conn, LL_CAP_PASSTHROUGH);
	ck_assert(!fuse_get_feature_flag(conn, LL_CAP_PASSTHROUGH));
	ck_assert(fuse_set_feature_flag(conn, LL_CAP_PASSTHROUGH));
#endif
}

static void p_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fuse_entry_param e = { .ino = parent + 10, .attr_timeout = 1, .entry_timeout = 2 };

	ck_assert_ptr_eq(fuse_req_userdata(req), &program_data);
	ck_assert_uint_eq(fuse_req_ctx(req)->uid, 1000);
	if (strcmp(name, "wrong") == 0) {
		fuse_reply_attr(req, &e.attr, 1);
		return;
	}
	if (strcmp(name, "ioctl") == 0) {
		fuse_reply_ioctl(req, 0, NULL, 0);
		return;
	}
	e.attr.st_mode = S_IFREG | 0640;
	e.attr.st_ino = e.ino;
	fuse_reply_entry(req, &e);
}

static void p_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	forgotten += ino * nlookup;
	if (ino == 77) {
		struct fuse_entry_param e = { .ino = 77 };

		fuse_reply_entry(req, &e); /* a forget takes none */
		return;
	}
	fuse_reply_none(req);
}

static int data_fd = -1;

static void p_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
#ifdef RF_LIBFUSE_ABI4
	/* a passthrough file (libfuse 3.17): its id in fi->backing_id, at
	 * its offset in a libfuse 3.17 program's struct fuse_file_info */
	if (ino >= 90) {
		int32_t id = ino == 90 ? fuse_passthrough_open(req, data_fd) : 12345;

		ck_assert_int_gt(id, 0);
		memcpy((char *)fi + LL_FI_BACKING_ID, &id, sizeof(id));
		fi->fh = (uint64_t)id;
		fuse_reply_open(req, fi);
		return;
	}
#endif
	ck_assert_int_eq(fi->flags, O_RDWR);
	fi->fh = ino * 2;
	fi->direct_io = 1;
	fi->noflush = 1;
	fuse_reply_open(req, fi);
}

static void p_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		   struct fuse_file_info *fi)
{
	struct fuse_bufvec bv = FUSE_BUFVEC_INIT(size);

	(void)ino;
	if (fi->fh == 1) {
		fuse_reply_buf(req, "hello", 5);
		return;
	}
	bv.buf[0].flags = FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK;
	bv.buf[0].fd = data_fd;
	bv.buf[0].pos = off;
	fuse_reply_data(req, &bv, FUSE_BUF_SPLICE_MOVE);
}

static void p_write_buf(fuse_req_t req, fuse_ino_t ino, struct fuse_bufvec *in, off_t off,
			struct fuse_file_info *fi)
{
	struct fuse_bufvec out = FUSE_BUFVEC_INIT(fuse_buf_size(in));
	ssize_t n;

	(void)ino;
	(void)fi;
	out.buf[0].flags = FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK;
	out.buf[0].fd = data_fd;
	out.buf[0].pos = off;
	n = fuse_buf_copy(&out, in, 0);
	if (n < 0)
		fuse_reply_err(req, (int)-n);
	else
		fuse_reply_write(req, (size_t)n);
}

static void p_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		      struct fuse_file_info *fi)
{
	struct stat st = { .st_ino = 5, .st_mode = S_IFDIR };
	char buf[128];
	size_t n;

	(void)ino;
	(void)off;
	(void)fi;
	ck_assert_uint_ge(size, sizeof(buf));
	n = fuse_add_direntry(req, buf, sizeof(buf), ".", &st, 1);
	st.st_ino = 6;
	st.st_mode = S_IFLNK;
	n += fuse_add_direntry(req, buf + n, sizeof(buf) - n, "link", &st, 2);
	fuse_reply_buf(req, buf, n);
}

static void p_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
			  struct fuse_file_info *fi)
{
	struct fuse_entry_param e = { .ino = 9, .attr_timeout = 1.5 };
	char buf[256];

	(void)ino;
	(void)size;
	(void)off;
	(void)fi;
	e.attr.st_ino = 9;
	e.attr.st_mode = S_IFREG | 0600;
	e.attr.st_size = 12345;
	fuse_reply_buf(req, buf, fuse_add_direntry_plus(req, buf, sizeof(buf), "f", &e, 3));
}

static const struct fuse_lowlevel_ops program = {
	.init = p_init,
	.lookup = p_lookup,
	.forget = p_forget,
	.open = p_open,
	.read = p_read,
	.write_buf = p_write_buf,
	.readdir = p_readdir,
	.readdirplus = p_readdirplus,
};

static struct fuse_session *se;
static const struct rf_plugin *plug;
static struct rf_req rq;

static void bridge_setup(void)
{
	char *argv[] = { "prog", NULL };
	struct fuse_args args = FUSE_ARGS_INIT(1, argv);
	struct rf_init_args ia = { .max_write = 131072 };
	void *ud = NULL;

	memset(&got, 0, sizeof(got));
	se = fuse_session_new(&args, &program, sizeof(program), &program_data);
	ck_assert_ptr_nonnull(se);
	/* parsed in place, as libfuse does: the program frees them */
	fuse_opt_free_args(&args);
	plug = rf_libfuse_plugin(se);
	ck_assert_ptr_nonnull(plug);
	ck_assert_int_eq(plug->init(&ia, &ud), 0);
	ck_assert_ptr_eq(ud, se);
	ck_assert_uint_eq(init_max_write, 131072);
	rq.userdata = ud;
}

static void bridge_teardown(void)
{
	fuse_session_destroy(se);
}

START_TEST(test_bridge_entry_and_wrong_answer)
{
	plug->lookup(&rq, 1, "a");
	ck_assert_str_eq(got.what, "entry");
	ck_assert_uint_eq(got.ino, 11);
	ck_assert_uint_eq(got.st.st_mode, S_IFREG | 0640);
	ck_assert(got.timeout == 2.0);
	/* an answer of the wrong kind: EIO, said in the log */
	plug->lookup(&rq, 1, "wrong");
	ck_assert_str_eq(got.what, "err");
	ck_assert_int_eq(got.err, EIO);
	ck_assert_ptr_nonnull(strstr(got.log, "attributes"));
	/* the answer of an operation ringfence never calls is wrong anywhere */
	memset(&got, 0, sizeof(got));
	plug->lookup(&rq, 1, "ioctl");
	ck_assert_str_eq(got.what, "err");
	ck_assert_int_eq(got.err, EIO);
	ck_assert_ptr_nonnull(strstr(got.log, "ioctl"));
	/* what the program has no operation for: ENOSYS; but as libfuse
	 * does, opendir and releasedir succeed and statfs has a default */
	plug->mkdir(&rq, 1, "d", 0755);
	ck_assert_str_eq(got.what, "err");
	ck_assert_int_eq(got.err, ENOSYS);
	plug->opendir(&rq, 1, O_RDONLY);
	ck_assert_str_eq(got.what, "open");
	ck_assert_uint_eq(got.fh, 0);
	plug->releasedir(&rq, 1, 0);
	ck_assert_str_eq(got.what, "ok");
	plug->statfs(&rq, 1);
	ck_assert_str_eq(got.what, "statfs");
	ck_assert_uint_eq(got.a, 512);
}
END_TEST

START_TEST(test_bridge_forget_open_read_write)
{
	char path[] = "/tmp/check_libfuse.XXXXXX";
	char back[6] = { 0 };

	plug->forget(se, 3, 4);
	ck_assert_uint_eq(forgotten, 12);
	/* an answer to a forget: nothing sent, a word */
	plug->forget(se, 77, 1);
	ck_assert_uint_eq(forgotten, 12 + 77);
	ck_assert_ptr_nonnull(strstr(got.log, "for a forget"));
	plug->open(&rq, 4, O_RDWR);
	ck_assert_str_eq(got.what, "open");
	ck_assert_uint_eq(got.fh, 8);
	ck_assert_uint_eq(got.flags, RF_OPEN_DIRECT_IO | RF_OPEN_NOFLUSH);
	plug->read(&rq, 4, 1, 0, 100);
	ck_assert_str_eq(got.what, "data");
	ck_assert_uint_eq(got.len, 5);
	ck_assert_int_eq(memcmp(got.data, "hello", 5), 0);
	/* one file at an offset: ringfence reads it */
	data_fd = mkstemp(path);
	ck_assert_int_ge(data_fd, 0);
	unlink(path);
	plug->read(&rq, 4, 2, 4096, 100);
	ck_assert_str_eq(got.what, "data_fd");
	ck_assert_int_eq(got.fd, data_fd);
	ck_assert_uint_eq(got.a, 4096);
	ck_assert_uint_eq(got.len, 100);
	/* a write through the program's write_buf: into its file */
	plug->write(&rq, 4, 2, 10, "world", 5);
	ck_assert_str_eq(got.what, "write");
	ck_assert_uint_eq(got.len, 5);
	ck_assert_int_eq(pread(data_fd, back, 5, 10), 5);
	ck_assert_str_eq(back, "world");
	close(data_fd);
	data_fd = -1;
}
END_TEST

#ifdef RF_LIBFUSE_ABI4
/* fuse_passthrough_open(): ringfence moves the file's data (the file is
 * handed on with the open reply); the id is the library's copy until
 * fuse_passthrough_close() */
START_TEST(test_bridge_passthrough)
{
	char path[] = "/tmp/check_libfuse.XXXXXX";
	struct stat a, b;

	ck_assert(init_passthrough);
	data_fd = mkstemp(path);
	ck_assert_int_ge(data_fd, 0);
	unlink(path);
	plug->open(&rq, 90, O_RDWR);
	ck_assert_str_eq(got.what, "open");
	ck_assert_int_gt(got.backing, 0);
	ck_assert_int_ne(got.backing, data_fd); /* the library's own copy */
	ck_assert_int_eq(fstat(got.backing, &a), 0);
	ck_assert_int_eq(fstat(data_fd, &b), 0);
	ck_assert_uint_eq(a.st_ino, b.st_ino);
	close(data_fd);
	data_fd = -1;
	ck_assert_int_eq(fcntl(got.backing, F_GETFD), FD_CLOEXEC); /* still open */
	ck_assert_int_eq(fuse_passthrough_close(NULL, (int)got.fh), 0);
	ck_assert_int_eq(fcntl(got.backing, F_GETFD), -1);
	ck_assert_int_eq(fuse_passthrough_close(NULL, (int)got.fh), -1);
	ck_assert_int_eq(errno, EINVAL);
	/* an id the library never gave: the open fails */
	memset(&got, 0, sizeof(got));
	plug->open(&rq, 91, O_RDWR);
	ck_assert_str_eq(got.what, "err");
	ck_assert_int_eq(got.err, EIO);
	ck_assert_int_eq(got.backing, 0);
}
END_TEST

/* a vector of two buffers as a libfuse 3.17 program lays it out: each
 * struct fuse_buf 48 bytes (mem_size at its end) */
START_TEST(test_buf_stride)
{
	struct {
		struct fuse_bufvec v;
		size_t mem_size0;
		struct fuse_buf b1;
		size_t mem_size1;
	} src = { .v = FUSE_BUFVEC_INIT(3) };
	char out[8] = { 0 };
	struct ll_bufvec1 dst = { .v = FUSE_BUFVEC_INIT(sizeof(out)) };

	static_assert(offsetof(__typeof__(src), b1) == offsetof(struct fuse_bufvec, buf) + 48,
		      "not libfuse 3.17's stride");
	src.v.count = 2;
	src.v.buf[0].mem = "abc";
	src.b1.size = 4;
	src.b1.mem = "defg";
	src.b1.fd = -1;
	ck_assert_uint_eq(fuse_buf_size(&src.v), 7);
	dst.v.buf[0].mem = out;
	ck_assert_int_eq(fuse_buf_copy(&dst.v, &src.v, 0), 7);
	ck_assert_str_eq(out, "abcdefg");
}
END_TEST
#endif

/* no notification reaches the kernel but through the keeper: ENOSYS, the
 * function named in the log once */
START_TEST(test_bridge_notify_unsupported)
{
	ck_assert_int_eq(fuse_lowlevel_notify_inval_inode(se, 2, 0, 0), -ENOSYS);
	ck_assert_ptr_nonnull(strstr(got.log, "fuse_lowlevel_notify_inval_inode"));
	got.log[0] = '\0';
	ck_assert_int_eq(fuse_lowlevel_notify_inval_inode(se, 2, 0, 0), -ENOSYS);
	ck_assert_str_eq(got.log, "");
	ck_assert_int_eq(fuse_lowlevel_notify_inval_entry(se, 1, "a", 1), -ENOSYS);
	ck_assert_ptr_nonnull(strstr(got.log, "fuse_lowlevel_notify_inval_entry"));
	ck_assert_int_eq(fuse_lowlevel_notify_delete(se, 1, 2, "a", 1), -ENOSYS);
	ck_assert_int_eq(fuse_lowlevel_notify_store(se, 2, 0, NULL, 0), -ENOSYS);
	ck_assert_int_eq(fuse_lowlevel_notify_retrieve(se, 2, 10, 0, NULL), -ENOSYS);
	ck_assert_int_eq(fuse_lowlevel_notify_poll(NULL), -ENOSYS);
}
END_TEST

/* the program's buffer of entries, read back into ringfence's listing */
START_TEST(test_bridge_listings)
{
	plug->readdir(&rq, 1, 0, 0, 4096);
	ck_assert_str_eq(got.what, "dirbuf");
	ck_assert_int_eq(got.nadd, 2);
	ck_assert_str_eq(got.names[0], ".");
	ck_assert_uint_eq(got.inos[0], 5);
	ck_assert_uint_eq(got.modes[0], S_IFDIR);
	ck_assert_int_eq(got.offs[0], 1);
	ck_assert_str_eq(got.names[1], "link");
	ck_assert_uint_eq(got.modes[1], S_IFLNK);
	ck_assert_int_eq(got.offs[1], 2);
	got.nadd = 0;
	ck_assert_ptr_nonnull(plug->readdirplus);
	plug->readdirplus(&rq, 1, 0, 0, 4096);
	ck_assert_str_eq(got.what, "dirbuf");
	ck_assert_int_eq(got.nadd, 1);
	ck_assert_str_eq(got.names[0], "f");
	ck_assert_uint_eq(got.inos[0], 9);
	ck_assert_uint_eq(got.st.st_size, 12345);
	ck_assert(got.timeout == 1.5);
	/* a listing whose entry runs past the buffer ends before it */
	{
		char buf[64];
		struct stat st = { .st_ino = 1, .st_mode = S_IFREG };
		size_t n = fuse_add_direntry(NULL, buf, sizeof(buf), "abc", &st, 1);
		struct fuse_req *req = calloc(1, sizeof(*req));

		req->r = &rq;
		req->se = se;
		req->kind = LL_DIR;
		got.nadd = 0;
		fuse_reply_buf(req, buf, n - 4);
		ck_assert_int_eq(got.nadd, 0);
		ck_assert_str_eq(got.what, "dirbuf");
	}
}
END_TEST

START_TEST(test_buf_copy)
{
	char path[] = "/tmp/check_libfuse.XXXXXX";
	int fd = mkstemp(path);
	char in[10] = "0123456789", out[10];
	struct fuse_bufvec src = FUSE_BUFVEC_INIT(10), dst = FUSE_BUFVEC_INIT(10);

	ck_assert_int_ge(fd, 0);
	unlink(path);
	src.buf[0].mem = in;
	dst.buf[0].flags = FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK;
	dst.buf[0].fd = fd;
	dst.buf[0].pos = 100;
	ck_assert_int_eq(fuse_buf_copy(&dst, &src, 0), 10);
	src = (struct fuse_bufvec)FUSE_BUFVEC_INIT(10);
	src.buf[0].flags = FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK;
	src.buf[0].fd = fd;
	src.buf[0].pos = 102;
	dst = (struct fuse_bufvec)FUSE_BUFVEC_INIT(10);
	dst.buf[0].mem = out;
	ck_assert_int_eq(fuse_buf_copy(&dst, &src, 0), 8); /* the file ends */
	ck_assert_int_eq(memcmp(out, "23456789", 8), 0);
	ck_assert_uint_eq(fuse_buf_size(&src), 10);
	close(fd);
}
END_TEST

/* ---- a program against <fuse.h>: paths, not node ids ---- */
static struct {
	char calls[24][96]; /* "op path ..." */
	int n;
	int readdirs;
} hl;

static void hl_call(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(hl.calls[hl.n % 24], sizeof(hl.calls[0]), fmt, ap);
	va_end(ap);
	hl.n++;
}

/* the program was called so: a call that begins with @want */
static int hl_had(const char *want)
{
	for (int i = 0; i < hl.n && i < 24; i++)
		if (strncmp(hl.calls[i], want, strlen(want)) == 0)
			return 1;
	return 0;
}

static const char *hl_last(void)
{
	return hl.calls[(hl.n - 1) % 24];
}

static int h_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
	(void)fi;
	/* what init returned is the program's context */
	ck_assert_ptr_eq(fuse_get_context()->private_data, &hl);
	ck_assert_uint_eq(fuse_get_context()->uid, 1000);
	hl_call("getattr %s", path);
	if (!strcmp(path, "/") || !strcmp(path, "/dir") || !strcmp(path, "/dir2") ||
	    !strcmp(path, "/seek")) {
		st->st_mode = S_IFDIR | 0755;
		return 0;
	}
	if (!strcmp(path, "/hello") || !strcmp(path, "/new") || !strcmp(path, "/dir/f1") ||
	    !strncmp(path, "/.fuse_hidden", 13)) {
		st->st_mode = S_IFREG | 0644;
		st->st_size = 12;
		st->st_ino = 4242; /* not the kernel's: use_ino is off */
		return 0;
	}
	if (!strcmp(path, "/link")) {
		st->st_mode = S_IFLNK | 0777;
		return 0;
	}
	return -ENOENT;
}

static int h_readlink(const char *path, char *buf, size_t size)
{
	(void)path;
	snprintf(buf, size, "hello");
	return 0;
}

static int h_open(const char *path, struct fuse_file_info *fi)
{
	hl_call("open %s", path);
	fi->fh = 77;
	return 0;
}

static int h_read(const char *path, char *buf, size_t size, off_t off, struct fuse_file_info *fi)
{
	const char *text = "hello world\n";
	size_t n;

	(void)path;
	ck_assert_uint_eq(fi->fh, 77);
	if (off >= 12)
		return 0;
	n = (size_t)(12 - off) < size ? (size_t)(12 - off) : size;
	memcpy(buf, text + off, n);
	return (int)n;
}

static int h_write(const char *path, const char *buf, size_t size, off_t off,
		   struct fuse_file_info *fi)
{
	ck_assert_uint_eq(fi->fh, 78);
	hl_call("write %s %.*s@%lld", path, (int)size, buf, (long long)off);
	return (int)size;
}

static int h_release(const char *path, struct fuse_file_info *fi)
{
	(void)fi;
	hl_call("release %s", path ? path : "(null)");
	return 0;
}

static int h_unlink(const char *path)
{
	hl_call("unlink %s", path);
	return 0;
}

static int h_rename(const char *from, const char *to, unsigned int flags)
{
	(void)flags;
	hl_call("rename %s %s", from, to);
	return 0;
}

static int h_chmod(const char *path, mode_t mode, struct fuse_file_info *fi)
{
	(void)fi;
	hl_call("chmod %s %o", path, mode & 07777);
	return 0;
}

static int h_truncate(const char *path, off_t size, struct fuse_file_info *fi)
{
	(void)fi;
	hl_call("truncate %s %lld", path, (long long)size);
	return 0;
}

static int h_create(const char *path, mode_t mode, struct fuse_file_info *fi)
{
	(void)mode;
	hl_call("create %s", path);
	fi->fh = 78;
	return 0;
}

/* /dir is listed whole, without offsets; /seek with them, from @off */
static int h_readdir(const char *path, void *buf, fuse_fill_dir_t fill, off_t off,
		     struct fuse_file_info *fi, enum fuse_readdir_flags flags)
{
	struct stat st = { .st_mode = S_IFREG };
	char name[16];

	(void)fi;
	(void)flags;
	hl.readdirs++;
	if (!strcmp(path, "/dir")) {
		for (int i = 0; i < 100; i++) {
			snprintf(name, sizeof(name), "f%d", i);
			fill(buf, name, NULL, 0, 0);
		}
		return 0;
	}
	for (int i = (int)off; i < 100; i++) {
		snprintf(name, sizeof(name), "s%d", i);
		if (fill(buf, name, &st, i + 1, 0))
			break;
	}
	return 0;
}

static void *h_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
	(void)conn;
	cfg->entry_timeout = 5;
	return &hl;
}

static const struct fuse_operations hl_program = {
	.init = h_init,
	.getattr = h_getattr,
	.readlink = h_readlink,
	.open = h_open,
	.read = h_read,
	.write = h_write,
	.release = h_release,
	.unlink = h_unlink,
	.rename = h_rename,
	.chmod = h_chmod,
	.truncate = h_truncate,
	.create = h_create,
	.readdir = h_readdir,
};

static struct fuse *hlf;

static void hl_setup(void)
{
	char *argv[] = { "prog", "-o", "attr_timeout=3", NULL };
	struct fuse_args args = FUSE_ARGS_INIT(3, argv);
	struct rf_init_args ia = { .max_write = 131072 };
	void *ud = NULL;

	memset(&got, 0, sizeof(got));
	memset(&hl, 0, sizeof(hl));
	hlf = fuse_new(&args, &hl_program, sizeof(hl_program), NULL);
	ck_assert_ptr_nonnull(hlf);
	/* the high-level options are taken out, the rest left */
	ck_assert_int_eq(args.argc, 1);
	fuse_opt_free_args(&args);
	plug = rf_libfuse_plugin(fuse_get_session(hlf));
	ck_assert_ptr_nonnull(plug);
	ck_assert_int_eq(plug->init(&ia, &ud), 0);
	rq.userdata = ud;
}

static void hl_teardown(void)
{
	fuse_destroy(hlf);
}

/* a lookup is the program's getattr of the path; the node id is the
 * library's own */
static uint64_t hl_lookup(uint64_t parent, const char *name)
{
	plug->lookup(&rq, parent, name);
	ck_assert_str_eq(got.what, "entry");
	return got.ino;
}

START_TEST(test_hl_lookup_getattr_read)
{
	uint64_t h = hl_lookup(1, "hello"), d, c;

	ck_assert_uint_gt(h, 1);
	ck_assert_uint_eq(got.st.st_mode, S_IFREG | 0644);
	ck_assert_uint_eq(got.st.st_ino, h);
	ck_assert(got.timeout == 5.0); /* init's config */
	ck_assert_str_eq(hl_last(), "getattr /hello");
	plug->getattr(&rq, h, RF_NO_FH);
	ck_assert_str_eq(got.what, "attr");
	ck_assert_uint_eq(got.st.st_size, 12);
	ck_assert(got.timeout == 3.0); /* -o attr_timeout */
	plug->lookup(&rq, 1, "missing");
	ck_assert_str_eq(got.what, "err");
	ck_assert_int_eq(got.err, ENOENT);
	plug->open(&rq, h, O_RDONLY);
	ck_assert_str_eq(got.what, "open");
	ck_assert_uint_eq(got.fh, 77);
	plug->read(&rq, h, 77, 6, 100);
	ck_assert_str_eq(got.what, "data");
	ck_assert_uint_eq(got.len, 6);
	ck_assert_int_eq(memcmp(got.data, "world\n", 6), 0);
	plug->readlink(&rq, hl_lookup(1, "link"));
	ck_assert_str_eq(got.what, "readlink");
	ck_assert_str_eq(got.data, "hello");
	/* the same name is the same node */
	ck_assert_uint_eq(hl_lookup(1, "hello"), h);
	/* a directory the kernel forgot stays while a node in it does */
	d = hl_lookup(1, "dir");
	c = hl_lookup(d, "f1");
	plug->forget(rq.userdata, d, 1);
	plug->getattr(&rq, c, RF_NO_FH);
	ck_assert_str_eq(got.what, "attr");
	ck_assert_str_eq(hl_last(), "getattr /dir/f1");
	plug->forget(rq.userdata, c, 1);
	plug->getattr(&rq, d, RF_NO_FH);
	ck_assert_str_eq(got.what, "err");
	ck_assert_int_eq(got.err, ESTALE);
	/* one the kernel forgot and nobody holds open is gone */
	plug->forget(rq.userdata, hl_lookup(1, "link"), 2);
	plug->getattr(&rq, got.ino, RF_NO_FH);
	ck_assert_str_eq(got.what, "err");
	ck_assert_int_eq(got.err, ESTALE);
}
END_TEST

START_TEST(test_hl_listings)
{
	uint64_t d = hl_lookup(1, "dir"), s = hl_lookup(1, "seek"), fh;

	/* without offsets: taken whole at the first READDIR, served after */
	plug->opendir(&rq, d, O_RDONLY);
	fh = got.fh;
	got.nadd = 0;
	plug->readdir(&rq, d, fh, 0, 1024);
	ck_assert_str_eq(got.what, "dirbuf");
	ck_assert_int_eq(got.nadd, 32); /* 32 bytes an entry */
	ck_assert_str_eq(got.names[0], "f0");
	ck_assert_int_eq(got.offs[0], 1);
	got.nadd = 0;
	plug->readdir(&rq, d, fh, 96, 1024);
	ck_assert_int_eq(got.nadd, 4);
	ck_assert_str_eq(got.names[3], "f99");
	ck_assert_int_eq(got.offs[3], 100);
	got.nadd = 0;
	plug->readdir(&rq, d, fh, 100, 1024);
	ck_assert_int_eq(got.nadd, 0);
	ck_assert_int_eq(hl.readdirs, 1);
	plug->releasedir(&rq, d, fh);
	ck_assert_str_eq(got.what, "ok");
	/* with offsets: the program is asked from each one */
	plug->opendir(&rq, s, O_RDONLY);
	fh = got.fh;
	got.nadd = 0;
	plug->readdir(&rq, s, fh, 50, 1024);
	ck_assert_int_eq(got.nadd, 32);
	ck_assert_str_eq(got.names[0], "s50");
	ck_assert_int_eq(got.offs[0], 51);
	ck_assert_uint_eq(got.modes[0], S_IFREG);
	ck_assert_int_eq(hl.readdirs, 2);
	plug->releasedir(&rq, s, fh);
}
END_TEST

START_TEST(test_hl_changes)
{
	uint64_t h = hl_lookup(1, "hello"), d = hl_lookup(1, "dir"), n, l;
	struct rf_setattr sa = { .valid = RF_SET_MODE | RF_SET_SIZE,
				 .mode = S_IFREG | 0600,
				 .size = 5,
				 .fh = RF_NO_FH };

	/* removed while open: hidden, and removed at its last release */
	plug->open(&rq, h, O_RDONLY);
	plug->unlink(&rq, 1, "hello");
	ck_assert_str_eq(got.what, "ok");
	ck_assert(hl_had("rename /hello /.fuse_hidden"));
	ck_assert(!hl_had("unlink"));
	plug->getattr(&rq, h, RF_NO_FH);
	ck_assert_str_eq(got.what, "attr");
	ck_assert(strncmp(hl_last(), "getattr /.fuse_hidden", 21) == 0);
	plug->release(&rq, h, 77, 0);
	ck_assert_str_eq(got.what, "ok");
	ck_assert(hl_had("release /.fuse_hidden"));
	ck_assert(hl_had("unlink /.fuse_hidden"));
	/* a renamed node's path is its new one */
	plug->rename(&rq, 1, "dir", 1, "dir2", 0);
	ck_assert_str_eq(got.what, "ok");
	ck_assert(hl_had("rename /dir /dir2"));
	plug->getattr(&rq, d, RF_NO_FH);
	ck_assert_str_eq(hl_last(), "getattr /dir2");
	/* create, then attributes and a write by the program's operations */
	plug->create(&rq, 1, "new", S_IFREG | 0644, O_CREAT | O_WRONLY);
	ck_assert_str_eq(got.what, "create");
	ck_assert_uint_eq(got.fh, 78);
	n = got.ino;
	plug->setattr(&rq, n, &sa);
	ck_assert_str_eq(got.what, "attr");
	ck_assert(hl_had("chmod /new 600"));
	ck_assert(hl_had("truncate /new 5"));
	plug->write(&rq, n, 78, 3, "abc", 3);
	ck_assert_str_eq(got.what, "write");
	ck_assert_uint_eq(got.len, 3);
	ck_assert(hl_had("write /new abc@3"));
	/* a rename over a file open elsewhere hides that one first */
	plug->rename(&rq, 1, "dir2", 1, "new", 0);
	ck_assert_str_eq(got.what, "ok");
	ck_assert(hl_had("rename /new /.fuse_hidden"));
	ck_assert_str_eq(hl_last(), "rename /dir2 /new");
	/* an exchange swaps the two nodes' paths */
	l = hl_lookup(1, "link");
	plug->rename(&rq, 1, "link", 1, "new", RENAME_EXCHANGE);
	ck_assert_str_eq(got.what, "ok");
	plug->getattr(&rq, l, RF_NO_FH);
	ck_assert_str_eq(hl_last(), "getattr /new");
	plug->getattr(&rq, d, RF_NO_FH);
	ck_assert_str_eq(hl_last(), "getattr /link");
	/* the program has no mkdir: ENOSYS */
	plug->mkdir(&rq, 1, "d", 0755);
	ck_assert_str_eq(got.what, "err");
	ck_assert_int_eq(got.err, ENOSYS);
}
END_TEST
#endif

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
	tc = tcase_create("the process");
	tcase_add_test(tc, test_signal_handlers);
	tcase_add_test(tc, test_versions_and_foreground);
	tcase_add_test(tc, test_loop_config);
	tcase_add_test(tc, test_session_options);
#ifndef RF_AGAINST_DEBIAN
	tcase_add_test(tc, test_daemonize_stays);
#endif
	suite_add_tcase(s, tc);
	tc = tcase_create("directory entries");
	tcase_add_test(tc, test_direntry);
	tcase_add_test(tc, test_direntry_plus);
	suite_add_tcase(s, tc);
#ifndef RF_AGAINST_DEBIAN
	tc = tcase_create("the bridge to the plugin ABI");
	tcase_add_checked_fixture(tc, bridge_setup, bridge_teardown);
	tcase_add_test(tc, test_bridge_entry_and_wrong_answer);
	tcase_add_test(tc, test_bridge_forget_open_read_write);
	tcase_add_test(tc, test_bridge_notify_unsupported);
	tcase_add_test(tc, test_bridge_listings);
	tcase_add_test(tc, test_buf_copy);
#ifdef RF_LIBFUSE_ABI4
	tcase_add_test(tc, test_bridge_passthrough);
	tcase_add_test(tc, test_buf_stride);
#endif
	suite_add_tcase(s, tc);
	tc = tcase_create("the high-level API");
	tcase_add_checked_fixture(tc, hl_setup, hl_teardown);
	tcase_add_test(tc, test_hl_lookup_getattr_read);
	tcase_add_test(tc, test_hl_listings);
	tcase_add_test(tc, test_hl_changes);
	suite_add_tcase(s, tc);
#endif
	return s;
}

int main(void)
{
	return rf_check_run(opt_suite());
}
