// SPDX-License-Identifier: MIT
/*
 * ringfence-plugin-check: mount a plugin as a tenant of a broker of its
 * own, with the whole sandbox, in a scratch directory; make every kind of
 * file system call against it (the POSIX operations and the data checks
 * the project's suites make, without their checks of a backing store);
 * and say, per check, whether it worked, which FUSE requests it made,
 * whether the plugin answered ENOSYS, and whether the worker died (with
 * the system call seccomp refused). With --learn the broker runs with
 * --learn-seccomp on top of worker.policy alone, and what the plugin's
 * calls needed beyond it is printed as a seccomp.policy.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "mountinfo.h"
#include "policy.h"
#include "status.h"

#define TENANT "check"
#define FUSECTL "/sys/fs/fuse/connections"

static struct {
	char dir[PATH_MAX], mnt[PATH_MAX + 8], sock[PATH_MAX + 16], log[PATH_MAX + 16];
	pid_t broker;
	bool fusectl_was_mounted, keep, learn, verbose;
	FILE *out; /* the report: stdout, or stderr when stdout takes the policy */
	off_t log_seen;
	unsigned int ok, enosys, errors, deaths, wrong;
} C;

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ringfence-plugin-check [-v] [--learn] [--seccomp-policy FILE]\n"
		"                              [--transport auto|uring|classic] [--options "
		"STRING]\n"
		"                              [-o KEY=VALUE]... [--users-file FILE]\n"
		"                              [--read-only [--path REL]...] [--keep] PLUGIN.so\n"
		"       ringfence-plugin-check [options above] [--source DIR]\n"
		"                              --program [--program-args STRING] PROGRAM\n"
		"\n"
		"Mounts PLUGIN.so (or a libfuse 3 PROGRAM) as a tenant of a broker of its\n"
		"own, with the whole sandbox, in a scratch directory, makes every kind of\n"
		"file system call against it, and\n"
		"reports per check: ok, the errno, ENOSYS from the plugin, a worker death and\n"
		"the system call seccomp refused; then a summary.\n"
		"\n"
		"  --learn            the worker runs worker.policy (a program: program.policy)\n"
		"                     with every other call let through and logged; prints a\n"
		"                     seccomp.policy for it on stdout (each call with the\n"
		"                     operations that made it) and the report on stderr\n"
		"      --seccomp-policy FILE\n"
		"                     the tenant's allowlist (default: the broker's)\n"
		"      --transport T  the policy's transport (default auto)\n"
		"      --options S    the policy's options string for the plugin\n"
		"  -o KEY=VALUE       another line for the tenant's policy section\n"
		"      --users-file FILE\n"
		"                     the host's users_file (default " RF_DEFAULT_USERS_FILE ");\n"
		"                     the scratch tenant takes none of its dynamic users\n"
		"      --read-only    a read-only mount, checked by reading what the plugin\n"
		"                     shows: up to 64 entries, 3 directories deep, or\n"
		"      --path REL     this entry (relative to the mount; repeatable)\n"
		"      --program      the argument is a libfuse 3 program (program =), not a\n"
		"                     plugin\n"
		"      --program-args S\n"
		"                     its arguments (program_args =; {mountpoint} places the\n"
		"                     mount point)\n"
		"      --source DIR   the tenant's source (default: an empty scratch directory)\n"
		"      --keep         keep the scratch directory (policy, broker log)\n"
		"  -v, --verbose      name the FUSE requests of every check\n"
		"  -h, --help         this text\n"
		"\n"
		"Needs root (it runs a broker). Exit status: 0 when no check killed the\n"
		"worker or read back wrong data, 1 otherwise, 2 for a usage error.\n");
}

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

static void stop(void);

static void die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "ringfence-plugin-check: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	stop();
	exit(1);
}

/* ---- the broker ---- */

/* One control command; its answer in @buf ("" when unreachable). */
static void ctl(const char *cmd, char *buf, size_t len)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	size_t used = 0;
	ssize_t n;
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	buf[0] = '\0';
	if (strlen(C.sock) >= sizeof(a.sun_path)) {
		if (fd >= 0)
			close(fd);
		return;
	}
	memcpy(a.sun_path, C.sock, strlen(C.sock) + 1);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		if (fd >= 0)
			close(fd);
		return;
	}
	if (write(fd, cmd, strlen(cmd)) == (ssize_t)strlen(cmd) && write(fd, "\n", 1) == 1)
		while (used + 1 < len && (n = read(fd, buf + used, len - used - 1)) > 0)
			used += (size_t)n;
	buf[used] = '\0';
	close(fd);
}

/* The value of " KEY=" in a status line, to the next blank, or "". */
static void field(const char *status, const char *key, char *val, size_t len)
{
	(void)rf_status_field(status, key, " \n", val, len);
}

static long status_num(const char *key)
{
	char buf[8192], v[64];

	ctl("status " TENANT, buf, sizeof(buf));
	field(buf, key, v, sizeof(v));
	return v[0] ? strtol(v, NULL, 10) : -1;
}

