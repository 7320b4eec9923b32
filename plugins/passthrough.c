// SPDX-License-Identifier: MIT
/*
 * passthrough: serves the policy's source directory.
 *
 * Each inode the kernel knows is an O_PATH descriptor, keyed by (st_dev,
 * st_ino) and counted by lookups. Operations work relative to those
 * descriptors (the *at() calls), so no path is ever resolved from the
 * directory's root, and never through a symlink: a name is opened with
 * openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS) and O_NOFOLLOW, and the
 * calls that make or remove a name (mkdirat, mknodat, symlinkat, linkat,
 * unlinkat, renameat2) never follow its last component. A symlink swapped
 * into a name in the backing directory is therefore a symlink to us too. File data never passes through this code: reads and
 * writes name the open file and the framework moves the bytes with
 * READ_FIXED / WRITE_FIXED between the file and the registered pool.
 *
 * Options (the policy's `options`, comma separated): timeout=SECONDS for
 * entry and attribute caching (default 1).
 *
 * With the policy's `ownership = xattr`, every file's owner, group and mode
 * (type included) live in its "user.ringfence.stat" xattr, which clients
 * can neither see nor set; the backing objects all belong to the tenant
 * (files 0600, directories 0700). New objects are made complete before
 * they get their name (O_TMPFILE + linkat, or a hidden directory renamed
 * into place), so a crash never leaves one owned by the tenant. User
 * xattrs exist only on files and directories: symlinks, fifos and sockets
 * are regular files in the backing directory, their type in the xattr (a
 * symlink's target is its content). Backing objects without the xattr
 * (made outside ringfence) show as they are.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <sys/vfs.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "ringfence/plugin.h"
#include "record.h"

struct pt_inode {
	int fd; /* O_PATH */
	dev_t dev;
	ino_t ino;
	uint64_t nlookup;
	struct pt_inode *hnext; /* hash chain */
};

struct pt_dir {
	DIR *dp;
	off_t pos;
	struct dirent *entry;
};

#define PT_HASH_MIN 1024

struct pt {
	pthread_mutex_t lock;
	struct pt_inode root; /* never in the table, never freed */
	struct pt_inode **table; /* (dev, ino) -> inode, chained */
	size_t nbuckets;
	size_t ninodes;
	double timeout;
	int xattr; /* ownership = xattr */
	uint32_t open_flags; /* RF_OPEN_* of every file's open and create */
};

static size_t hash_of(dev_t dev, ino_t ino, size_t n)
{
	uint64_t h = (uint64_t)ino * 0x9e3779b97f4a7c15ULL ^ (uint64_t)dev;

	return (size_t)(h ^ (h >> 29)) & (n - 1);
}

static struct pt_inode *table_find(struct pt *p, dev_t dev, ino_t ino)
{
	struct pt_inode *i;

	for (i = p->table[hash_of(dev, ino, p->nbuckets)]; i; i = i->hnext)
		if (i->ino == ino && i->dev == dev)
			return i;
	return NULL;
}

/* Double the table when it averages more than one inode per bucket; a
 * failed allocation just leaves longer chains. */
static void table_grow(struct pt *p)
{
	size_t n = p->nbuckets * 2, b;
	struct pt_inode **t;

	if (p->ninodes <= p->nbuckets || !(t = calloc(n, sizeof(*t))))
		return;
	for (b = 0; b < p->nbuckets; b++) {
		struct pt_inode *i, *next;

		for (i = p->table[b]; i; i = next) {
			size_t h = hash_of(i->dev, i->ino, n);

			next = i->hnext;
			i->hnext = t[h];
			t[h] = i;
		}
	}
	free(p->table);
	p->table = t;
	p->nbuckets = n;
}

static void table_insert(struct pt *p, struct pt_inode *i)
{
	size_t h = hash_of(i->dev, i->ino, p->nbuckets);

	i->hnext = p->table[h];
	p->table[h] = i;
	p->ninodes++;
	table_grow(p);
}

static void table_remove(struct pt *p, struct pt_inode *i)
{
	struct pt_inode **pp = &p->table[hash_of(i->dev, i->ino, p->nbuckets)];

	for (; *pp; pp = &(*pp)->hnext)
		if (*pp == i) {
			*pp = i->hnext;
			p->ninodes--;
			return;
		}
}

static struct pt *pt_of(struct rf_req *req)
{
	return rf_req_userdata(req);
}

static struct pt_inode *inode_of(struct rf_req *req, uint64_t ino)
{
	if (ino == RF_ROOT_ID)
		return &pt_of(req)->root;
	return (struct pt_inode *)(uintptr_t)ino;
}

/* Open @name in the directory @dirfd: never through a symlink, the name
 * itself included (with O_PATH: the symlink itself), never out of @dirfd. */
