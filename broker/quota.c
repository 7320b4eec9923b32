// SPDX-License-Identifier: MIT
/*
 * A tenant's disk space and inode limits (disk_max, inodes_max), enforced
 * by the kernel on the file system its source lives on, or the tenant does
 * not start (as with memory_max):
 *
 *  - ext4 and XFS: a project quota. The source gets the tenant's uid as
 *    its project id, inherited by everything made in it (and given to what
 *    is there already), and the project its limits (quotactl_fd(2)). The
 *    file system must have project quotas on (ext4: mkfs.ext4 -O
 *    quota,project or tune2fs, mounted with prjquota; XFS: mounted with
 *    prjquota).
 *  - btrfs: a qgroup limit on the subvolume the source is the root of.
 *    Quotas must be on (btrfs quota enable); btrfs has no inode limit.
 *  - tmpfs: a user quota on the tenant's uid (Linux 6.6+, mounted with
 *    usrquota): in a tmpfs, the tenant's files are what its uid owns.
 *
 * Each needs the uid to be the tenant's alone (the policy refuses
 * shared_user with a disk limit); the broker needs CAP_SYS_ADMIN, which it
 * has. The limits stay with the project, qgroup or uid after the tenant
 * stops, and are set again at each start.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <linux/btrfs.h>
#include <linux/fs.h>
#include <linux/magic.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/quota.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "broker.h"
#include "log.h"

#ifndef XFS_SUPER_MAGIC
#define XFS_SUPER_MAGIC 0x58465342
#endif
#define RF_BTRFS_SUBVOL_ROOT_INO 256 /* BTRFS_FIRST_FREE_OBJECTID */

static int quotactl_fd(int fd, int cmd, uint32_t id, void *addr)
{
	return (int)syscall(SYS_quotactl_fd, fd, (unsigned int)cmd, id, addr);
}