static void stop(void)
{
	int i, status;

	if (C.broker > 0) {
		kill(C.broker, SIGTERM);
		for (i = 0; i < 100 && waitpid(C.broker, &status, WNOHANG) == 0; i++)
			usleep(100000);
		if (i == 100) {
			kill(C.broker, SIGKILL);
			waitpid(C.broker, &status, 0);
		}
		C.broker = 0;
	}
	if (C.mnt[0])
		umount2(C.mnt, MNT_DETACH);
	if (!C.fusectl_was_mounted)
		umount2(FUSECTL, 0);
	if (C.dir[0] && !C.keep) {
		char cmd[PATH_MAX + 64];

		snprintf(cmd, sizeof(cmd), "rm -rf --one-file-system '%s'", C.dir);
		if (system(cmd) != 0)
			fprintf(stderr, "ringfence-plugin-check: could not remove %s\n", C.dir);
	} else if (C.dir[0]) {
		fprintf(stderr, "ringfence-plugin-check: kept %s\n", C.dir);
	}
	C.dir[0] = '\0';
}

static void on_signal(int sig)
{
	(void)sig;
	stop();
	_exit(130);
}

/* Lines of the broker's log written since the last call, for @each. */
static void new_log_lines(void (*each)(const char *line, void *arg), void *arg)
{
	char line[2048];
	FILE *f = fopen(C.log, "re");

	if (!f)
		return;
	if (fseeko(f, C.log_seen, SEEK_SET) == 0)
		while (fgets(line, sizeof(line), f))
			each(line, arg);
	C.log_seen = ftello(f);
	fclose(f);
}

