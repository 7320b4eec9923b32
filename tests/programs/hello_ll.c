// SPDX-License-Identifier: MIT
/*
 * hello_ll: a read-only file system written against libfuse 3's low-level
 * API alone (<fuse_lowlevel.h>), as a libfuse program is, and linked with
 * Debian's libfuse3; ringfence runs it as a tenant's program.
 *
 *     hello_ll [-o greeting=TEXT] [-o files=N] [-o chatter=N] MOUNTPOINT
 *
 * The root holds "hello" (the greeting and a newline, mode 0444), "link"
 * (a symbolic link to hello) and "dir", a directory of N files named
 * f0 .. f(N-1) (default 3), each holding its own name and a newline.
 * With chatter=N, each read of hello first writes N lines to standard
 * error ("chatter 0" .. "chatter N-1"): a program that floods its log.
 * Its options are parsed by fuse_opt_parse, as libfuse programs do. Its
 * statfs reports the machine's free memory as its free space, from
 * sysinfo(2): a call beyond program.policy, for ringfence-plugin-check
 * --learn to find.
 */
#define FUSE_USE_VERSION 314
#include <errno.h>
#include <fcntl.h>
#include <fuse_lowlevel.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysinfo.h>
#include <unistd.h>

#define INO_ROOT 1
#define INO_HELLO 2
#define INO_LINK 3
#define INO_DIR 4
#define INO_FILE0 16 /* dir's files: INO_FILE0 + i */

static struct options {
	const char *greeting;
	unsigned int files;
	unsigned int chatter;
} opts = { NULL, 3, 0 };

static const struct fuse_opt option_spec[] = {
	{ "greeting=%s", offsetof(struct options, greeting), 1 },
	{ "files=%u", offsetof(struct options, files), 1 },
	{ "chatter=%u", offsetof(struct options, chatter), 1 },
	FUSE_OPT_END,
};

static char hello_text[256];

static int file_of(fuse_ino_t ino, unsigned int *i)
{
	if (ino < INO_FILE0 || ino - INO_FILE0 >= opts.files)
		return 0;
	*i = (unsigned int)(ino - INO_FILE0);
	return 1;
}

static int stat_of(fuse_ino_t ino, struct stat *st)
{
	unsigned int i;
	char name[32];

	memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	st->st_uid = getuid();
	st->st_gid = getgid();
	switch (ino) {
	case INO_ROOT:
	case INO_DIR:
		st->st_mode = S_IFDIR | 0755;
		st->st_nlink = 2;
		return 0;
	case INO_HELLO:
		st->st_mode = S_IFREG | 0444;
		st->st_nlink = 1;
		st->st_size = (off_t)strlen(hello_text);
		return 0;
	case INO_LINK:
		st->st_mode = S_IFLNK | 0777;
		st->st_nlink = 1;
		st->st_size = 5;
		return 0;
	}
	if (!file_of(ino, &i))
		return -1;
	st->st_mode = S_IFREG | 0644;
	st->st_nlink = 1;
	st->st_size = snprintf(name, sizeof(name), "f%u\n", i);
	return 0;
}

static void hl_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fuse_entry_param e;
	fuse_ino_t ino = 0;
	unsigned int i;
	char *end;

	if (parent == INO_ROOT) {
		ino = !strcmp(name, "hello")  ? INO_HELLO
		      : !strcmp(name, "link") ? INO_LINK
		      : !strcmp(name, "dir")  ? INO_DIR
					      : 0;
	} else if (parent == INO_DIR && name[0] == 'f' && name[1]) {
		i = (unsigned int)strtoul(name + 1, &end, 10);
		if (!*end && i < opts.files)
			ino = INO_FILE0 + i;
	}
	memset(&e, 0, sizeof(e));
	if (!ino || stat_of(ino, &e.attr) < 0) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	e.ino = ino;
	e.attr_timeout = 1.0;
	e.entry_timeout = 1.0;
	fuse_reply_entry(req, &e);
}

static void hl_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct stat st;

	(void)fi;
	if (stat_of(ino, &st) < 0)
		fuse_reply_err(req, ENOENT);
	else
		fuse_reply_attr(req, &st, 1.0);
}

static void hl_readlink(fuse_req_t req, fuse_ino_t ino)
{
	if (ino == INO_LINK)
		fuse_reply_readlink(req, "hello");
	else
		fuse_reply_err(req, EINVAL);
}

/* a directory's entries, all at once, then served by offset */
struct dirbuf {
	char *p;
	size_t size;
};

static void dirbuf_add(fuse_req_t req, struct dirbuf *b, const char *name, fuse_ino_t ino)
{
	struct stat st;
	size_t old = b->size;

	memset(&st, 0, sizeof(st));
	st.st_ino = ino;
	stat_of(ino, &st);
	b->size += fuse_add_direntry(req, NULL, 0, name, NULL, 0);
	b->p = realloc(b->p, b->size);
	if (!b->p)
		abort();
	fuse_add_direntry(req, b->p + old, b->size - old, name, &st, (off_t)b->size);
}

