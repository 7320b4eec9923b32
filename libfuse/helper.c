// SPDX-License-Identifier: MIT
/*
 * fuse_parse_cmdline: the options every libfuse program takes (-h, -V,
 * -d, -f, -s, clone_fd, max_idle_threads, max_threads) and its mount
 * point. Under ringfence the broker mounted already and the program runs
 * in a root of its own, where the mount point need not exist: it is taken
 * as written (libfuse makes it absolute with realpath(3)), for
 * fuse_session_mount, which mounts nothing, to accept.
 *
 * struct fuse_cmdline_opts grew max_threads in libfuse 3.12. A program
 * built against an older header has the shorter structure and calls
 * fuse_parse_cmdline@FUSE_3.0, which fills only that; one built since
 * calls fuse_parse_cmdline@@FUSE_3.12.
 */
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libfuse.h"

#define EXPORT __attribute__((visibility("default")))

#define SET(t, field)                                           \
	{                                                       \
		t, offsetof(struct fuse_cmdline_opts, field), 1 \
	}

/* each template that matches acts (fuse_opt_parse): "-d" sets debug and
 * foreground and stays in the arguments, for fuse_session_new to see */
static const struct fuse_opt cmdline_opts[] = {
	SET("-h", show_help),
	SET("--help", show_help),
	SET("-V", show_version),
	SET("--version", show_version),
	SET("-d", debug),
	SET("debug", debug),
	SET("-d", foreground),
	SET("debug", foreground),
	FUSE_OPT_KEY("-d", FUSE_OPT_KEY_KEEP),
	FUSE_OPT_KEY("debug", FUSE_OPT_KEY_KEEP),
	SET("-f", foreground),
	SET("-s", singlethread),
	SET("fsname=", nodefault_subtype),
	FUSE_OPT_KEY("fsname=", FUSE_OPT_KEY_KEEP),
	SET("subtype=", nodefault_subtype),
	FUSE_OPT_KEY("subtype=", FUSE_OPT_KEY_KEEP),
	SET("clone_fd", clone_fd),
	{ "max_idle_threads=%u", offsetof(struct fuse_cmdline_opts, max_idle_threads), 0 },
	{ "max_threads=%u", offsetof(struct fuse_cmdline_opts, max_threads), 0 },
	FUSE_OPT_END
};

static int cmdline_arg(void *data, const char *arg, int key, struct fuse_args *outargs)
{
	struct fuse_cmdline_opts *o = data;

	(void)outargs;
	if (key != FUSE_OPT_KEY_NONOPT)
		return 1; /* the file system's, kept for fuse_session_new */
	if (o->mountpoint) {
		fuse_log(FUSE_LOG_ERR, "fuse: invalid argument `%s'\n", arg);
		return -1;
	}
	o->mountpoint = strdup(arg);
	if (!o->mountpoint) {
		fuse_log(FUSE_LOG_ERR, "fuse: memory allocation failed\n");
		return -1;
	}
	return 0;
}

/* subtype=<the program's name>, unless fsname= or subtype= was given:
 * argv[0] after its last '/' (the '/' itself where it ends in one) */
static int default_subtype(struct fuse_args *args)
{
	const char *name = args->argv[0], *slash = strrchr(name, '/');
	char *opt;
	int r;

	if (slash && slash[1])
		name = slash + 1;
	else if (slash)
		name = slash;
	if (asprintf(&opt, "-osubtype=%s", name) < 0)
		return -1;
	r = fuse_opt_add_arg(args, opt);
	free(opt);
	return r;
}

static int parse(struct fuse_args *args, struct fuse_cmdline_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->max_idle_threads = UINT_MAX;
	o->max_threads = 10;
	if (fuse_opt_parse(args, o, cmdline_opts, cmdline_arg) < 0)
		return -1;
	if (!o->nodefault_subtype && args->argc > 0 && default_subtype(args) < 0)
		return -1;
	return 0;
}

/* not declared by a header built for versioned symbols, which names
 * only fuse_parse_cmdline: both are that name's versions too */