static void start_broker(const char *self_dir, const char *policy)
{
	char broker[PATH_MAX + 16], buf[8192], v[512];
	int fd, i;

	snprintf(broker, sizeof(broker), "%s/ringfenced", self_dir);
	C.broker = fork();
	if (C.broker < 0)
		die("fork: %s", strerror(errno));
	if (C.broker == 0) {
		fd = open(C.log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (fd < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0)
			_exit(127);
		if (C.learn)
			execl(broker, broker, "-f", "--learn-seccomp", "-c", policy, (char *)NULL);
		else
			execl(broker, broker, "-f", "-c", policy, (char *)NULL);
		_exit(127);
	}
	for (i = 0; i < 300; i++) {
		int status;

		ctl("status " TENANT, buf, sizeof(buf));
		field(buf, "state", v, sizeof(v));
		if (!strcmp(v, "running"))
			return;
		if (!strcmp(v, "failed")) {
			char why[1024];

			/* the last field, which runs to the line's end */
			(void)rf_status_field(buf, "reason", "\n", why, sizeof(why));
			die("the tenant did not start: %s%s%s", why[0] ? why : "no reason given",
			    C.keep ? "; broker log: " : " (--keep keeps the broker's log)",
			    C.keep ? C.log : "");
		}
		if (waitpid(C.broker, &status, WNOHANG) == C.broker) {
			C.broker = 0;
			C.keep = true;
			die("the broker exited at start; its log: %s", C.log);
		}
		usleep(100000);
	}
	C.keep = true;
	die("the tenant was not running after 30 s; broker log: %s", C.log);
}

/* ---- the checks ---- */

/* What the worker counted, to tell which requests a check made: stats'
 * "  op NAME COUNT" lines, taken as the broker names them. */
#define COUNTS_MAX 64
struct counts {
	struct {
		char name[24];
		unsigned long long n;
	} op[COUNTS_MAX];
	size_t nops;
	unsigned long long enosys;
	long crashes;
	bool failed;
};

/* a number after @pat in @buf, 0 if @pat is not there */
static unsigned long long after(const char *buf, const char *pat)
{
	const char *p = strstr(buf, pat);

	return p ? strtoull(p + strlen(pat), NULL, 10) : 0;
}

static void counts(struct counts *c)
{
	char buf[16384], v[32];
	const char *line;

	ctl("stats " TENANT, buf, sizeof(buf));
	c->nops = 0;
	for (line = buf; line && *line; line = strchr(line, '\n'), line = line ? line + 1 : NULL)
		if (c->nops < COUNTS_MAX &&
		    sscanf(line, "  op %23s %llu", c->op[c->nops].name, &c->op[c->nops].n) == 2)
			c->nops++;
	c->enosys = after(buf, "  errno ENOSYS ");
	field(buf, "crashes", v, sizeof(v));
	c->crashes = v[0] ? strtol(v, NULL, 10) : -1;
	field(buf, "state", v, sizeof(v));
	c->failed = !strcmp(v, "failed");
}

/* How often @a counted @name (0: not at all). */
static unsigned long long count_of(const struct counts *a, const char *name)
{
	size_t i;

	for (i = 0; i < a->nops; i++)
		if (!strcmp(a->op[i].name, name))
			return a->op[i].n;
	return 0;
}

/* After a death: a fresh tenant for the next check. */
static void restart(void)
{
	char buf[8192], v[64];
	int i;

	ctl("restart " TENANT, buf, sizeof(buf));
	for (i = 0; i < 100; i++) {
		ctl("status " TENANT, buf, sizeof(buf));
		field(buf, "state", v, sizeof(v));
		if (!strcmp(v, "running"))
			return;
		usleep(100000);
	}
	die("the tenant did not run again after a restart (broker log: %s)", C.log);
}

struct denial {
	char what[512];
};

static void find_learned(const char *line, void *arg);

/* a line of the broker's log: a seccomp denial for @arg, or what a
 * learning worker let through */
static void find_denial(const char *line, void *arg)
{
	struct denial *d = arg;
	const char *p = strstr(line, "seccomp: ");

	find_learned(line, NULL);
	if (p && !d->what[0]) {
		const char *end = strstr(p, " denied");

		if (end)
			snprintf(d->what, sizeof(d->what), "%.*s", (int)(end + 7 - (p + 9)), p + 9);
	}
}

/* Each check: a name (the FUSE operations it is about) and what it does;
 * it returns 0, an errno, or -1 for data that came back wrong. */
struct check {
	const char *name;
	int (*fn)(void);
};

static char P[2 * PATH_MAX + 80]; /* scratch paths on the mount */

static const char *at(const char *rel)
{
	snprintf(P, sizeof(P), "%s/%s", C.mnt, rel);
	return P;
}

#define TRY(x)                        \
	do {                          \
		if ((x) < 0)          \
			return errno; \
	} while (0)

static int c_statfs(void)
{
	struct statvfs s;

	TRY(statvfs(C.mnt, &s));
	return 0;
}

static int c_getattr(void)
{
	struct stat st;

	TRY(stat(C.mnt, &st));
	return S_ISDIR(st.st_mode) ? 0 : -1;
}

static int c_mkdir(void)
{
	struct stat st;

	TRY(mkdir(at("d"), 0755));
	TRY(stat(at("d"), &st));
	return S_ISDIR(st.st_mode) ? 0 : -1;
}

static void pattern(char *buf, size_t len, unsigned int seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		buf[i] = (char)((i * 31 + seed * 7 + (i >> 12)) & 0xff);
}

static int write_file(const char *rel, int flags, size_t len, unsigned int seed)
{
	static char buf[1 << 20];
	int fd = open(at(rel), flags, 0644), e = 0;

	if (fd < 0)
		return errno;
	pattern(buf, len, seed);
	if (pwrite(fd, buf, len, 0) != (ssize_t)len)
		e = errno ? errno : EIO;
	if (close(fd) < 0 && !e)
		e = errno;
	return e;
}

static int read_file(const char *rel, int flags, size_t len, unsigned int seed)
{
	static char want[1 << 20];
	static char got[1 << 20] __attribute__((aligned(4096)));
	int fd = open(at(rel), flags), e = 0;
	ssize_t n;

	if (fd < 0)
		return errno;
	n = pread(fd, got, len, 0);
	if (n < 0)
		e = errno;
	close(fd);
	if (e)
		return e;
	pattern(want, len, seed);
	return (size_t)n == len && !memcmp(want, got, len) ? 0 : -1;
}

static int c_create(void)
{
	return write_file("d/f", O_CREAT | O_EXCL | O_WRONLY, 65536, 1);
}

static int c_read(void)
{
	return read_file("d/f", O_RDONLY, 65536, 1);
}

static int c_lookup(void)
{
	struct stat st;

	TRY(stat(at("d/f"), &st));
	return S_ISREG(st.st_mode) && st.st_size == 65536 ? 0 : -1;
}

static int c_readdir(void)
{
	DIR *d = opendir(at("d"));
	struct dirent *e;
	int found = 0;

	if (!d)
		return errno;
	errno = 0;
	while ((e = readdir(d)))
		found |= !strcmp(e->d_name, "f");
	if (errno) {
		int r = errno;

		closedir(d);
		return r;
	}
	closedir(d);
	return found ? 0 : -1;
}

static int c_fsync(void)
{
	int fd = open(at("d/f"), O_WRONLY), e = 0;

	if (fd < 0)
		return errno;
	if (fsync(fd) < 0)
		e = errno;
	close(fd);
	return e;
}

static int c_truncate(void)
{
	struct stat st;

	TRY(truncate(at("d/f"), 1000));
	TRY(stat(at("d/f"), &st));
	return st.st_size == 1000 ? 0 : -1;
}

static int c_chmod(void)
{
	struct stat st;

	TRY(chmod(at("d/f"), 0600));
	TRY(stat(at("d/f"), &st));
	return (st.st_mode & 07777) == 0600 ? 0 : -1;
}

static int c_utimens(void)
{
	struct timespec ts[2] = { { 1000000000, 0 }, { 1000000000, 0 } };
	struct stat st;

	TRY(utimensat(AT_FDCWD, at("d/f"), ts, 0));
	TRY(stat(at("d/f"), &st));
	return st.st_mtim.tv_sec == 1000000000 ? 0 : -1;
}

static int c_chown(void)
{
	TRY(chown(at("d/f"), 0, 0));
	return 0;
}

static int c_fallocate(void)
{
	int fd = open(at("d/f"), O_WRONLY), e = 0;

	if (fd < 0)
		return errno;
	if (fallocate(fd, 0, 0, 1 << 20) < 0)
		e = errno;
	close(fd);
	return e;
}

static int c_lseek(void)
{
	int fd = open(at("d/f"), O_RDONLY), e = 0;

	if (fd < 0)
		return errno;
	if (lseek(fd, 0, SEEK_DATA) < 0)
		e = errno;
	close(fd);
	return e;
}

static int c_symlink(void)
{
	TRY(symlink("f", at("d/l")));
	return 0;
}

static int c_readlink(void)
{
	char buf[16];
	ssize_t n = readlink(at("d/l"), buf, sizeof(buf));

	if (n < 0)
		return errno;
	return n == 1 && buf[0] == 'f' ? 0 : -1;
}

static int c_link(void)
{
	char target[sizeof(P)];
	struct stat st;

	snprintf(target, sizeof(target), "%s", at("d/f"));
	TRY(link(target, at("d/h")));
	TRY(stat(target, &st));
	return st.st_nlink == 2 ? 0 : -1;
}

static int c_rename(void)
{
	char from[sizeof(P)];

	snprintf(from, sizeof(from), "%s", at("d/h"));
	TRY(rename(from, at("d/h2")));
	return access(from, F_OK) < 0 && errno == ENOENT ? 0 : -1;
}

static int c_noreplace(void)
{
	char from[sizeof(P)];

	snprintf(from, sizeof(from), "%s", at("d/l"));
	if (renameat2(AT_FDCWD, from, AT_FDCWD, at("d/h2"), RENAME_NOREPLACE) == 0)
		return -1; /* it replaced the target */
	return errno == EEXIST ? 0 : errno;
}

static int c_exchange(void)
{
	char from[sizeof(P)];
	struct stat st;

	snprintf(from, sizeof(from), "%s", at("d/l"));
	TRY(renameat2(AT_FDCWD, from, AT_FDCWD, at("d/h2"), RENAME_EXCHANGE));
	TRY(lstat(from, &st));
	return S_ISREG(st.st_mode) ? 0 : -1;
}

static int c_mkfifo(void)
{
	struct stat st;

	TRY(mkfifo(at("d/p"), 0644));
	TRY(lstat(at("d/p"), &st));
	return S_ISFIFO(st.st_mode) ? 0 : -1;
}

static int c_setxattr(void)
{
	TRY(setxattr(at("d/f"), "user.rfcheck", "v1", 2, 0));
	return 0;
}

static int c_getxattr(void)
{
	char v[8];
	ssize_t n = getxattr(at("d/f"), "user.rfcheck", v, sizeof(v));

	if (n < 0)
		return errno;
	return n == 2 && !memcmp(v, "v1", 2) ? 0 : -1;
}

static int c_listxattr(void)
{
	char list[1024];
	ssize_t n = listxattr(at("d/f"), list, sizeof(list)), i;

	if (n < 0)
		return errno;
	for (i = 0; i < n; i += (ssize_t)strlen(list + i) + 1)
		if (!strcmp(list + i, "user.rfcheck"))
			return 0;
	return -1;
}

static int c_removexattr(void)
{
	TRY(removexattr(at("d/f"), "user.rfcheck"));
	return 0;
}

static int c_access(void)
{
	TRY(access(at("d/f"), R_OK));
	return 0;
}

static int c_unlink(void)
{
	/* what the checks above made, where they could */
	static const char *const names[] = { "d/l", "d/h2", "d/p" };
	size_t i;

	TRY(unlink(at("d/f")));
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (unlink(at(names[i])) < 0 && errno != ENOENT)
			return errno;
	return 0;
}

static int c_rmdir(void)
{
	TRY(rmdir(at("d")));
	return access(at("d"), F_OK) < 0 && errno == ENOENT ? 0 : -1;
}

/* data: sizes that cross pages and requests, direct and through the cache */
static int c_data_direct(void)
{
	int e = write_file("direct", O_CREAT | O_TRUNC | O_WRONLY | O_DIRECT, 1 << 20, 2);

	return e ? e : read_file("direct", O_RDONLY | O_DIRECT, 1 << 20, 2);
}

static int c_data_buffered(void)
{
	int e = write_file("buffered", O_CREAT | O_TRUNC | O_WRONLY, 1000003, 3);

	return e ? e : read_file("buffered", O_RDONLY, 1000003, 3);
}

static int c_data_random(void)
{
	static char want[1 << 20], got[4096] __attribute__((aligned(4096)));
	unsigned int i, seed = 12345;
	int fd, e = 0;

	pattern(want, sizeof(want), 2);
	fd = open(at("direct"), O_RDONLY | O_DIRECT);
	if (fd < 0)
		return errno;
	for (i = 0; i < 64 && !e; i++) {
		off_t off = (off_t)((seed = seed * 1103515245 + 12345) % 256) * 4096;

		if (pread(fd, got, 4096, off) != 4096)
			e = errno ? errno : -1;
		else if (memcmp(got, want + off, 4096))
			e = -1;
	}
	close(fd);
	if (!e && (unlink(at("direct")) < 0 || unlink(at("buffered")) < 0))
		e = errno;
	return e;
}

static const struct check CHECKS[] = {
	{ "statfs", c_statfs },
	{ "getattr", c_getattr },
	{ "mkdir", c_mkdir },
	{ "create+write+release", c_create },
	{ "lookup", c_lookup },
	{ "open+read", c_read },
	{ "readdir", c_readdir },
	{ "fsync", c_fsync },
	{ "setattr (size)", c_truncate },
	{ "setattr (mode)", c_chmod },
	{ "setattr (times)", c_utimens },
	{ "setattr (owner)", c_chown },
	{ "fallocate", c_fallocate },
	{ "lseek (SEEK_DATA)", c_lseek },
	{ "symlink", c_symlink },
	{ "readlink", c_readlink },
	{ "link", c_link },
	{ "rename", c_rename },
	{ "rename (noreplace)", c_noreplace },
	{ "rename (exchange)", c_exchange },
	{ "mknod (fifo)", c_mkfifo },
	{ "setxattr", c_setxattr },
	{ "getxattr", c_getxattr },
	{ "listxattr", c_listxattr },
	{ "removexattr", c_removexattr },
	{ "access", c_access },
	{ "unlink", c_unlink },
	{ "rmdir", c_rmdir },
	{ "data: 1 MiB O_DIRECT", c_data_direct },
	{ "data: 1000003 bytes buffered", c_data_buffered },
	{ "data: 4 KiB random reads", c_data_random },
};

static void run_check(const struct check *c)
{
	struct counts a, b;
	struct denial d = { "" };
	char reqs[512] = "";
	size_t i, n = 0;
	int r;

	counts(&a);
	r = c->fn();
	/* a dying worker is noticed by the broker a little later */
	usleep(20000);
	counts(&b);
	new_log_lines(find_denial, &d);
	for (i = 0; i < b.nops && n < sizeof(reqs); i++)
		if (b.op[i].n > count_of(&a, b.op[i].name))
			n += (size_t)snprintf(reqs + n, sizeof(reqs) - n, "%s%s", n ? " " : "",
					      b.op[i].name);
	fprintf(C.out, "  %-30s ", c->name);
	if (b.crashes > a.crashes || b.failed || d.what[0]) {
		C.deaths++;
		fprintf(C.out, "WORKER DIED%s%s", d.what[0] ? ": seccomp: " : "", d.what);
		restart();
	} else if (r == -1) {
		C.wrong++;
		fprintf(C.out, "WRONG: the call succeeded but what came back differs");
	} else if (r == 0) {
		C.ok++;
		fprintf(C.out, "ok");
	} else if (b.enosys > a.enosys) {
		C.enosys++;
		fprintf(C.out, "not implemented (the plugin answered ENOSYS; the caller got %s)",
			strerrorname_np(r) ? strerrorname_np(r) : "?");
	} else {
		C.errors++;
		fprintf(C.out, "%s (%s)", strerrorname_np(r) ? strerrorname_np(r) : "?",
			strerror(r));
	}
	if (C.verbose && reqs[0])
		fprintf(C.out, "  [%s]", reqs);
	fputc('\n', C.out);
}

/* ---- --read-only: what the plugin shows, only read ---- */

#define RO_MAX 64 /* entries the walk checks */
#define RO_DEPTH 3

static char ro_rel[PATH_MAX]; /* the entry the next check is about */

static int r_lookup(void)
{
	struct stat st;

	TRY(lstat(at(ro_rel), &st));
	return 0;
}

/* the whole file (its first MiB), twice: the same bytes both times */
static int r_read(void)
{
	static char a[1 << 20], b[1 << 20];
	ssize_t n[2];
	int i;

	for (i = 0; i < 2; i++) {
		int fd = open(at(ro_rel), O_RDONLY | O_NOFOLLOW), e = 0;

		if (fd < 0)
			return errno;
		n[i] = read(fd, i ? b : a, sizeof(a));
		if (n[i] < 0)
			e = errno;
		close(fd);
		if (e)
			return e;
	}
	return n[0] == n[1] && !memcmp(a, b, (size_t)n[0]) ? 0 : -1;
}

static int r_readdir(void)
{
	DIR *d = opendir(at(ro_rel));
	int e = 0;

	if (!d)
		return errno;
	errno = 0;
	while (readdir(d))
		;
	e = errno;
	closedir(d);
	return e;
}

static int r_readlink(void)
{
	char t[PATH_MAX];

	return readlink(at(ro_rel), t, sizeof(t)) > 0 ? 0 : errno;
}

static int r_listxattr(void)
{
	char l[4096];

	return llistxattr(at(ro_rel), l, sizeof(l)) >= 0 ? 0 : errno;
}

static int r_access(void)
{
	TRY(faccessat(AT_FDCWD, at(ro_rel), R_OK, AT_SYMLINK_NOFOLLOW));
	return 0;
}

/* One entry's checks, by what lstat says it is. */
static void ro_entry(const char *rel)
{
	struct check c = { NULL, r_lookup };
	char name[80];
	struct stat st;

	snprintf(ro_rel, sizeof(ro_rel), "%s", rel);
	snprintf(name, sizeof(name), "lookup %.60s", rel[0] ? rel : ".");
	c.name = name;
	run_check(&c);
	if (lstat(at(ro_rel), &st) < 0)
		return;
	c.fn = S_ISREG(st.st_mode)   ? r_read
	       : S_ISDIR(st.st_mode) ? r_readdir
	       : S_ISLNK(st.st_mode) ? r_readlink
				     : NULL;
	if (c.fn) {
		snprintf(name, sizeof(name), "%s %.60s",
			 S_ISREG(st.st_mode)   ? "open+read"
			 : S_ISDIR(st.st_mode) ? "readdir"
					       : "readlink",
			 rel[0] ? rel : ".");
		run_check(&c);
	}
	if (!S_ISLNK(st.st_mode)) {
		snprintf(name, sizeof(name), "access %.60s", rel[0] ? rel : ".");
		c.fn = r_access;
		run_check(&c);
	}
}

/* The entries below the root, breadth first, at most RO_MAX of them and
 * RO_DEPTH deep (what the walk itself cannot list, the root's readdir
 * check reports). */
static size_t ro_walk(char (*out)[PATH_MAX], size_t max)
{
	size_t n = 0, next = 0, depth_end;
	int depth = 0;

	out[n++][0] = '\0';
	for (depth_end = n; next < n && depth < RO_DEPTH; depth++, depth_end = n) {
		for (; next < depth_end; next++) {
			/* (what is no directory does not open as one) */
			DIR *d = opendir(at(out[next]));
			struct dirent *e;

			if (!d)
				continue;
			while ((e = readdir(d)) && n < max) {
				if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
					continue;
				snprintf(out[n], PATH_MAX, "%s%s%s", out[next],
					 out[next][0] ? "/" : "", e->d_name);
				n++;
			}
			closedir(d);
		}
	}
	return n;
}

static void run_read_only(char (*paths)[PATH_MAX], size_t npaths)
{
	static char walked[RO_MAX + 1][PATH_MAX];
	static const struct check fs[] = { { "statfs", c_statfs }, { "getattr", c_getattr } };
	struct check c = { "listxattr .", r_listxattr };
	size_t i, n;

	for (i = 0; i < sizeof(fs) / sizeof(fs[0]); i++)
		run_check(&fs[i]);
	ro_rel[0] = '\0';
	run_check(&c);
	if (npaths) {
		ro_entry("");
		for (i = 0; i < npaths; i++)
			ro_entry(paths[i]);
		return;
	}
	n = ro_walk(walked, RO_MAX + 1);
	for (i = 0; i < n; i++)
		ro_entry(walked[i]);
}

/* ---- --learn ---- */

struct learned {
	char name[64];
	char ops[256];
};

static struct learned LEARNED[512];
static size_t NLEARNED;

static void find_learned(const char *line, void *arg)
{
	char name[64], op[32];
	const char *p = strstr(line, "worker: learn: ");
	size_t i;

	(void)arg;
	if (!p || sscanf(p, "worker: learn: %63s during %31s", name, op) != 2)
		return;
	for (i = 0; i < NLEARNED && strcmp(LEARNED[i].name, name); i++)
		;
	if (i == NLEARNED) {
		if (NLEARNED == sizeof(LEARNED) / sizeof(LEARNED[0]))
			return;
		snprintf(LEARNED[NLEARNED++].name, sizeof(LEARNED[0].name), "%s", name);
	}
	if (!strcmp(op, "-"))
		snprintf(op, sizeof(op), "another thread");
	if (!strstr(LEARNED[i].ops, op)) {
		size_t n = strlen(LEARNED[i].ops);

		snprintf(LEARNED[i].ops + n, sizeof(LEARNED[i].ops) - n, "%s%s", n ? ", " : "", op);
	}
}

static void print_policy(const char *plugin, const char *base)
{
	size_t i;

	printf("# seccomp.policy for %s, learned by ringfence-plugin-check --learn:\n"
	       "# what the included file allows, then each call the tenant made beyond\n"
	       "# it, with the FUSE operations that made it (a program's are all\n"
	       "# \"another thread\": its calls are answered by its keeper). Every rule\n"
	       "# allows any arguments: narrow them where you can\n"
	       "# (ringfence-seccomp.policy(5)).\n"
	       "@default trap\n"
	       "@include %s\n",
	       plugin, base);
	for (i = 0; i < NLEARNED; i++)
		printf("\n# %s\n%s: 1\n", LEARNED[i].ops, LEARNED[i].name);
}

/* ---- main ---- */

/*
 * The scratch tenant's users_file: every dynamic user of the host's
 * (@from, "NAME UID" lines) under a name of its own, so that the broker
 * gives the scratch tenant none of their uids, not even a production
 * tenant's that is also called TENANT. The host's file is only read.
 */
static void reserve_host_users(const char *from, const char *to)
{
	char line[256], name[RF_POLICY_NAME_MAX];
	unsigned long id, n = 0;
	FILE *in = fopen(from, "re"), *out;

	if (!in) {
		if (errno != ENOENT)
			die("--users-file %s: %s", from, strerror(errno));
		return;
	}
	out = fopen(to, "we");
	if (!out)
		die("%s: %s", to, strerror(errno));
	while (fgets(line, sizeof(line), in))
		if (line[0] != '#' && sscanf(line, "%63s %lu", name, &id) == 2)
			fprintf(out, "host-tenant-%lu %lu\n", ++n, id);
	fclose(in);
	if (fclose(out) != 0)
		die("%s: %s", to, strerror(errno));
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "learn", no_argument, NULL, 'l' },
		{ "seccomp-policy", required_argument, NULL, 's' },
		{ "transport", required_argument, NULL, 't' },
		{ "options", required_argument, NULL, 'O' },
		{ "keep", no_argument, NULL, 'k' },
		{ "users-file", required_argument, NULL, 'u' },
		{ "read-only", no_argument, NULL, 'r' },
		{ "path", required_argument, NULL, 'p' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "program", no_argument, NULL, 'P' },
		{ "program-args", required_argument, NULL, 'A' },
		{ "source", required_argument, NULL, 'S' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *scpol = NULL, *transport = "auto", *options = NULL, *program_args = NULL;
	const char *source = NULL;
	bool program = false;
	const char *host_users = RF_DEFAULT_USERS_FILE;
	static char paths[16][PATH_MAX];
	size_t npaths = 0;
	bool read_only = false;
	char plugin[PATH_MAX], self[PATH_MAX], policy[PATH_MAX + 16], base[PATH_MAX], *slash;
	static char scpol_abs[PATH_MAX];
	char extra[4096] = "";
	size_t extra_len = 0, i;
	FILE *f;
	ssize_t n;
	int c;

	C.out = stdout;
	setvbuf(stdout, NULL, _IOLBF, 0);
	while ((c = getopt_long(argc, argv, "o:vh", opts, NULL)) != -1) {
		switch (c) {
		case 'l':
			C.learn = true;
			break;
		case 's':
			scpol = optarg;
			break;
		case 't':
			transport = optarg;
			break;
		case 'O':
			options = optarg;
			break;
		case 'o':
			if (!strchr(optarg, '=') || strchr(optarg, '\n') ||
			    extra_len + strlen(optarg) + 2 > sizeof(extra)) {
				fprintf(stderr, "ringfence-plugin-check: -o: expected KEY=VALUE\n");
				return 2;
			}
			extra_len += (size_t)snprintf(extra + extra_len, sizeof(extra) - extra_len,
						      "%s\n", optarg);
			break;
		case 'k':
			C.keep = true;
			break;
		case 'u':
			host_users = optarg;
			break;
		case 'r':
			read_only = true;
			break;
		case 'p':
			if (npaths == 16 || strlen(optarg) >= PATH_MAX || optarg[0] == '/' ||
			    strstr(optarg, "..")) {
				fprintf(stderr, "ringfence-plugin-check: --path: at most 16, each "
						"relative to the mount, without '..'\n");
				return 2;
			}
			snprintf(paths[npaths++], PATH_MAX, "%s", optarg);
			break;
		case 'v':
			C.verbose = true;
			break;
		case 'P':
			program = true;
			break;
		case 'A':
			program_args = optarg;
			break;
		case 'S':
			source = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc - 1) {
		usage(stderr);
		return 2;
	}
	if (npaths && !read_only) {
		fprintf(stderr, "ringfence-plugin-check: --path names what --read-only checks\n");
		return 2;
	}
	if ((program_args && !program) || (program && options) ||
	    (program_args && strchr(program_args, '\n')) || (source && strchr(source, '\n'))) {
		fprintf(stderr, "ringfence-plugin-check: --program-args goes with --program, "
				"--options with a plugin, each on one line\n");
		return 2;
	}
	/* the policy names it absolutely */
	if (scpol && !realpath(scpol, scpol_abs)) {
		fprintf(stderr, "ringfence-plugin-check: %s: %s\n", scpol, strerror(errno));
		return 1;
	}
	if (scpol)
		scpol = scpol_abs;
	if (C.learn && scpol) {
		fprintf(stderr, "ringfence-plugin-check: --learn starts from worker.policy; "
				"--seccomp-policy is for checking a policy\n");
		return 2;
	}
	if (geteuid() != 0) {
		fprintf(stderr, "ringfence-plugin-check: run as root (it runs a broker)\n");
		return 1;
	}
	if (!realpath(argv[optind], plugin)) {
		fprintf(stderr, "ringfence-plugin-check: %s: %s\n", argv[optind], strerror(errno));
		return 1;
	}
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		die("readlink /proc/self/exe: %s", strerror(errno));
	self[n] = '\0';
	slash = strrchr(self, '/');
	*slash = '\0';
	/* worker.policy beside the default seccomp.policy; a program's start
	 * needs what program.policy allows */
	snprintf(base, sizeof(base), "%s", RF_SECCOMP_POLICY);
	slash = strrchr(base, '/');
	snprintf(slash + 1, sizeof(base) - (size_t)(slash + 1 - base), "worker.policy");
	if (program)
		snprintf(base, sizeof(base), "%s", RF_PROGRAM_POLICY);
	if (C.learn) {
		if (access(base, R_OK) < 0)
			die("%s: %s", base, strerror(errno));
		scpol = base;
		C.out = stderr;
	}

	/* the broker mounts fusectl where it is not; give that back */
	C.fusectl_was_mounted = rf_mountinfo_find(FUSECTL, "fusectl", NULL) == 0;
	snprintf(C.dir, sizeof(C.dir), "/tmp/ringfence-plugin-check.XXXXXX");
	if (!mkdtemp(C.dir))
		die("mkdtemp: %s", strerror(errno));
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	chmod(C.dir, 0755);
	snprintf(C.mnt, sizeof(C.mnt), "%s/mnt", C.dir);
	snprintf(C.sock, sizeof(C.sock), "%s/ctl.sock", C.dir);
	snprintf(C.log, sizeof(C.log), "%s/broker.log", C.dir);
	snprintf(policy, sizeof(policy), "%s/policy", C.dir);
	{
		char src[PATH_MAX + 8];

		snprintf(src, sizeof(src), "%s/users", C.dir);
		reserve_host_users(host_users, src);
		snprintf(src, sizeof(src), "%s/src", C.dir);
		if (mkdir(C.mnt, 0755) < 0 || (!source && mkdir(src, 0755) < 0))
			die("mkdir in %s: %s", C.dir, strerror(errno));
		if (source)
			snprintf(src, sizeof(src), "%s", source);
		f = fopen(policy, "we");
		if (!f)
			die("%s: %s", policy, strerror(errno));
		fprintf(f,
			"[global]\ncontrol_socket = %s\nusers_file = %s/users\n\n"
			"[mount " TENANT "]\nmountpoint = %s\n%s = %s\nsource = %s\n"
			"transport = %s\n"
			"# the first death fails the tenant: the EIO responder ends the\n"
			"# request that killed the worker (a successor would run it\n"
			"# again), and the tool restarts the tenant for the next check\n"
			"crash_limit = 1\ncrash_window = 86400\nrequest_timeout = 10\n",
			C.sock, C.dir, C.mnt, program ? "program" : "plugin", plugin, src,
			transport);
		if (program_args)
			fprintf(f, "program_args = %s\n", program_args);
		if (options)
			fprintf(f, "options = %s\n", options);
		if (scpol)
			fprintf(f, "seccomp_policy = %s\n", scpol);
		if (read_only)
			fputs("read_only = yes\n", f);
		fputs(extra, f);
		if (fclose(f) != 0)
			die("%s: %s", policy, strerror(errno));
	}
	fprintf(C.out, "ringfence-plugin-check: %s (transport %s, seccomp policy %s%s)\n", plugin,
		transport, scpol ? scpol : "the broker's default", C.learn ? ", learning" : "");
	start_broker(self, policy);
	{
		char buf[8192], v[64], q[64];

		ctl("status " TENANT, buf, sizeof(buf));
		field(buf, "transport", v, sizeof(v));
		field(buf, "queues", q, sizeof(q));
		fprintf(C.out, "mounted on %s: %s transport, %s queues, worker %ld, uid %ld\n",
			C.mnt, v, q, status_num("worker"), status_num("uid"));
	}
	new_log_lines(find_learned, NULL);
	if (read_only)
		run_read_only(paths, npaths);
	else
		for (i = 0; i < sizeof(CHECKS) / sizeof(CHECKS[0]); i++)
			run_check(&CHECKS[i]);
	new_log_lines(find_learned, NULL);
	fprintf(C.out,
		"summary: %u ok, %u not implemented, %u other errors, %u worker deaths, %u wrong "
		"results\n",
		C.ok, C.enosys, C.errors, C.deaths, C.wrong);
	stop();
	if (C.learn)
		print_policy(plugin, base);
	return C.deaths || C.wrong ? 1 : 0;
}