static int open_beneath(int dirfd, const char *name, int flags, mode_t mode)
{
	struct open_how how = {
		.flags = (uint64_t)(flags | O_NOFOLLOW | O_CLOEXEC),
		.mode = (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ? mode : 0,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
	};

	return (int)syscall(SYS_openat2, dirfd, name, &how, sizeof(how));
}

static int fd_of(struct rf_req *req, uint64_t ino)
{
	return inode_of(req, ino)->fd;
}

static void proc_path(char *buf, size_t len, int fd)
{
	snprintf(buf, len, "/proc/self/fd/%d", fd);
}

/* A record whose type the backing object cannot be (a directory's says
 * file, a file's says directory, or no type at all) is as unreadable as a
 * damaged one: it is never believed. */
static int meta_fits(const struct rf_record *m, mode_t backing)
{
	return rf_record_type_ok(m->mode) && !S_ISDIR(m->mode) == !S_ISDIR(backing);
}

/* The record of the file behind @fd (O_PATH or open), a @backing (its
 * st_mode) file or directory: 0; -ENODATA for none; -EBADMSG for one this
 * code cannot read (a newer version, damaged, or of a type the object
 * cannot have), which is never guessed at. */
static int meta_get(int fd, mode_t backing, struct rf_record *m)
{
	int v = rf_record_read(fd, m, NULL);

	if (v == RF_RECORD_NEWER || v == RF_RECORD_DAMAGED || (v > 0 && !meta_fits(m, backing)))
		return -EBADMSG;
	/* none, or unreadable: the object shows as it is */
	return v > 0 ? 0 : -ENODATA;
}

/* Say once per object (of the last PT_WARNED) that its record cannot be
 * read, naming it by its path in the source. */
#define PT_WARNED 64

static void warn_bad_record(struct pt *p, int fd, const struct stat *st)
{
	static struct {
		dev_t dev;
		ino_t ino;
	} warned[PT_WARNED];
	static unsigned int next;
	char path[64], where[PATH_MAX], root[PATH_MAX];
	unsigned int i;
	ssize_t n, r;

	pthread_mutex_lock(&p->lock);
	for (i = 0; i < PT_WARNED; i++)
		if (warned[i].ino == st->st_ino && warned[i].dev == st->st_dev) {
			pthread_mutex_unlock(&p->lock);
			return;
		}
	warned[next].dev = st->st_dev;
	warned[next].ino = st->st_ino;
	next = (next + 1) % PT_WARNED;
	pthread_mutex_unlock(&p->lock);
	proc_path(path, sizeof(path), fd);
	n = readlinkat(AT_FDCWD, path, where, sizeof(where) - 1);
	where[n > 0 ? n : 0] = '\0';
	/* the path in the source, not in the worker's own root */
	proc_path(path, sizeof(path), p->root.fd);
	r = readlinkat(AT_FDCWD, path, root, sizeof(root) - 1);
	root[r > 0 ? r : 0] = '\0';
	if (r > 0 && !strncmp(where, root, (size_t)r) && where[r] == '/')
		memmove(where, where + r + 1, strlen(where + r));
	rf_log("%s in the source: its %s cannot be read (a newer version, or damaged: "
	       "ringfence-fsck says which); it shows as the tenant's with mode 0 and is not "
	       "replaced (docs/backing-store.md)",
	       n > 0 ? where : "an object", RF_RECORD_XATTR);
}

/* Show the owner, group and mode the xattr holds in @st (backed by @fd). */
static void meta_apply(struct pt *p, int fd, struct stat *st)
{
	struct rf_record m;
	int r;

	if (!p->xattr || !(S_ISREG(st->st_mode) || S_ISDIR(st->st_mode)))
		return;
	r = meta_get(fd, st->st_mode, &m);
	if (r == -EBADMSG) {
		/* not misread: the tenant's, and no one may use it */
		st->st_mode &= S_IFMT;
		warn_bad_record(p, fd, st);
		return;
	}
	if (r < 0)
		return;
	st->st_uid = m.uid;
	st->st_gid = m.gid;
	st->st_mode = m.mode;
	st->st_rdev = S_ISCHR(m.mode) || S_ISBLK(m.mode) ? makedev(m.rdev_major, m.rdev_minor) : 0;
}

static int is_hidden(const struct pt *p, const char *name)
{
	return p->xattr && rf_record_is_tmp_name(name);
}

/* The xattr that holds ownership: not the clients' to see or touch. */
static int is_meta_xattr(const struct pt *p, const char *name)
{
	return p->xattr && !strcmp(name, RF_RECORD_XATTR);
}

/*
 * A file system on this machine's memory or disks, where closing a file
 * reports nothing a write did not (unlike NFS, whose close flushes and may
 * fail): its files need no FLUSH round trip (RF_OPEN_NOFLUSH).
 */
static int local_fs(int fd)
{
	struct statfs sf;

	if (fstatfs(fd, &sf) < 0)
		return 0;
	switch (sf.f_type) {
	case TMPFS_MAGIC:
	case RAMFS_MAGIC:
	case EXT4_SUPER_MAGIC: /* ext2 and ext3 share it */
	case XFS_SUPER_MAGIC:
	case BTRFS_SUPER_MAGIC:
	case F2FS_SUPER_MAGIC:
		return 1;
	default:
		return 0;
	}
}

static int pt_init(const struct rf_init_args *a, void **userdata)
{
	struct pt *p;
	const char *t;
	struct stat st;

	if (a->source_fd < 0)
		return EINVAL; /* passthrough needs `source` */
	p = calloc(1, sizeof(*p));
	if (!p)
		return ENOMEM;
	pthread_mutex_init(&p->lock, NULL);
	p->timeout = 1.0;
	t = strstr(a->options, "timeout=");
	if (t)
		p->timeout = strtod(t + 8, NULL);
	p->xattr = a->ownership == RF_OWN_XATTR;
	p->root.fd = a->source_fd;
	if (fstatat(a->source_fd, "", &st, AT_EMPTY_PATH) < 0) {
		free(p);
		return errno;
	}
	p->root.dev = st.st_dev;
	p->root.ino = st.st_ino;
	p->open_flags = RF_OPEN_FD_IO | (local_fs(a->source_fd) ? RF_OPEN_NOFLUSH : 0);
	p->root.nlookup = 2;
	p->nbuckets = PT_HASH_MIN;
	p->table = calloc(p->nbuckets, sizeof(*p->table));
	if (!p->table) {
		free(p);
		return ENOMEM;
	}
	*userdata = p;
	return 0;
}

static void pt_destroy(void *userdata)
{
	struct pt *p = userdata;
	struct pt_inode *i, *n;
	size_t b;

	for (b = 0; b < p->nbuckets; b++)
		for (i = p->table[b]; i; i = n) {
			n = i->hnext;
			close(i->fd);
			free(i);
		}
	free(p->table);
	free(p);
}

/* Look @name up in the directory @dirfd and count @count lookups; with
 * @want nonzero, only if it is still inode @want of type @type. Returns 0
 * or errno. */
static int lookup_at(struct pt *p, int dirfd, const char *name, struct rf_entry *e, uint64_t count,
		     ino_t want, mode_t type)
{
	struct pt_inode *i;
	int fd, err;

	memset(e, 0, sizeof(*e));
	e->attr_timeout = p->timeout;
	e->entry_timeout = p->timeout;
	if (strchr(name, '/'))
		return EINVAL;
	if (is_hidden(p, name))
		return ENOENT;
	fd = open_beneath(dirfd, name, O_PATH, 0);
	if (fd < 0)
		return errno;
	if (fstatat(fd, "", &e->attr, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0) {
		err = errno;
		close(fd);
		return err;
	}
	meta_apply(p, fd, &e->attr);
	if (want && (e->attr.st_ino != want || (e->attr.st_mode & S_IFMT) != type)) {
		close(fd);
		return ESTALE; /* another file has the name now */
	}
	pthread_mutex_lock(&p->lock);
	i = table_find(p, e->attr.st_dev, e->attr.st_ino);
	if (i) {
		i->nlookup += count;
		close(fd);
	} else if (e->attr.st_ino == p->root.ino && e->attr.st_dev == p->root.dev) {
		i = &p->root; /* ".." of a child: the root itself */
		close(fd);
	} else {
		i = calloc(1, sizeof(*i));
		if (!i) {
			pthread_mutex_unlock(&p->lock);
			close(fd);
			return ENOMEM;
		}
		i->fd = fd;
		i->dev = e->attr.st_dev;
		i->ino = e->attr.st_ino;
		i->nlookup = count;
		table_insert(p, i);
	}
	pthread_mutex_unlock(&p->lock);
	e->ino = i == &p->root ? RF_ROOT_ID : (uint64_t)(uintptr_t)i;
	return 0;
}

/* Look @name up under @parent and count the lookup. Returns 0 or errno. */
static int do_lookup(struct rf_req *req, uint64_t parent, const char *name, struct rf_entry *e)
{
	return lookup_at(pt_of(req), fd_of(req, parent), name, e, 1, 0, 0);
}

static void reply_lookup(struct rf_req *req, uint64_t parent, const char *name)
{
	struct rf_entry e;
	int err = do_lookup(req, parent, name, &e);

	if (err)
		rf_reply_err(req, err);
	else
		rf_reply_entry(req, &e);
}

static void pt_lookup(struct rf_req *req, uint64_t parent, const char *name)
{
	reply_lookup(req, parent, name);
}

static void pt_forget(void *userdata, uint64_t ino, uint64_t nlookup)
{
	struct pt *p = userdata;
	struct pt_inode *i = (struct pt_inode *)(uintptr_t)ino;

	if (ino == RF_ROOT_ID)
		return;
	pthread_mutex_lock(&p->lock);
	i->nlookup = nlookup >= i->nlookup ? 0 : i->nlookup - nlookup;
	if (i->nlookup == 0) {
		table_remove(p, i);
		close(i->fd);
		free(i);
	}
	pthread_mutex_unlock(&p->lock);
}

static void pt_getattr(struct rf_req *req, uint64_t ino, uint64_t fh)
{
	struct stat st;
	int r;

	int fd = fh != RF_NO_FH ? (int)fh : fd_of(req, ino);

	r = fstatat(fd, "", &st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW);
	if (r < 0) {
		rf_reply_err(req, errno);
		return;
	}
	meta_apply(pt_of(req), fd, &st);
	rf_reply_attr(req, &st, pt_of(req)->timeout);
}

static void pt_setattr(struct rf_req *req, uint64_t ino, const struct rf_setattr *sa)
{
	int fd = fd_of(req, ino);
	uint32_t sa_rest = sa->valid;
	char path[64];
	int r = 0;

	proc_path(path, sizeof(path), fd);
	if (pt_of(req)->xattr &&
	    ((sa->valid & (RF_SET_MODE | RF_SET_UID | RF_SET_GID)) || rf_req_kill_suidgid(req))) {
		/* the kernel has checked who may do this; one setxattr does it */
		struct rf_record m, old;
		struct stat st;

		if (fstatat(fd, "", &st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0)
			goto err;
		if (S_ISREG(st.st_mode) || S_ISDIR(st.st_mode)) {
			int g = meta_get(fd, st.st_mode, &m);

			if (g == -EBADMSG) {
				errno = EIO; /* a record we cannot read is not replaced */
				goto err;
			}
			if (g < 0)
				m = (struct rf_record){ st.st_uid, st.st_gid, st.st_mode, 0, 0 };
			old = m;
			if (sa->valid & RF_SET_MODE)
				m.mode = (m.mode & S_IFMT) | (sa->mode & 07777);
			if (sa->valid & RF_SET_UID)
				m.uid = sa->uid;
			if (sa->valid & RF_SET_GID)
				m.gid = sa->gid;
			/* a truncation that says so, or a new owner or group,
			 * clears setuid and setgid (RF_PLUGIN_KILLPRIV) */
			if (rf_req_kill_suidgid(req) ||
			    ((sa->valid & (RF_SET_UID | RF_SET_GID)) && !S_ISDIR(m.mode)))
				m.mode = rf_mode_killpriv(m.mode);
			errno = memcmp(&m, &old, sizeof(m)) ? rf_record_write(fd, &m) : 0;
			if (errno)
				goto err;
			sa_rest = sa->valid & ~(RF_SET_MODE | RF_SET_UID | RF_SET_GID);
		}
	}
	if (sa_rest & RF_SET_MODE) {
		r = sa->fh != RF_NO_FH ? fchmod((int)sa->fh, sa->mode) : chmod(path, sa->mode);
		if (r < 0)
			goto err;
	}
	if (sa_rest & (RF_SET_UID | RF_SET_GID)) {
		uid_t u = (sa->valid & RF_SET_UID) ? sa->uid : (uid_t)-1;
		gid_t g = (sa->valid & RF_SET_GID) ? sa->gid : (gid_t)-1;

		r = fchownat(fd, "", u, g, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW);
		if (r < 0)
			goto err;
	}
	if (sa->valid & RF_SET_SIZE) {
		r = sa->fh != RF_NO_FH ? ftruncate((int)sa->fh, sa->size)
				       : truncate(path, sa->size);
		if (r < 0)
			goto err;
	}
	if (sa->valid & (RF_SET_ATIME | RF_SET_MTIME)) {
		struct timespec ts[2] = { { .tv_nsec = UTIME_OMIT }, { .tv_nsec = UTIME_OMIT } };

		if (sa->valid & RF_SET_ATIME)
			ts[0] = (sa->valid & RF_SET_ATIME_NOW)
					? (struct timespec){ .tv_nsec = UTIME_NOW }
					: sa->atime;
		if (sa->valid & RF_SET_MTIME)
			ts[1] = (sa->valid & RF_SET_MTIME_NOW)
					? (struct timespec){ .tv_nsec = UTIME_NOW }
					: sa->mtime;
		if (sa->fh != RF_NO_FH)
			r = futimens((int)sa->fh, ts);
		else
			r = utimensat(AT_FDCWD, path, ts, 0);
		if (r < 0)
			goto err;
	}
	pt_getattr(req, ino, sa->fh);
	return;
err:
	rf_reply_err(req, errno);
}

static void pt_readlink(struct rf_req *req, uint64_t ino)
{
	char buf[PATH_MAX + 1];
	int fd = fd_of(req, ino);
	struct rf_record m;
	struct stat st;
	ssize_t n;

	if (pt_of(req)->xattr && fstatat(fd, "", &st, AT_EMPTY_PATH) == 0 && S_ISREG(st.st_mode) &&
	    meta_get(fd, st.st_mode, &m) == 0 && S_ISLNK(m.mode)) {
		/* a symlink's stand-in: the target is its content */
		char path[64];
		int f;

		proc_path(path, sizeof(path), fd);
		f = open(path, O_RDONLY | O_CLOEXEC);
		n = f < 0 ? -1 : read(f, buf, sizeof(buf));
		if (f >= 0)
			close(f);
	} else {
		n = readlinkat(fd, "", buf, sizeof(buf));
	}

	if (n < 0)
		rf_reply_err(req, errno);
	else if (n >= (ssize_t)sizeof(buf))
		rf_reply_err(req, ENAMETOOLONG);
	else {
		buf[n] = '\0';
		rf_reply_readlink(req, buf);
	}
}

/* ownership = xattr: who a new object belongs to. POSIX: the caller, or
 * the parent's group when the parent is setgid (directories inherit the
 * setgid bit too). */
static struct rf_record new_meta(struct rf_req *req, uint64_t parent, mode_t mode)
{
	const struct rf_req_ctx *c = rf_req_ctx(req);
	struct rf_record m = { c->uid, c->gid, mode, 0, 0 };
	int pfd = fd_of(req, parent);
	struct stat pst;

	if (fstatat(pfd, "", &pst, AT_EMPTY_PATH) == 0) {
		meta_apply(pt_of(req), pfd, &pst);
		if (pst.st_mode & S_ISGID) {
			m.gid = pst.st_gid;
			if (S_ISDIR(mode))
				m.mode |= S_ISGID;
		}
	}
	return m;
}

/*
 * ownership = xattr: a regular file (or the stand-in of a symlink, fifo or
 * socket) named @name in @parent, with its xattr and @content in place
 * before it has a name. Returns a descriptor open O_RDWR on it, or -errno.
 */
static int make_file(struct rf_req *req, uint64_t parent, const char *name,
		     const struct rf_record *m, const char *content)
{
	int pfd = fd_of(req, parent), fd, err;
	char path[64];

	fd = open_beneath(pfd, ".", O_TMPFILE | O_RDWR, 0600);
	if (fd < 0)
		return -errno;
	err = rf_record_write(fd, m);
	if (!err && content) {
		size_t n = strlen(content);

		if (write(fd, content, n) != (ssize_t)n)
			err = errno ? errno : EIO;
	}
	if (!err) {
		proc_path(path, sizeof(path), fd);
		if (linkat(AT_FDCWD, path, pfd, name, AT_SYMLINK_FOLLOW) < 0)
			err = errno;
	}
	if (err) {
		close(fd);
		return -err;
	}
	return fd;
}

/* ownership = xattr: a directory, made under a hidden name, given its
 * xattr, then renamed into place. Returns 0 or errno. */
static int make_dir(struct rf_req *req, uint64_t parent, const char *name,
		    const struct rf_record *m)
{
	static atomic_uint counter;
	int pfd = fd_of(req, parent), fd, err, tries;
	char tmp[64];

	for (tries = 0;; tries++) {
		snprintf(tmp, sizeof(tmp), RF_RECORD_TMP_PREFIX "%u",
			 atomic_fetch_add(&counter, 1));
		if (mkdirat(pfd, tmp, 0700) == 0)
			break;
		if (errno != EEXIST || tries == 16)
			return errno;
	}
	fd = open_beneath(pfd, tmp, O_PATH | O_DIRECTORY, 0);
	err = fd < 0 ? errno : rf_record_write(fd, m);
	if (fd >= 0)
		close(fd);
	if (!err && renameat2(pfd, tmp, pfd, name, RENAME_NOREPLACE) < 0)
		err = errno;
	if (err)
		unlinkat(pfd, tmp, AT_REMOVEDIR);
	return err;
}

/* ownership = xattr: mknod, symlink, mkdir. A device node is inert on
 * the mount (nodev), so a stand-in holds it like a fifo; the kernel has
 * already checked that its maker may make one (CAP_MKNOD, but for a 0:0
 * character device: an overlayfs whiteout). */
static void make_xattr(struct rf_req *req, uint64_t parent, const char *name, mode_t mode,
		       dev_t rdev, const char *target)
{
	struct rf_record m = new_meta(req, parent, mode);
	int r;

	if (S_ISCHR(mode) || S_ISBLK(mode)) {
		m.rdev_major = major(rdev);
		m.rdev_minor = minor(rdev);
	}
	if (S_ISDIR(mode)) {
		r = make_dir(req, parent, name, &m);
	} else if (S_ISREG(mode) || S_ISFIFO(mode) || S_ISSOCK(mode) || S_ISLNK(mode) ||
		   S_ISCHR(mode) || S_ISBLK(mode)) {
		r = make_file(req, parent, name, &m, target);
		if (r >= 0)
			close(r);
		r = r < 0 ? -r : 0;
	} else {
		r = EINVAL;
	}
	if (r)
		rf_reply_err(req, r);
	else
		reply_lookup(req, parent, name);
}

static void pt_mknod(struct rf_req *req, uint64_t parent, const char *name, mode_t mode, dev_t rdev)
{
	if (pt_of(req)->xattr) {
		make_xattr(req, parent, name, mode, rdev, NULL);
		return;
	}
	if (mknodat(fd_of(req, parent), name, mode, rdev) < 0)
		rf_reply_err(req, errno);
	else
		reply_lookup(req, parent, name);
}

static void pt_mkdir(struct rf_req *req, uint64_t parent, const char *name, mode_t mode)
{
	if (pt_of(req)->xattr) {
		make_xattr(req, parent, name, S_IFDIR | (mode & 07777), 0, NULL);
		return;
	}
	if (mkdirat(fd_of(req, parent), name, mode & 07777) < 0)
		rf_reply_err(req, errno);
	else
		reply_lookup(req, parent, name);
}

static void pt_symlink(struct rf_req *req, const char *target, uint64_t parent, const char *name)
{
	if (pt_of(req)->xattr) {
		make_xattr(req, parent, name, S_IFLNK | 0777, 0, target);
		return;
	}
	if (symlinkat(target, fd_of(req, parent), name) < 0)
		rf_reply_err(req, errno);
	else
		reply_lookup(req, parent, name);
}

static void pt_link(struct rf_req *req, uint64_t ino, uint64_t newparent, const char *newname)
{
	char path[64];

	/* linkat(AT_EMPTY_PATH) needs CAP_DAC_READ_SEARCH; the /proc link
	 * followed with AT_SYMLINK_FOLLOW does not. */
	proc_path(path, sizeof(path), fd_of(req, ino));
	if (linkat(AT_FDCWD, path, fd_of(req, newparent), newname, AT_SYMLINK_FOLLOW) < 0)
		rf_reply_err(req, errno);
	else
		reply_lookup(req, newparent, newname);
}

static void pt_unlink(struct rf_req *req, uint64_t parent, const char *name)
{
	if (unlinkat(fd_of(req, parent), name, 0) < 0)
		rf_reply_err(req, errno);
	else
		rf_reply_ok(req);
}

/* ownership = xattr: a worker that died in make_dir() may have left an
 * empty hidden directory in @dir's backing directory; clients cannot see
 * it, so it must not keep them from removing @dir. Returns 1 if it removed
 * any. */
static int remove_leftovers(int pfd, const char *name)
{
	int fd = open_beneath(pfd, name, O_RDONLY | O_DIRECTORY, 0), n = 0;
	struct dirent *de;
	DIR *dp;

	if (fd < 0)
		return 0;
	dp = fdopendir(fd);
	if (!dp) {
		close(fd);
		return 0;
	}
	while ((de = readdir(dp)))
		if (rf_record_is_tmp_name(de->d_name) &&
		    unlinkat(dirfd(dp), de->d_name, AT_REMOVEDIR) == 0)
			n = 1;
	closedir(dp);
	return n;
}

static void pt_rmdir(struct rf_req *req, uint64_t parent, const char *name)
{
	int pfd = fd_of(req, parent), r = unlinkat(pfd, name, AT_REMOVEDIR);

	if (r < 0 && errno == ENOTEMPTY && pt_of(req)->xattr && remove_leftovers(pfd, name))
		r = unlinkat(pfd, name, AT_REMOVEDIR);
	if (r < 0)
		rf_reply_err(req, errno);
	else
		rf_reply_ok(req);
}

static void pt_rename(struct rf_req *req, uint64_t parent, const char *name, uint64_t newparent,
		      const char *newname, unsigned int flags)
{
	if (renameat2(fd_of(req, parent), name, fd_of(req, newparent), newname, flags) < 0)
		rf_reply_err(req, errno);
	else
		rf_reply_ok(req);
}

/*
 * setuid and setgid after a write or an O_TRUNC open that says so
 * (RF_PLUGIN_KILLPRIV): in xattr mode they live in the record, which only
 * we change; otherwise the backing file system clears its own bits when
 * the worker, who never has CAP_FSETID, writes or truncates.
 */
static int kill_suidgid(struct rf_req *req, int fd)
{
	struct rf_record m;
	mode_t mode;

	/* only regular files are written or truncated */
	if (!pt_of(req)->xattr || !rf_req_kill_suidgid(req) || meta_get(fd, S_IFREG, &m) < 0)
		return 0;
	mode = rf_mode_killpriv(m.mode);
	if (mode == m.mode)
		return 0;
	m.mode = mode;
	return rf_record_write(fd, &m);
}

/*
 * A client that opens with O_DIRECT has the kernel send its transfers to
 * us whatever we say; with RF_OPEN_DIRECT_IO they take the kernel's
 * direct path (no page-cache machinery around each request, a shared
 * mapping still allowed: FUSE_DIRECT_IO_ALLOW_MMAP). make bench, 1 MiB
 * O_DIRECT on tmpfs, three rounds side by side: reads 1.04-1.10x, writes
 * 1.01-1.11x.
 */
static uint32_t open_flags(struct rf_req *req, int flags)
{
	return pt_of(req)->open_flags | ((flags & O_DIRECT) ? RF_OPEN_DIRECT_IO : 0);
}

static void pt_open(struct rf_req *req, uint64_t ino, int flags)
{
	char path[64];
	int fd, err;

	proc_path(path, sizeof(path), fd_of(req, ino));
	fd = open(path, (flags & ~(O_CREAT | O_EXCL | O_NOCTTY | O_NOFOLLOW)) | O_CLOEXEC);
	if (fd < 0) {
		rf_reply_err(req, errno);
		return;
	}
	err = kill_suidgid(req, fd);
	if (err) {
		close(fd);
		rf_reply_err(req, err);
		return;
	}
	/* the framework moves its data (but a write that clears suid: pt_write) */
	rf_req_backing(req, fd);
	rf_reply_open(req, (uint64_t)fd, open_flags(req, flags));
}

static void pt_create(struct rf_req *req, uint64_t parent, const char *name, mode_t mode, int flags)
{
	struct rf_entry e;
	int fd, err;

	if (pt_of(req)->xattr) {
		struct rf_record m = new_meta(req, parent, S_IFREG | (mode & 07777));
		int tmp = make_file(req, parent, name, &m, NULL);
		char path[64];

		if (tmp < 0) {
			rf_reply_err(req, -tmp);
			return;
		}
		/* the client's own access mode and flags, on the file now named */
		proc_path(path, sizeof(path), tmp);
		fd = open(path, (flags & ~(O_CREAT | O_EXCL | O_TRUNC | O_NOCTTY | O_NOFOLLOW)) |
					O_CLOEXEC);
		close(tmp);
	} else {
		/* O_NOFOLLOW (open_beneath): a symlink swapped into the name
		 * since the kernel's LOOKUP is ELOOP, never followed */
		fd = open_beneath(fd_of(req, parent), name, (flags | O_CREAT) & ~O_NOCTTY,
				  mode & 07777);
	}
	if (fd < 0) {
		rf_reply_err(req, errno);
		return;
	}
	err = do_lookup(req, parent, name, &e);
	if (err) {
		close(fd);
		rf_reply_err(req, err);
		return;
	}
	rf_req_backing(req, fd);
	rf_reply_create(req, &e, (uint64_t)fd, open_flags(req, flags));
}

static void pt_read(struct rf_req *req, uint64_t ino, uint64_t fh, off_t off, size_t size)
{
	(void)ino;
	rf_reply_data_fd(req, (int)fh, off, size);
}

static void pt_write(struct rf_req *req, uint64_t ino, uint64_t fh, off_t off, const void *data,
		     size_t size)
{
	int err = kill_suidgid(req, (int)fh);

	(void)ino;
	(void)data;
	(void)size;
	if (err)
		rf_reply_err(req, err);
	else
		rf_reply_write_fd(req, (int)fh, off);
}

static void pt_flush(struct rf_req *req, uint64_t ino, uint64_t fh)
{
	/* close a duplicate: releases POSIX locks as a close would */
	int fd = dup((int)fh);

	(void)ino;
	if (fd < 0 || close(fd) < 0)
		rf_reply_err(req, errno);
	else
		rf_reply_ok(req);
}

static void pt_release(struct rf_req *req, uint64_t ino, uint64_t fh, int flags)
{
	(void)ino;
	(void)flags;
	close((int)fh);
	rf_reply_ok(req);
}

static void pt_fsync(struct rf_req *req, uint64_t ino, uint64_t fh, int datasync)
{
	int r;

	(void)ino;
	r = datasync ? fdatasync((int)fh) : fsync((int)fh);
	if (r < 0)
		rf_reply_err(req, errno);
	else
		rf_reply_ok(req);
}

/* The directory behind the O_PATH @ifd, opened for a listing: 0 with its
 * handle in *@fh, or errno. */
static int open_dir(int ifd, uint64_t *fh)
{
	struct pt_dir *d = calloc(1, sizeof(*d));
	int fd;

	if (!d)
		return ENOMEM;
	fd = open_beneath(ifd, ".", O_RDONLY | O_DIRECTORY, 0);
	if (fd < 0 || !(d->dp = fdopendir(fd))) {
		int err = errno;

		if (fd >= 0)
			close(fd);
		free(d);
		return err;
	}
	*fh = (uint64_t)(uintptr_t)d;
	return 0;
}

static void pt_opendir(struct rf_req *req, uint64_t ino, int flags)
{
	uint64_t fh;
	int err = open_dir(fd_of(req, ino), &fh);

	(void)flags;
	if (err)
		rf_reply_err(req, err);
	else
		rf_reply_open(req, fh, 0);
}

static int is_dot_or_dotdot(const char *n)
{
	return n[0] == '.' && (n[1] == '\0' || (n[1] == '.' && n[2] == '\0'));
}

/* readdir and readdirplus: the latter looks every entry up (but "." and
 * "..") and undoes the lookup when the entry does not fit. */
static void do_readdir(struct rf_req *req, uint64_t ino, uint64_t fh, off_t off, int plus)
{
	struct pt_dir *d = (struct pt_dir *)(uintptr_t)fh;

	if (off != d->pos) {
		seekdir(d->dp, off);
		d->entry = NULL;
		d->pos = off;
	}
	for (;;) {
		struct rf_entry e;
		off_t next;
		int r;

		if (!d->entry) {
			errno = 0;
			d->entry = readdir(d->dp);
			if (!d->entry) {
				if (errno) {
					rf_reply_err(req, errno);
					return;
				}
				break;
			}
		}
		next = d->entry->d_off;
		if (is_hidden(pt_of(req), d->entry->d_name)) {
			d->entry = NULL;
			d->pos = next;
			continue;
		}
		memset(&e, 0, sizeof(e));
		e.attr.st_ino = d->entry->d_ino;
		/* with ownership = xattr a regular file may stand in for a
		 * symlink, fifo or socket: the type is known only from a stat */
		if (!(pt_of(req)->xattr && d->entry->d_type == DT_REG))
			e.attr.st_mode = (mode_t)d->entry->d_type << 12;
		if (plus && !is_dot_or_dotdot(d->entry->d_name)) {
			int err = do_lookup(req, ino, d->entry->d_name, &e);

			if (err == ENOENT) { /* gone meanwhile: skip it */
				d->entry = NULL;
				d->pos = next;
				continue;
			}
			if (err) {
				rf_reply_err(req, err);
				return;
			}
		}
		r = plus ? rf_dirbuf_add_plus(req, d->entry->d_name, &e, next)
			 : rf_dirbuf_add(req, d->entry->d_name, &e.attr, next);
		if (r < 0) {
			/* full: this entry goes first next time */
			if (e.ino)
				pt_forget(pt_of(req), e.ino, 1);
			break;
		}
		d->entry = NULL;
		d->pos = next;
	}
	rf_reply_dirbuf(req);
}

static void pt_readdir(struct rf_req *req, uint64_t ino, uint64_t fh, off_t off, size_t size)
{
	(void)size;
	do_readdir(req, ino, fh, off, 0);
}

static void pt_readdirplus(struct rf_req *req, uint64_t ino, uint64_t fh, off_t off, size_t size)
{
	(void)size;
	do_readdir(req, ino, fh, off, 1);
}

static void pt_releasedir(struct rf_req *req, uint64_t ino, uint64_t fh)
{
	struct pt_dir *d = (struct pt_dir *)(uintptr_t)fh;

	(void)ino;
	closedir(d->dp);
	free(d);
	rf_reply_ok(req);
}

static void pt_fsyncdir(struct rf_req *req, uint64_t ino, uint64_t fh, int datasync)
{
	struct pt_dir *d = (struct pt_dir *)(uintptr_t)fh;
	int fd = dirfd(d->dp);

	(void)ino;
	if ((datasync ? fdatasync(fd) : fsync(fd)) < 0)
		rf_reply_err(req, errno);
	else
		rf_reply_ok(req);
}

static void pt_statfs(struct rf_req *req, uint64_t ino)
{
	struct statvfs sv;

	if (fstatvfs(fd_of(req, ino), &sv) < 0)
		rf_reply_err(req, errno);
	else
		rf_reply_statfs(req, &sv);
}

static void pt_setxattr(struct rf_req *req, uint64_t ino, const char *name, const void *value,
			size_t size, int flags)
{
	char path[64];

	if (is_meta_xattr(pt_of(req), name)) {
		rf_reply_err(req, EPERM); /* ownership is chown's and chmod's */
		return;
	}
	proc_path(path, sizeof(path), fd_of(req, ino));
	if (setxattr(path, name, value, size, flags) < 0)
		rf_reply_err(req, errno);
	else
		rf_reply_ok(req);
}

/* getxattr and listxattr share the size-probe protocol. */
static void xattr_reply(struct rf_req *req, ssize_t n, const char *buf, size_t size)
{
	if (n < 0)
		rf_reply_err(req, errno);
	else if (size == 0)
		rf_reply_xattr_size(req, (size_t)n);
	else
		rf_reply_data(req, buf, (size_t)n);
}

static void pt_getxattr(struct rf_req *req, uint64_t ino, const char *name, size_t size)
{
	char path[64], buf[65536];
	ssize_t n;

	if (is_meta_xattr(pt_of(req), name)) {
		rf_reply_err(req, ENODATA);
		return;
	}
	proc_path(path, sizeof(path), fd_of(req, ino));
	if (size > sizeof(buf))
		size = sizeof(buf);
	n = getxattr(path, name, size ? buf : NULL, size);
	xattr_reply(req, n, buf, size);
}

static void pt_listxattr(struct rf_req *req, uint64_t ino, size_t size)
{
	char path[64], buf[65536];
	ssize_t n;

	proc_path(path, sizeof(path), fd_of(req, ino));
	n = listxattr(path, buf, sizeof(buf));
	if (n > 0 && pt_of(req)->xattr) {
		/* take RF_RECORD_XATTR out of the list of NUL-terminated names */
		ssize_t i = 0;

		while (i < n) {
			size_t l = strlen(buf + i) + 1;

			if (!strcmp(buf + i, RF_RECORD_XATTR)) {
				memmove(buf + i, buf + i + l, (size_t)(n - i) - l);
				n -= (ssize_t)l;
			} else {
				i += (ssize_t)l;
			}
		}
	}
	if (size && n > (ssize_t)size) {
		n = -1;
		errno = ERANGE;
	}
	xattr_reply(req, n, buf, size);
}

static void pt_removexattr(struct rf_req *req, uint64_t ino, const char *name)
{
	char path[64];

	if (is_meta_xattr(pt_of(req), name)) {
		rf_reply_err(req, EPERM);
		return;
	}
	proc_path(path, sizeof(path), fd_of(req, ino));
	if (removexattr(path, name) < 0)
		rf_reply_err(req, errno);
	else
		rf_reply_ok(req);
}

static void pt_access(struct rf_req *req, uint64_t ino, int mask)
{
	char path[64];

	proc_path(path, sizeof(path), fd_of(req, ino));
	if (faccessat(AT_FDCWD, path, mask, 0) < 0)
		rf_reply_err(req, errno);
	else
		rf_reply_ok(req);
}

static void pt_fallocate(struct rf_req *req, uint64_t ino, uint64_t fh, int mode, off_t off,
			 off_t len)
{
	(void)ino;
	if (fallocate((int)fh, mode, off, len) < 0)
		rf_reply_err(req, errno);
	else
		rf_reply_ok(req);
}

static void pt_lseek(struct rf_req *req, uint64_t ino, uint64_t fh, off_t off, int whence)
{
	off_t r;

	(void)ino;
	r = lseek((int)fh, off, whence);
	if (r < 0)
		rf_reply_err(req, errno);
	else
		rf_reply_lseek(req, r);
}

/* A dead worker's node, found again by its name under its restored parent,
 * and only if it is the same inode (restore_nodes). */
static int pt_restore_node(void *userdata, const struct rf_restore_node *r, uint64_t *ino)
{
	struct pt *p = userdata;
	int dirfd = r->parent == RF_ROOT_ID ? p->root.fd
					    : ((struct pt_inode *)(uintptr_t)r->parent)->fd;
	struct rf_entry e;
	int err = lookup_at(p, dirfd, r->name, &e, r->nlookup, r->ino, r->type);

	if (err)
		return err;
	if (e.ino == RF_ROOT_ID)
		return ESTALE; /* the root is never restored */
	*ino = e.ino;
	return 0;
}

/* A dead worker's open file, opened again as pt_open or pt_opendir did:
 * the framework never passes O_CREAT, O_EXCL or O_TRUNC. */
static int pt_reopen(void *userdata, uint64_t ino, int flags, int dir, uint64_t *fh)
{
	struct pt *p = userdata;
	int ifd = ino == RF_ROOT_ID ? p->root.fd : ((struct pt_inode *)(uintptr_t)ino)->fd;
	char path[64];
	int fd;

	if (dir)
		return open_dir(ifd, fh);
	proc_path(path, sizeof(path), ifd);
	fd = open(path,
		  (flags & ~(O_CREAT | O_EXCL | O_TRUNC | O_NOCTTY | O_NOFOLLOW)) | O_CLOEXEC);
	if (fd < 0)
		return errno;
	*fh = (uint64_t)fd;
	return 0;
}

const struct rf_plugin ringfence_plugin = {
	RF_PLUGIN_INIT,
	.name = "passthrough",
	.flags = RF_PLUGIN_KILLPRIV, /* kill_suidgid(), pt_setattr() */
	.init = pt_init,
	.destroy = pt_destroy,
	.lookup = pt_lookup,
	.forget = pt_forget,
	.getattr = pt_getattr,
	.setattr = pt_setattr,
	.readlink = pt_readlink,
	.mknod = pt_mknod,
	.mkdir = pt_mkdir,
	.unlink = pt_unlink,
	.rmdir = pt_rmdir,
	.symlink = pt_symlink,
	.rename = pt_rename,
	.link = pt_link,
	.open = pt_open,
	.read = pt_read,
	.write = pt_write,
	.flush = pt_flush,
	.release = pt_release,
	.fsync = pt_fsync,
	.opendir = pt_opendir,
	.readdir = pt_readdir,
	.releasedir = pt_releasedir,
	.fsyncdir = pt_fsyncdir,
	.statfs = pt_statfs,
	.setxattr = pt_setxattr,
	.getxattr = pt_getxattr,
	.listxattr = pt_listxattr,
	.removexattr = pt_removexattr,
	.access = pt_access,
	.create = pt_create,
	.fallocate = pt_fallocate,
	.lseek = pt_lseek,
	.readdirplus = pt_readdirplus,
	.restore_node = pt_restore_node,
	.reopen = pt_reopen,
};
