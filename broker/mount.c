// SPDX-License-Identifier: MIT
/* Mount, FUSE_INIT, abort and unmount: the broker's part of the kernel protocol. */
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "broker.h"
#include "log.h"
#include "mountinfo.h"

#define RF_INIT_TIMEOUT_MS 10000
#define RF_UMOUNT_WAIT_MS 2000

uint32_t rf_possible_cpus(void)
{
	char buf[256];
	uint32_t n = 0;
	char *p;
	int fd;
	ssize_t len;

	/* The kernel makes one FUSE queue per *possible* CPU. */
	fd = open("/sys/devices/system/cpu/possible", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		fatal("open /sys/devices/system/cpu/possible");
	len = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (len <= 0)
		fatalx("cannot read /sys/devices/system/cpu/possible");
	buf[len] = '\0';
	for (p = buf; *p && *p != '\n';) {
		unsigned long a = strtoul(p, &p, 10), b = a;

		if (*p == '-')
			b = strtoul(p + 1, &p, 10);
		if (b < a || b > 65535)
			fatalx("bad /sys/devices/system/cpu/possible: %s", buf);
		n += (uint32_t)(b - a + 1);
		if (*p == ',')
			p++;
		else if (*p && *p != '\n')
			fatalx("bad /sys/devices/system/cpu/possible: %s", buf);
	}
	if (n == 0)
		fatalx("no possible CPUs?");
	return n;
}

static uint32_t read_max_pages_limit(void)
{
	char buf[32];
	ssize_t n;
	int fd;

	fd = open("/proc/sys/fs/fuse/max_pages_limit", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 256; /* the kernel's default before the sysctl existed */
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 256;
	buf[n] = '\0';
	return (uint32_t)strtoul(buf, NULL, 10);
}

/* Read and answer FUSE_INIT on the fresh connection. */
static int answer_init(struct rf_tenant *t)
{
	struct {
		struct fuse_out_header h;
		struct fuse_init_out o;
	} reply;
	union {
		struct fuse_in_header h;
		char buf[FUSE_MIN_READ_BUFFER * 2];
	} req;
	struct pollfd pfd = { .fd = t->fuse_fd, .events = POLLIN };
	const struct fuse_init_in *in;
	ssize_t n;
	int r;

	r = poll(&pfd, 1, RF_INIT_TIMEOUT_MS);
	if (r <= 0) {
		log_warnx("%s: no FUSE_INIT from the kernel within %d ms", t->pol.name,
			  RF_INIT_TIMEOUT_MS);
		return r < 0 ? -errno : -ETIMEDOUT;
	}
	n = read(t->fuse_fd, &req, sizeof(req));
	if (n < 0) {
		r = -errno;
		log_warn("%s: read FUSE_INIT", t->pol.name);
		return r;
	}
	if ((size_t)n < sizeof(req.h) + 16 || req.h.len != n || req.h.opcode != FUSE_INIT) {
		log_warnx("%s: expected FUSE_INIT, got opcode %u len %zd", t->pol.name,
			  req.h.opcode, n);
		return -EPROTO;
	}
	/* Older kernels send the 16-byte INIT; pad what is missing with zeros. */
	{
		static struct fuse_init_in full;

		memset(&full, 0, sizeof(full));
		memcpy(&full, req.buf + sizeof(req.h),
		       (size_t)n - sizeof(req.h) < sizeof(full) ? (size_t)n - sizeof(req.h)
								: sizeof(full));
		in = &full;
	}
	r = rf_init_negotiate(in, &t->pol, read_max_pages_limit(), &reply.o, &t->conn);
	if (r == -EPROTO) {
		log_warnx("%s: %s", t->pol.name, t->conn.why);
		return r;
	}
	if (r < 0) {
		/* Refuse: the kernel then fails the mount's requests. */
		struct fuse_out_header eh = { sizeof(eh), -EPROTO, req.h.unique };

		log_warnx("%s: %s", t->pol.name, t->conn.why);
		snprintf(t->fail_reason, sizeof(t->fail_reason), "%s", t->conn.why);
		if (write(t->fuse_fd, &eh, sizeof(eh)) < 0)
			log_warn("%s: write INIT error", t->pol.name);
		return r;
	}
	reply.h.len = sizeof(reply);
	reply.h.error = 0;
	reply.h.unique = req.h.unique;
	if (write(t->fuse_fd, &reply, sizeof(reply)) != (ssize_t)sizeof(reply)) {
		r = -errno;
		log_warn("%s: write FUSE_INIT reply", t->pol.name);
		return r;
	}
	log_info("%s: FUSE 7.%u (kernel 7.%u), max_write %u, max_pages %u, %s", t->pol.name,
		 t->conn.minor, in->minor, t->conn.max_write, t->conn.max_pages, t->conn.why);
	if (t->conn.kernel_timeout)
		log_info("%s: the kernel aborts the connection if a request waits %u s "
			 "(FUSE_REQUEST_TIMEOUT, behind the watchdog's request_timeout)",
			 t->pol.name, t->conn.kernel_timeout);
	return 0;
}

/*
 * The connection's id under /sys/fs/fuse/connections is the superblock's
 * device number as the kernel encodes it; mountinfo gives it without a
 * FUSE request. The last matching line is the newest mount on that path.
 */
static int mount_conn_id(const char *mountpoint, uint32_t *id)
{
	return rf_mountinfo_find(mountpoint, RF_FSTYPE, id);
}

/* The abort knobs live in fusectl; mount it where the host has not. */
static void ensure_fusectl(void)
{
	struct statfs sf;

	/* no directory (no fuse module): nothing to do; mounted: done */
	if (statfs("/sys/fs/fuse/connections", &sf) < 0 ||
	    sf.f_type == 0x65735543 /* FUSECTL_SUPER_MAGIC */)
		return;
	if (mount("fusectl", "/sys/fs/fuse/connections", "fusectl",
		  MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
		log_warn("mount fusectl on /sys/fs/fuse/connections");
	else
		log_info("mounted fusectl on /sys/fs/fuse/connections (to abort dead connections)");
}

/* A ringfence mount left on our mountpoint by a broker that died: abort its
 * connection (its clients get errors) and detach it. */
static void clean_stale(struct rf_tenant *t)
{
	uint32_t id;

	while (mount_conn_id(t->pol.mountpoint, &id) == 0) {
		log_warnx("%s: a stale ringfence mount is on %s (a previous broker died?); "
			  "aborting its connection and detaching it",
			  t->pol.name, t->pol.mountpoint);
		t->conn_id = id;
		rf_mount_abort(t);
		t->conn_id = 0;
		if (umount2(t->pol.mountpoint, MNT_DETACH) < 0) {
			log_warn("%s: detach %s", t->pol.name, t->pol.mountpoint);
			return;
		}
	}
}

int rf_mount_attach(struct rf_tenant *t)
{
	char opts[256];
	struct stat st;
	unsigned long flags = MS_NOSUID | MS_NODEV;
	int r;

	ensure_fusectl();
	clean_stale(t);
	if (stat(t->pol.mountpoint, &st) < 0) {
		r = -errno;
		log_warn("%s: mountpoint %s", t->pol.name, t->pol.mountpoint);
		return r;
	}
	if (!S_ISDIR(st.st_mode)) {
		log_warnx("%s: mountpoint %s is not a directory", t->pol.name, t->pol.mountpoint);
		return -ENOTDIR;
	}
	/* The kernel's mount table names the real path, which is how the
	 * broker finds its mounts again; and a symlink on the way could be
	 * swapped under us. */
	{
		char real[PATH_MAX];

		if (!realpath(t->pol.mountpoint, real)) {
			r = -errno;
			log_warn("%s: mountpoint %s", t->pol.name, t->pol.mountpoint);
			return r;
		}
		if (strcmp(real, t->pol.mountpoint)) {
			snprintf(t->fail_reason, sizeof(t->fail_reason),
				 "mountpoint %.400s resolves to %.400s (a symlink on the way); "
				 "the policy must name the real path",
				 t->pol.mountpoint, real);
			log_warnx("%s: %s", t->pol.name, t->fail_reason);
			return -ELOOP;
		}
	}
	/* O_NONBLOCK: the worker's ring READ on this file must get -EAGAIN
	 * and arm poll rather than block a thread inside the kernel. */
	t->fuse_fd = open("/dev/fuse", O_RDWR | O_CLOEXEC | O_NONBLOCK);
	if (t->fuse_fd < 0) {
		r = -errno;
		log_warn("%s: open /dev/fuse", t->pol.name);
		return r;
	}
	snprintf(opts, sizeof(opts), "fd=%d,rootmode=%o,user_id=0,group_id=0%s%s", t->fuse_fd,
		 S_IFDIR, t->pol.default_permissions ? ",default_permissions" : "",
		 t->pol.allow_other ? ",allow_other" : "");
	if (t->pol.read_only)
		flags |= MS_RDONLY;
	{
		char source[128];

		snprintf(source, sizeof(source), "ringfence:%s", t->pol.name);
		if (mount(source, t->pol.mountpoint, RF_FSTYPE, flags, opts) < 0) {
			r = -errno;
			log_warn("%s: mount %s", t->pol.name, t->pol.mountpoint);
			goto close_fd;
		}
	}
	t->mounted = true;
	/* Never stat the mountpoint here: that would be a FUSE request on a
	 * connection whose INIT nobody has answered yet. */
	r = mount_conn_id(t->pol.mountpoint, &t->conn_id);
	if (r < 0)
		log_warnx("%s: cannot find the new mount in /proc/self/mountinfo; "
			  "a dead worker cannot be aborted early",
			  t->pol.name);
	r = answer_init(t);
	if (r < 0)
		goto unmount;
	return 0;
unmount:
	rf_mount_abort(t);
	umount2(t->pol.mountpoint, MNT_DETACH);
	t->mounted = false;
close_fd:
	close(t->fuse_fd);
	t->fuse_fd = -1;
	return r;
}

int rf_mount_clone(struct rf_tenant *t)
{
	uint32_t src = (uint32_t)t->fuse_fd;
	int fd, r;

	/* O_NONBLOCK as the original (see rf_mount_attach) */
	fd = open("/dev/fuse", O_RDWR | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0 || ioctl(fd, FUSE_DEV_IOC_CLONE, &src) < 0) {
		r = -errno;
		log_warn("%s: clone /dev/fuse", t->pol.name);
		if (fd >= 0)
			close(fd);
		return r;
	}
	return fd;
}

bool rf_mount_connected(const struct rf_tenant *t)
{
	/* /dev/fuse polls EPOLLERR once the connection has ended (aborted,
	 * or its last server gone), whatever a worker says */
	struct pollfd pfd = { .fd = t->fuse_fd, .events = POLLIN | POLLOUT };

	if (t->fuse_fd < 0)
		return false;
	if (poll(&pfd, 1, 0) < 0)
		return true; /* cannot tell: no reason to give up */
	return !(pfd.revents & (POLLERR | POLLNVAL));
}

int rf_mount_fusectl(const struct rf_tenant *t, const char *file, int flags, char *path, size_t len)
{
	int fd;

	snprintf(path, len, "/sys/fs/fuse/connections/%u/%s", t->conn_id, file);
	if (!t->conn_id)
		return -ENOENT;
	fd = open(path, flags | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

int rf_mount_abort(struct rf_tenant *t)
{
	char path[128];
	int fd, r = 0;

	fd = rf_mount_fusectl(t, "abort", O_WRONLY, path, sizeof(path));
	if (fd < 0)
		return fd;
	if (write(fd, "1", 1) != 1)
		r = -errno;
	close(fd);
	return r;
}

void rf_mount_detach(struct rf_tenant *t)
{
	if (t->mounted) {
		int i, r = -1;

		/* umount2, not umount(8): that one stats the mountpoint first and
		 * would wait on a connection nobody serves. A busy mount gets
		 * RF_UMOUNT_WAIT_MS to become idle, then is detached lazily. */
		for (i = 0; i < RF_UMOUNT_WAIT_MS / 100; i++) {
			r = umount2(t->pol.mountpoint, 0);
			if (r == 0 || errno != EBUSY)
				break;
			usleep(100 * 1000);
		}
		if (r < 0) {
			if (errno == EBUSY)
				log_info("%s: %s still busy after %d ms; detaching it lazily",
					 t->pol.name, t->pol.mountpoint, RF_UMOUNT_WAIT_MS);
			else
				log_warn("%s: umount %s", t->pol.name, t->pol.mountpoint);
			rf_mount_abort(t);
			if (umount2(t->pol.mountpoint, MNT_DETACH) < 0 && errno != EINVAL)
				log_warn("%s: umount -l %s", t->pol.name, t->pol.mountpoint);
		}
		t->mounted = false;
	}
	if (t->fuse_fd >= 0) {
		close(t->fuse_fd);
		t->fuse_fd = -1;
	}
}
