// SPDX-License-Identifier: MIT
/*
 * hello_hl: a file system written against libfuse 3's high-level API alone
 * (<fuse.h>, path-based, fuse_main), linked with Debian's libfuse3;
 * ringfence runs it as a tenant's program.
 *
 *     hello_hl [FUSE options] MOUNTPOINT
 *
 * The root holds "hello" ("hello from the high-level API" and a newline,
 * mode 0444), "notes", a file clients may write (created empty, kept in
 * memory, at most 64 KiB), and "dir", a directory holding "inner" (its
 * own name and a newline). Its init says what its configuration's debug
 * field holds (1 with -d), which libfuse 3.17 moved within struct
 * fuse_config: a library of the other layout shows it as 0.
 */
#define FUSE_USE_VERSION 314
#include <errno.h>
#include <fcntl.h>
#include <fuse.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

static const char hello[] = "hello from the high-level API\n";
static const char inner[] = "inner\n";
static char notes[65536];
static size_t notes_len;

static int hl_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
	(void)fi;
	memset(st, 0, sizeof(*st));
	if (!strcmp(path, "/") || !strcmp(path, "/dir")) {
		st->st_mode = S_IFDIR | 0755;
		st->st_nlink = 2;
	} else if (!strcmp(path, "/hello")) {
		st->st_mode = S_IFREG | 0444;
		st->st_nlink = 1;
		st->st_size = sizeof(hello) - 1;
	} else if (!strcmp(path, "/notes")) {
		st->st_mode = S_IFREG | 0666;
		st->st_nlink = 1;
		st->st_size = (off_t)notes_len;
	} else if (!strcmp(path, "/dir/inner")) {
		st->st_mode = S_IFREG | 0444;
		st->st_nlink = 1;
		st->st_size = sizeof(inner) - 1;
	} else {
		return -ENOENT;
	}
	return 0;
}

static int hl_readdir(const char *path, void *buf, fuse_fill_dir_t fill, off_t off,
		      struct fuse_file_info *fi, enum fuse_readdir_flags flags)
{
	(void)off;
	(void)fi;
	(void)flags;
	fill(buf, ".", NULL, 0, 0);
	fill(buf, "..", NULL, 0, 0);
	if (!strcmp(path, "/")) {
		fill(buf, "hello", NULL, 0, 0);
		fill(buf, "notes", NULL, 0, 0);
		fill(buf, "dir", NULL, 0, 0);
	} else if (!strcmp(path, "/dir")) {
		fill(buf, "inner", NULL, 0, 0);
	} else {
		return -ENOTDIR;
	}
	return 0;
}

static const char *text_of(const char *path, size_t *len)
{
	if (!strcmp(path, "/hello")) {
		*len = sizeof(hello) - 1;
		return hello;
	}
	if (!strcmp(path, "/dir/inner")) {
		*len = sizeof(inner) - 1;
		return inner;
	}
	if (!strcmp(path, "/notes")) {
		*len = notes_len;
		return notes;
	}
	return NULL;
}

static int hl_open(const char *path, struct fuse_file_info *fi)
{
	size_t len;

	if (!text_of(path, &len))
		return -ENOENT;
	if ((fi->flags & O_ACCMODE) != O_RDONLY && strcmp(path, "/notes"))
		return -EACCES;
	if (fi->flags & O_TRUNC)
		notes_len = 0;
	return 0;
}

static int hl_read(const char *path, char *buf, size_t size, off_t off, struct fuse_file_info *fi)
{
	size_t len;
	const char *text = text_of(path, &len);

	(void)fi;
	if (!text)
		return -ENOENT;
	if ((size_t)off >= len)
		return 0;
	if (size > len - (size_t)off)
		size = len - (size_t)off;
	memcpy(buf, text + off, size);
	return (int)size;
}

static int hl_write(const char *path, const char *buf, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	(void)fi;
	if (strcmp(path, "/notes"))
		return -EACCES;
	if ((size_t)off > sizeof(notes) || size > sizeof(notes) - (size_t)off)
		return -EFBIG;
	memcpy(notes + off, buf, size);
	if ((size_t)off + size > notes_len)
		notes_len = (size_t)off + size;
	return (int)size;
}

static int hl_truncate(const char *path, off_t size, struct fuse_file_info *fi)
{
	(void)fi;
	if (strcmp(path, "/notes"))
		return -EACCES;
	if (size < 0 || (size_t)size > sizeof(notes))
		return -EFBIG;
	if ((size_t)size > notes_len)
		memset(notes + notes_len, 0, (size_t)size - notes_len);
	notes_len = (size_t)size;
	return 0;
}

static void *hl_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
	(void)conn;
	fprintf(stderr, "hello_hl: configuration: debug=%d\n", (int)cfg->debug);
	return fuse_get_context()->private_data;
}

static const struct fuse_operations ops = {
	.init = hl_init,
	.getattr = hl_getattr,
	.readdir = hl_readdir,
	.open = hl_open,
	.read = hl_read,
	.write = hl_write,
	.truncate = hl_truncate,
};

int main(int argc, char *argv[])
{
	return fuse_main(argc, argv, &ops, NULL);
}
