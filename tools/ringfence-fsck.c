// SPDX-License-Identifier: MIT
/*
 * ringfence-fsck: check, offline, the backing directory of a passthrough
 * tenant with `ownership = xattr` (docs/backing-store.md is its format),
 * and repair what can be repaired without guessing.
 *
 * Every repair keeps what a client of the mount saw, except where what it
 * saw was broken (a record whose type the backing object cannot have):
 * an object without a record gets one holding what it showed; a damaged
 * record is replaced by one holding what it showed (the tenant's, mode 0);
 * a record of a newer version is never touched. --adopt-owners is the
 * exception by request: it moves real owners into records.
 *
 * The tree is walked by descriptors, never by paths, and no symlink in it
 * is ever followed; names are read whole before a directory is changed.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "log.h"
#include "mountinfo.h"
#include "policy.h"
#include "../plugins/record.h"

#define DEFAULT_POLICY RF_POLICY_PATH

/* fsck(8)'s exit status bits */
enum {
	EXIT_CLEAN = 0,
	EXIT_CORRECTED = 1,
	EXIT_LEFT = 4,
	EXIT_OPERATIONAL = 8,
	EXIT_USAGE = 16,
};

/* A special file (symlink, fifo, socket, device) of several names: the
 * stand-in made for its first name, linked under the others. */
struct linked {
	dev_t dev;
	ino_t ino;
	int standin; /* O_PATH */
};

struct fsck {
	int repair; /* -y */
	int adopt; /* --adopt-owners */
	int verbose;
	uid_t uid; /* the tenant's */
	gid_t gid;
	int root; /* may chown */
	unsigned long objects, v1, errors, corrected, left, leftovers;
	struct linked *links;
	size_t nlinks;
	unsigned int standins; /* names made for stand-ins */
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ringfence-fsck [-n | -y] [-c POLICY] [-v] SOURCE\n"
		"       ringfence-fsck --adopt-owners [--owner USER[:GROUP]] [-c POLICY] SOURCE\n"
		"\n"
		"Checks, offline, the source directory of a passthrough tenant with\n"
		"ownership = xattr: objects without an ownership record, records of an\n"
		"unknown version or size, records whose type the object cannot have,\n"
		"symlinks, fifos, sockets and device nodes made beside ringfence, objects\n"
		"the tenant does not own, and the remains of a worker that died making a\n"
		"directory (.ringfence.tmp.N). docs/backing-store.md is the format.\n"
		"\n"
		"options:\n"
		"  -n, --no            report only, change nothing (the default)\n"
		"  -y, --yes           repair what can be repaired without guessing\n"
		"  -c, --config FILE   the deployment policy (default %s, if it\n"
		"                      exists): a source one of its mounted tenants serves is\n"
		"                      refused, and the tenant's user is taken from it\n"
		"      --adopt-owners  (root) turn a tree with real owners into xattr mode:\n"
		"                      each object's owner, group, mode and device number go\n"
		"                      into its record, the object becomes the tenant's\n"
		"                      (files 0600, directories 0700), and symlinks, fifos,\n"
		"                      sockets and devices become stand-ins; implies -y\n"
		"      --owner USER[:GROUP]  the tenant's user (default: the policy's, else\n"
		"                      the owner of SOURCE)\n"
		"  -v, --verbose       name every object checked\n"
		"  -h, --help          this text\n"
		"\n"
		"It refuses a source that a process holds open (a worker serving it) or that\n"
		"a tenant of the policy serves on a mounted mountpoint.\n"
		"\n"
		"Exit status, as fsck(8), the sum of: 0 clean; 1 errors corrected; 4 errors\n"
		"left; 8 an operational error (refused, cannot read); 16 a usage error.\n",
		DEFAULT_POLICY);
}