int fuse_parse_cmdline_312(struct fuse_args *args, struct fuse_cmdline_opts *opts);
int fuse_parse_cmdline_30(struct fuse_args *args, struct fuse_cmdline_opts *opts);

EXPORT int fuse_parse_cmdline_312(struct fuse_args *args, struct fuse_cmdline_opts *opts)
{
	return parse(args, opts);
}

/* the structure as libfuse 3.0 to 3.11 had it: up to max_idle_threads */
EXPORT int fuse_parse_cmdline_30(struct fuse_args *args, struct fuse_cmdline_opts *opts)
{
	struct fuse_cmdline_opts o;
	int r = parse(args, &o);

	memcpy(opts, &o, offsetof(struct fuse_cmdline_opts, max_threads));
	return r;
}

__asm__(".symver fuse_parse_cmdline_312, fuse_parse_cmdline@@FUSE_3.12");
__asm__(".symver fuse_parse_cmdline_30, fuse_parse_cmdline@FUSE_3.0");

EXPORT void fuse_cmdline_help(void)
{
	printf("    -h   --help            print help\n"
	       "    -V   --version         print version\n"
	       "    -d   -o debug          enable debug output (implies -f)\n"
	       "    -f                     foreground operation\n"
	       "    -s                     disable multi-threaded operation\n"
	       "    -o clone_fd            use separate fuse device fd for each thread\n"
	       "                           (may improve performance)\n"
	       "    -o max_idle_threads    the maximum number of idle worker threads\n"
	       "                           allowed (default: -1)\n"
	       "    -o max_threads         the maximum number of worker threads\n"
	       "                           allowed (default: 10)\n");
}

/* fuse.c: fuse_new@@FUSE_3.1 */
struct fuse *fuse_new_31(struct fuse_args *args, const struct fuse_operations *op, size_t op_size,
			 void *private_data);

/*
 * The high-level program's whole life, as libfuse's: its command line
 * (help and version answered here), its file system, mounted (a no-op:
 * the broker mounted), the signal handlers, the loop, and the same undone.
 * 0, 1 for an error, 2 without a mount point.
 */
EXPORT int fuse_main_real(int argc, char *argv[], const struct fuse_operations *op, size_t op_size,
			  void *user_data)
{
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	struct fuse_cmdline_opts opts;
	struct fuse *f;
	int res = 1;

	if (parse(&args, &opts) != 0)
		return 1;
	if (opts.show_version) {
		printf("FUSE library version %s\n", fuse_pkgversion());
		fuse_lowlevel_version();
		res = 0;
		goto out;
	}
	if (opts.show_help) {
		if (args.argv[0][0] != '\0')
			printf("usage: %s [options] <mountpoint>\n\n", args.argv[0]);
		printf("FUSE options:\n");
		fuse_cmdline_help();
		fuse_lib_help(&args);
		res = 0;
		goto out;
	}
	if (!opts.mountpoint) {
		fuse_log(FUSE_LOG_ERR, "error: no mountpoint specified\n");
		res = 2;
		goto out;
	}
	f = fuse_new_31(&args, op, op_size, user_data);
	if (!f)
		goto out;
	if (fuse_mount(f, opts.mountpoint) == 0) {
		if (fuse_daemonize(opts.foreground) == 0 &&
		    fuse_set_signal_handlers(fuse_get_session(f)) == 0) {
			res = fuse_loop(f) == 0 ? 0 : 1;
			fuse_remove_signal_handlers(fuse_get_session(f));
		}
		fuse_unmount(f);
	}
	fuse_destroy(f);
out:
	free(opts.mountpoint);
	fuse_opt_free_args(&args);
	return res;
}

/* libfuse 3.17's headers call this for fuse_main_real() */
EXPORT int fuse_main_real_versioned(int argc, char *argv[], const struct fuse_operations *op,
				    size_t op_size, struct libfuse_version *version,
				    void *user_data)
{
	(void)version;
	return fuse_main_real(argc, argv, op, op_size, user_data);
}