/* Say why the limit cannot be had and refuse the tenant. */
static int refuse(struct rf_tenant *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int refuse(struct rf_tenant *t, const char *fmt, ...)
{
	va_list ap;
	int n;

	n = snprintf(t->fail_reason, sizeof(t->fail_reason), "disk_max/inodes_max: ");
	va_start(ap, fmt);
	vsnprintf(t->fail_reason + n, sizeof(t->fail_reason) - (size_t)n, fmt, ap);
	va_end(ap);
	log_warnx("%s: %s", t->pol.name, t->fail_reason);
	return -EOPNOTSUPP;
}

static int set_quota(int fd, int type, uint32_t id, const struct rf_tenant *t)
{
	struct if_dqblk q;

	memset(&q, 0, sizeof(q));
	/* in QIF_DQBLKSIZE (1 KiB) units, rounded up */
	q.dqb_bhardlimit = (t->pol.disk_max + 1023) / 1024;
	q.dqb_ihardlimit = t->pol.inodes_max;
	q.dqb_valid = QIF_BLIMITS | QIF_ILIMITS;
	return quotactl_fd(fd, QCMD(Q_SETQUOTA, type), id, &q) < 0 ? -errno : 0;
}

/* Give a file or directory the project id; what cannot be opened (a
 * symlink, a fifo) keeps its own and counts to whatever project it has. */
static uint32_t walk_projid;

static int set_projid(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	struct fsxattr fx;
	int fd;

	(void)ftw;
	if (flag != FTW_F && flag != FTW_D && flag != FTW_DP)
		return 0;
	if (!S_ISREG(st->st_mode) && !S_ISDIR(st->st_mode))
		return 0;
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return 0;
	if (ioctl(fd, FS_IOC_FSGETXATTR, &fx) == 0 && fx.fsx_projid != walk_projid) {
		fx.fsx_projid = walk_projid;
		if (S_ISDIR(st->st_mode))
			fx.fsx_xflags |= FS_XFLAG_PROJINHERIT;
		if (ioctl(fd, FS_IOC_FSSETXATTR, &fx) < 0) {
			int e = errno;

			close(fd);
			errno = e;
			return -1;
		}
	}
	close(fd);
	return 0;
}

static int project(struct rf_tenant *t, int fd, const char *fs)
{
	struct if_dqinfo info;
	int r;

	if (quotactl_fd(fd, QCMD(Q_GETINFO, PRJQUOTA), 0, &info) < 0)
		return refuse(t,
			      "source %s is on %s without project quotas (%s): make the file "
			      "system with them (ext4: mkfs.ext4 -O quota,project, or tune2fs "
			      "-O project,quota) and mount it with prjquota",
			      t->pol.source, fs, strerror(errno));
	walk_projid = (uint32_t)t->uid;
	if (nftw(t->pol.source, set_projid, 16, FTW_PHYS | FTW_MOUNT) != 0)
		return refuse(t, "give %s project id %u: %s", t->pol.source, (unsigned int)t->uid,
			      strerror(errno));
	r = set_quota(fd, PRJQUOTA, (uint32_t)t->uid, t);
	if (r < 0)
		return refuse(t, "set the quota of project %u on %s: %s", (unsigned int)t->uid, fs,
			      strerror(-r));
	snprintf(t->disk_mechanism, sizeof(t->disk_mechanism), "prjquota(%s)", fs);
	return 0;
}

static int qgroup(struct rf_tenant *t, int fd, const struct stat *st)
{
	struct btrfs_ioctl_ino_lookup_args look;
	struct btrfs_ioctl_qgroup_limit_args lim;

	if (t->pol.inodes_max)
		return refuse(t,
			      "source %s is on btrfs, which has no inode limit: drop "
			      "inodes_max (disk_max counts the files' metadata too)",
			      t->pol.source);
	if (st->st_ino != RF_BTRFS_SUBVOL_ROOT_INO)
		return refuse(t,
			      "source %s is on btrfs but not a subvolume: make it one (btrfs "
			      "subvolume create) to limit it",
			      t->pol.source);
	memset(&look, 0, sizeof(look));
	look.objectid = RF_BTRFS_SUBVOL_ROOT_INO;
	if (ioctl(fd, BTRFS_IOC_INO_LOOKUP, &look) < 0)
		return refuse(t, "find the subvolume of %s: %s", t->pol.source, strerror(errno));
	memset(&lim, 0, sizeof(lim));
	lim.qgroupid = look.treeid; /* level 0: the subvolume's own qgroup */
	lim.lim.flags = BTRFS_QGROUP_LIMIT_MAX_RFER;
	lim.lim.max_rfer = t->pol.disk_max;
	if (ioctl(fd, BTRFS_IOC_QGROUP_LIMIT, &lim) < 0)
		return refuse(t, "limit the qgroup of %s: %s%s", t->pol.source, strerror(errno),
			      errno == ENOTCONN ? " (quotas are off: btrfs quota enable)" : "");
	snprintf(t->disk_mechanism, sizeof(t->disk_mechanism), "qgroup(btrfs)");
	return 0;
}

static int user_quota(struct rf_tenant *t, int fd)
{
	struct if_dqinfo info;
	int r;

	if (quotactl_fd(fd, QCMD(Q_GETINFO, USRQUOTA), 0, &info) < 0)
		return refuse(t,
			      "source %s is on a tmpfs without user quotas (%s): mount it with "
			      "usrquota (Linux 6.6+, built with CONFIG_TMPFS_QUOTA)",
			      t->pol.source, strerror(errno));
	r = set_quota(fd, USRQUOTA, (uint32_t)t->uid, t);
	if (r < 0)
		return refuse(t, "set the quota of uid %u on the tmpfs: %s", (unsigned int)t->uid,
			      strerror(-r));
	snprintf(t->disk_mechanism, sizeof(t->disk_mechanism), "usrquota(tmpfs)");
	return 0;
}

static bool writable_source(const struct rf_mount_policy *m)
{
	return m->source[0] && !m->read_only;
}

/* Which file system @path is on, in @id: btrfs's own id (each subvolume
 * has a device number of its own, and all share the space), else the
 * device number; its statfs in @sf. 0, or -1. */
static int fs_of(const char *path, uint8_t id[BTRFS_FSID_SIZE], struct statfs *sf)
{
	struct btrfs_ioctl_fs_info_args info;
	struct stat st;
	int fd, r = -1;

	memset(id, 0, BTRFS_FSID_SIZE);
	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (fstatfs(fd, sf) < 0) {
		close(fd);
		return -1;
	}
	if ((unsigned long)sf->f_type == BTRFS_SUPER_MAGIC) {
		memset(&info, 0, sizeof(info));
		if (ioctl(fd, BTRFS_IOC_FS_INFO, &info) == 0) {
			memcpy(id, info.fsid, BTRFS_FSID_SIZE);
			r = 0;
		}
	} else if (fstat(fd, &st) == 0) {
		memcpy(id, &st.st_dev, sizeof(st.st_dev));
		r = 0;
	}
	close(fd);
	return r;
}

int rf_quota_shared_problem(const struct rf_policy *p, const struct rf_mount_policy *m, char *msg,
			    size_t len)
{
	uint8_t fs[BTRFS_FSID_SIZE], ofs[BTRFS_FSID_SIZE];
	struct statfs sf, osf;
	const char *missing;
	size_t i;

	if (!writable_source(m) || m->disk_shared || fs_of(m->source, fs, &sf) < 0)
		return 0; /* (a source that is not there: the tenant says so at start) */
	/* btrfs has no inode table to run out of (f_files 0) */
	if (!m->disk_max)
		missing = sf.f_files ? "disk_max and inodes_max" : "disk_max";
	else if (!m->inodes_max && sf.f_files)
		missing = "inodes_max";
	else
		return 0;
	for (i = 0; i < p->nmounts; i++) {
		const struct rf_mount_policy *o = &p->mounts[i];

		if (o == m || !strcmp(o->name, m->name) || !writable_source(o) ||
		    fs_of(o->source, ofs, &osf) < 0 || memcmp(fs, ofs, sizeof(fs)))
			continue;
		snprintf(msg, len,
			 "source %s is on the file system of tenant %s's source %s, writable and "
			 "without %s: it could fill it, and %s's writes would fail with ENOSPC; "
			 "set %s, read_only = yes, or disk_shared = yes to allow it",
			 m->source, o->name, o->source, missing, o->name, missing);
		return 1;
	}
	return 0;
}

int rf_quota_setup(struct rf_tenant *t)
{
	char msg[3 * RF_POLICY_PATH_MAX + 256];
	struct statfs sf;
	struct stat st;
	int fd, r;

	snprintf(t->disk_mechanism, sizeof(t->disk_mechanism), "none");
	if (rf_quota_shared_problem(t->b->policy, &t->pol, msg, sizeof(msg)))
		return refuse(t, "%s", msg);
	if (!t->pol.disk_max && !t->pol.inodes_max)
		return 0;
	fd = open(t->pol.source, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || fstatfs(fd, &sf) < 0 || fstat(fd, &st) < 0) {
		r = refuse(t, "source %s: %s", t->pol.source, strerror(errno));
		if (fd >= 0)
			close(fd);
		return r;
	}
	switch ((unsigned long)sf.f_type) {
	case EXT4_SUPER_MAGIC:
		r = project(t, fd, "ext4");
		break;
	case XFS_SUPER_MAGIC:
		r = project(t, fd, "xfs");
		break;
	case BTRFS_SUPER_MAGIC:
		r = qgroup(t, fd, &st);
		break;
	case TMPFS_MAGIC:
		r = user_quota(t, fd);
		break;
	default:
		r = refuse(t,
			   "source %s is on a file system (magic 0x%lx) ringfence cannot limit: "
			   "ext4 or XFS with project quotas, a btrfs subvolume with quotas, or a "
			   "tmpfs with usrquota",
			   t->pol.source, (unsigned long)sf.f_type);
	}
	close(fd);
	if (r == 0)
		log_info("%s: disk_max %llu, inodes_max %u through %s", t->pol.name,
			 (unsigned long long)t->pol.disk_max, t->pol.inodes_max, t->disk_mechanism);
	return r;
}