static void hl_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	struct dirbuf b = { NULL, 0 };
	char name[32];
	unsigned int i;

	(void)fi;
	if (ino != INO_ROOT && ino != INO_DIR) {
		fuse_reply_err(req, ENOTDIR);
		return;
	}
	dirbuf_add(req, &b, ".", ino);
	dirbuf_add(req, &b, "..", INO_ROOT);
	if (ino == INO_ROOT) {
		dirbuf_add(req, &b, "hello", INO_HELLO);
		dirbuf_add(req, &b, "link", INO_LINK);
		dirbuf_add(req, &b, "dir", INO_DIR);
	} else {
		for (i = 0; i < opts.files; i++) {
			snprintf(name, sizeof(name), "f%u", i);
			dirbuf_add(req, &b, name, INO_FILE0 + i);
		}
	}
	if ((size_t)off < b.size)
		fuse_reply_buf(req, b.p + off,
			       b.size - (size_t)off < size ? b.size - (size_t)off : size);
	else
		fuse_reply_buf(req, NULL, 0);
	free(b.p);
}

static void hl_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct stat st;

	if (stat_of(ino, &st) < 0 || !S_ISREG(st.st_mode))
		fuse_reply_err(req, EISDIR);
	else if ((fi->flags & O_ACCMODE) != O_RDONLY)
		fuse_reply_err(req, EACCES);
	else
		fuse_reply_open(req, fi);
}

static void hl_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	char buf[32];
	const char *text = buf;
	size_t len;
	unsigned int i;

	(void)fi;
	if (ino == INO_HELLO) {
		text = hello_text;
		for (i = 0; i < opts.chatter; i++)
			fprintf(stderr, "chatter %u\n", i);
	} else if (file_of(ino, &i))
		snprintf(buf, sizeof(buf), "f%u\n", i);
	else {
		fuse_reply_err(req, EISDIR);
		return;
	}
	len = strlen(text);
	if ((size_t)off >= len)
		fuse_reply_buf(req, NULL, 0);
	else
		fuse_reply_buf(req, text + off,
			       len - (size_t)off < size ? len - (size_t)off : size);
}

static void hl_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct statvfs st;
	struct sysinfo si;

	(void)ino;
	if (sysinfo(&si) < 0) {
		fuse_reply_err(req, errno);
		return;
	}
	memset(&st, 0, sizeof(st));
	st.f_bsize = st.f_frsize = 4096;
	st.f_blocks = (fsblkcnt_t)(si.totalram * si.mem_unit / 4096);
	st.f_bfree = st.f_bavail = (fsblkcnt_t)(si.freeram * si.mem_unit / 4096);
	st.f_files = 4 + opts.files;
	st.f_namemax = 255;
	fuse_reply_statfs(req, &st);
}

static const struct fuse_lowlevel_ops ops = {
	.statfs = hl_statfs,
	.lookup = hl_lookup,
	.getattr = hl_getattr,
	.readlink = hl_readlink,
	.readdir = hl_readdir,
	.open = hl_open,
	.read = hl_read,
};

int main(int argc, char *argv[])
{
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	struct fuse_cmdline_opts o;
	struct fuse_session *se;
	int ret = 1;

	/* a default fuse_opt_parse may free: libfuse's rule */
	opts.greeting = strdup("hello, world");
	if (!opts.greeting || fuse_opt_parse(&args, &opts, option_spec, NULL) == -1)
		return 1;
	if (fuse_parse_cmdline(&args, &o) != 0)
		return 1;
	if (o.show_help) {
		printf("usage: %s [-o greeting=TEXT] [-o files=N] [-o chatter=N] MOUNTPOINT\n",
		       argv[0]);
		fuse_cmdline_help();
		ret = 0;
		goto out;
	}
	if (!o.mountpoint) {
		fprintf(stderr, "%s: no mount point\n", argv[0]);
		goto out;
	}
	snprintf(hello_text, sizeof(hello_text), "%s\n", opts.greeting);
	se = fuse_session_new(&args, &ops, sizeof(ops), NULL);
	if (!se)
		goto out;
	if (fuse_set_signal_handlers(se) == 0) {
		if (fuse_session_mount(se, o.mountpoint) == 0) {
			fuse_daemonize(o.foreground);
			if (o.singlethread) {
				ret = fuse_session_loop(se);
			} else {
				struct fuse_loop_config *cfg = fuse_loop_cfg_create();

				fuse_loop_cfg_set_clone_fd(cfg, (unsigned int)o.clone_fd);
				fuse_loop_cfg_set_max_threads(cfg, o.max_threads);
				ret = fuse_session_loop_mt(se, cfg);
				fuse_loop_cfg_destroy(cfg);
			}
			fuse_session_unmount(se);
		}
		fuse_remove_signal_handlers(se);
	}
	fuse_session_destroy(se);
out:
	free(o.mountpoint);
	fuse_opt_free_args(&args);
	return ret ? 1 : 0;
}