static void say(const char *path, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* One line about @path; names in the tree are anyone's bytes, so escaped. */
static void say(const char *path, const char *fmt, ...)
{
	char esc[PATH_MAX * 4];
	va_list ap;

	log_escape(path, esc, sizeof(esc));
	printf("%s: ", esc);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

/* An error found: corrected when @fixed is 0, left when it is an errno
 * (or -1: not to be repaired) or when only reporting. */
static void verdict(struct fsck *f, const char *path, int fixed, const char *what, const char *fix)
{
	f->errors++;
	if (!f->repair) {
		say(path, "%s [-y: %s]", what, fix);
		f->left++;
	} else if (fixed == 0) {
		say(path, "%s: %s", what, fix);
		f->corrected++;
	} else {
		say(path, "%s: left (%s)", what,
		    fixed > 0 ? strerror(fixed) : "not repaired by ringfence-fsck");
		f->left++;
	}
}

static void left(struct fsck *f, const char *path, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* An error nothing here can correct (a call that failed): said and
 * counted as left. */
static void left(struct fsck *f, const char *path, const char *fmt, ...)
{
	char line[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	say(path, "%s", line);
	f->errors++;
	f->left++;
}

static const char *type_name(mode_t m)
{
	switch (m & S_IFMT) {
	case S_IFREG:
		return "regular file";
	case S_IFDIR:
		return "directory";
	case S_IFLNK:
		return "symlink";
	case S_IFIFO:
		return "fifo";
	case S_IFSOCK:
		return "socket";
	case S_IFCHR:
		return "character device";
	case S_IFBLK:
		return "block device";
	}
	return "object of no type";
}

static void proc_path(char *buf, size_t len, int fd)
{
	snprintf(buf, len, "/proc/self/fd/%d", fd);
}

static struct rf_record record_of(const struct stat *st)
{
	struct rf_record r = { st->st_uid, st->st_gid, st->st_mode, 0, 0 };

	if (S_ISCHR(st->st_mode) || S_ISBLK(st->st_mode)) {
		r.rdev_major = major(st->st_rdev);
		r.rdev_minor = minor(st->st_rdev);
	}
	return r;
}

/* Make @fd (O_PATH) the tenant's, as ringfence makes its own objects:
 * 0 or errno. */
static int hand_over(const struct fsck *f, int fd, const struct stat *st)
{
	char path[64];

	proc_path(path, sizeof(path), fd);
	if ((st->st_uid != f->uid || st->st_gid != f->gid) &&
	    fchownat(fd, "", f->uid, f->gid, AT_EMPTY_PATH) < 0)
		return errno;
	if ((st->st_mode & 07777) != (S_ISDIR(st->st_mode) ? 0700 : 0600) &&
	    chmod(path, S_ISDIR(st->st_mode) ? 0700 : 0600) < 0)
		return errno;
	return 0;
}

static struct linked *linked_find(struct fsck *f, const struct stat *st)
{
	size_t i;

	for (i = 0; i < f->nlinks; i++)
		if (f->links[i].dev == st->st_dev && f->links[i].ino == st->st_ino)
			return &f->links[i];
	return NULL;
}

/*
 * Put a stand-in for the special file @name of @dirfd in its place: a
 * regular file holding @r (and a symlink's target), made whole under a
 * name of its own and renamed over @name, so that a crash leaves one or
 * the other. Another name of the same special file gets a link of the
 * same stand-in. 0 or errno.
 */
static int replace_special(struct fsck *f, int dirfd, const char *name, const struct stat *st,
			   const struct rf_record *r)
{
	char tmp[64], path[64], target[PATH_MAX + 1];
	struct linked *l = linked_find(f, st);
	ssize_t n = 0;
	int fd, err = 0;

	snprintf(tmp, sizeof(tmp), RF_RECORD_TMP_PREFIX "fsck.%d.%u", getpid(), f->standins++);
	if (l) {
		proc_path(path, sizeof(path), l->standin);
		if (linkat(AT_FDCWD, path, dirfd, tmp, AT_SYMLINK_FOLLOW) < 0)
			return errno;
		goto rename;
	}
	if (S_ISLNK(st->st_mode)) {
		n = readlinkat(dirfd, name, target, sizeof(target) - 1);
		if (n < 0)
			return errno;
	}
	fd = openat(dirfd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (fd < 0)
		return errno;
	err = rf_record_write(fd, r);
	if (!err && n > 0 && write(fd, target, (size_t)n) != n)
		err = errno ? errno : EIO;
	if (!err && f->root && fchown(fd, f->uid, f->gid) < 0)
		err = errno;
	proc_path(path, sizeof(path), fd);
	if (!err && linkat(AT_FDCWD, path, dirfd, tmp, AT_SYMLINK_FOLLOW) < 0)
		err = errno;
	if (!err && st->st_nlink > 1) {
		struct linked *nl = realloc(f->links, (f->nlinks + 1) * sizeof(*nl));
		int keep = nl ? openat(dirfd, tmp, O_PATH | O_NOFOLLOW | O_CLOEXEC) : -1;

		if (nl)
			f->links = nl;
		if (keep >= 0)
			f->links[f->nlinks++] = (struct linked){ st->st_dev, st->st_ino, keep };
	}
	close(fd);
	if (err)
		return err;
rename:
	if (renameat(dirfd, tmp, dirfd, name) < 0) {
		err = errno;
		unlinkat(dirfd, tmp, 0);
	}
	return err;
}

/* Whether the directory @name of @dirfd is empty: 1, 0, or -errno. */
static int is_empty_dir(int dirfd, const char *name)
{
	int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC), empty = 1;
	struct dirent *de;
	DIR *dp;

	if (fd < 0)
		return -errno;
	dp = fdopendir(fd);
	if (!dp) {
		close(fd);
		return -ENOMEM;
	}
	while ((de = readdir(dp)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			empty = 0;
	closedir(dp);
	return empty;
}

/* A regular file or directory and its record. */
static void check_record(struct fsck *f, int fd, const char *path, const struct stat *st,
			 int no_record_ok)
{
	struct rf_record r, fixed;
	char what[256], fix[256];
	size_t size;
	int v = rf_record_read(fd, &r, &size);

	if (v < 0) {
		left(f, path, "cannot read its record: %s", strerror(-v));
		return;
	}
	if (f->adopt && v == 0) {
		/* the conversion asked for, not an error */
		int err = rf_record_write(fd, (fixed = record_of(st), &fixed));

		if (!err)
			err = hand_over(f, fd, st);
		if (err) {
			left(f, path, "cannot adopt: %s", strerror(err));
		} else if (f->verbose) {
			say(path, "adopted: %u:%u mode %06o", fixed.uid, fixed.gid, fixed.mode);
		}
		return;
	}
	if (f->adopt && (v == 1 || v == 2)) {
		/* already in xattr mode; just make sure the tenant owns it */
		int err = hand_over(f, fd, st);

		if (err) {
			left(f, path, "cannot hand to the tenant: %s", strerror(err));
		}
	}
	switch (v) {
	case 0:
		if (no_record_ok)
			return;
		fixed = record_of(st);
		snprintf(fix, sizeof(fix), "record written as it shows: %u:%u mode %06o", fixed.uid,
			 fixed.gid, fixed.mode);
		verdict(f, path, f->repair ? rf_record_write(fd, &fixed) : 0,
			"no ownership record (made beside ringfence)", fix);
		return;
	case RF_RECORD_NEWER:
		/* never touched: it may hold what a newer ringfence needs */
		verdict(f, path, -1, "record of a newer version than this ringfence-fsck reads",
			"none: upgrade ringfence");
		return;
	case RF_RECORD_DAMAGED:
		fixed = (struct rf_record){ f->uid, f->gid, st->st_mode & S_IFMT, 0, 0 };
		snprintf(what, sizeof(what), "damaged record (%zu bytes, no version of ours)",
			 size);
		snprintf(fix, sizeof(fix), "replaced by what it showed: %u:%u mode %06o", fixed.uid,
			 fixed.gid, fixed.mode);
		verdict(f, path, f->repair ? rf_record_write(fd, &fixed) : 0, what, fix);
		return;
	}
	if (v == 1)
		f->v1++;
	if (!rf_record_type_ok(r.mode) || !S_ISDIR(r.mode) != !S_ISDIR(st->st_mode)) {
		fixed = r;
		fixed.mode = (r.mode & 07777) | (S_ISDIR(st->st_mode) ? S_IFDIR : S_IFREG);
		fixed.rdev_major = fixed.rdev_minor = 0;
		snprintf(what, sizeof(what), "record says %s, the object is a %s",
			 type_name(r.mode), type_name(st->st_mode));
		snprintf(fix, sizeof(fix), "record says %s (mode %06o)", type_name(fixed.mode),
			 fixed.mode);
		verdict(f, path, f->repair ? rf_record_write(fd, &fixed) : 0, what, fix);
	}
}

static void walk(struct fsck *f, int dirfd, char *path, size_t len);

/* One object, @name in @dirfd (@path names it). */
static void check_object(struct fsck *f, int dirfd, const char *name, char *path, size_t len)
{
	struct stat st;
	int fd;

	f->objects++;
	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		if (errno == ENOENT)
			return; /* a name already replaced */
		left(f, path, "cannot stat: %s", strerror(errno));
		return;
	}
	if (f->verbose)
		say(path, "%s", type_name(st.st_mode));
	if (rf_record_is_tmp_name(name)) {
		int empty = S_ISDIR(st.st_mode) ? is_empty_dir(dirfd, name) : 0;

		if (empty == 1) {
			f->leftovers++;
			verdict(f, path,
				f->repair && unlinkat(dirfd, name, AT_REMOVEDIR) < 0 ? errno : 0,
				"leftover of a worker that died making a directory", "removed");
		} else {
			/* hidden from clients, yet not ours to remove */
			verdict(f, path, -1,
				empty < 0 ? "hidden from clients (a temporary name), unreadable"
					  : "hidden from clients (a temporary name), not an empty "
					    "directory",
				"none: look at it and remove it by hand");
		}
		return;
	}
	if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
		struct rf_record r = record_of(&st);
		char what[128], fix[128];

		if (f->adopt) {
			int err = replace_special(f, dirfd, name, &st, &r);

			if (err) {
				left(f, path, "cannot adopt: %s", strerror(err));
			}
			return;
		}
		snprintf(what, sizeof(what),
			 "a %s in the backing directory (made beside ringfence)",
			 type_name(st.st_mode));
		snprintf(fix, sizeof(fix), "replaced by a stand-in holding it: %u:%u mode %06o",
			 r.uid, r.gid, r.mode);
		verdict(f, path, f->repair ? replace_special(f, dirfd, name, &st, &r) : 0, what,
			fix);
		return;
	}
	fd = openat(dirfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		left(f, path, "cannot open: %s", strerror(errno));
		return;
	}
	if (!f->adopt && st.st_uid != f->uid) {
		char what[128];
		int err = 0;

		/* ringfence's worker cannot change or chmod it; as root, move
		 * its owner into a record (if it has none) */
		snprintf(what, sizeof(what), "owned by uid %u, not by the tenant (uid %u)",
			 (unsigned int)st.st_uid, (unsigned int)f->uid);
		if (f->repair) {
			struct rf_record r;
			size_t size;
			int v = rf_record_read(fd, &r, &size);

			if (!f->root)
				err = EPERM;
			else if (v == 0)
				err = rf_record_write(fd, (r = record_of(&st), &r));
			if (!err)
				err = hand_over(f, fd, &st);
		}
		verdict(f, path, err, what,
			"record of its owner kept or written, the object the tenant's");
		fstat(fd, &st);
		/* that repair writes the record a missing one would need */
		check_record(f, fd, path, &st, !f->repair);
	} else {
		check_record(f, fd, path, &st, 0);
	}
	close(fd);
	if (S_ISDIR(st.st_mode)) {
		fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0) {
			left(f, path, "cannot open the directory: %s", strerror(errno));
			return;
		}
		walk(f, fd, path, len);
		close(fd);
	}
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every name in @dirfd (whose path is @path, of @len bytes in a buffer of
 * PATH_MAX * 2), read whole before any is changed, in name order. */
static void walk(struct fsck *f, int dirfd, char *path, size_t len)
{
	char **names = NULL;
	size_t n = 0, i;
	struct dirent *de;
	int fd = dup(dirfd);
	DIR *dp = fd < 0 ? NULL : fdopendir(fd);

	if (!dp) {
		left(f, path, "cannot read the directory: %s", strerror(errno));
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((de = readdir(dp))) {
		char **nn;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		nn = realloc(names, (n + 1) * sizeof(*nn));
		if (!nn || !(nn[n] = strdup(de->d_name))) {
			fprintf(stderr, "ringfence-fsck: out of memory\n");
			exit(EXIT_OPERATIONAL);
		}
		names = nn;
		n++;
	}
	closedir(dp);
	qsort(names, n, sizeof(*names), by_name);
	for (i = 0; i < n; i++) {
		size_t l = strlen(names[i]);

		if (len + 1 + l < PATH_MAX * 2) {
			path[len] = '/';
			memcpy(path + len + 1, names[i], l + 1);
			check_object(f, dirfd, names[i], path, len + 1 + l);
		} else {
			left(f, path, "a name below is too deep to name: %s", names[i]);
		}
		path[len] = '\0';
		free(names[i]);
	}
	free(names);
}

/* The process (not us) holding @st's directory open, or 0. */
static pid_t holder(const struct stat *src, char *comm, size_t commlen)
{
	DIR *proc = opendir("/proc"), *fds;
	struct dirent *p, *d;
	pid_t found = 0;

	if (!proc)
		return 0;
	while (!found && (p = readdir(proc))) {
		char dir[64], path[384];
		pid_t pid = (pid_t)atoi(p->d_name);

		if (pid <= 0 || pid == getpid())
			continue;
		snprintf(dir, sizeof(dir), "/proc/%d/fd", pid);
		fds = opendir(dir);
		if (!fds)
			continue;
		while (!found && (d = readdir(fds))) {
			struct stat st;

			if (d->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "%s/%s", dir, d->d_name);
			if (stat(path, &st) == 0 && st.st_dev == src->st_dev &&
			    st.st_ino == src->st_ino)
				found = pid;
		}
		closedir(fds);
		if (found) {
			FILE *c;

			snprintf(path, sizeof(path), "/proc/%d/comm", pid);
			c = fopen(path, "re");
			if (!c || !fgets(comm, (int)commlen, c))
				snprintf(comm, commlen, "?");
			comm[strcspn(comm, "\n")] = '\0';
			if (c)
				fclose(c);
		}
	}
	closedir(proc);
	return found;
}

/* @s, a user's (or with @group a group's) name or number, as an id in
 * *@id: 0, or -1 (said why). A user's name also gives its primary group,
 * a number the group of that number, in *@gid. */
static int id_of(const char *s, int group, uint32_t *id, gid_t *gid)
{
	struct passwd *pw = group ? NULL : getpwnam(s);
	struct group *gr = group ? getgrnam(s) : NULL;

	if (pw) {
		*id = pw->pw_uid;
		*gid = pw->pw_gid;
	} else if (gr) {
		*id = gr->gr_gid;
	} else if (s[0] && strspn(s, "0123456789") == strlen(s)) {
		*id = (uint32_t)strtoul(s, NULL, 10);
		if (!group)
			*gid = (gid_t)*id;
	} else {
		fprintf(stderr, "ringfence-fsck: --owner: no %s '%s'\n", group ? "group" : "user",
			s);
		return -1;
	}
	return 0;
}

/* "USER[:GROUP]" as ids: 0 or -1 (said why). */
static int parse_owner(const char *s, uid_t *uid, gid_t *gid)
{
	char user[256], *group;
	uint32_t u, g;

	snprintf(user, sizeof(user), "%s", s);
	group = strchr(user, ':');
	if (group)
		*group++ = '\0';
	if (id_of(user, 0, &u, gid) < 0 || (group && id_of(group, 1, &g, gid) < 0))
		return -1;
	*uid = u;
	if (group)
		*gid = g;
	return 0;
}

/* A dynamic tenant's uid from the broker's users_file: 0 or -1. */
static int dynamic_uid(const char *file, const char *name, uid_t *uid)
{
	char line[256], n[RF_POLICY_NAME_MAX];
	unsigned long id;
	FILE *fp = fopen(file, "re");
	int r = -1;

	if (!fp)
		return -1;
	while (fgets(line, sizeof(line), fp))
		if (line[0] != '#' && sscanf(line, "%63s %lu", n, &id) == 2 && !strcmp(n, name) &&
		    id <= UINT32_MAX) {
			*uid = (uid_t)id;
			r = 0;
		}
	fclose(fp);
	return r;
}

/*
 * The policy's tenant whose source is @src: refused (EXIT_OPERATIONAL)
 * when its mountpoint is mounted; else its user in @uid/@gid (and 1) when
 * the policy says who it is, or 0.
 */
static int policy_tenant(const char *file, int explicit, const struct stat *src, uid_t *uid,
			 gid_t *gid)
{
	struct rf_policy *p;
	char err[512];
	size_t i;
	int known = 0;

	if (!explicit && access(file, F_OK) < 0)
		return 0;
	if (rf_policy_load(file, &p, err, sizeof(err)) < 0) {
		fprintf(stderr, "ringfence-fsck: %s\n", err);
		return -EXIT_OPERATIONAL;
	}
	for (i = 0; i < p->nmounts; i++) {
		const struct rf_mount_policy *m = &p->mounts[i];
		struct stat st;

		if (!m->source[0] || stat(m->source, &st) < 0 || st.st_dev != src->st_dev ||
		    st.st_ino != src->st_ino)
			continue;
		if (rf_mountinfo_find(m->mountpoint, RF_FSTYPE, NULL) == 0) {
			fprintf(stderr,
				"ringfence-fsck: %s is the source of tenant %s (%s:%d), mounted on "
				"%s: stop it first (ringfencectl umount %s)\n",
				m->source, m->name, p->file, m->line, m->mountpoint, m->name);
			rf_policy_free(p);
			return -EXIT_OPERATIONAL;
		}
		if (m->ownership != RF_OWN_XATTR)
			fprintf(stderr,
				"ringfence-fsck: note: tenant %s (%s:%d) does not set ownership = "
				"xattr; its plugin does not read these records\n",
				m->name, p->file, m->line);
		if (!strcmp(m->user, RF_USER_DYNAMIC)) {
			if (dynamic_uid(p->users_file, m->name, uid) == 0) {
				*gid = (gid_t)*uid;
				known = 1;
			}
		} else {
			struct passwd *pw = getpwnam(m->user);
			struct group *gr = m->group[0] ? getgrnam(m->group) : NULL;

			if (pw) {
				*uid = pw->pw_uid;
				*gid = gr ? gr->gr_gid : pw->pw_gid;
				known = 1;
			}
		}
	}
	rf_policy_free(p);
	return known;
}

int main(int argc, char **argv)
{
	enum {
		OPT_ADOPT = 256,
		OPT_OWNER
	};
	static const struct option opts[] = {
		{ "no", no_argument, NULL, 'n' },
		{ "yes", no_argument, NULL, 'y' },
		{ "config", required_argument, NULL, 'c' },
		{ "adopt-owners", no_argument, NULL, OPT_ADOPT },
		{ "owner", required_argument, NULL, OPT_OWNER },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct fsck f = { 0 };
	const char *policy = DEFAULT_POLICY, *owner = NULL;
	char path[PATH_MAX * 2], comm[64];
	int c, explicit_policy = 0, known, fd, rc;
	struct rlimit rl;
	struct stat src;
	pid_t pid;

	while ((c = getopt_long(argc, argv, "nyc:vh", opts, NULL)) != -1) {
		switch (c) {
		case 'n':
			f.repair = 0;
			break;
		case 'y':
			f.repair = 1;
			break;
		case 'c':
			policy = optarg;
			explicit_policy = 1;
			break;
		case OPT_ADOPT:
			f.adopt = f.repair = 1;
			break;
		case OPT_OWNER:
			owner = optarg;
			break;
		case 'v':
			f.verbose = 1;
			break;
		case 'h':
			usage(stdout);
			return EXIT_CLEAN;
		default:
			usage(stderr);
			return EXIT_USAGE;
		}
	}
	if (argc - optind != 1) {
		usage(stderr);
		return EXIT_USAGE;
	}
	log_init("ringfence-fsck", 1, RF_LOG_INFO);
	f.root = geteuid() == 0;
	if (f.adopt && !f.root) {
		fprintf(stderr, "ringfence-fsck: --adopt-owners changes owners: run it as root\n");
		return EXIT_USAGE;
	}
	snprintf(path, sizeof(path), "%s", argv[optind]);
	if (strlen(path) > 1 && path[strlen(path) - 1] == '/')
		path[strlen(path) - 1] = '\0';
	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &src) < 0) {
		fprintf(stderr, "ringfence-fsck: %s: %s\n", path, strerror(errno));
		return EXIT_OPERATIONAL;
	}
	known = policy_tenant(policy, explicit_policy, &src, &f.uid, &f.gid);
	if (known < 0)
		return -known;
	pid = holder(&src, comm, sizeof(comm));
	if (pid) {
		fprintf(stderr,
			"ringfence-fsck: %s is open in process %d (%s), a worker serving it?: stop "
			"its tenant first\n",
			path, (int)pid, comm);
		return EXIT_OPERATIONAL;
	}
	if (owner) {
		if (parse_owner(owner, &f.uid, &f.gid) < 0)
			return EXIT_USAGE;
	} else if (!known) {
		if (f.adopt && src.st_uid == 0) {
			fprintf(stderr,
				"ringfence-fsck: --adopt-owners: whose is %s? name the tenant's "
				"user with --owner USER, or its policy with -c\n",
				path);
			return EXIT_USAGE;
		}
		f.uid = src.st_uid;
		f.gid = src.st_gid;
	}
	/* a descriptor per level of the tree */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	printf("ringfence-fsck: %s, the tenant's uid %u gid %u, %s\n", path, (unsigned int)f.uid,
	       (unsigned int)f.gid,
	       f.adopt	  ? "adopting owners"
	       : f.repair ? "repairing"
			  : "reporting only");
	/* the source itself: the broker hands one over without a record;
	 * adopting gives it one */
	f.objects++;
	check_record(&f, fd, path, &src, 1);
	walk(&f, fd, path, strlen(path));
	close(fd);
	printf("ringfence-fsck: %s: %lu objects, %lu version 1 records, %lu errors: %lu corrected, "
	       "%lu left (%lu leftover temporary directories)\n",
	       argv[optind], f.objects, f.v1, f.errors, f.corrected, f.left, f.leftovers);
	rc = (f.corrected ? EXIT_CORRECTED : 0) | (f.left ? EXIT_LEFT : 0);
	return rc;
}
